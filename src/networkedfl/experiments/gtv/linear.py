"""Synthetic linear-regression experiments of the GTV paper (Secs. VI-B, IX-B).

One run function serves the chain figures (3, 4), the SBM figures (9, 10), the
covariance table (IX-B1) and the unbalanced clusters (IX-B2): they differ only in the
graph, the swept parameters and the methods, all of which are configuration.

Every grid point of one repetition is an independent problem instance (graph, data,
sampling set) drawn from a generator keyed by the grid point and the seed.  All
instances of a job are solved together as one disjoint-union graph, so a job costs one
vectorised primal-dual run per penalty.

The authors' notebooks computed some things differently from the paper's equations
(docs/variants.md).  Each such behaviour is one named option below (:data:`OPTIONS`),
whose first value is the paper's definition and the default; the ``published`` variant of
a target switches the notebooks' values on (see :mod:`.variants`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ..._nodedata import NodeData
from ...graphs import EmpiricalGraph, chain_of_clusters, disjoint_union, stochastic_block_model
from ...gtv import (
    LABEL_NOISE,
    METHODS,
    REDUCTIONS,
    SquaredErrorLoss,
    cluster_index_step_sizes,
    cluster_weights_per_node,
    default_step_sizes,
    fedavg_proximal,
    gtv_primal_dual,
    label_mse,
    linear_model_data,
    linear_predictions,
    mocha_lambda_factor,
    parameter_mse,
    perturb_cluster_weights,
    perturb_weights,
    pooled_linear_regression,
    pooled_per_group,
    pooled_tree,
    sampling_mask,
)
from ...seeding import rng_for

__all__ = [
    "BASELINES",
    "GRAPH_BUILDERS",
    "OPTIONS",
    "GRAPH_KEYS",
    "METHOD_NAMES",
    "Instance",
    "build_instance",
    "grid_points",
    "n_iter_for",
    "run_gtv_linear",
    "shared_rng",
    "solver_options",
]

Params = Mapping[str, Any]

BASELINES_SETTING = "baselines"

#: Notebook behaviours that change the numbers (docs/variants.md), as options of the
#: target's parameters: the first value is the paper's definition (the default), the others
#: what the authors' notebooks computed.
OPTIONS: dict[str, tuple[str, ...]] = {
    "loss_scale": REDUCTIONS,                                  # §8.3: mean (38) | sum
    "label_noise": LABEL_NOISE,                                # §8.2: per sample | one per node
    "mocha_step": ("exact", "notebook_sbm", "notebook_chain"),  # §8.8
    "step_degrees": ("node", "cluster_index"),                 # §8.1
    "perturbation_draw": ("per_node", "per_cluster"),          # §8.9
    "graph_draw": ("per_repetition", "per_grid_point"),        # §8.12, SBM notes of §4.0
    "data_draw": ("per_repetition", "per_grid_point"),         # non-i.i.d., covariance notebooks
}


def option(p: Params, name: str) -> str:
    """The value of notebook option ``name`` in ``p`` (default: the paper's), validated."""
    values = OPTIONS[name]
    value = p.get(name, values[0])
    if value not in values:
        raise ValueError(f"{name} must be one of {values}, got {value!r}")
    return value


def _cluster_sizes(p: Params) -> list[int]:
    if "n_clusters" in p:  # GTV Fig. 2 sweeps the number of equal clusters
        return [int(p["cluster_size"])] * int(p["n_clusters"])
    sizes = list(p["cluster_sizes"])
    if "size_c2" in p:  # GTV Sec. IX-B2 sweeps the size of the second cluster
        sizes[1] = int(p["size_c2"])
    return sizes


GRAPH_BUILDERS: dict[str, Callable[[Params, np.random.Generator], EmpiricalGraph]] = {
    "chain": lambda p, rng: chain_of_clusters(_cluster_sizes(p), p["eps"]),
    "sbm": lambda p, rng: stochastic_block_model(_cluster_sizes(p), p["p_in"], p["p_out"], rng),
}


@dataclass(frozen=True)
class Instance:
    """One problem of a sweep: graph, local datasets, true weights and sampling set."""

    point: dict[str, Any]
    graph: EmpiricalGraph
    data: NodeData
    true_weights: np.ndarray
    mask: np.ndarray


def grid_points(params: Params) -> list[dict[str, Any]]:
    """All combinations of the values in ``params["grid"]`` (in config order)."""
    grid = params["grid"]
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]


