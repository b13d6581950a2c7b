"""Run functions of the FedRelax paper's figures (Abdurakhmanova et al. 2024, Sec. IV-V, Figs 1-5).

Shared grid: ``sweeps`` is a list of ``{d: [...], sigma: [...]}`` blocks; the points of a
target are the union of their products, in config order (e.g. Fig. 3's d-sweep at
``sigma = 0`` and its sigma-sweep at ``d = 10``).  A grid point draws its graph and data
from ``rng_for(base_seed, target, seed, point)``, so all values of ``alpha`` (and all
methods) of one repetition see the same data and the same initial models.  ``draws_from``
(another target's id) makes a target draw from that target's streams instead: Fig. 1b
draws from Fig. 1a's, Fig. 2b from Fig. 2a's, so the grid point the two targets share
(d/m = 1, sigma = 0) has the same values at every seed.

* :func:`run_linear_final` (Figs. 1a, 3): Algorithm 2 per ``alpha``, final metrics.
* :func:`run_linear_convergence` (Fig. 1b): Algorithm 2, ``MSE(w_hat)`` per iteration.
* :func:`run_baselines` (Fig. 1c): FedRelax, local, Oracle, FedAvg and IFCA vs round.
* :func:`run_trees` (Figs. 2, 4): Algorithm 1 with decision trees, final ``MSE^(val)``.
* :func:`run_variation` (Fig. 5): Algorithm 2 on single-cluster data, variation (22) and
  bound (25) per iteration; all runs of a job solved as one disjoint-union problem.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...fedrelax import (
    FedRelaxData,
    algebraic_connectivity,
    clustered_data,
    error_tolerance,
    noniid_data,
    validation_mse,
    variation,
    weight_mse,
)
from ...seeding import rng_for
from ..tuning import VALIDATION_METRIC

__all__ = [
    "grid_points",
    "least_squares_model",
    "point_name",
    "point_settings",
    "run_baselines",
    "run_linear_convergence",
    "run_linear_final",
    "run_trees",
    "run_variation",
    "single_job",
]

Params = Mapping[str, Any]
WMSE, VAL, RATIO = "weight_mse", "mse_val", "mse_val_ratio"


# ------------------------------------------------------------------------------ grid and data


def grid_points(params: Params) -> list[tuple[int, float]]:
    """The ``(d, sigma)`` points of ``params["sweeps"]``: union of products, in config order."""
    points: list[tuple[int, float]] = []
    for sweep in params["sweeps"]:
        for d, sigma in itertools.product(sweep["d"], sweep["sigma"]):
            if (int(d), float(sigma)) not in points:
                points.append((int(d), float(sigma)))
    return points


def _fmt_value(x: float) -> str:
    return f"{x:g}".replace(".", "p").replace("-", "m")


def point_name(d: int, sigma: float) -> str:
    """Job name of a grid point, e.g. ``d10_s0`` or ``d10_s0p5``."""
    return f"d{int(d)}_s{_fmt_value(float(sigma))}"


def point_settings(params: Params) -> list[str]:
    """One job per grid point (the tree targets, whose jobs are heavy)."""
    return [point_name(*p) for p in grid_points(params)]


def single_job(params: Params) -> list[str]:
    """One job per seed running every grid point (the light linear targets)."""
    return ["all"]


def _points_of(params: Params, setting: str) -> list[tuple[int, float]]:
    points = grid_points(params)
    if setting == "all":
        return points
    named = {point_name(*p): p for p in points}
    if setting not in named:
        raise ValueError(f"unknown setting {setting!r}; expected 'all' or one of {sorted(named)}")
    return [named[setting]]


def _key(d: int, sigma: float) -> dict[str, Any]:
    """Random-stream key of a grid point's data: ``d`` only, so that the noise levels of one
    repetition share graph, true weights, features and standard-normal noise (paired)."""
    return {"d": int(d)}


def _streams(params: Params, experiment_id: str) -> str:
    """The name a target's random streams derive from: ``draws_from`` (another target's id,
    whose grid points this target then shares draw for draw: the same data, initial weights
    and algorithmic randomness at the same seed, ``d`` and ``sigma``), else its own id."""
    return str(params.get("draws_from", experiment_id))


def make_data(params: Params, d: int, sigma: float, rng: np.random.Generator) -> FedRelaxData:
    """The data of one grid point: clustered (Sec. IV-A) or non-i.i.d. (Algorithm 3)."""
    spec = params["data"]
    if spec["kind"] == "clustered":
        return clustered_data(spec["cluster_sizes"], float(spec["p_in"]), float(spec["p_out"]),
                              d, int(spec["m"]), int(spec["m_val"]), int(spec["m_public"]),
                              sigma, rng)
    if spec["kind"] == "noniid":
        return noniid_data(int(spec["n_nodes"]), int(spec["n_components"]), d, int(spec["m"]),
                           int(spec["m_val"]), int(spec["m_public"]), sigma, rng)
    raise ValueError(f"unknown data kind {spec['kind']!r}")


def _torch_options(params: Params) -> dict[str, Any]:
    from ...nn import as_dtype

    # float64 unless the configuration names another (the package's default is float32)
    return {"dtype": as_dtype(params.get("dtype", "float64")), "device": params.get("device", "cpu")}


def _problem(params: Params, data: FedRelaxData):
    from ...fedrelax import linear_problem

    return linear_problem(data.graph, data.features, data.labels, data.public, **_torch_options(params))


def _val_mse_linear(data: FedRelaxData, weights: np.ndarray) -> float:
    return validation_mse(np.einsum("nmd,nd->nm", data.val_features, weights), data.val_labels)


def _base(d: int, sigma: float, m: int, seed: int) -> dict[str, Any]:
    return {"d": int(d), "d_over_m": d / m, "sigma": float(sigma), "seed": seed}


# ------------------------------------------------------------------------------ linear runs


def run_linear_final(params: Params, setting: str, seed: int, base_seed: int, *,
                     experiment_id: str) -> pd.DataFrame:
    """Algorithm 2 (RMSprop, K iterations) for every ``alpha`` at each grid point.

    Records ``weight_mse`` (18) when the data have true weights, ``mse_val`` and, for
    ``alpha > 0``, ``mse_val_ratio`` = ``mse_val / mse_val(alpha = 0)`` of the same seed.
    """
    from ...fedrelax import fedrelax_linear

    experiment_id = _streams(params, experiment_id)
    records = []
    m = int(params["data"]["m"])
    for d, sigma in _points_of(params, setting):
        data = make_data(params, d, sigma, rng_for(base_seed, experiment_id, seed, _key(d, sigma)))
        problem = _problem(params, data)
        base = _base(d, sigma, m, seed)
        val = {}
        for alpha in params["alphas"]:
            result = fedrelax_linear(
                problem, float(alpha), n_iter=int(params["n_iter"]), lr=float(params["lr"]),
                solver=params.get("solver", "rmsprop"), init=params.get("init", "uniform"),
                seed=rng_for(base_seed, experiment_id, seed, _key(d, sigma), "init"))
            w = result.weights.cpu().numpy()
            val[float(alpha)] = _val_mse_linear(data, w)
            row = {**base, "alpha": float(alpha), "method": "fedrelax"}
            if data.true_weights is not None:
                records.append({**row, "metric": WMSE, "value": weight_mse(w, data.true_weights)})
            records.append({**row, "metric": VAL, "value": val[float(alpha)]})
        records += _ratios_to_local(base, val)
    return pd.DataFrame.from_records(records)


def _ratios_to_local(base: Mapping[str, Any], val: Mapping[float, float]) -> list[dict[str, Any]]:
    if 0.0 not in val:
        return []
    return [{**base, "alpha": a, "method": "fedrelax", "metric": RATIO, "value": v / val[0.0]}
            for a, v in val.items() if a > 0]


def run_linear_convergence(params: Params, setting: str, seed: int, base_seed: int, *,
                           experiment_id: str) -> pd.DataFrame:
    """Algorithm 2 for every ``alpha``; ``weight_mse`` every ``record_every`` iterations."""
    from ...fedrelax import fedrelax_linear

    experiment_id = _streams(params, experiment_id)
    records = []
    m = int(params["data"]["m"])
    for d, sigma in _points_of(params, setting):
        data = make_data(params, d, sigma, rng_for(base_seed, experiment_id, seed, _key(d, sigma)))
        problem = _problem(params, data)
        truth = data.true_weights
        for alpha in params["alphas"]:
            result = fedrelax_linear(
                problem, float(alpha), n_iter=int(params["n_iter"]), lr=float(params["lr"]),
                init=params.get("init", "uniform"),
                seed=rng_for(base_seed, experiment_id, seed, _key(d, sigma), "init"),
                callback=lambda k, w, truth=truth: {"value": weight_mse(w.cpu().numpy(), truth)},
                record_every=int(params.get("record_every", 1)))
            row = {**_base(d, sigma, m, seed), "alpha": float(alpha), "method": "fedrelax",
                   "metric": WMSE}
            records += [{**row, "iteration": h["iteration"], "value": h["value"]}
                        for h in result.history]
    return pd.DataFrame.from_records(records)


def least_squares_model(d: int):
    """``linear_regression(d)`` (no bias, squared error) with its clients' gradients and
    losses in closed form: ``2 X^T (s * (X w - y))`` and ``sum s (X w - y)^2``, ``s`` the
    samples' shares of their client's weight, one batched product over the clients.  IFCA's
    local steps and its loss of every client under every model (:func:`~networkedfl.nn.batch_gradients`,
    :func:`~networkedfl.nn.losses_of_models`) then skip ``vmap(grad(...))``, most of Fig. 1c's
    time; the values equal the generic path's up to rounding.  ``None`` (the generic path)
    for params that autograd or a :mod:`torch.func` transform tracks, and other layouts."""
    import dataclasses

    import torch

    from ...nn import linear_regression

    def terms(params, x, y, w):
        if not (params.ndim == 2 and not params.requires_grad and x.ndim == 3 and x.shape[0] == params.shape[0]
                and x.shape[-1] == d and tuple(y.shape) == tuple(x.shape[:2])):
            return None
        w = torch.ones_like(y, dtype=params.dtype) if w is None else w.to(params.dtype)
        total = w.sum(dim=1, keepdim=True)
        share = w / torch.where(total > 0, total, torch.ones_like(total))
        return share, torch.bmm(x, params[:, :, None])[..., 0] - y

    def batch_gradient(params, x, y, w):
        t = terms(params, x, y, w)
        return None if t is None else 2 * torch.bmm((t[0] * t[1])[:, None, :], x)[:, 0]

    def batch_loss(params, x, y, w):
        t = terms(params, x, y, w)
        return None if t is None else (t[0] * t[1] ** 2).sum(dim=1)

    return dataclasses.replace(linear_regression(d), batch_gradient=batch_gradient, batch_loss=batch_loss)


BASELINE_METHODS = ("fedrelax", "local", "oracle", "fedavg", "ifca_correct", "ifca_incorrect", "mean")


def run_baselines(params: Params, setting: str, seed: int, base_seed: int, *,
                  experiment_id: str) -> pd.DataFrame:
    """FedRelax vs local training, Oracle, FedAvg and IFCA (correct / incorrect k): MSE vs round.

    FedRelax and local training (``alpha = 0``) are Algorithm 2 (RMSprop).  The baselines
    come from the baselines library with full-batch gradient steps of size ``lr`` and the
    same squared-error loss: Oracle = FedSGD within each true cluster (gradient descent on
    the cluster's pooled data), FedAvg = FedSGD over all nodes (the server averages local
    gradients, every node takes the same step), IFCA with ``k`` = the true number of
    clusters and with ``ifca_incorrect_clusters``.  All start from U(-1/sqrt(d), 1/sqrt(d)).

    With ``validation_fraction`` in ``params`` (a run of the tuning protocol,
    :mod:`~networkedfl.experiments.tuning`) every method records, instead of the plotted
    ``weight_mse`` (which reads the true weights), its ``validation_loss``: the mean over
    nodes of its MSE on the nodes' own validation points (``m_val`` per node, drawn apart
    from the training and public data, :func:`validation_mse`).  ``validation_fraction``
    then splits nothing: the training sets stay whole, so the tuned ``alpha`` is chosen at
    the figure's ``d/m`` (holding out 2 of ``m = 10`` samples would tune it at ``d/m = 6.25``
    on 2 points per node).
    """
    import torch

    from ...algorithms import fedsgd, ifca
    from ...fedrelax import fedrelax_linear, initial_weights
    from ...nn import ClientData

    (d, sigma), = _points_of(params, "all")[:1]
    experiment_id = _streams(params, experiment_id)
    m = int(params["data"]["m"])
    data = make_data(params, d, sigma, rng_for(base_seed, experiment_id, seed, _key(d, sigma)))
    truth = data.true_weights  # read only outside the tuning runs
    opts = _torch_options(params)
    n_iter, lr, every = int(params["n_iter"]), float(params["lr"]), int(params.get("record_every", 1))
    base = _base(d, sigma, m, seed)
    records = []
    validating = params.get("validation_fraction") is not None
    metric = VALIDATION_METRIC if validating else WMSE

    def add(method: str, alpha: float, history: list[dict[str, Any]]) -> None:
        records.extend({**base, "alpha": alpha, "method": method, "metric": metric,
                        "iteration": h["iteration"], "value": h["value"]} for h in history)

    def mse_of(w: torch.Tensor) -> float:
        w = w.detach().cpu().numpy()
        return _val_mse_linear(data, w) if validating else weight_mse(w, truth)

    methods = params.get("methods", BASELINE_METHODS)
    problem = _problem(params, data) if {"fedrelax", "local"} & set(methods) else None
    for method in methods:
        gen = rng_for(base_seed, experiment_id, seed, "init", method)
        if method == "mean":
            zero = mse_of(torch.zeros(data.n_nodes, d, dtype=torch.float64))
            add(method, np.nan, [{"iteration": 0, "value": zero}, {"iteration": n_iter, "value": zero}])
            continue
        if method in ("fedrelax", "local"):
            alpha = float(params["alpha"]) if method == "fedrelax" else 0.0
            result = fedrelax_linear(problem, alpha, n_iter=n_iter, lr=lr, seed=gen,
                                     callback=lambda k, w: {"value": mse_of(w)}, record_every=every)
            add(method, alpha, result.history)
            continue
        model = least_squares_model(d)
        clients = ClientData.from_arrays(data.features, data.labels, **opts)
        n_clusters = int(data.graph.clusters.max()) + 1
        k = {"oracle": n_clusters, "fedavg": 1, "ifca_correct": n_clusters,
             "ifca_incorrect": int(params["ifca_incorrect_clusters"])}[method]
        init = initial_weights(k, d, "uniform", gen, **opts)
        history = [{"iteration": 0, "value": mse_of(init[data.graph.clusters] if method == "oracle"
                                                     else init[0].expand(data.n_nodes, d))}]

        def callback(state, history=history):
            if state.round % every == 0 or state.round == n_iter:
                history.append({"iteration": state.round, "value": mse_of(state.client_params)})

        if method in ("oracle", "fedavg"):
            groups = data.graph.clusters if method == "oracle" else None
            fedsgd(model, clients, n_rounds=n_iter, lr=lr, groups=groups, init=init,
                   callback=callback, **opts)
        else:
            ifca(model, clients, n_clusters=k, n_rounds=n_iter, lr=lr, init=init,
                 callback=callback, **opts)
        add(method, np.nan, history)
    return pd.DataFrame.from_records(records)


# ------------------------------------------------------------------------------ trees


def _tree_factory(params: Params, seeds: np.ndarray):
    from sklearn.tree import DecisionTreeRegressor

    depth = int(params["max_depth"])
    return lambda i: DecisionTreeRegressor(max_depth=depth, random_state=int(seeds[i]))


def _oracle_tree_mse(params: Params, data: FedRelaxData, seed: int) -> float:
    """``MSE^(val)`` of the Oracle: one tree per true cluster on the cluster's pooled data."""
    from sklearn.tree import DecisionTreeRegressor

    pred = np.empty_like(data.val_labels)
    clusters = data.graph.clusters
    for c in np.unique(clusters):  # over clusters, not nodes
        idx = clusters == c
        tree = DecisionTreeRegressor(max_depth=int(params["max_depth"]), random_state=seed)
        tree.fit(data.features[idx].reshape(-1, data.dim), data.labels[idx].reshape(-1))
        pred[idx] = tree.predict(data.val_features[idx].reshape(-1, data.dim)).reshape(pred[idx].shape)
    return validation_mse(pred, data.val_labels)


