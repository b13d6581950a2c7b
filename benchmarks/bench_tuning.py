"""Successive halving against the whole grid, on a finished run (docs/tuning.md).

For every tuned method of every tuned target of a finished Snakemake run (``--workdir``,
default: the repository root), this script completes the whole grid: every point run to
the full tuning horizon, taking the full-horizon runs that the halved job already made from
its tuning file (the same cache keys) and running the others. It then reports per method:

* the rungs the job runs (the full horizon alone where the cost rule runs the whole grid),
  the cost rule's counts of halving and of the whole grid (in runs to the full horizon);
* the points, the halved job's runs and compute time (its log's ``tuning run ...: X s``
  lines) and the whole grid's (the full-horizon runs' times, from that log or measured here);
* the point successive halving chose and the point the whole grid chooses, whether they are
  the same, and both points' validation losses at the full horizon.

With ``--markdown FILE`` the report replaces the section between ``<!-- tuning:begin -->``
and ``<!-- tuning:end -->`` of FILE (``benchmarks/README.md``). Nothing is asserted.

    .venv/bin/python benchmarks/bench_tuning.py --workdir /path/to/run
    .venv/bin/python benchmarks/bench_tuning.py --workdir /path/to/run --markdown benchmarks/README.md
    .venv/bin/python benchmarks/bench_tuning.py --cost-rule      # the rungs and costs of every grid
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import re
import sys
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BEGIN, END = "<!-- tuning:begin -->", "<!-- tuning:end -->"
_RUN = re.compile(r"tuning run \S+ point (\d+) rung (\d+) horizon (\S+): ([0-9.]+) s")


def _log_times(path: Path) -> dict[tuple[int, int], float]:
    """``{(point, rung): seconds}`` of the last job run recorded in a tuning log."""
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8", errors="replace")
    starts = [m.start() for m in re.finditer(r"tuning run \S+ point 0 rung 0 ", text)]
    text = text[starts[-1]:] if starts else text
    return {(int(p), int(r)): float(s) for p, r, _, s in _RUN.findall(text)}


class _Times(logging.Handler):
    """Collects the runner's ``tuning run ...`` lines of the runs made here."""

    def __init__(self) -> None:
        super().__init__()
        self.times: dict[int, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        match = _RUN.search(record.getMessage())
        if match:
            self.times[int(match.group(1))] = float(match.group(4))


def _units(workdir: Path) -> list[tuple[str, str]]:
    """``(target, setting)`` of every tuned method with a tuning file in the run."""
    sys.path.insert(0, str(REPO / "src"))
    from networkedfl.pipeline.config import load_config
    from networkedfl.pipeline.runner import tuning_settings

    config = load_config(str(REPO / "config" / "config.yaml"))
    units = []
    for target in config["experiments"]:
        for setting in tuning_settings(config, target):
            path = workdir / "results" / "tuning" / target / f"{setting}.csv"
            if path.is_file():
                units.append((target, setting))
            else:
                print(f"skipped {target}/{setting}: no {path}", file=sys.stderr)
    return units


def compare_one(workdir: Path, target: str, setting: str) -> dict:
    """One tuned method: its whole grid completed, against the halved job's choice."""
    sys.path.insert(0, str(REPO / "src"))
    from networkedfl.experiments.tuning import (
        grid_cost,
        grid_points,
        halving_cost,
        halving_rungs,
        point_scores,
        run_overhead,
        select_point,
    )
    from networkedfl.experiments.variants import split_setting, variant_params
    from networkedfl.pipeline.config import load_config
    from networkedfl.pipeline.provenance import code_hash, target_modules
    from networkedfl.pipeline.runner import job_inputs, run_tuning_setting, tuning_specs

    config = load_config(str(REPO / "config" / "config.yaml"))
    params = config["experiments"][target]
    root = REPO / "src" / "networkedfl"
    handler = _Times()
    runner_log = logging.getLogger("networkedfl.pipeline.runner")
    runner_log.addHandler(handler)
    runner_log.setLevel(logging.INFO)
    os.chdir(workdir)
    code = code_hash(target_modules(target, root), root)
    halved = pd.read_csv(workdir / "results" / "tuning" / target / f"{setting}.csv")
    specs = tuning_specs(config, target, setting)
    whole = [{k: v for k, v in spec.items() if k != "halving"} for spec in specs]
    halving = specs[0].get("halving") or {}
    rungs = halving_rungs(specs[0], len(specs))
    model = ((halving_cost(rungs, len(specs), int(halving.get("eta", 3)), run_overhead(halving)), grid_cost(len(specs)))
             if halving else (float(len(specs)), float(len(specs))))
    start = time.perf_counter()
    full = run_tuning_setting(target, whole, int(config["base_seed"]), job_inputs(config, target, setting),
                              code=code, previous=halved)
    elapsed = time.perf_counter() - start
    runner_log.removeHandler(handler)
    variant, own = split_setting(params, setting)
    vparams = variant_params(params, variant)
    logged = _log_times(workdir / "logs" / "tuning" / target / f"{setting}.log")
    last = int(halved["tuning_rung"].max()) if "tuning_rung" in halved else 0
    full_times = {p: s for (p, r), s in logged.items() if r == last} | handler.times
    chosen_halved = select_point(vparams, own, [halved])
    chosen_full = select_point(vparams, own, [full])
    scores = point_scores([full])
    points = grid_points(vparams, own)
    return {
        "target": target, "method": str(full["method"].iloc[0]), "points": len(points),
        "halved runs": len(halved.groupby(["tuning_point", "tuning_rung"]) if "tuning_rung" in halved
                           else halved.groupby("tuning_point")),
        "halved s": sum(logged.values()) if logged else float("nan"),
        "whole grid s": sum(full_times.get(k, float("nan")) for k in range(len(points))),
        "completed here s": elapsed, "rungs": rungs, "cost halving": model[0], "cost grid": model[1],
        "chosen (halving)": points[chosen_halved], "chosen (whole grid)": points[chosen_full],
        "same": chosen_halved == chosen_full,
        "loss_halving": float(scores[chosen_halved]), "loss_whole": float(scores[chosen_full]),
    }


def compare(workdir: Path, jobs: int = 1) -> list[dict]:
    """:func:`compare_one` for every tuned method, in ``jobs`` processes, each in a pipeline
    job's environment (``seed_jobs.pin``: one thread, the pinned CPU kernels, deterministic
    PyTorch), so that the runs completed here are timed as the tuning job's own runs are."""
    import seed_jobs

    seed_jobs.pin(1)
    units = _units(workdir)
    if jobs <= 1:
        return [compare_one(workdir, t, s) for t, s in units]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs) as pool:
        futures = [pool.submit(compare_one, workdir, t, s) for t, s in units]
        return [f.result() for f in futures]