def build_instance(
    params: Params,
    point: Mapping[str, Any],
    rng: np.random.Generator,
    *,
    graph_rng: np.random.Generator | None = None,
    data_rng: np.random.Generator | None = None,
) -> Instance:
    """Draw the graph, true weights, local datasets and sampling set of one grid point.

    ``graph_rng`` and ``data_rng`` (default ``rng``) draw the graph and the weights and
    datasets; passing a generator that ignores the repetition seed shares them across the
    repetitions, as options ``graph_draw`` and ``data_draw`` ask.  ``M`` uses ``rng``.
    """
    p = {**params, **point}
    graph_rng = rng if graph_rng is None else graph_rng
    data_rng = rng if data_rng is None else data_rng
    graph = GRAPH_BUILDERS[p["graph"]](p, graph_rng)
    cluster_weights = _true_cluster_weights(p, graph, data_rng)
    scale = float(p.get("perturbation", 0.0))
    if scale and option(p, "perturbation_draw") == "per_cluster":
        cluster_weights = perturb_cluster_weights(cluster_weights, scale, data_rng)
    weights = cluster_weights_per_node(graph.clusters, cluster_weights)
    if scale and option(p, "perturbation_draw") == "per_node":
        weights = perturb_weights(weights, scale, data_rng)
    cov = p.get("feature_cov")
    feature_cov = None if cov is None else np.asarray(cov, float)[graph.clusters]
    data = linear_model_data(weights, int(p["m"]), float(p["sigma"]), data_rng, feature_cov=feature_cov,
                             noise=option(p, "label_noise"))
    if "n_unsampled" in p:  # GTV Table I: every node but the last n_unsampled
        mask = np.arange(graph.n_nodes) < graph.n_nodes - int(p["n_unsampled"])
    else:
        mask = sampling_mask(graph.n_nodes, float(p["M"]), rng)
    return Instance(dict(point), graph, data, weights, mask)


def prox_steps(inst: Instance, params: Params) -> np.ndarray:
    """The step of the proximal (primal) update of one instance: ``1/deg_i``, or the
    notebooks' ``1/deg_{c_i}`` (option ``step_degrees``).  ``w_hat`` always uses ``1/deg_i``."""
    if option(params, "step_degrees") == "cluster_index":
        return cluster_index_step_sizes(inst.graph)[0]
    return default_step_sizes(inst.graph)[0]


def local_loss(data: NodeData, mask: np.ndarray, params: Params) -> SquaredErrorLoss:
    """The squared-error loss of option ``loss_scale`` (mean (38), or the notebooks' sum)."""
    return SquaredErrorLoss(data, mask, reduction=option(params, "loss_scale"))


def effective_lam(penalty: str, lam: float, params: Params) -> float:
    """``lambda`` handed to the solver: MOCHA's notebook dual steps are the exact step with a
    smaller ``lambda`` (option ``mocha_step``; :func:`~networkedfl.gtv.mocha_lambda_factor`)."""
    if penalty == "mocha":
        return lam * mocha_lambda_factor(option(params, "mocha_step"))
    return lam


def _true_cluster_weights(p: Params, graph: EmpiricalGraph, rng: np.random.Generator) -> np.ndarray:
    """Fixed weights per cluster, or (GTV Table I) Bernoulli(p) entries times a scale."""
    spec = p["cluster_weights"]
    if isinstance(spec, Mapping):
        n_clusters = int(graph.clusters.max()) + 1
        draws = rng.random((n_clusters, int(spec["dim"]))) < float(spec["bernoulli"])
        return float(spec["scale"]) * draws
    return np.asarray(spec, float)


