"""Speed and memory of the GTV primal-dual solver (:func:`networkedfl.gtv_primal_dual`).

Every case (graph size x penalty) runs in a fresh Python process (this script re-invoked
with ``--case``), so that the peak resident set size reported for a case is that case's
own: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of the child process.  The table shows

* ``setup s``: graph generation (stochastic block model), local datasets, sampling mask,
  loss, and the cached incidence matrix / quadratic forms -- not part of the timing;
* ``solver setup ms``: the part of one ``gtv_primal_dual`` call that is not the iteration
  loop (step sizes, transposed incidence, the batched prox inverses, reused buffers):
  the median time of calls with ``n_iter=1`` less one iteration;
* ``ms/iter``: ``(median time of a call with n_iter=K - median with n_iter=1) / (K - 1)``,
  the medians taken over ``--repeats`` calls;
* ``solve s``: median time of the whole ``n_iter=K`` call;
* ``RSS MiB``: peak RSS of the child after imports / after setup / at the end (the peak
  over the whole process, including setup);
* ``tracemalloc MiB``: peak of the memory traced by :mod:`tracemalloc` during one extra
  ``n_iter=K`` call (numpy registers its allocations with tracemalloc), i.e. what the
  solver itself allocates on top of its inputs.

The table times ``gtv_primal_dual`` with its default ``kernel="auto"`` (the fused numba
kernels when numba is installed, else NumPy; the ``kernel`` column says which).

For the sparse cases (more than 1000 nodes; the bar is for 10^5 nodes, about 10^6 edges,
d = 2, nLasso) the child also runs ``--rounds`` interleaved rounds, in the same process,
of: the solver with each kernel, ``kernel="numba"`` (when numba is installed) and
``kernel="numpy"`` (per iteration, as above, from calls with ``n_iter=1`` and ``n_iter=K``);
scipy's two sparse products with the incidence matrix alone, ``D @ x`` and ``D.T @ y``
with ``x`` of shape ``(n, d)`` and ``y`` of shape ``(E, d)``, both ways scipy offers them
(2-D C-order arrays, ``D.T`` the CSC view; column by column, ``D.T`` a CSR copy, as the
solver took them before); and ``np.copyto`` of an ``(E, d)`` float64 array.  It prints
the median time of each, for each kernel the median over the rounds of the ratio solver /
products (for the faster way of the products), and the achieved bandwidth: the bytes of
the edge and node arrays an iteration must touch (each read or written once; see
:func:`iteration_bytes`) per second, against the copy's (bytes read + written) per second.

BLAS/OpenMP threads are limited to ``--threads`` through the usual environment variables,
set before numpy is imported (and through threadpoolctl when it is installed).  The
PASS/FAIL lines compare with the performance bar; they are information only: the script
never asserts and exits 0 whatever the figures are.

Usage::

    .venv/bin/python benchmarks/bench_primal_dual.py            # full run
    .venv/bin/python benchmarks/bench_primal_dual.py --quick    # smoke run, seconds
    .venv/bin/python benchmarks/bench_primal_dual.py --sizes 200,100000 --threads 2
    .venv/bin/python benchmarks/bench_primal_dual.py --sizes 1e5 --rounds 9   # the products bar
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)

SMALL_GRAPH_MAX_NODES = 1000  # up to this size: the dense SBM of the GTV experiments
ROUNDS, QUICK_ROUNDS = 7, 3  # interleaved rounds solver / scipy products / copy (sparse cases)
DEFAULT_SIZES = (200, 10_000, 100_000)
QUICK_SIZES = (200, 10_000)
MEAN_DEGREE = 20.0
SAMPLES_PER_NODE = 5
DIM = 2
SAMPLING_FRACTION = 0.6
NOISE_STD = 0.0  # as the GTV Fig. 9 setting (config gtv_fig09_sbm_sampling, sigma 0)
LAM = 0.01  # lambda of the GTV SBM experiments (config gtv_fig09_sbm_sampling)
CLUSTER_WEIGHTS = ((2.0, 2.0), (-2.0, 2.0))

# The performance bar (reported, never asserted).
BAR_SMALL_NODES = 200
BAR_SMALL_MS_PER_ITER = 0.5
BAR_LARGE_NODES = 100_000
BAR_LARGE_ITERS = 100
BAR_LARGE_SECONDS = 60.0
BAR_LARGE_RSS_MIB = 4096.0
BAR_PRODUCTS_RATIO = 1.0  # solver iteration / scipy's two products D @ x, D.T @ y (10^5 nodes)


def _maxrss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024.0 if sys.platform != "darwin" else kib / 2**20


def _limit_threads(threads: int) -> None:
    """Set the thread-count variables; must run before numpy/scipy are imported."""
    for var in THREAD_VARS:
        os.environ[var] = str(threads)


def _numba_version() -> str | None:
    """numba's version, or ``None`` if it cannot be imported (the solver then uses NumPy)."""
    try:
        import numba
    except ImportError:
        return None
    return numba.__version__


