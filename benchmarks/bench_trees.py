"""Decision-tree FedRelax (Algorithm 1, Figs. 2a, 2b, 4): one repetition of a target in one
process, with the nodes' fits in threads, and in worker processes.

One repetition (seed) of a tree target at its configured scale (``config/config.yaml``;
``--quick``: ``config/test.yaml``) is run three ways, timed alternately in rounds:

* ``one process``: every run (grid point x alpha) in turn, one thread;
* ``node threads``: the same, the nodes' tree fits and predictions of an iteration in
  ``--workers`` threads (``fedrelax(n_jobs=...)``, the library option);
* ``worker processes``: the runs in ``--workers`` processes (``threads: N`` of the target,
  what the pipeline does).

An untimed warm-up at the test sizes comes first (imports, and the worker processes, which
a pipeline job starts once: about a second).  The figures are medians over the rounds; the
ratios (one process / each) are what the worker processes and the threads buy on this
machine.  The three tables are checked to be
equal (the script says so).  Nothing is asserted.

Usage::

    .venv/bin/python benchmarks/bench_trees.py                         # Fig. 4, about 2 minutes
    .venv/bin/python benchmarks/bench_trees.py --quick                 # seconds
    .venv/bin/python benchmarks/bench_trees.py --target fedrelax_fig02a_trees_dm --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
WAYS = ("one process", "node threads", "worker processes")


def run_way(params: dict, target: str, way: str, workers: int, seed: int = 0) -> pd.DataFrame:
    """One repetition of ``target`` (its ``all`` setting) run ``way``."""
    from unittest import mock

    from networkedfl.experiments.fedrelax import runs

    p = {key: value for key, value in params.items() if key != "threads"}
    if way == "worker processes":
        p["threads"] = workers
        return runs.run_trees(p, "all", seed, 2023, experiment_id=target)
    if way == "one process":
        return runs.run_trees(p, "all", seed, 2023, experiment_id=target)
    from networkedfl import fedrelax as package  # runs imports fedrelax from it at each run

    fit = package.fedrelax

    def threaded(*args, **kwargs):
        return fit(*args, **{**kwargs, "n_jobs": workers})

    with mock.patch.object(package, "fedrelax", threaded):
        return runs.run_trees(p, "all", seed, 2023, experiment_id=target)


def measure(target: str, quick: bool, workers: int = 2, rounds: int = 1) -> dict:
    """Seconds of each way (medians over ``rounds`` alternating rounds) and whether the
    three tables are equal."""
    from networkedfl.pipeline.config import load_config

    small = dict(load_config(REPO / "config" / "config.yaml", REPO / "config" / "test.yaml")["experiments"][target])
    params = small if quick else dict(load_config(REPO / "config" / "config.yaml")["experiments"][target])
    for way in WAYS:  # untimed warm-up at the test sizes: imports, and the worker processes
        run_way(small, target, way, workers)  # (started once per process, as once per job)
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    tables: dict[str, pd.DataFrame] = {}
    for _ in range(rounds):
        for way in WAYS:
            t0 = time.perf_counter()
            tables[way] = run_way(params, target, way, workers)
            times[way].append(time.perf_counter() - t0)
    equal = all(tables[w].equals(tables[WAYS[0]]) for w in WAYS[1:])
    median = {way: statistics.median(ts) for way, ts in times.items()}
    return {"target": target, "quick": quick, "workers": workers, "rounds": rounds, "seconds": median,
            "times": times, "equal": equal}


def report(result: dict) -> list[str]:
    one = result["seconds"]["one process"]
    lines = [f"{result['target']} ({'test' if result['quick'] else 'default'} scale), one repetition, "
             f"{result['workers']} workers, median of {result['rounds']} round(s):"]
    for way in WAYS:
        s = result["seconds"][way]
        lines.append(f"  {way:17s} {s:8.2f} s   one process / this {one / s:5.2f}")
    lines.append(f"  tables equal: {result['equal']}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="fedrelax_fig04_noniid_trees")
    parser.add_argument("--quick", action="store_true", help="the test profile's sizes")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    print("\n".join(report(measure(args.target, args.quick, args.workers, args.rounds))))


if __name__ == "__main__":
    main()
