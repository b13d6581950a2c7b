"""A seed's job time before and after a change, measured alternately in one run.

For each job (``target:setting``), runs one seed of it (``seed_jobs.py``, the experiment's
own run function on the default config, one thread) with the package of a git ref
(``--before``, default ``main``: its ``src`` exported to a temporary directory) and with
this checkout's ``src``, alternately, ``--repeats`` times each, every run in a fresh
process. Prints, per job, the median process CPU time of each (robust to other load on a
shared machine; wall time beside it), the ratio before / after, and whether the two tables
are byte-identical (CSV at ``%.17g``), else the largest absolute difference of ``value``
and the metric where it occurs. Figures only, nothing asserted.

    .venv/bin/python benchmarks/bench_seed_speed.py --before main \\
        --jobs gtv_fig07_mnist_five_clusters:paper.ifca gfl_fig10_4_reviews_nlp:bigfl
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
DEFAULT_JOBS = (
    "gtv_fig07_mnist_five_clusters:paper.ifca", "gtv_fig07_mnist_five_clusters:paper.primal_dual",
    "gfl_fig10_4_reviews_nlp:bigfl", "gfl_fig10_4_reviews_nlp:fedavg", "gfl_fig10_4_reviews_nlp:dfl_gt",
)


def export_src(ref: str, into: Path) -> Path:
    """The ``src`` tree of ``ref`` written below ``into``; returns its ``src``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", ref, "src"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run_seed(src: Path, job: str, seed: int, out: Path, workdir: Path, whole_job: bool = False,
             config: str = "config/config.yaml") -> dict:
    target, setting = job.split(":", 1)
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "seed_jobs.py"), target, setting, str(seed),
                           "--out", str(out), "--workdir", str(workdir), "--config", config,
                           *(["--whole-job"] if whole_job else [])],
                          check=True, capture_output=True, text=True, env=env, cwd=REPO)
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare_tables(a: Path, b: Path) -> str:
    if a.read_bytes() == b.read_bytes():
        return "byte-identical"
    ta, tb = pd.read_csv(a), pd.read_csv(b)
    if ta.shape != tb.shape or list(ta.columns) != list(tb.columns):
        return f"different shapes {ta.shape} vs {tb.shape}"
    diff = (ta["value"].astype(float) - tb["value"].astype(float)).abs()
    where = int(diff.idxmax())
    return f"max |diff| {diff.max():.3g} ({ta.loc[where, 'metric']})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="main", help="git ref of the code before (default: main)")
    parser.add_argument("--jobs", nargs="+", default=list(DEFAULT_JOBS), help="target:setting")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--config", default="config/config.yaml", help="e.g. config/test.yaml (the test profile)")
    parser.add_argument("--whole-job", action="store_true",
                        help="MNIST jobs compute all their seeds (as the pipeline; Alg. 1 solves them together)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="networkedfl-bench-") as tmp:
        tmp_path = Path(tmp)
        before = export_src(args.before, tmp_path / "before")
        after = REPO / "src"
        graphs = Path(tempfile.gettempdir()) / "networkedfl-seed-jobs"  # stand-in MNIST graphs, kept
        graphs.mkdir(exist_ok=True)
        print("| job | before: CPU (wall) | after: CPU (wall) | before / after (CPU) | tables | torch import, CPU "
              "(once per job process) |\n|---|---|---|---|---|---|")
        for job in args.jobs:
            times: dict[str, list[dict]] = {"before": [], "after": []}
            for _ in range(args.repeats):
                for name, src in (("before", before), ("after", after)):
                    times[name].append(run_seed(src, job, args.seed, tmp_path / f"{name}.csv", graphs,
                                                args.whole_job, args.config))
            cpu = {k: statistics.median(t["cpu"] for t in v) for k, v in times.items()}
            wall = {k: statistics.median(t["wall"] for t in v) for k, v in times.items()}
            imports = {k: statistics.median(t.get("import_cpu", float("nan")) for t in v) for k, v in times.items()}
            same = compare_tables(tmp_path / "before.csv", tmp_path / "after.csv")
            print(f"| {job} | {cpu['before']:.1f} s ({wall['before']:.1f} s) | {cpu['after']:.1f} s "
                  f"({wall['after']:.1f} s) | {cpu['before'] / cpu['after']:.2f} | {same} | "
                  f"{imports['before']:.1f} s → {imports['after']:.1f} s |", flush=True)


if __name__ == "__main__":
    main()