def run_trees(params: Params, setting: str, seed: int, base_seed: int, *,
              experiment_id: str) -> pd.DataFrame:
    """Algorithm 1 with ``DecisionTreeRegressor(max_depth)`` for every ``alpha``.

    Initial trees on the local data, ``n_iter`` refits on the augmented data (19) plus
    ``self_distillation`` points (20).  Records ``mse_val`` per ``alpha`` and
    ``mse_val_ratio``: normalised by the Oracle (``normalise: oracle``, Fig. 2; the Oracle's
    own ``mse_val`` is recorded as method ``oracle``) or by ``alpha = 0`` (``normalise:
    local``, Fig. 4).  The scikit-learn input checks are switched off inside (the data are
    finite by construction): about 15 % of the fitting time of these small trees.

    With ``threads: N > 1`` the runs of one repetition, one per grid point and ``alpha``,
    go to ``N`` worker processes (:class:`sklearn.utils.parallel.Parallel`, which hands the
    workers the scikit-learn configuration): each run draws its data, trees and
    randomness from its own streams (:func:`_tree_run`), so the table is the one that one
    process gives, byte for byte.  Processes, not the nodes' threads of
    :func:`~networkedfl.fedrelax.fedrelax` (``n_jobs``): scikit-learn's per-fit Python
    holds the GIL for about a third of a small tree's fitting time.
    """
    import sklearn

    with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
        return _run_trees(params, setting, seed, base_seed, _streams(params, experiment_id))