def n_iter_for(params: Params, point: Mapping[str, Any]) -> int:
    """``n_iter``, unless an entry of ``n_iter_overrides`` matches the grid point."""
    for override in params.get("n_iter_overrides", []):
        conditions = {k: v for k, v in override.items() if k != "n_iter"}
        if all(point.get(k, params.get(k)) in values for k, values in conditions.items()):
            return int(override["n_iter"])
    return int(params["n_iter"])


def _metrics(inst: Instance, predictions: np.ndarray, weights: np.ndarray | None) -> dict[str, float]:
    out = {
        "label_mse": label_mse(predictions, inst.data.labels),
        "label_mse_sampled": label_mse(predictions, inst.data.labels, inst.mask),
        "label_mse_unsampled": (
            label_mse(predictions, inst.data.labels, ~inst.mask) if (~inst.mask).any() else np.nan
        ),
    }
    if weights is not None:
        out["parameter_mse"] = parameter_mse(weights, inst.true_weights)
    return out


def _records(
    inst: Instance, seed: int, method: str, penalty: str, lam: float, metrics: dict[str, float]
) -> list[dict[str, Any]]:
    base = {**inst.point, "method": method, "penalty": penalty, "lam": lam, "seed": seed}
    return [{**base, "metric": k, "value": v} for k, v in metrics.items()]


#: ``solver`` of a linear target: how Algorithm 1 is run (``pdhg``: the paper's fixed steps
#: for ``n_iter`` iterations; ``restarted``: until the certified relative gap is at most
#: ``rel_gap_tol``, at most ``max_iter`` iterations).
SOLVER_DEFAULTS = {"method": "pdhg", "rel_gap_tol": 1e-6, "max_iter": 100_000}


def solver_options(params: Params) -> dict[str, Any]:
    """The target's ``solver`` block with its defaults, validated (errors name the key)."""
    spec = {**SOLVER_DEFAULTS, **(params.get("solver") or {})}
    unknown = sorted(set(spec) - set(SOLVER_DEFAULTS))
    if unknown:
        raise ValueError(f"solver: unknown key(s) {unknown}; known: {sorted(SOLVER_DEFAULTS)}")
    if spec["method"] not in METHODS:
        raise ValueError(f"solver.method must be one of {METHODS}, got {spec['method']!r}")
    if spec["method"] == "restarted" and option(params, "step_degrees") != "node":
        raise ValueError("solver.method 'restarted' needs step_degrees: node (the notebooks' prox step "
                         "changes the iteration and its fixed points); pin solver: {method: pdhg} in the "
                         "published variant")
    return spec


def _solve_primal_dual(
    instances: list[Instance], penalty: str, lam: float, n_iter: int, params: Params
) -> list[np.ndarray]:
    lam = effective_lam(penalty, lam, params)
    solver = solver_options(params)
    if solver["method"] == "restarted":
        # one problem at a time: each its own primal weight and its own certified gap (on the
        # union one weight fits no instance well: Fig. 10's nLasso job took 10,432 iterations
        # and 109 s there, 2,256 at most and 10 s in all one by one); the paper's steps 1/deg_i
        return [gtv_primal_dual(inst.graph, local_loss(inst.data, inst.mask, params), penalty, lam,
                                int(solver["max_iter"]), method="restarted",
                                rel_gap_tol=float(solver["rel_gap_tol"])).weights for inst in instances]
    union, offsets = disjoint_union([inst.graph for inst in instances])
    data = NodeData(
        np.concatenate([inst.data.features for inst in instances]),
        np.concatenate([inst.data.labels for inst in instances]),
    )
    mask = np.concatenate([inst.mask for inst in instances])
    prox_tau = np.concatenate([prox_steps(inst, params) for inst in instances])
    result = gtv_primal_dual(union, local_loss(data, mask, params), penalty, lam, n_iter, prox_tau=prox_tau)
    return [result.weights[offsets[k] : offsets[k + 1]] for k in range(len(instances))]


