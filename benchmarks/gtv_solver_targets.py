"""What switching a linear GTV target's ``solver`` to ``restarted`` would change (issue 36).

For every linear GTV target (the ``paper`` variant: the ``published`` one keeps the notebooks'
fixed-K iteration) and one repetition (seed 0), each penalty job is run three ways through
the pipeline's own job function (``run_gtv_linear``):

* ``K``: today's ``solver: {method: pdhg}``, the config's fixed K iterations;
* ``restarted``: ``solver: {method: restarted, rel_gap_tol: 1e-6}`` (``--tol``);
* ``reference``: ``restarted`` with ``rel_gap_tol: 1e-11``, standing in for the converged
  solution (both restarted runs at most ``--max-iter`` iterations).  Table I and Fig. 2 have
  fewer samples than features per node: their certificate holds up to the squared-error
  conjugate's round-off allowance (``networkedfl.gtv._gap``), which the rows flag.

It prints, per target and penalty, the largest relative difference from the reference over
the grid points of the table's metrics (parameter MSE, the plotted one of Figs 3, 4, 9-11
and the covariance table; label MSE over all nodes, Figs 9-10's top row and Table I / Fig. 2's
numbers) for ``K`` and for ``restarted``, the iterations (K, and restarted's on each union
graph) and the wall time of the two jobs.  Information for the lead's decision; nothing is
asserted.

Usage::

    .venv/bin/python benchmarks/gtv_solver_targets.py                     # test profile
    .venv/bin/python benchmarks/gtv_solver_targets.py --profile default   # the papers' scale
    .venv/bin/python benchmarks/gtv_solver_targets.py --targets gtv_fig09_sbm_sampling
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TARGETS = ("gtv_table1_highdim_sbm", "gtv_fig02_num_clusters", "gtv_fig03_chain_sampling",
           "gtv_fig04_chain_noise", "gtv_fig09_sbm_sampling", "gtv_fig10_sbm_noise",
           "gtv_table3_covariance", "gtv_fig11_unbalanced")
METRICS = ("parameter_mse", "label_mse")
TOL, REFERENCE_TOL = 1e-6, 1e-11


def load_params(profile: str, target: str) -> dict:
    import yaml

    from networkedfl.experiments.variants import deep_merge, variant_params

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))
    if profile == "test":
        config = deep_merge(config, yaml.safe_load((REPO / "config" / "test.yaml").read_text(encoding="utf-8")))
    return variant_params(config["experiments"][target], "paper")


class Recorder:
    """Wraps the job's ``gtv_primal_dual``: the iterations, certified gaps and restarts of its solves."""

    def __init__(self, solve):
        self.solve, self.calls = solve, []

    def __call__(self, *args, **kwargs):
        result = self.solve(*args, **kwargs)
        self.calls.append(result)
        return result


def run_job(params: dict, penalty: str, seed: int, target: str, solver: dict):
    from networkedfl.experiments.gtv import linear

    p = copy.deepcopy(params)
    p["solver"] = solver
    recorder = Recorder(linear.gtv_primal_dual)
    linear.gtv_primal_dual = recorder
    try:
        t = time.perf_counter()
        table = linear.run_gtv_linear(p, f"penalty-{penalty}", seed, 2023, experiment_id=target)
        seconds = time.perf_counter() - t
    finally:
        linear.gtv_primal_dual = recorder.solve
    return table, seconds, recorder.calls


def relative_differences(table, reference) -> dict[str, tuple[float, float, float]]:
    """Per metric, the grid point where ``|value / reference - 1|`` is largest: that difference,
    the value and the reference there (noise-free targets converge to errors near 0, where a
    large relative difference can be a small absolute one)."""
    key = [c for c in table.columns if c not in ("value",)]
    merged = table.merge(reference, on=key, suffixes=("", "_ref"))
    out = {}
    for metric in METRICS:
        rows = merged[merged["metric"] == metric]
        if rows.empty:
            continue
        value, ref = rows["value"].to_numpy(), rows["value_ref"].to_numpy()
        rel = np.abs(value - ref) / np.abs(ref)
        worst = int(np.argmax(rel))
        out[metric] = (float(rel[worst]), float(value[worst]), float(ref[worst]))
    return out