def _tree_point(params: Params, d: int, sigma: float, seed: int, base_seed: int,
                experiment_id: str) -> tuple[FedRelaxData, np.ndarray]:
    """A grid point's data and its nodes' tree seeds (the same for every ``alpha``)."""
    key = _key(d, sigma)
    data = make_data(params, d, sigma, rng_for(base_seed, experiment_id, seed, key))
    tree_seeds = rng_for(base_seed, experiment_id, seed, key, "trees").integers(2**31 - 1, size=data.n_nodes)
    return data, tree_seeds


def _tree_run(params: Params, d: int, sigma: float, alpha: float, seed: int, base_seed: int,
              experiment_id: str) -> float:
    """``MSE^(val)`` of one run of Algorithm 1 (one grid point, one ``alpha``); it draws its
    own data, so it runs alike in any process and in any order."""
    from ...fedrelax import fedrelax, predict_nodes

    data, tree_seeds = _tree_point(params, d, sigma, seed, base_seed, experiment_id)
    result = fedrelax(
        data.graph, data.features, data.labels, data.public,
        _tree_factory(params, tree_seeds), alpha=float(alpha), n_iter=int(params["n_iter"]),
        weighting=params.get("weighting", "paper"),
        self_distillation=int(params.get("self_distillation", 0)),
        distillation_weight=float(params.get("distillation_weight", 1.0)),
        public_subsample=params.get("public_subsample"),
        seed=rng_for(base_seed, experiment_id, seed, _key(d, sigma), "fedrelax"))
    return validation_mse(predict_nodes(result.estimators, data.val_features), data.val_labels)


