"""Time to a certified relative gap: the GTV primal-dual solver against cvxpy + Clarabel.

The problem is GTV minimisation (GTV paper eq. (16)) with the average squared error of a
linear model at the nodes with data (eq. (38)) and the nLasso penalty (``--penalties``
adds ``l1`` and ``mocha``), on a stochastic block model like the GTV experiments':

* two equal clusters; up to 1,000 nodes the dense SBM of GTV Sec. IX-B (``p_in = 0.5``,
  ``p_out = 0.01``, as ``bench_primal_dual.py`` and the issue's 200-node case), larger
  graphs a sparse SBM of mean degree about 20 (``p_in = 0.9 * 20 / (n/2)``, ``p_out =
  0.1 * 20 / (n/2)``);
* ``m = 5`` samples per node, ``d = 2``, true weights ``(2, 2)`` and ``(-2, 2)`` per
  cluster, noise-free labels (GTV Fig. 9's setting, ``sigma = 0``);
* 0 % or 40 % of the nodes without data (the trivial loss; the sampling set drawn
  uniformly), ``lambda`` in 0.001, 0.01, 0.1, 0.3; one graph and data set per node count
  (``--seed``), the same for every fraction and ``lambda``.

Every cell solves the same objective three ways, each with its own stopping rule (none of
them is an iteration count chosen afterwards):

* **after**: ``gtv_primal_dual(method="restarted", rel_gap_tol=1e-6)`` (adaptive restarts,
  primal weight and step scale; stops once the *certified* relative gap is at most 1e-6);
* **before**: ``gtv_primal_dual(method="pdhg", rel_gap_tol=1e-6)``: Algorithm 1 with its
  fixed steps and the same certified stopping rule, evaluated every 10 iterations (the
  solver's ``gap_every`` default);
* **cvxpy + Clarabel**: the same objective written in cvxpy (``sum_squares`` of the
  block-diagonal design at the nodes with data over ``m``, plus ``lambda A_e`` times the
  penalty of ``D W``), solved by Clarabel with ``tol_gap_abs = tol_gap_rel = tol_feas =
  1e-6``; its time is the whole ``Problem.solve`` call (cvxpy's compilation and Clarabel),
  and Clarabel's own solve time is reported beside it.

Both solutions are then evaluated with one objective function (``gtv_objective``) and
compared with the certified lower bound of the *after* run (its primal objective minus
its gap): ``excess = (P(w) - lower) / P(w)`` must be at most 1e-6 for a solution to count as
reaching the target, and the two objectives must agree to that tolerance.

Each cell's solvers run in fresh subprocesses (this script with ``--cell``), with BLAS
and OpenMP limited to ``--threads`` (default 1); ours are timed after a warm-up call (the
numba kernels load), as the median of ``--repeats`` calls (1 at 20,000 nodes), cvxpy once
(its warm-up is a separate small problem in the same process), with a time limit
(``--cvxpy-timeout``: a cell that hits it reports a bound) and a cap on its address space
(``--cvxpy-memory-gib``, default 8: on a shared machine a cell that needs more fails and says
so instead of swapping; cvxpy + Clarabel exceeded 10 GiB at 20,000 nodes here).  Without cvxpy or clarabel
installed (``pip install -e '.[bench]'``) the cvxpy columns say so and the rest runs.
The script never asserts and exits 0 whatever the figures are.

Usage::

    .venv/bin/python benchmarks/bench_gtv_solver.py --quick        # n = 200, 4 cells
    .venv/bin/python benchmarks/bench_gtv_solver.py                # the full grid
    .venv/bin/python benchmarks/bench_gtv_solver.py --sizes 200,2000 --json out.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_primal_dual import (  # noqa: E402
    THREAD_VARS,
    _blas_info,
    _limit_threads,
    _maxrss_mib,
    _numba_version,
)

SIZES, QUICK_SIZES = (200, 2000, 20_000), (200,)
LAMS, QUICK_LAMS = (0.001, 0.01, 0.1, 0.3), (0.001, 0.3)
UNLABELLED = (0.0, 0.4)
TOL = 1e-6
MAX_ITER = 100_000
SMALL_GRAPH_MAX_NODES = 1000
MEAN_DEGREE = 20.0
SAMPLES, DIM, NOISE = 5, 2, 0.0
CLUSTER_WEIGHTS = ((2.0, 2.0), (-2.0, 2.0))
CVXPY_TIMEOUT = 1800.0
CVXPY_MEMORY_GIB = 8.0


def cvxpy_missing() -> str | None:
    """Why cvxpy + Clarabel cannot run here, or ``None``."""
    missing = [name for name in ("cvxpy", "clarabel") if importlib.util.find_spec(name) is None]
    if missing:
        return (f"{' and '.join(missing)} not installed (pip install -e '.[bench]'): "
                "the cvxpy + Clarabel columns are skipped")
    return None


# ---------------------------------------------------------------------------------------
# The problem
# ---------------------------------------------------------------------------------------


def sbm_probabilities(n: int) -> tuple[float, float]:
    if n <= SMALL_GRAPH_MAX_NODES:
        return 0.5, 0.01
    half = n / 2
    return 0.9 * MEAN_DEGREE / half, 0.1 * MEAN_DEGREE / half


def make_problem(n: int, unlabelled: float, seed: int):
    """The SBM and the loss: the graph and data drawn once per node count (the same for
    every fraction and lambda), the sampling set of ``1 - unlabelled`` of the nodes drawn
    uniformly from a stream of its own."""
    import numpy as np

    from networkedfl.graphs import stochastic_block_model
    from networkedfl.gtv import (
        SquaredErrorLoss,
        cluster_weights_per_node,
        linear_model_data,
        sampling_mask,
    )

    rng = np.random.default_rng([seed, n])
    p_in, p_out = sbm_probabilities(n)
    graph = stochastic_block_model([n // 2, n - n // 2], p_in, p_out, rng)
    true_w = cluster_weights_per_node(graph.clusters, np.asarray(CLUSTER_WEIGHTS)[:, :DIM])
    data = linear_model_data(true_w, SAMPLES, NOISE, rng)
    mask_rng = np.random.default_rng([seed, n, 1])
    mask = sampling_mask(n, 1.0 - unlabelled, mask_rng) if unlabelled > 0 else np.ones(n, bool)
    return graph, SquaredErrorLoss(data, mask)


# ---------------------------------------------------------------------------------------
# Children
# ---------------------------------------------------------------------------------------


def run_ours(cell: dict) -> dict:
    from networkedfl.gtv import gtv_objective, gtv_primal_dual

    graph, loss = make_problem(cell["nodes"], cell["unlabelled"], cell["seed"])
    _ = graph.incidence, loss._quadratic, loss._eig  # the loss's cached forms: setup, not solve
    penalty, lam = cell["penalty"], cell["lam"]
    out = {"edges": graph.n_edges, "isolated": int(graph.isolated_nodes.size)}
    if out["isolated"]:
        return {**out, "error": f"{out['isolated']} isolated nodes; change --seed"}

    def solve(method: str, n_iter: int = MAX_ITER):
        return gtv_primal_dual(graph, loss, penalty, lam, n_iter, method=method, rel_gap_tol=TOL)

    solve("restarted", 2)  # warm-up: the kernels load, first-call overheads
    times = []
    for _ in range(cell["repeats"]):
        t = time.perf_counter()
        after = solve("restarted")
        times.append(time.perf_counter() - t)
    out["after"] = {"seconds": statistics.median(times), "all": times, "iters": after.n_iter,
                    "restarts": after.n_restarts, "converged": after.converged,
                    "rel_gap": after.rel_gap, "gap": after.gap, "primal_weight": after.primal_weight,
                    "objective": gtv_objective(graph, loss, penalty, lam, after.weights)}
    out["lower"] = out["after"]["objective"] - after.gap  # certified: <= the optimum
    out["rss_mib"] = _maxrss_mib()  # peak of this process: imports, problem, solves
    if cell["before"]:
        t = time.perf_counter()
        before = solve("pdhg", cell["before_max_iter"])
        out["before"] = {"seconds": time.perf_counter() - t, "iters": before.n_iter,
                         "converged": before.converged, "rel_gap": before.rel_gap,
                         "objective": gtv_objective(graph, loss, penalty, lam, before.weights)}
    return out


def cvxpy_problem(graph, loss, penalty: str, lam: float):
    """The GTV objective of ``loss`` (mean squared error at the nodes with data) in cvxpy."""
    import cvxpy as cp
    import numpy as np
    import scipy.sparse as sp

    x, y, mask = loss.data.features, loss.data.labels, loss.mask
    n, m, d = x.shape
    nodes = np.flatnonzero(mask)
    # block-diagonal design: row (i, s) of node i holds x_is in the columns of w_i
    rows = np.repeat(np.arange(nodes.size * m), d)
    cols = np.tile(np.arange(d), nodes.size * m) + np.repeat(nodes * d, m * d)
    design = sp.csr_matrix((x[nodes].reshape(-1), (rows, cols)), shape=(nodes.size * m, n * d))
    w = cp.Variable((n, d))
    fit = cp.sum_squares(design @ cp.reshape(w, (n * d,), order="C") - y[nodes].reshape(-1)) / m
    diff = graph.incidence @ w
    radius = lam * graph.weights
    if penalty == "nlasso":
        reg = radius @ cp.norm(diff, 2, axis=1)
    elif penalty == "l1":
        reg = cp.sum(cp.multiply(radius[:, None], cp.abs(diff)))
    else:
        reg = radius @ cp.sum(cp.square(diff), axis=1)
    return cp.Problem(cp.Minimize(fit + reg)), w


def run_cvxpy(cell: dict) -> dict:
    if cell.get("memory_gib"):  # a cap on the address space: fail, not swap a shared machine
        import resource

        cap = int(cell["memory_gib"] * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    import cvxpy as cp

    from networkedfl.gtv import gtv_objective

    options = {"tol_gap_abs": TOL, "tol_gap_rel": TOL, "tol_feas": TOL}
    warm_graph, warm_loss = make_problem(20, cell["unlabelled"], cell["seed"])  # imports, first call
    cvxpy_problem(warm_graph, warm_loss, cell["penalty"], cell["lam"])[0].solve(solver=cp.CLARABEL, **options)
    graph, loss = make_problem(cell["nodes"], cell["unlabelled"], cell["seed"])
    _ = graph.incidence
    t = time.perf_counter()
    problem, w = cvxpy_problem(graph, loss, cell["penalty"], cell["lam"])
    problem.solve(solver=cp.CLARABEL, **options)
    seconds = time.perf_counter() - t
    stats = problem.solver_stats
    out = {"seconds": seconds, "solve_seconds": stats.solve_time, "iters": stats.num_iters,
           "status": problem.status}
    if w.value is not None:
        out["objective"] = gtv_objective(graph, loss, cell["penalty"], cell["lam"], w.value)
    return out


def child_main(args: argparse.Namespace) -> None:
    cell = json.loads(args.cell)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        result = (run_ours if cell["solver"] == "ours" else run_cvxpy)(cell)
    else:
        with threadpool_limits(limits=args.threads):
            result = (run_ours if cell["solver"] == "ours" else run_cvxpy)(cell)
    print(json.dumps(result))


def spawn(cell: dict, threads: int, timeout: float) -> dict:
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = str(threads)
    cmd = [sys.executable, os.path.abspath(__file__), "--cell", json.dumps(cell), "--threads", str(threads)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        return {"error": f"exit code {proc.returncode}: {tail}"}
    return json.loads(lines[-1])


# ---------------------------------------------------------------------------------------
# Parent
# ---------------------------------------------------------------------------------------


def excess(objective: float | None, lower: float) -> float:
    """``(P(w) - lower) / P(w)``: a certified bound on the relative sub-optimality."""
    if objective is None:
        return float("nan")
    return (objective - lower) / abs(objective) if objective else float("nan")


def measure_cell(cell: dict, args: argparse.Namespace, skip_cvxpy: str | None) -> dict:
    ours = spawn({**cell, "solver": "ours"}, args.threads, args.timeout)
    row = {**cell, "ours": ours}
    if "error" in ours or "timeout" in ours:
        return row
    lower = ours["lower"]
    row["after_excess"] = excess(ours["after"]["objective"], lower)
    if "before" in ours:
        row["before_excess"] = excess(ours["before"]["objective"], lower)
    if skip_cvxpy is None:
        t = time.perf_counter()
        cvx = spawn({**cell, "solver": "cvxpy", "memory_gib": args.cvxpy_memory_gib}, args.threads,
                    args.cvxpy_timeout)
        if "error" in cvx and args.cvxpy_memory_gib:
            cvx["error"] = (f"failed after {time.perf_counter() - t:.0f} s under the {args.cvxpy_memory_gib:g} GiB "
                            f"address-space cap ({cvx['error'][-160:]})")
        row["cvxpy"] = cvx
        if "seconds" in cvx:
            row["cvxpy_excess"] = excess(cvx.get("objective"), lower)
            row["ratio_total"] = ours["after"]["seconds"] / cvx["seconds"]
            row["ratio_solve"] = ours["after"]["seconds"] / cvx["solve_seconds"]
        elif "timeout" in cvx:
            row["ratio_total"] = ours["after"]["seconds"] / cvx["timeout"]  # an upper bound
    return row


def cells(args: argparse.Namespace) -> list[dict]:
    return [{"nodes": n, "unlabelled": unl, "lam": lam, "penalty": penalty, "seed": args.seed,
             "repeats": 1 if n >= 20_000 else args.repeats, "before": not args.no_before,
             "before_max_iter": args.before_max_iter}
            for penalty in args.penalties for n in args.sizes for unl in UNLABELLED for lam in args.lams]


def _fmt_s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f}"


def format_row(row: dict) -> str:
    ours = row["ours"]
    head = f"{row['penalty']:>6} {row['nodes']:>6} {ours.get('edges', 0):>7} {row['unlabelled']:>4.0%} {row['lam']:>6g}"
    if "error" in ours or "timeout" in ours:
        why = ours.get("error") or f"timed out after {ours['timeout']:.0f} s"
        return f"{head}  ERROR: {why}"
    after, before = ours["after"], ours.get("before")
    cvx = row.get("cvxpy", {})
    if "seconds" in cvx:
        cvx_cells = (f"{cvx['seconds']:9.3f} {cvx['solve_seconds']:9.3f} {row['ratio_total']:7.3f} "
                     f"{row['ratio_solve']:7.3f} {row['cvxpy_excess']:9.1e}")
    elif "timeout" in cvx:
        cvx_cells = f"{'>' + format(cvx['timeout'], '.0f'):>9} {'-':>9} {'<' + format(row['ratio_total'], '.3f'):>7} {'-':>7} {'-':>9}"
    elif "error" in cvx:
        cvx_cells = f"ERROR: {cvx['error']}"
    else:
        cvx_cells = f"{'-':>9} {'-':>9} {'-':>7} {'-':>7} {'-':>9}"
    before_cells = (f"{before['iters']:>7}{'' if before['converged'] else '+'} {before['seconds']:8.3f}"
                    if before else f"{'-':>7} {'-':>8}")
    return (f"{head} {before_cells} {after['iters']:>6}{'' if after['converged'] else '+'} "
            f"{after['restarts']:>3} {after['seconds']:8.3f} {after['rel_gap']:8.1e} {row['after_excess']:9.1e} {cvx_cells}")


HEADER = (f"{'pen':>6} {'nodes':>6} {'edges':>7} {'unl':>4} {'lambda':>6} {'it bef':>7} {'s bef':>8} "
          f"{'it aft':>6} {'rst':>3} {'s aft':>8} {'rel gap':>8} {'excess':>9} {'cvxpy s':>9} "
          f"{'clarabel':>9} {'aft/cvx':>7} {'aft/cla':>7} {'cvx exc':>9}")


def summary(rows: list[dict]) -> list[str]:
    lines = []
    timed = [r for r in rows if "ratio_total" in r]
    if timed:
        worst = max(timed, key=lambda r: r["ratio_total"])
        faster = sum(r["ratio_total"] < 1 for r in timed)
        lines.append(f"after / cvxpy + Clarabel (whole solve call): below 1 in {faster} of {len(timed)} cells; "
                     f"largest {worst['ratio_total']:.3f} (n = {worst['nodes']}, {worst['unlabelled']:.0%} "
                     f"without data, lambda = {worst['lam']:g})")
        solve = [r for r in timed if "ratio_solve" in r]
        if solve:
            worst = max(solve, key=lambda r: r["ratio_solve"])
            lines.append(f"after / Clarabel's own solve time: largest {worst['ratio_solve']:.3f} (n = {worst['nodes']}, "
                         f"{worst['unlabelled']:.0%}, lambda = {worst['lam']:g})")
    for n in sorted({r["nodes"] for r in rows}):
        peaks = [r["ours"]["rss_mib"] for r in rows if r["nodes"] == n and "rss_mib" in r["ours"]]
        if peaks:
            lines.append(f"n = {n}: peak RSS of the process of ours (imports, problem, all solves) at most {max(peaks):.0f} MiB")
    reached = [r for r in rows if "cvxpy_excess" in r]
    if reached:
        ok = sum(r["cvxpy_excess"] <= TOL for r in reached)
        lines.append(f"cvxpy + Clarabel within {TOL:g} of the certified lower bound in {ok} of {len(reached)} cells "
                     "(the same objective to the tolerance where both are)")
    return lines


def parent_main(args: argparse.Namespace) -> None:
    import numpy as np
    import scipy

    import networkedfl

    skip = cvxpy_missing() if not args.no_cvxpy else "--no-cvxpy: the cvxpy + Clarabel columns are skipped"
    versions = ""
    if skip is None:
        import clarabel
        import cvxpy

        versions = f"  cvxpy {cvxpy.__version__}  clarabel {clarabel.__version__}"
    print("GTV solver: time to a certified relative gap of 1e-6 (networkedfl.gtv_primal_dual vs cvxpy + Clarabel)")
    print(f"python {platform.python_version()}  numpy {np.__version__}  scipy {scipy.__version__}  "
          f"networkedfl {networkedfl.__version__}  numba {_numba_version() or 'not installed'}{versions}")
    print(f"platform {platform.platform()}  CPUs {os.cpu_count()}  threads {args.threads}; BLAS pools: {_blas_info()}")
    print(f"SBM, 2 equal clusters (n <= {SMALL_GRAPH_MAX_NODES}: p_in 0.5, p_out 0.01; larger: mean degree "
          f"~{MEAN_DEGREE:g}), m = {SAMPLES}, d = {DIM}, noise {NOISE}, seed {args.seed}")
    if skip:
        print(skip)
    print("it bef / s bef: fixed-step Algorithm 1 ('pdhg') to the certified rel. gap (+: cap reached); "
          "it aft / rst / s aft: method='restarted' (iterations, restarts, median seconds)")
    print("excess, cvx exc: (P(w) - certified lower bound) / P(w) of each solution, one objective function")
    print()
    print(HEADER)
    rows = []
    for cell in cells(args):
        row = measure_cell(cell, args, skip)
        rows.append(row)
        print(format_row(row), flush=True)
    print()
    for line in summary(rows):
        print(line)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"skip_cvxpy": skip, "rows": rows}, fh, indent=1)


def parse_list(kind):
    def parse(text: str):
        return [kind(float(s)) if kind is int else kind(s) for s in text.split(",") if s]
    return parse


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 200 and lambda 0.001, 0.3 only")
    parser.add_argument("--sizes", type=parse_list(int), default=None, help="node counts, e.g. 200,2000,2e4")
    parser.add_argument("--lams", type=parse_list(float), default=None, help="lambda values")
    parser.add_argument("--penalties", type=parse_list(str), default=["nlasso"], help="nlasso,l1,mocha")
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls of ours per cell (1 at 20,000 nodes)")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--no-before", action="store_true", help="skip the fixed-step runs")
    parser.add_argument("--before-max-iter", type=int, default=MAX_ITER, help="cap of the fixed-step runs")
    parser.add_argument("--no-cvxpy", action="store_true", help="skip cvxpy + Clarabel")
    parser.add_argument("--cvxpy-timeout", type=float, default=CVXPY_TIMEOUT, help="seconds per cvxpy cell")
    parser.add_argument("--cvxpy-memory-gib", type=float, default=CVXPY_MEMORY_GIB,
                        help=f"address-space cap of a cvxpy cell's process (default {CVXPY_MEMORY_GIB:g}; 0: none)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per cell of ours")
    parser.add_argument("--json", default=None, help="also write the rows as JSON")
    parser.add_argument("--cell", default=None, help=argparse.SUPPRESS)  # internal: child
    args = parser.parse_args(argv)
    if args.threads < 1 or args.repeats < 1:
        parser.error("--threads and --repeats must be >= 1")
    _limit_threads(args.threads)  # before numpy is imported anywhere in this process
    if args.cell is not None:
        child_main(args)
        return
    if args.sizes is None:
        args.sizes = list(QUICK_SIZES if args.quick else SIZES)
    if args.lams is None:
        args.lams = list(QUICK_LAMS if args.quick else LAMS)
    unknown = sorted(set(args.penalties) - {"nlasso", "l1", "mocha"})
    if unknown:
        parser.error(f"--penalties: unknown {unknown}")
    parent_main(args)


if __name__ == "__main__":
    main()