def _blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    pools = threadpool_info()
    if not pools:
        return "no BLAS/OpenMP pool detected"
    return ", ".join(f"{p['internal_api']}={p['num_threads']}" for p in pools)


# ---------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------


def make_cases(args: argparse.Namespace) -> list[dict]:
    """One dict per (size, penalty): everything the child process needs."""
    cases = []
    for n in args.sizes:
        sizes = [n // 2, n - n // 2]
        if n <= SMALL_GRAPH_MAX_NODES:
            # GTV Sec. IX-B: dense SBM, compared across all three penalties.
            p_in, p_out = 0.5, 0.01
            penalties = ["nlasso", "l1", "mocha"]
            n_iter = 300 if args.quick else 3000
        else:
            # Sparse SBM with mean degree ~ MEAN_DEGREE: 90 % of it inside the cluster.
            half = n / 2
            p_in, p_out = 0.9 * MEAN_DEGREE / half, 0.1 * MEAN_DEGREE / half
            penalties = ["nlasso"]
            n_iter = 20 if args.quick else 100
        if args.iterations is not None:
            n_iter = args.iterations
        for penalty in penalties:
            cases.append(
                {
                    "nodes": n,
                    "cluster_sizes": sizes,
                    "p_in": p_in,
                    "p_out": p_out,
                    "samples": SAMPLES_PER_NODE,
                    "dim": DIM,
                    "fraction": SAMPLING_FRACTION,
                    "penalty": penalty,
                    "n_iter": n_iter,
                    "repeats": args.repeats,
                    "rounds": 0 if n <= SMALL_GRAPH_MAX_NODES else args.rounds,
                    "seed": args.seed,
                }
            )
    return cases


def run_case(case: dict) -> dict:
    """Run one case in this (fresh) process and return its measurements."""
    t0 = time.perf_counter()
    import numpy as np

    from networkedfl.graphs import stochastic_block_model
    from networkedfl.gtv import (
        SquaredErrorLoss,
        cluster_weights_per_node,
        gtv_primal_dual,
        linear_model_data,
        sampling_mask,
    )

    out: dict = {"import_s": time.perf_counter() - t0, "rss_import_mib": _maxrss_mib()}

    # ---- setup (not timed as part of the iteration) ----
    t0 = time.perf_counter()
    rng = np.random.default_rng(case["seed"])
    graph = stochastic_block_model(case["cluster_sizes"], case["p_in"], case["p_out"], rng)
    out["graph_s"] = time.perf_counter() - t0
    out["edges"] = graph.n_edges
    out["isolated"] = int(graph.isolated_nodes.size)
    if out["isolated"]:
        out["error"] = f"{out['isolated']} isolated nodes (tau = 1/deg undefined); change --seed"
        return out
    t1 = time.perf_counter()
    cluster_w = np.asarray(CLUSTER_WEIGHTS, float)[:, : case["dim"]]
    true_w = cluster_weights_per_node(graph.clusters, cluster_w)
    data = linear_model_data(true_w, case["samples"], NOISE_STD, rng)
    mask = sampling_mask(graph.n_nodes, case["fraction"], rng)
    loss = SquaredErrorLoss(data, mask)
    # Warm the caches the solver reads, so that they count as setup, not as solve.
    _ = graph.incidence, graph.degrees, loss._quadratic
    out["data_s"] = time.perf_counter() - t1
    out["setup_s"] = time.perf_counter() - t0
    out["rss_setup_mib"] = _maxrss_mib()

    n_iter, penalty = case["n_iter"], case["penalty"]

    def solve(k: int, kernel: str = "auto"):
        return gtv_primal_dual(graph, loss, penalty, LAM, k, kernel=kernel)

    out["kernel"] = "numba" if _numba_version() else "numpy"  # what "auto" picks here

    # ---- timing ----
    n_iter = max(n_iter, 2)
    solve(2)  # warm-up: first-call overheads (lazy imports, page faults)
    one_times, solve_times = [], []
    for _ in range(case["repeats"]):
        t = time.perf_counter()
        solve(1)
        one_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        result = solve(n_iter)
        solve_times.append(time.perf_counter() - t)
    one, out["solve_s"] = statistics.median(one_times), statistics.median(solve_times)
    out["solve_s_all"] = solve_times
    out["s_per_iter"] = max(out["solve_s"] - one, 0.0) / (n_iter - 1)
    out["solver_setup_s"] = max(one - out["s_per_iter"], 0.0)
    out["n_iter_done"] = result.n_iter
    out["mse"] = float(np.mean((result.weights - true_w) ** 2))
    out["rss_peak_mib"] = _maxrss_mib()  # before the rounds' own arrays
    if case.get("rounds"):
        kernels = ("numba", "numpy") if _numba_version() else ("numpy",)
        out["rounds"] = interleaved_rounds(graph, solve, case["dim"], case["rounds"], min(n_iter, 10),
                                           kernels)

    # ---- what the solver call itself allocates (untimed extra call) ----
    del result
    tracemalloc.start()
    tracemalloc.reset_peak()
    solve(n_iter)
    out["tracemalloc_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    out["blas"] = _blas_info()
    return out


def iteration_bytes(graph, dim: int) -> dict[str, int]:
    """Bytes one iteration must move at least: every array it needs, read or written once.

    ``products``: ``D @ x`` reads the CSR arrays of ``D`` (data, indices, indptr) and ``x``
    ``(n, d)`` and writes ``(E, d)``; ``D.T @ y`` reads the same arrays and ``y`` and writes
    ``(n, d)``.  ``solver``: ``D^T u`` as above; the ``+1``/``-1`` columns of the edges
    (two int64 per edge) for ``D v``; ``u`` read and written; the radius ``lambda A_e`` and
    its floor ``max(r_e, tiny)`` (nLasso); the node arrays ``w``, ``tau``, ``w_hat``,
    ``v``, ``w_new`` and the prox's inverses ``(n, d, d)`` and shifts ``(n, d)``.
    """
    inc = graph.incidence
    structure = inc.data.nbytes + inc.indices.nbytes + inc.indptr.nbytes
    n, e, f = graph.n_nodes, graph.n_edges, 8
    products = 2 * structure + 2 * (n * dim * f + e * dim * f)
    edge = structure + e * dim * f + 2 * e * 8 + 2 * e * dim * f + 2 * e * f
    node = n * dim * f * 6 + n * f + n * dim * dim * f
    return {"products": products, "solver": edge + node, "copy": 2 * e * dim * f}


def interleaved_rounds(graph, solve, dim: int, rounds: int, k: int, kernels=("numpy",)) -> dict:
    """Per-iteration times of the solver (each kernel), scipy's two products alone, and a copy.

    Every round runs, in this order: for each of ``kernels`` the solver with ``n_iter=1``
    and ``n_iter=k``; ``k`` times ``D @ x`` and ``D.T @ y`` on 2-D C-order arrays (``D.T``
    the CSC view); ``k`` times the same column by column (``D.T`` a CSR copy); ``k`` copies
    of an ``(E, d)`` array.  Medians over the rounds (seconds), and for each kernel the
    median of the per-round ratios solver / products.
    """
    import numpy as np

    rng = np.random.default_rng(0)
    d_mat = graph.incidence
    d_t, d_t_csr = d_mat.T, d_mat.T.tocsr()
    x = rng.standard_normal((graph.n_nodes, dim))
    y = rng.standard_normal((graph.n_edges, dim))
    y_cols = np.asfortranarray(y)
    src, dst = rng.standard_normal((graph.n_edges, dim)), np.empty((graph.n_edges, dim))

    def products_2d():
        d_mat @ x
        d_t @ y

    def products_columns():
        for j in range(dim):  # over the coordinates
            d_mat @ x[:, j]
            d_t_csr @ y_cols[:, j]

    def copy():
        np.copyto(dst, src)

    def per_call(fn) -> float:
        t = time.perf_counter()
        for _ in range(k):
            fn()
        return (time.perf_counter() - t) / k

    names = [f"solver_{kernel}" for kernel in kernels]
    times: dict[str, list[float]] = {name: [] for name in (*names, "products_2d", "products_columns", "copy")}
    products_2d(), products_columns(), copy()  # warm-up
    for kernel in kernels:
        solve(2, kernel)  # warm-up (the numba kernels' first call loads or compiles them)
    for _ in range(rounds):
        for kernel, name in zip(kernels, names, strict=True):
            t = time.perf_counter()
            solve(1, kernel)
            one = time.perf_counter() - t
            t = time.perf_counter()
            solve(k, kernel)
            times[name].append(max(time.perf_counter() - t - one, 0.0) / (k - 1))
        times["products_2d"].append(per_call(products_2d))
        times["products_columns"].append(per_call(products_columns))
        times["copy"].append(per_call(copy))
    out = {name: statistics.median(values) for name, values in times.items()}
    out["all"] = times
    out["kernels"] = list(kernels)
    best = [min(a, b) for a, b in zip(times["products_2d"], times["products_columns"], strict=True)]
    for kernel, name in zip(kernels, names, strict=True):
        solver = times[name]
        out[f"ratio_{kernel}"] = statistics.median(s / p for s, p in zip(solver, best, strict=True))
        for way in ("2d", "columns"):
            out[f"ratio_{kernel}_{way}"] = statistics.median(
                s / p for s, p in zip(solver, times[f"products_{way}"], strict=True))
    out["bytes"] = iteration_bytes(graph, dim)
    out["k"] = k
    return out


def child_main(args: argparse.Namespace) -> None:
    case = json.loads(args.case)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        result = run_case(case)
    else:
        with threadpool_limits(limits=args.threads):
            result = run_case(case)
    print(json.dumps(result))


# ---------------------------------------------------------------------------------------
# Parent: spawn one child per case and print the table
# ---------------------------------------------------------------------------------------


def spawn_case(case: dict, threads: int, timeout: float) -> dict:
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = str(threads)
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--case",
        json.dumps(case),
        "--threads",
        str(threads),
    ]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        return {"error": f"child exited with code {proc.returncode}: {tail}"}
    out = json.loads(lines[-1])
    out["process_wall_s"] = wall
    return out


COLUMNS = (
    # header, width, formatter(case, res)
    ("nodes", 7, lambda c, r: f"{c['nodes']}"),
    ("edges", 8, lambda c, r: f"{r['edges']}"),
    ("mean deg", 8, lambda c, r: f"{2 * r['edges'] / c['nodes']:.1f}"),
    ("d", 2, lambda c, r: f"{c['dim']}"),
    ("penalty", 7, lambda c, r: c["penalty"]),
    ("iters", 5, lambda c, r: f"{c['n_iter']}"),
    ("kernel", 6, lambda c, r: r.get("kernel", "?")),
    ("setup s", 7, lambda c, r: f"{r['setup_s']:.3f}"),
    ("solver setup ms", 15, lambda c, r: f"{1e3 * r['solver_setup_s']:.2f}"),
    ("ms/iter", 9, lambda c, r: f"{1e3 * r['s_per_iter']:.4f}"),
    ("solve s", 8, lambda c, r: f"{r['solve_s']:.3f}"),
    (
        "RSS MiB import/setup/peak",
        25,
        lambda c, r: f"{r['rss_import_mib']:.0f}/{r['rss_setup_mib']:.0f}/{r['rss_peak_mib']:.0f}",
    ),
    ("tracemalloc MiB", 15, lambda c, r: f"{r['tracemalloc_peak_mib']:.1f}"),
    ("w MSE", 9, lambda c, r: f"{r['mse']:.2e}"),
)


def format_row(cells: list[str]) -> str:
    return "  ".join(cell.rjust(width) for cell, (_, width, _) in zip(cells, COLUMNS, strict=True))


def bar_lines(case: dict, res: dict, threads: int) -> list[str]:
    """PASS/FAIL against the performance bar (information only)."""
    label = f"{case['nodes']} nodes, {case['penalty']}"
    lines = []
    if case["nodes"] == BAR_SMALL_NODES:
        ms = 1e3 * res["s_per_iter"]
        verdict = "PASS" if ms <= BAR_SMALL_MS_PER_ITER else "FAIL"
        note = "" if threads == 1 else f" (bar is for 1 thread; ran with {threads})"
        lines.append(
            f"{verdict}  [{label}] {ms:.4f} ms/iteration <= {BAR_SMALL_MS_PER_ITER} ms{note}"
        )
    elif case["nodes"] == BAR_LARGE_NODES:
        if case["n_iter"] == BAR_LARGE_ITERS:
            secs, how = res["solve_s"], "measured"
        else:
            secs = res["solver_setup_s"] + BAR_LARGE_ITERS * res["s_per_iter"]
            how = f"extrapolated from {case['n_iter']} iterations"
        ok_time = secs < BAR_LARGE_SECONDS
        ok_mem = res["rss_peak_mib"] < BAR_LARGE_RSS_MIB
        verdict = "PASS" if ok_time and ok_mem else "FAIL"
        lines.append(
            f"{verdict}  [{label}] {BAR_LARGE_ITERS} iterations in {secs:.2f} s ({how}) "
            f"< {BAR_LARGE_SECONDS:.0f} s: {'yes' if ok_time else 'no'}; "
            f"peak RSS {res['rss_peak_mib']:.0f} MiB < {BAR_LARGE_RSS_MIB:.0f} MiB: "
            f"{'yes' if ok_mem else 'no'}"
        )
    else:
        lines.append(f"----  [{label}] no bar defined for this size")
    rounds = res.get("rounds")
    if rounds:
        products = min(rounds["products_2d"], rounds["products_columns"])
        for kernel in rounds["kernels"]:
            ratio = rounds[f"ratio_{kernel}"]
            verdict = "PASS" if ratio <= BAR_PRODUCTS_RATIO else "FAIL"
            if case["nodes"] != BAR_LARGE_NODES:
                verdict = "----"
            lines.append(
                f"{verdict}  [{label}, kernel={kernel}] one iteration "
                f"{1e3 * rounds[f'solver_{kernel}']:.2f} ms vs scipy's two products D @ x, D.T @ y "
                f"alone {1e3 * products:.2f} ms: ratio {ratio:.2f} (median of "
                f"{len(rounds['all']['copy'])} interleaved rounds; bar <= {BAR_PRODUCTS_RATIO} at "
                f"{BAR_LARGE_NODES} nodes)"
            )
    return lines


def rounds_lines(case: dict, res: dict) -> list[str]:
    """The interleaved solver / products / copy table of a sparse case."""
    rounds = res.get("rounds")
    if not rounds:
        return []
    b = rounds["bytes"]
    rows = [(f"solver kernel={kernel}, one iteration", rounds[f"solver_{kernel}"], b["solver"],
             f"ratio this / products 2-D {rounds[f'ratio_{kernel}_2d']:.2f}, "
             f"by column {rounds[f'ratio_{kernel}_columns']:.2f}")
            for kernel in rounds["kernels"]]
    rows += [
        ("scipy D @ x + D.T @ y, 2-D (D.T CSC)", rounds["products_2d"], b["products"], ""),
        ("scipy D @ x + D.T @ y, by column (D.T CSR)", rounds["products_columns"], b["products"], ""),
        ("np.copyto of (E, d) float64", rounds["copy"], b["copy"], ""),
    ]
    copy_bw = b["copy"] / rounds["copy"]
    lines = [
        f"[{case['nodes']} nodes, {res['edges']} edges, d = {case['dim']}, {case['penalty']}] "
        f"interleaved rounds: {len(rounds['all']['copy'])} x {rounds['k']} iterations/calls, medians",
    ]
    for name, secs, nbytes, note in rows:
        bw = nbytes / secs
        lines.append(
            f"  {name:44s} {1e3 * secs:8.3f} ms  {nbytes / 2**20:7.1f} MiB  {bw / 1e9:6.1f} GB/s"
            f"  ({100 * bw / copy_bw:5.1f} % of copy)  {note}"
        )
    products = min(rounds["products_2d"], rounds["products_columns"])
    for kernel in rounds["kernels"]:
        lines.append(
            f"  ratio solver (kernel={kernel}) / faster products: median over the rounds "
            f"{rounds[f'ratio_{kernel}']:.2f}, of the medians {rounds[f'solver_{kernel}'] / products:.2f}"
        )
    return lines


def parent_main(args: argparse.Namespace) -> None:
    t_start = time.perf_counter()
    import numpy as np
    import scipy

    import networkedfl

    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    print("GTV primal-dual benchmark (networkedfl.gtv_primal_dual)")
    print(
        f"python {platform.python_version()}  numpy {np.__version__}  scipy {scipy.__version__}"
        f"  networkedfl {networkedfl.__version__}  numba {_numba_version() or 'not installed'}"
    )
    print(f"platform {platform.platform()}  processor {platform.processor() or 'n/a'}")
    print(f"CPU count {os.cpu_count()} (usable {affinity})")
    print(f"threads {args.threads} (set in {', '.join(THREAD_VARS)}); BLAS pools: {_blas_info()}")
    print(
        f"mode {'quick' if args.quick else 'full'}  sizes {','.join(map(str, args.sizes))}"
        f"  repeats {args.repeats}  rounds {args.rounds}  seed {args.seed}"
    )
    print(
        f"SBM with 2 equal clusters; m_i = {SAMPLES_PER_NODE}, d = {DIM}, sampling fraction "
        f"{SAMPLING_FRACTION}, noise std {NOISE_STD}, lambda {LAM}; n <= "
        f"{SMALL_GRAPH_MAX_NODES}: p_in 0.5, p_out 0.01; larger: mean degree ~{MEAN_DEGREE:g}"
        f" (p_in = 0.9*{MEAN_DEGREE:g}/(n/2), p_out = 0.1*{MEAN_DEGREE:g}/(n/2))"
    )
    print("each case runs in a fresh subprocess; ms/iter = (median solve K - median solve 1) / (K - 1)")
    print()

    header = format_row([name for name, _, _ in COLUMNS])
    print(header)
    print("-" * len(header))
    verdicts, details = [], []
    for case in make_cases(args):
        res = spawn_case(case, args.threads, args.timeout)
        if "error" in res:
            print(f"{case['nodes']:>7}  {case['penalty']:>7}  ERROR: {res['error']}")
            verdicts.append(f"FAIL  [{case['nodes']} nodes, {case['penalty']}] {res['error']}")
            continue
        print(format_row([fmt(case, res) for _, _, fmt in COLUMNS]), flush=True)
        verdicts.extend(bar_lines(case, res, args.threads))
        details.extend(rounds_lines(case, res))
    print()
    if details:
        print("Solver iteration against scipy's sparse products and a copy (bytes: see iteration_bytes)")
        for line in details:
            print("  " + line)
        print()
    print("Performance bar (information only; never asserted):")
    for line in verdicts:
        print("  " + line)
    print()
    print(f"total wall time {time.perf_counter() - t_start:.1f} s")


def parse_sizes(text: str) -> list[int]:
    sizes = [int(float(s)) for s in text.replace(" ", "").split(",") if s]
    if not sizes or any(n < 4 for n in sizes):
        raise argparse.ArgumentTypeError("sizes must be a comma-separated list of integers >= 4")
    return sizes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: sizes 200,10000 and 300/20 iterations"
    )
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=None,
        help="comma-separated node counts (2 equal clusters), e.g. 200,1e4,1e5; "
        "default 200,10000,100000 (quick: 200,10000)",
    )
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed repeats per case, median reported (default 3; quick: 2)",
    )
    parser.add_argument(
        "--iterations", type=int, default=None, help="override the iteration count of every case (>= 2)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help=f"interleaved solver/products/copy rounds of the sparse cases (default {ROUNDS}; "
        f"quick: {QUICK_ROUNDS}; 0: none)",
    )
    parser.add_argument("--seed", type=int, default=20240601, help="numpy default_rng seed")
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds allowed per case subprocess"
    )
    parser.add_argument("--case", default=None, help=argparse.SUPPRESS)  # internal: child
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be >= 1")
    _limit_threads(args.threads)  # before numpy is imported anywhere in this process
    if args.case is not None:
        child_main(args)
        return
    if args.sizes is None:
        args.sizes = list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    if args.repeats is None:
        args.repeats = 2 if args.quick else 3
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if args.rounds is None:
        args.rounds = QUICK_ROUNDS if args.quick else ROUNDS
    if args.rounds < 0:
        parser.error("--rounds must be >= 0")
    if args.iterations is not None and args.iterations < 2:
        parser.error("--iterations must be >= 2")
    parent_main(args)


if __name__ == "__main__":
    main()