def _run_trees(params: Params, setting: str, seed: int, base_seed: int,
               experiment_id: str) -> pd.DataFrame:
    m = int(params["data"]["m"])
    points = _points_of(params, setting)
    runs = [(d, sigma, float(alpha)) for d, sigma in points for alpha in params["alphas"]]
    args = {"seed": seed, "base_seed": base_seed, "experiment_id": experiment_id}
    workers = min(int(params.get("threads") or 1), len(runs))
    if workers > 1:
        from sklearn.utils.parallel import Parallel, delayed

        dict_params = dict(params)  # a plain mapping pickles for the workers
        values = Parallel(n_jobs=workers)(
            delayed(_tree_run)(dict_params, d, sigma, alpha, **args) for d, sigma, alpha in runs)
    else:
        values = [_tree_run(params, d, sigma, alpha, **args) for d, sigma, alpha in runs]
    mse = dict(zip(runs, values, strict=True))  # (d, sigma, alpha) -> MSE_val
    records = []
    for d, sigma in points:
        base = _base(d, sigma, m, seed)
        val = {}
        for alpha in map(float, params["alphas"]):
            val[alpha] = mse[d, sigma, alpha]
            records.append({**base, "alpha": alpha, "method": "fedrelax", "metric": VAL, "value": val[alpha]})
        if params.get("normalise", "oracle") == "oracle":
            data, tree_seeds = _tree_point(params, d, sigma, **args)
            oracle = _oracle_tree_mse(params, data, int(tree_seeds[0]))
            records.append({**base, "alpha": np.nan, "method": "oracle", "metric": VAL, "value": oracle})
            records += [{**base, "alpha": a, "method": "fedrelax", "metric": RATIO, "value": v / oracle}
                        for a, v in val.items()]
        else:
            records += _ratios_to_local(base, val)
    return pd.DataFrame.from_records(records)


