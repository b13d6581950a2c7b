"""DFL-SGD, gossip and GTV on one sparse graph of 10^5 to 10^6 nodes: wall time and peak memory.

Setting (issue 42, item 3): a ring of ``n`` nodes (``--graph ring``) or the union 6-NN graph
of ``n`` uniform random points in the unit square (``--graph knn``, built by
``networkedfl.graphs.knn_graph_of_points``: one k-d tree query, no ``n x n`` array; its
largest connected component, all but a few nodes, as DFL needs a connected graph), with
small local datasets: 2 samples of a noisy linear model in d = 3 per node.  Each size runs
in a fresh subprocess (this script re-invoked with ``--case``), so that its peak resident
set size (``getrusage(RUSAGE_SELF).ru_maxrss``) is its own.  The phases, in order, each
timed once (wall seconds) with the process's peak RSS after it:

Before them, every function runs once on a 16-node ring (torch's first ``vmap``, numba's
compilation), untimed; the process's RSS after that is shown ("RSS after warm-up").

* ``graph``: the graph and the local datasets (``ClientData`` for DFL, ``NodeData`` for GTV);
* ``mixing``: the Metropolis-Hastings mixing matrix (scipy CSR) and
  ``check_doubly_stochastic`` on it (sparse row and column sums);
* ``dfl_sgd``: ``networkedfl.algorithms.dfl_sgd``, 2 rounds of 2 local full-batch steps
  (the check, the torch sparse ``W`` and 2 sparse products ``W theta`` with ``theta`` (n, 3));
* ``gossip``: ``gossip_average`` of an ``(n, 3)`` numpy array, 10 steps (scipy products);
* ``decentralized_fedavg``: 1 round (one local epoch, then one gossip);
* ``gtv``: ``networkedfl.gtv.gtv_primal_dual``, nLasso, lambda 0.01, 10 iterations (PDHG),
  the squared-error loss on 60 % of the nodes.

The bar: the whole 10^6-node case within 8 GiB (and DFL-SGD at 10^5 within 2 GiB, which
``tests/unit/algorithms/test_sparse_scale.py`` checks under an address-space limit).
Nothing is asserted; the script exits 0 whatever the figures are.

Usage::

    .venv/bin/python benchmarks/bench_sparse_scale.py                      # 10^5 and 10^6, ring
    .venv/bin/python benchmarks/bench_sparse_scale.py --quick              # 10^4, seconds
    .venv/bin/python benchmarks/bench_sparse_scale.py --nodes 1e5 --graph knn --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SAMPLES, DIM, NOISE, SEED = 2, 3, 0.1, 0
DFL = dict(n_rounds=2, local_steps=2, lr=0.1, batch_size=None, seed=SEED)
GOSSIP_STEPS, GTV_ITER, GTV_LAM, FRACTION, KNN_K = 10, 10, 0.01, 0.6, 6
BAR_GIB = 8.0
PHASES = ("graph", "mixing", "dfl_sgd", "gossip", "decentralized_fedavg", "gtv")


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def make_graph(kind: str, n: int, rng):
    """A ring, or the largest connected component (all but a few nodes) of the union
    ``KNN_K``-NN graph of ``n`` uniform points in the unit square (DFL needs a connected graph)."""
    import numpy as np
    from scipy.sparse.csgraph import connected_components

    from networkedfl.graphs import knn_graph_of_points, ring

    if kind == "ring":
        return ring(n)
    graph = knn_graph_of_points(rng.random((n, 2)), KNN_K, rescale="unit")
    _, label = connected_components(graph.adjacency, directed=False)
    return graph.subgraph(np.flatnonzero(label == np.bincount(label).argmax()))


def run_case(n: int, kind: str) -> dict:
    """Every phase once, in this (fresh) process."""
    import numpy as np
    import torch

    from networkedfl.algorithms import (
        check_doubly_stochastic,
        decentralized_fedavg,
        dfl_sgd,
        gossip_average,
        mixing_matrix,
    )
    from networkedfl.gtv import SquaredErrorLoss, gtv_primal_dual, linear_model_data, sampling_mask
    from networkedfl.nn import ClientData, linear_regression

    def everything(graph, node_data, clients, w, values):
        yield dfl_sgd(linear_regression(DIM), clients, graph=graph, **DFL)
        yield gossip_average(values, w, GOSSIP_STEPS)
        yield decentralized_fedavg(linear_regression(DIM), clients, graph=graph, n_rounds=1, local_epochs=1,
                                   batch_size=SAMPLES, lr=0.1, seed=SEED)
        loss = SquaredErrorLoss(node_data, sampling_mask(graph.n_nodes, FRACTION, SEED))
        yield gtv_primal_dual(graph, loss, "nlasso", GTV_LAM, GTV_ITER)

    def data(graph, rng):
        node_data = linear_model_data(rng.standard_normal((graph.n_nodes, DIM)), SAMPLES, NOISE, rng)
        return node_data, ClientData.from_arrays(node_data.features, node_data.labels, dtype=torch.float64)

    # warm-up on 16 nodes (torch's first vmap, numba's compilation), untimed
    rng = np.random.default_rng(SEED)
    small = make_graph("ring", 16, rng)
    for _ in everything(small, *data(small, rng), mixing_matrix(small), rng.standard_normal((16, DIM))):
        pass
    out: dict = {"nodes": n, "graph": kind, "rss_import_mib": _maxrss_mib(), "phases": {}}

    def phase(name, fn):
        start = time.perf_counter()
        value = fn()
        out["phases"][name] = {"s": time.perf_counter() - start, "peak_rss_mib": _maxrss_mib()}
        return value

    rng = np.random.default_rng(SEED)

    def setup():
        graph = make_graph(kind, n, rng)
        return (graph, *data(graph, rng))

    graph, node_data, clients = phase("graph", setup)
    n = out["nodes"] = graph.n_nodes  # knn: the largest component
    out["edges"] = int(graph.n_edges)

    def mixing():
        w = mixing_matrix(graph)
        check_doubly_stochastic(w)
        return w

    w = phase("mixing", mixing)
    out["nnz_w"] = int(w.nnz)
    values = rng.standard_normal((n, DIM))
    runs = everything(graph, node_data, clients, w, values)
    res = phase("dfl_sgd", lambda: next(runs))
    out["dfl_consensus_distance"] = float(res.history[-1]["consensus_distance"])
    mixed = phase("gossip", lambda: next(runs))
    out["gossip_mean_drift"] = float(np.abs(mixed.mean(axis=0) - values.mean(axis=0)).max())
    del res, mixed
    phase("decentralized_fedavg", lambda: next(runs))
    res = phase("gtv", lambda: next(runs))
    out["gtv_weights_finite"] = bool(np.isfinite(res.weights).all())
    out["peak_rss_mib"] = _maxrss_mib()
    return out


def measure(n: int, kind: str, timeout: float) -> dict:
    """:func:`run_case` in a fresh subprocess; its JSON, or the error."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--case", json.dumps({"nodes": n, "graph": kind})]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"nodes": n, "graph": kind, "error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"nodes": n, "graph": kind, "error": f"exit {proc.returncode}: {last[:200]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


#: run_all.py's sizes (ring): ``--quick`` and full mode
QUICK_SIZES, FULL_SIZES = (10_000,), (100_000, 1_000_000)


def measure_all(sizes, kind: str = "ring", timeout: float = 1800.0) -> list[dict]:
    """:func:`measure` of every size, in turn."""
    rows = []
    for n in sizes:
        print(f"... {n:,} nodes ({kind})", file=sys.stderr, flush=True)
        rows.append(measure(int(n), kind, timeout))
    return rows


def render(rows: list[dict], *, markdown: bool = False) -> list[str]:
    """One row per size: seconds of each phase (peak RSS after it), the total peak and the bar."""
    head = ["nodes", "graph", "edges", "RSS after warm-up", *PHASES, "peak RSS", f"within {BAR_GIB:g} GiB"]
    lines = []
    for row in rows:
        if "error" in row:
            lines.append([f"{row['nodes']:,}", row["graph"], "", "", *[""] * len(PHASES), row["error"], "no"])
            continue
        cells = [f"{p['s']:.2f} s ({p['peak_rss_mib']:.0f} MiB)" for p in (row["phases"][k] for k in PHASES)]
        peak = row["peak_rss_mib"]
        lines.append([f"{row['nodes']:,}", row["graph"], f"{row['edges']:,}", f"{row['rss_import_mib']:.0f} MiB",
                      *cells, f"{peak:.0f} MiB",
                      "yes" if peak <= BAR_GIB * 1024 else "no"])
    if markdown:
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                *("| " + " | ".join(line) + " |" for line in lines)]
    return ["  ".join(head), *("  ".join(line) for line in lines)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", nargs="+", default=["1e5", "1e6"], help="node counts (default 1e5 1e6)")
    parser.add_argument("--graph", choices=("ring", "knn"), default="ring")
    parser.add_argument("--quick", action="store_true", help="10^4 nodes only")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per size")
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        case = json.loads(args.case)
        print(json.dumps(run_case(int(case["nodes"]), case["graph"])))
        return 0
    sizes = QUICK_SIZES if args.quick else [int(float(text)) for text in args.nodes]
    rows = measure_all(sizes, args.graph, args.timeout)
    print("\n".join(render(rows, markdown=args.markdown)))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