def cost_rule() -> str:
    """Every tuned grid of the default config: its rungs, the cost rule's counts of halving
    and of the whole grid (runs to the full horizon), and which one the job runs. From the
    config alone (no run needed)."""
    sys.path.insert(0, str(REPO / "src"))
    from networkedfl.experiments.tuning import grid_cost, halving_cost, halving_rungs, run_overhead
    from networkedfl.pipeline.config import load_config
    from networkedfl.pipeline.runner import tuning_settings, tuning_specs

    config = load_config(str(REPO / "config" / "config.yaml"))
    lines = ["| target | method | points | overhead | rungs without the rule | halving (restarting) | grid | runs |",
             "|---|---|---|---|---|---|---|---|"]
    for target in config["experiments"]:
        for setting in tuning_settings(config, target):
            specs = tuning_specs(config, target, setting)
            halving = specs[0].get("halving")
            if not halving:
                continue
            n, eta, o = len(specs), int(halving.get("eta", 3)), run_overhead(halving)
            plain = halving_rungs({**specs[0], "halving": {**halving, "overhead": 0.0}}, n)
            rungs = halving_rungs(specs[0], n)
            cost = halving_cost(plain, n, eta, o)
            runs = "whole grid" if len(rungs) == 1 else "halving " + " → ".join(map(str, rungs))
            lines.append(f"| {target} | {setting} | {n} | {o:g} | {' → '.join(map(str, plain))} | {cost:.2f} "
                         f"| {grid_cost(n):.0f} | {runs} |")
    return "\n".join(lines) + "\n"


def markdown(rows: list[dict], workdir: Path) -> str:
    from networkedfl.experiments.tuning import point_label

    where = "the repository root" if workdir == REPO else "the directory given by --workdir"  # no machine path

    lines = [f"_Generated by `.venv/bin/python benchmarks/bench_tuning.py --markdown benchmarks/README.md` on "
             f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC from the run in {where}; do not edit by "
             "hand._", "",
             "| target | method | points | rungs | cost rule: halving / grid | halved: runs | halved: compute "
             "| whole grid: compute | chosen by halving | chosen by the whole grid | same | validation loss of each |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    total_h = total_f = 0.0
    for r in rows:
        total_h += r["halved s"]
        total_f += r["whole grid s"]
        losses = (f"{r['loss_halving']:.5g}" if r["same"] else f"{r['loss_halving']:.5g} vs {r['loss_whole']:.5g}")
        rungs = " → ".join("run's own" if h is None else str(h) for h in r["rungs"])
        lines.append(f"| {r['target']} | {r['method']} | {r['points']} | {rungs} "
                     f"| {r['cost halving']:.2f} / {r['cost grid']:.0f} | {r['halved runs']} | {r['halved s']:.1f} s "
                     f"| {r['whole grid s']:.1f} s | {point_label(r['chosen (halving)'])} | "
                     f"{point_label(r['chosen (whole grid)'])} | {'yes' if r['same'] else '**no**'} | {losses} |")
    same = sum(r["same"] for r in rows)
    cheaper = sum(r["cost halving"] <= r["cost grid"] for r in rows)
    lines += ["", f"{same} of {len(rows)} methods choose the whole grid's point; tuning compute {total_h / 60:.1f} min "
              f"with halving against {total_f / 60:.1f} min for the whole grid (ratio {total_h / total_f:.2f}; both "
              "summed over the runs' own times, one process each). By the cost rule (in runs to the full horizon, "
              f"with the target's overhead), halving costs at most the grid in {cheaper} of {len(rows)} grids: the "
              "rungs of a grid where it would not are the full horizon alone, the whole grid."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=REPO, help="a finished default-config run (default: repo)")
    parser.add_argument("--markdown", type=Path, help="replace the tuning section of this file")
    parser.add_argument("--jobs", type=int, default=1, help="tuned methods completed at once, in processes")
    parser.add_argument("--cost-rule", action="store_true",
                        help="only print the cost rule of every grid of the default config (no run needed)")
    args = parser.parse_args()
    if args.cost_rule:
        print(cost_rule())
        return
    workdir = args.workdir.resolve()
    markdown_file = args.markdown.resolve() if args.markdown else None
    text = markdown(compare(workdir, args.jobs), workdir)
    print(text)
    if markdown_file is not None:
        page = markdown_file.read_text(encoding="utf-8")
        if BEGIN not in page or END not in page:
            raise SystemExit(f"{markdown_file}: no '{BEGIN}' ... '{END}' markers")
        head, rest = page.split(BEGIN, 1)
        markdown_file.write_text(head + BEGIN + "\n" + text + END + rest.split(END, 1)[1], encoding="utf-8")


if __name__ == "__main__":
    main()