# ------------------------------------------------------------------------------ variation (Fig. 5)


def _variation_grid(params: Params) -> list[tuple[float, float, float]]:
    g = params["grid"]
    return [(float(p), float(s), float(a)) for p in g["p_in"] for s in g["sigma"] for a in g["alpha"]]


def run_variation(params: Params, setting: str, seed: int, base_seed: int, *,
                  experiment_id: str) -> pd.DataFrame:
    """Algorithm 2 on single-cluster data (23): variation (22) per iteration and bound (25).

    One job runs ``runs_per_seed`` independent repetitions of every grid point ``(p_in,
    sigma, alpha)``.  Run ``r`` draws its graph, features and standard-normal noise from
    ``rng_for(..., seed, r, p_in)``, so the noise levels (and the values of ``alpha``) of
    one run share the data up to the noise scale.  All problems of the job form one
    disjoint-union graph solved in one batched call with one ``alpha`` per node.
    Records per run: ``variation`` every ``record_every`` iterations, and ``bound``,
    ``lambda2`` and ``error_tolerance``.
    """
    import torch

    from ...fedrelax import fedrelax_linear, linear_problem
    from ...graphs import disjoint_union

    spec = params["data"]
    n, d = int(spec["n_nodes"]), int(params["d"])
    experiment_id = _streams(params, experiment_id)
    blocks, rows = [], []
    for run in range(int(params["runs_per_seed"])):
        for p_in, sigma, alpha in _variation_grid(params):
            rng = rng_for(base_seed, experiment_id, seed, run, {"p_in": p_in})
            data = clustered_data([n], p_in, 0.0, d, int(spec["m"]), 1, int(spec["m_public"]),
                                  sigma, rng)
            lam2 = algebraic_connectivity(data.graph)
            eps = error_tolerance(data.noise)
            bound = eps / (alpha * lam2) if alpha * lam2 > 0 else np.inf
            blocks.append((data, alpha))
            rows.append({"p_in": p_in, "sigma": sigma, "alpha": alpha, "run": run, "seed": seed,
                         "lambda2": lam2, "error_tolerance": eps, "bound": bound})
    graph, _ = disjoint_union([b.graph for b, _ in blocks])
    cat = lambda f: np.concatenate([getattr(b, f) for b, _ in blocks])  # noqa: E731
    opts = _torch_options(params)
    problem = linear_problem(graph, cat("features"), cat("labels"), cat("public"), **opts)
    alphas = np.repeat([a for _, a in blocks], n)
    k = len(blocks)

    def callback(it: int, w: torch.Tensor) -> dict[str, Any]:
        return {"variation": variation(w.cpu().numpy().reshape(k, n, d))}

    result = fedrelax_linear(problem, alphas, n_iter=int(params["n_iter"]), lr=float(params["lr"]),
                             seed=rng_for(base_seed, experiment_id, seed, "init"),
                             callback=callback, record_every=int(params.get("record_every", 1)))
    records = []
    for b, row in enumerate(rows):
        ident = {key: row[key] for key in ("p_in", "sigma", "alpha", "run")}
        for metric in ("bound", "lambda2", "error_tolerance"):
            records.append({**ident, "iteration": np.nan, "method": "fedrelax", "seed": seed,
                            "metric": metric, "value": row[metric]})
        records += [{**ident, "iteration": h["iteration"], "method": "fedrelax", "seed": seed,
                     "metric": "variation", "value": float(h["variation"][b])}
                    for h in result.history]
    return pd.DataFrame.from_records(records)