# ------------------------------------------------------------------------ baselines
# Each baseline maps an instance to (predictions (n, m), weights (n, d) or None).
Baseline = Callable[[Instance, Params, np.random.Generator], tuple[np.ndarray, np.ndarray | None]]


def _fedavg(inst: Instance, params: Params, rng: np.random.Generator, *, oracle_groups: bool):
    """FedAvg (FedAvgC with the true clusters) in the GTV paper's proximal form."""
    tau = prox_steps(inst, params)  # FedAvg's local step is the same proximal update
    groups = inst.graph.clusters if oracle_groups else None
    w = fedavg_proximal(local_loss(inst.data, inst.mask, params), inst.mask, tau,
                        n_iter_for(params, inst.point), groups=groups)
    return linear_predictions(inst.data, w), w


def _ifca(inst: Instance, params: Params, rng: np.random.Generator):
    """IFCA with linear models without bias (GTV Table I, Fig. 2; Ghosh et al. 2020)."""
    import torch

    from ...algorithms import ifca  # PyTorch is imported on first use
    from ...nn import ClientData, linear_regression

    spec = params.get("ifca", {})
    n_clusters = int(spec.get("n_clusters", int(inst.graph.clusters.max()) + 1))
    result = ifca(
        linear_regression(inst.data.dim, bias=False, init=spec.get("init", "bernoulli")),
        ClientData.from_node_data(inst.data, dtype=torch.float64),
        n_clusters=n_clusters, n_rounds=int(spec.get("rounds", 300)), lr=float(spec.get("lr", 0.1)),
        aggregation=spec.get("aggregation", "cluster"), participants=inst.mask, seed=rng,
        device=params.get("device", "cpu"), dtype=torch.float64,  # the GTV paper's NumPy precision
    )
    w = result.client_params.cpu().numpy()
    return linear_predictions(inst.data, w), w


def _oracle(inst: Instance, params: Params, rng: np.random.Generator):
    """One least-squares model per true cluster, fitted on the cluster's pooled data in M."""
    fit = pooled_per_group(inst.data, inst.mask, inst.graph.clusters)
    return fit.predictions, fit.weights


def _pooled_linear(inst: Instance, params: Params, rng: np.random.Generator):
    fit = pooled_linear_regression(inst.data, inst.mask)
    return fit.predictions, fit.weights


def _pooled_tree(inst: Instance, params: Params, rng: np.random.Generator):
    fit = pooled_tree(inst.data, inst.mask, rng, max_depth=int(params.get("tree_depth", 2)))
    return fit.predictions, None


#: Baselines by the name used in ``methods`` of the config and in the ``method`` column.
BASELINES: dict[str, Baseline] = {
    "fedavg": partial(_fedavg, oracle_groups=False),
    "fedavg_clusters": partial(_fedavg, oracle_groups=True),
    "ifca": _ifca,
    "oracle": _oracle,
    "pooled_linear": _pooled_linear,
    "pooled_tree": _pooled_tree,
}


#: Display names of the rows of every linear target (Alg. 1 by its penalty, the baselines by
#: their ``method``), for the claims, figures and tables.
METHOD_NAMES: dict[str, str] = {
    "l1": "Alg. 1 (l1)",
    "nlasso": "Alg. 1 (nLasso)",
    "mocha": "MOCHA",
    "ifca": "IFCA",
    "fedavg": "FedAvg",
    "fedavg_clusters": "FedAvgC",
    "oracle": "cluster oracle",
    "pooled_linear": "pooled linear regression",
    "pooled_tree": "pooled tree",
}


def _baseline_records(inst: Instance, params: Params, seed: int, rng: np.random.Generator):
    records: list[dict[str, Any]] = []
    for method in (m for m in params.get("methods", []) if m != "primal_dual"):
        predictions, weights = BASELINES[method](inst, params, rng)
        records += _records(inst, seed, method, "none", np.nan, _metrics(inst, predictions, weights))
    return records


