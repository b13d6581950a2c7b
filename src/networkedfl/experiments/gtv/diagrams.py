"""Diagram targets drawn from generated graphs (GTV Figs. 1, 8, 12).

Each diagram's table is a tidy node/edge list: rows with ``element`` in ``{node, edge,
sample}``, the ``graph`` they belong to, and ``metric``/``value`` (node positions,
cluster, edge weight, local data points).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...graphs import EmpiricalGraph, cluster_graph, star, stochastic_block_model
from ...gtv import cluster_weights_per_node, linear_model_data
from ...seeding import rng_for

__all__ = [
    "edge_rows",
    "node_rows",
    "run_cluster_graph",
    "run_empirical_graph",
    "run_star_graph",
]

Params = Mapping[str, Any]


def _connected_sbm(params: Params, rng: np.random.Generator) -> EmpiricalGraph:
    """Draw SBMs until one is connected (bounded number of attempts)."""
    sizes = list(params["cluster_sizes"])
    for _ in range(int(params.get("max_attempts", 100))):
        g = stochastic_block_model(sizes, params["p_in"], params["p_out"], rng)
        if g.is_connected():
            return g
    raise RuntimeError(
        f"no connected SBM with sizes={sizes}, p_in={params['p_in']}, p_out={params['p_out']} "
        f"in {params.get('max_attempts', 100)} attempts; raise p_in or p_out"
    )


def clustered_layout(clusters: np.ndarray, spacing: float = 3.0) -> np.ndarray:
    """Node positions: clusters on a circle of radius ``spacing``, members on a unit circle."""
    clusters = np.asarray(clusters)
    k = int(clusters.max()) + 1
    angle_c = 2 * np.pi * np.arange(k) / k + np.pi / 2 * (k > 2)
    centres = spacing * np.stack([np.cos(angle_c), np.sin(angle_c)], axis=1) if k > 1 else np.zeros((1, 2))
    pos = np.zeros((clusters.size, 2))
    for c in range(k):
        members = np.flatnonzero(clusters == c)
        a = 2 * np.pi * np.arange(members.size) / members.size
        pos[members] = centres[c] + np.stack([np.cos(a), np.sin(a)], axis=1)
    return pos


def _graph_rows(graph: EmpiricalGraph, name: str, positions: np.ndarray) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    clusters = graph.clusters if graph.clusters is not None else np.zeros(graph.n_nodes, int)
    for i in range(graph.n_nodes):
        base = {"graph": name, "element": "node", "node": i, "cluster": int(clusters[i])}
        rows += [{**base, "metric": "x", "value": positions[i, 0]}, {**base, "metric": "y", "value": positions[i, 1]}]
    for (i, j), w in zip(graph.edges, graph.weights, strict=True):
        rows.append({"graph": name, "element": "edge", "source": int(i), "target": int(j),
                     "metric": "weight", "value": float(w)})
    return rows


def run_empirical_graph(
    params: Params, setting: str, seed: int, base_seed: int, *, experiment_id: str
) -> pd.DataFrame:
    """GTV Fig. 1: a small SBM whose nodes carry local datasets (1-d features, labels)."""
    rng = rng_for(base_seed, experiment_id, seed)
    graph = _connected_sbm(params, rng)
    w = cluster_weights_per_node(graph.clusters, np.asarray(params["cluster_weights"], float))
    data = linear_model_data(w, int(params["m"]), float(params["sigma"]), rng)
    rows = _graph_rows(graph, "empirical", clustered_layout(graph.clusters))
    for i in range(graph.n_nodes):
        for k in range(data.max_samples):
            base = {"graph": "empirical", "element": "sample", "node": i, "sample": k}
            rows += [{**base, "metric": "feature", "value": data.features[i, k, 0]},
                     {**base, "metric": "label", "value": data.labels[i, k]}]
    table = pd.DataFrame.from_records(rows)
    table["seed"] = seed
    return table


def run_cluster_graph(
    params: Params, setting: str, seed: int, base_seed: int, *, experiment_id: str
) -> pd.DataFrame:
    """GTV Fig. 8: an SBM with random edge weights and its cluster graph."""
    rng = rng_for(base_seed, experiment_id, seed)
    g = _connected_sbm(params, rng)
    lo, hi = params["weight_range"]
    g = EmpiricalGraph(g.n_nodes, g.edges, rng.uniform(lo, hi, g.n_edges), g.clusters)
    cg = cluster_graph(g)
    pos = clustered_layout(g.clusters)
    cpos = np.stack([pos[g.clusters == c].mean(axis=0) for c in range(cg.n_nodes)])
    table = pd.DataFrame.from_records(_graph_rows(g, "empirical", pos) + _graph_rows(cg, "cluster", cpos))
    table["seed"] = seed
    return table


def run_star_graph(
    params: Params, setting: str, seed: int, base_seed: int, *, experiment_id: str
) -> pd.DataFrame:
    """GTV Fig. 12: the star graph (centre node 0)."""
    g = star(int(params["n_nodes"]), weight=float(params["weight"]))
    a = 2 * np.pi * np.arange(g.n_nodes - 1) / (g.n_nodes - 1)
    pos = np.vstack([[0.0, 0.0], np.stack([np.cos(a), np.sin(a)], axis=1)])
    table = pd.DataFrame.from_records(_graph_rows(g, "star", pos))
    table["seed"] = seed
    return table


# ------------------------------------------------------------- reading the table back

def node_rows(table: pd.DataFrame, graph: str) -> pd.DataFrame:
    """The nodes of ``graph`` in a diagram table: one row per node (``node``, ``cluster``)."""
    rows = table[(table["graph"] == graph) & (table["element"] == "node") & (table["metric"] == "x")]
    return rows[["node", "cluster"]].astype(int)


def edge_rows(table: pd.DataFrame, graph: str) -> pd.DataFrame:
    """The edges of ``graph`` in a diagram table: one row per edge (``source``, ``target``, ``weight``)."""
    rows = table[(table["graph"] == graph) & (table["element"] == "edge")]
    out = rows[["source", "target", "value"]].rename(columns={"value": "weight"})
    return out.astype({"source": int, "target": int})
