"""Where one seed's time goes: one job of a target (``seed_jobs.py``) under cProfile.

Prints the job's CPU and wall time and the top entries by own time (``tottime``) and by
cumulative time, with their share of the job. Figures only, nothing asserted. One thread
(``OMP_NUM_THREADS=1``) makes the profile that of one core, as a pipeline job with
``threads: 1`` runs.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/profile_seed.py gfl_fig10_4_reviews_nlp bigfl
    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/profile_seed.py gtv_fig07_mnist_five_clusters ifca --top 15
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import tempfile
import time
from pathlib import Path

import seed_jobs


def _rows(stats: pstats.Stats, key: str, top: int, total: float) -> list[str]:
    stats.sort_stats(key)
    out = []
    for func in stats.fcn_list[:top]:  # type: ignore[attr-defined]
        _, calls, tottime, cumtime, _ = stats.stats[func]  # type: ignore[attr-defined]
        where = f"{Path(func[0]).name}:{func[1]}({func[2]})" if func[0] != "~" else func[2]
        value = tottime if key == "tottime" else cumtime
        out.append(f"| {where} | {calls} | {value:.2f} s | {100 * value / total:.0f} % |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target")
    parser.add_argument("setting")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "networkedfl-seed-jobs")
    parser.add_argument("--save", type=Path, help="also write the raw cProfile statistics here (pstats)")
    parser.add_argument("--pin", action="store_true",
                        help="the pipeline's job environment: threads, pinned CPU kernels, deterministic torch")
    args = parser.parse_args()
    if args.pin:
        seed_jobs.pin(1)
    args.workdir.mkdir(parents=True, exist_ok=True)
    config = seed_jobs.load(args.config)
    run, params, own, extra = seed_jobs.job_args(config, args.target, args.setting, args.workdir)
    profiler = cProfile.Profile()
    cpu, wall = time.process_time(), time.perf_counter()
    profiler.enable()
    run(params, own, args.seed, int(config["base_seed"]), **extra)
    profiler.disable()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if args.save:
        profiler.dump_stats(args.save)
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = max(sum(v[2] for v in stats.stats.values()), 1e-9)  # type: ignore[attr-defined]
    print(f"{args.target} / {args.setting} / seed {args.seed}: {cpu:.1f} s CPU, {wall:.1f} s wall (profiled)\n")
    for key, title in (("tottime", "own time"), ("cumulative", "cumulative")):
        print(f"| function ({title}) | calls | time | share |\n|---|---|---|---|")
        print("\n".join(_rows(stats, key, args.top, total)) + "\n")


if __name__ == "__main__":
    main()