#: Grid keys that are parameters of the empirical graph (:data:`GRAPH_BUILDERS`); the others
#: (M, sigma) leave it unchanged.
GRAPH_KEYS = frozenset({"eps", "p_in", "p_out", "cluster_size", "cluster_sizes", "n_clusters", "size_c2"})


def shared_rng(params: Params, kind: str, point: Mapping[str, Any], base_seed: int,
               experiment_id: str) -> np.random.Generator | None:
    """The stream of a draw shared by every repetition (option ``<kind>_draw`` is
    ``per_grid_point``), or ``None`` (the draw is the repetition's own).

    The data are shared per grid point.  The graph is shared per value of the graph's own
    parameters (:data:`GRAPH_KEYS`): one graph per p_out for every M and noise level, as the
    notebooks' networkx SBM with ``seed=0`` gives.  Its key is the grid point with every other
    key at its grid's first value, so that a grid with one value of each (Table I, Fig. 2, the
    covariance table, Fig. 11) keeps the stream it always had.
    """
    if option(params, f"{kind}_draw") != "per_grid_point":
        return None
    if kind == "graph":
        grid = params["grid"]
        point = {k: (v if k in GRAPH_KEYS else grid[k][0]) for k, v in point.items()}
    return rng_for(base_seed, experiment_id, 0, "shared", kind, point)


def linear_settings(params: Params) -> list[str]:
    """One job per GTV penalty, plus one for the baselines if the config lists any."""
    settings = [f"penalty-{name}" for name in params["lam"]]
    if any(m != "primal_dual" for m in params.get("methods", [])):
        settings.append(BASELINES_SETTING)
    return settings


def run_gtv_linear(
    params: Params, setting: str, seed: int, base_seed: int, *, experiment_id: str
) -> pd.DataFrame:
    """Run one job (one penalty, or the baselines) of a linear GTV sweep for one seed."""
    points = grid_points(params)
    rngs = [rng_for(base_seed, experiment_id, seed, point) for point in points]

    instances = [build_instance(params, point, rng,
                                graph_rng=shared_rng(params, "graph", point, base_seed, experiment_id),
                                data_rng=shared_rng(params, "data", point, base_seed, experiment_id))
                 for point, rng in zip(points, rngs, strict=True)]
    records: list[dict[str, Any]] = []
    if setting == BASELINES_SETTING:
        for inst, rng in zip(instances, rngs, strict=True):
            records += _baseline_records(inst, params, seed, rng)
    else:
        penalty = setting.removeprefix("penalty-")
        lam = float(params["lam"][penalty])
        n_iters = [n_iter_for(params, inst.point) for inst in instances]
        for n_iter in sorted(set(n_iters)):  # one union graph per iteration budget
            batch = [inst for inst, k in zip(instances, n_iters, strict=True) if k == n_iter]
            for inst, w in zip(batch, _solve_primal_dual(batch, penalty, lam, n_iter, params), strict=True):
                metrics = _metrics(inst, linear_predictions(inst.data, w), w)
                records += _records(inst, seed, "primal_dual", penalty, lam, metrics)
    table = pd.DataFrame.from_records(records)
    if "feature_cov" in params and setting == BASELINES_SETTING:
        table = pd.concat([table, _covariance_records(params, seed)], ignore_index=True)
    return table


def _covariance_records(params: Params, seed: int) -> pd.DataFrame:
    """The cluster feature covariances actually used, as tidy rows (GTV Sec. IX-B1)."""
    cov = np.asarray(params["feature_cov"], float)
    rows = [
        {"method": "data", "penalty": "none", "seed": seed, "metric": f"feature_cov_c{c + 1}_{i}{j}",
         "value": cov[c, i, j]}
        for c in range(cov.shape[0]) for i in range(cov.shape[1]) for j in range(cov.shape[2])
    ]
    return pd.DataFrame.from_records(rows)