def rank_deficient(params: dict) -> bool:
    """Fewer samples than features per node (Table I, Fig. 2): the certificate is approximate."""
    spec = params["cluster_weights"]
    dim = int(spec["dim"]) if isinstance(spec, dict) else len(spec[0])
    return int(params["m"]) < dim


def measure(profile: str, target: str, max_iter: int, tol: float = TOL) -> list[dict]:
    params = load_params(profile, target)
    fast_solver = {"method": "restarted", "rel_gap_tol": tol, "max_iter": max_iter}
    reference_solver = {"method": "restarted", "rel_gap_tol": REFERENCE_TOL, "max_iter": max_iter}
    rows = []
    for penalty in params["lam"]:
        fixed, fixed_s, fixed_calls = run_job(params, penalty, 0, target, {"method": "pdhg"})
        fast, fast_s, fast_calls = run_job(params, penalty, 0, target, fast_solver)
        ref, _, ref_calls = run_job(params, penalty, 0, target, reference_solver)
        rows.append({
            "target": target, "penalty": penalty, "approximate": rank_deficient(params),
            "K": sorted({c.n_iter for c in fixed_calls}),
            "restarted_iters": [c.n_iter for c in fast_calls],
            "restarted_converged": all(c.converged for c in fast_calls),
            "reference_converged": all(c.converged for c in ref_calls),
            "K_diff": relative_differences(fixed, ref), "restarted_diff": relative_differences(fast, ref),
            "K_s": fixed_s, "restarted_s": fast_s,
        })
    return rows


def format_row(row: dict) -> str:
    def diffs(d: dict) -> str:
        cells = [d.get(m) for m in METRICS]
        return " ".join(f"{c[0]:8.1e} ({c[1]:.2e} vs {c[2]:.2e})" if c else f"{'-':>29}" for c in cells)

    its = row["restarted_iters"]
    iters = f"{max(its)} ({sum(its)})" + ("" if row["restarted_converged"] else " cap")
    note = "" if row["reference_converged"] else "  reference not converged (max_iter)"
    if row["approximate"]:
        note += "  m < d: certificate up to the conjugate's round-off allowance"
    return (f"{row['target']:<26} {row['penalty']:<7} {'/'.join(map(str, row['K'])):>9}  {diffs(row['K_diff'])}  "
            f"{iters:>12}  {diffs(row['restarted_diff'])}  {row['K_s']:6.2f} {row['restarted_s']:6.2f}{note}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=["test", "default"], default="test")
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated target ids")
    parser.add_argument("--max-iter", type=int, default=20_000, help="the most iterations of the restarted runs")
    parser.add_argument("--tol", type=float, default=TOL, help=f"rel_gap_tol of the restarted run (default {TOL:g})")
    args = parser.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t]
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        parser.error(f"--targets: not linear GTV targets: {unknown}")
    print(f"Linear GTV targets, paper variant, seed 0, {args.profile} profile, restarted to {args.tol:g}: "
          "relative difference of each "
          f"metric from the reference (restarted to a certified relative gap of {REFERENCE_TOL:g}), largest "
          "over the grid points, with the value and the reference there")
    head = " ".join(f"{m:>29}" for m in METRICS)
    print(f"{'target':<26} {'penalty':<7} {'K':>9}  {head}  {'restarted it':>12}  {head}  {'K s':>6} {'rst s':>6}")
    print("(restarted it: the most iterations of one grid point's problem, and in all; the restarted "
          "solver takes the problems one at a time)")
    sys.stdout.flush()
    for target in targets:
        for row in measure(args.profile, target, args.max_iter, args.tol):
            print(format_row(row), flush=True)


if __name__ == "__main__":
    main()
