"""FedRelax, Algorithm 1 of Abdurakhmanova et al. (2024): model-agnostic FL over networks.

Each node ``i`` of an FL network holds a local dataset ``D^(i)``, a public unlabelled
dataset ``P^(i)`` and a local model of any kind: anything with ``fit(X, y,
sample_weight=...)`` and ``predict(X)``, e.g. any scikit-learn regressor; different nodes
may hold different model types.  Iteration ``k`` (eq. (10) with the squared error (11) as
local loss and discrepancy):

1. every node ``i'`` shares its predictions ``h_k^(i')(x)``, ``x in P^(i')``, with its
   neighbours;
2. every node refits its model on the augmented dataset (19)::

       D^(i) (weight 1)  U  {(x, h_k^(i')(x)) : x in P^(i'), i' in N(i)}  (weight alpha A_ii')

   which is regularised empirical risk minimisation of (10) as weighted least squares.

Options:

* ``weighting="objective"`` uses the weights of eq. (10) exactly: ``1/m_i`` for a local
  point and ``alpha A_ii' / |P^(i')|`` for a pseudo-labelled one (for a linear
  least-squares model one iteration is then the closed-form step of Algorithm 2);
  the default ``"paper"`` weights the pseudo-labelled points by ``alpha A_ii'`` and the local
  ones by 1, as described in the paper's experiments (Sec. IV-A2).
* ``self_distillation=r`` adds the paper's trick for models that refit from scratch
  (decision trees, eq. (20)): ``r`` points ``z ~ N(0, I_d)`` (or ``distillation_sampler``)
  labelled by the node's current model ``h_k^(i)``, weight ``distillation_weight``.
* ``public_subsample=r``: each node shares its predictions on a fresh random subset of
  ``r`` of its public points per iteration, weighted by ``|P^(i')| / r`` (an unbiased
  estimate of the discrepancy at a fraction of the fitting cost).
* A scikit-learn ``Pipeline`` gets the weights through its final step
  (``fit(X, y, <step>__sample_weight=w)``), the same refit as the bare final estimator's.
  Models whose ``fit`` takes no ``sample_weight`` (e.g. ``KNeighborsRegressor``, or a
  ``Pipeline`` ending in one) are fitted on a weighted resample (with replacement,
  probabilities proportional to the weights) of the augmented dataset, of the same size.

The per-node ``fit``/``predict`` calls are a loop (the models are black boxes); the
neighbourhoods, the gathering of the shared predictions and all random draws are
vectorised over the sparse adjacency.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._nodedata import (
    is_per_node,
    node_samples,
    per_node_output,
    pooled_labels,
    refuse_graph_first,
)
from .._validation import check_finite, check_int, check_representable
from ..graphs import EmpiricalGraph, GraphLike, as_graph
from ..progress import show_progress, tqdm
from ..seeding import Seed, as_rng

__all__ = [
    "FedRelax",
    "FedRelaxClassifier",
    "FedRelaxResult",
    "LocalModel",
    "accepts_sample_weight",
    "fedrelax",
    "predict_nodes",
]


class LocalModel(Protocol):
    """What FedRelax needs of a local model (scikit-learn's regressor interface)."""

    def fit(self, X: np.ndarray, y: np.ndarray, *args: Any, **kwargs: Any) -> Any: ...

    def predict(self, X: np.ndarray) -> np.ndarray: ...


#: ``callback(k, estimators) -> dict | bool | None`` after the initial fit (k = 0) and every
#: iteration; ``True`` stops the run.
Callback = Callable[[int, list[Any]], Mapping[str, Any] | bool | None]
#: ``sampler(rng, n_nodes, n_points, dim) -> (n_nodes, n_points, dim)`` distillation inputs.
Sampler = Callable[[np.random.Generator, int, int, int], np.ndarray]


@dataclass(frozen=True, eq=False)
class FedRelaxResult:
    """The fitted local models (one per node) and one history row per callback call."""

    estimators: list[Any]
    history: list[dict[str, Any]] = field(default_factory=list)


def accepts_sample_weight(estimator: Any) -> bool:
    """Whether ``estimator.fit`` takes sample weights: a ``sample_weight`` argument, or for a
    scikit-learn ``Pipeline`` its final step's (passed as ``<step>__sample_weight``)."""
    return _weight_key(estimator) is not None


def _weight_key(estimator: Any) -> str | None:
    """The keyword of ``fit`` that takes the sample weights: ``"sample_weight"``,
    ``"<last step>__sample_weight"`` for a ``Pipeline`` (nested ones too) whose final step takes
    them (scikit-learn's routing of fit parameters without metadata routing; with it enabled,
    ``"sample_weight"``, which the final step must request), or ``None``: weighted resampling."""
    if _is_pipeline(estimator):
        name, last = estimator.steps[-1]
        inner = _weight_key(last) if last not in (None, "passthrough") else None
        if inner is None:
            return None
        import sklearn

        return "sample_weight" if sklearn.get_config().get("enable_metadata_routing") else f"{name}__{inner}"
    try:
        params = inspect.signature(estimator.fit).parameters
    except (TypeError, ValueError, AttributeError):
        return None
    return "sample_weight" if "sample_weight" in params else None


def _is_pipeline(estimator: Any) -> bool:
    from sklearn.pipeline import Pipeline

    return isinstance(estimator, Pipeline)


def _copy(estimator: Any) -> Any:
    try:
        from sklearn.base import clone

        return clone(estimator)
    except (ImportError, TypeError):
        return copy.deepcopy(estimator)


def _make_estimators(estimators: Any, n: int) -> list[Any]:
    """``n`` independent local models from one template, a list of ``n``, or a factory."""
    if isinstance(estimators, Sequence) and not isinstance(estimators, str):
        if len(estimators) != n:
            raise ValueError(f"need one estimator per node: got {len(estimators)} for {n} nodes")
        models = [_copy(e) for e in estimators]
    elif callable(estimators) and not hasattr(estimators, "fit"):
        models = [estimators(i) for i in range(n)]
    else:
        models = [_copy(estimators) for _ in range(n)]
    for i, m in enumerate(models):
        if not (hasattr(m, "fit") and hasattr(m, "predict")):
            raise TypeError(f"the local model of node {i} ({type(m).__name__}) needs fit and predict")
    return models


def _node_arrays(values: Any, n: int, what: str, ndim: int) -> list[np.ndarray]:
    arrays = [np.asarray(v, float) for v in values]
    if len(arrays) != n:
        raise ValueError(f"{what}: need one array per node, got {len(arrays)} for {n} nodes")
    for i, a in enumerate(arrays):
        if a.ndim != ndim:
            raise ValueError(f"{what}[{i}] must have {ndim} dimensions, got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{what}[{i}] contains NaN or inf")
        check_representable(a, f"{what}[{i}]")
    return arrays


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + l)`` for all pairs, without a Python loop."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, np.int64)
    shift = np.repeat(np.asarray(starts, np.int64) - (np.cumsum(lengths) - lengths), lengths)
    return shift + np.arange(total)


def _is_tree(model: Any) -> bool:
    """A scikit-learn regression tree (``DecisionTreeRegressor``, ``ExtraTreeRegressor``)
    with the library's own ``fit`` and ``predict``: it can skip re-validating its inputs
    (``check_input=False``), most of a small tree's fitting and prediction time.  The inputs
    of :func:`fedrelax` are checked once (shapes, finite values) and handed over as the
    tree's own validation would make them (float32 features in C order, float64 targets),
    so the fitted trees are the same."""
    from sklearn.tree import DecisionTreeRegressor

    cls = type(model)
    return (isinstance(model, DecisionTreeRegressor) and cls.fit is DecisionTreeRegressor.fit
            and cls.predict is DecisionTreeRegressor.predict)


def _predict(model: Any, x: np.ndarray, tree: bool) -> np.ndarray:
    if tree:
        return model.predict(np.ascontiguousarray(x, np.float32), check_input=False)
    return model.predict(x)


def _fit(model: Any, x: np.ndarray, y: np.ndarray, w: np.ndarray, weight_key: str | None,
         rng: np.random.Generator, tree: bool = False) -> None:
    if tree:
        model.fit(np.ascontiguousarray(x, np.float32), np.ascontiguousarray(y, np.float64),
                  sample_weight=w, check_input=False)
        return
    if weight_key is not None:
        model.fit(x, y, **{weight_key: w})
        return
    if np.allclose(w, w[0]):
        model.fit(x, y)
        return
    idx = rng.choice(w.size, size=w.size, replace=True, p=w / w.sum())
    model.fit(x[idx], y[idx])


class _NodeWork:
    """Run a per-node call for a list of nodes: the scikit-learn trees' calls in a thread pool
    (their growing and prediction release the GIL), every other model's in node order in the
    calling thread (a model without ``sample_weight`` draws its resampling from the shared
    generator, whose order must not depend on timing).  The worker threads see the caller's
    scikit-learn configuration (``sklearn.config_context`` is thread-local)."""

    def __init__(self, trees: Sequence[bool], n_jobs: int) -> None:
        self.trees = trees
        self.pool = ThreadPoolExecutor(n_jobs) if n_jobs > 1 and sum(trees) > 1 else None

    def __enter__(self) -> _NodeWork:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple[int, tuple[Any, ...]]]) -> list[Any]:
        """``[fn(*args) for node, args in calls]``, in that order."""
        if self.pool is None:
            return [fn(*args) for _, args in calls]
        import sklearn

        config = sklearn.get_config()

        def in_context(*args: Any) -> Any:
            with sklearn.config_context(**config):
                return fn(*args)

        futures = {k: self.pool.submit(in_context, *args)
                   for k, (node, args) in enumerate(calls) if self.trees[node]}
        results = [None if k in futures else fn(*args) for k, (_, args) in enumerate(calls)]
        for k, future in futures.items():
            results[k] = future.result()
        return results


def _standard_normal(rng: np.random.Generator, n: int, r: int, d: int) -> np.ndarray:
    return rng.standard_normal((n, r, d))


def fedrelax(
    graph: GraphLike,
    features: Any,
    labels: Any,
    public: Any,
    estimators: Any,
    *,
    alpha: float,
    n_iter: int,
    weighting: Literal["paper", "objective"] = "paper",
    self_distillation: int = 0,
    distillation_weight: float = 1.0,
    distillation_sampler: Sampler | None = None,
    public_subsample: int | None = None,
    fit_initial: bool = True,
    seed: Seed = None,
    callback: Callback | None = None,
    progress: bool | None = None,
    n_jobs: int | None = None,
) -> FedRelaxResult:
    """FedRelax Algorithm 1 with any local models (squared-error loss and discrepancy).

    Parameters
    ----------
    graph
        FL network; ``A_ii'`` are its edge weights (weight-0 edges contribute nothing).
    features, labels
        Local datasets ``D^(i)``: per node ``(m_i, d)`` and ``(m_i,)`` (a sequence, or
        stacked ``(n, m, d)`` / ``(n, m)`` arrays).  Numeric labels; with classifiers as
        local models, class codes ``0 .. K-1`` (the neighbours' predicted classes are then the
        pseudo-labels; :class:`FedRelaxClassifier` encodes labels of any type).
    public
        Public datasets ``P^(i)``, per node ``(m'_i, d)`` (sequence or ``(n, m', d)``).
    estimators
        The local models: one template (cloned for every node), a sequence of ``n``
        (cloned: different nodes may hold different model types), or a factory
        ``f(i) -> model``.  Each needs ``fit`` and ``predict``.
    alpha
        GTV parameter ``alpha >= 0``; ``alpha = 0`` is independent local training.
    n_iter
        Number of iterations ``K``.
    weighting
        ``"paper"`` (local weight 1, pseudo-labelled ``alpha A_ii'``) or ``"objective"``
        (the exact weights of (10): ``1/m_i`` and ``alpha A_ii' / |P^(i')|``).
    self_distillation, distillation_weight, distillation_sampler
        Number of self-distillation points per node and iteration (eq. (20); 0: none),
        their weight, and the sampler of their inputs (default ``N(0, I_d)``).
    public_subsample
        Share predictions on a fresh random subset of this many public points per node
        and iteration (weights scaled by ``|P^(i')| / r``); ``None``: all of them.
    fit_initial
        Fit every model on its local data first (``h_0``); ``False``: the given models must
        already be fitted (they are cloned only when ``fit_initial`` is true).
    seed
        Randomness of distillation inputs, subsamples and resampling
        (:mod:`networkedfl.seeding`; ``None``: fresh entropy).
    callback
        ``callback(k, estimators) -> dict | bool | None`` after the initial fit (``k = 0``) and
        after every iteration; its entries form the ``history`` rows (with ``"iteration": k``);
        ``True`` stops the run there.
    progress
        tqdm progress bar over iterations (``None``: the environment decides).
    n_jobs
        Threads for the nodes' fits and predictions within an iteration (``None`` or 1:
        none).  Only scikit-learn's regression trees use them (they release the GIL while
        they grow); other models run in node order.  The results do not depend on it.

    Returns
    -------
    FedRelaxResult
        The fitted local models (``estimators[i]`` belongs to node ``i``) and the history.
    """
    graph = as_graph(graph)  # an EmpiricalGraph, a networkx graph or an adjacency matrix
    n = graph.n_nodes
    check_finite(alpha, "alpha", sign="non-negative")
    check_finite(distillation_weight, "distillation_weight", sign="non-negative")
    if isinstance(n_iter, bool) or int(n_iter) != n_iter or n_iter < 0:
        raise ValueError(f"n_iter must be a non-negative integer, got {n_iter!r}")
    if weighting not in ("paper", "objective"):
        raise ValueError(f"unknown weighting {weighting!r}; expected 'paper' or 'objective'")
    if int(self_distillation) != self_distillation or self_distillation < 0:
        raise ValueError(f"self_distillation must be a non-negative integer, got {self_distillation!r}")
    if public_subsample is not None and (int(public_subsample) != public_subsample or public_subsample < 1):
        raise ValueError(f"public_subsample must be a positive integer or None, got {public_subsample!r}")
    rng = as_rng(seed)
    xs = _node_arrays(features, n, "features", 2)
    ys = _node_arrays(labels, n, "labels", 1)
    ps = _node_arrays(public, n, "public", 2)
    dim = xs[0].shape[1]
    for i in range(n):  # validation of the inputs, once
        if xs[i].shape[0] != ys[i].shape[0] or xs[i].shape[1] != dim or ps[i].shape[1] != dim:
            raise ValueError(f"node {i}: features {xs[i].shape}, labels {ys[i].shape} and public "
                             f"{ps[i].shape} do not match (d = {dim})")
    models = _make_estimators(estimators, n) if fit_initial else list(estimators)
    if len(models) != n:
        raise ValueError(f"need one estimator per node: got {len(models)} for {n} nodes")
    weight_keys = [_weight_key(m) for m in models]  # the keyword of fit for the weights, or None
    trees = [_is_tree(m) for m in models]  # inputs already checked: skip the trees' own checks
    m_local = np.array([x.shape[0] for x in xs], np.int64)
    local_w = [np.full(int(m), 1.0 / m if weighting == "objective" else 1.0) for m in m_local]

    # public data of all nodes in one array; node j's points are rows pub_start[j] + (0 .. m'_j - 1)
    pub_len = np.array([p.shape[0] for p in ps], np.int64)
    pub_start = np.concatenate([[0], np.cumsum(pub_len)[:-1]])
    pub_all = np.concatenate(ps)
    adj = graph.adjacency.tocsr()
    adj.sort_indices()

    history: list[dict[str, Any]] = []

    def record(k: int) -> bool:
        """Call the callback; whether it asked to stop."""
        if callback is None:
            return False
        out = callback(k, models)
        stop = isinstance(out, bool | np.bool_) and bool(out)
        history.append({"iteration": k, **({} if isinstance(out, bool | np.bool_) else dict(out or {}))})
        return stop

    workers = 1 if n_jobs is None else check_int(n_jobs, "n_jobs", minimum=1)
    with _NodeWork(trees, workers) as work:
        if fit_initial:  # h_0: each model on its own data
            work.map(_fit, [(i, (models[i], xs[i], ys[i], local_w[i], weight_keys[i], rng, trees[i])) for i in range(n)])
        stopped = record(0)
        sampler = distillation_sampler or _standard_normal
        coupled = alpha > 0 and adj.nnz > 0
        for k in tqdm(range(1, 0 if stopped else int(n_iter) + 1), desc="FedRelax", leave=False,
                      disable=not show_progress(progress)):
            # 1. what every node shares: the rows of its public data and its predictions there
            if public_subsample is None:
                share_len = pub_len
                share_rows = np.arange(pub_all.shape[0])
            else:
                share_len = np.minimum(pub_len, int(public_subsample))
                keys = rng.random(pub_all.shape[0])
                owner = np.repeat(np.arange(n), pub_len)
                order = np.lexsort((keys, owner))  # rows of each node in random order
                rank = np.arange(order.size) - np.repeat(pub_start, pub_len)
                share_rows = order[rank < np.repeat(share_len, pub_len)]
            share_start = np.concatenate([[0], np.cumsum(share_len)[:-1]])
            shared_pred = np.zeros(share_rows.size)
            if coupled:  # predictions of black-box models: one call per node
                shared = work.map(_predict, [
                    (j, (models[j], pub_all[share_rows[share_start[j]: share_start[j] + share_len[j]]], trees[j]))
                    for j in range(n)])
                for j, pred in enumerate(shared):
                    shared_pred[share_start[j]: share_start[j] + share_len[j]] = pred
            if self_distillation:
                z = np.asarray(sampler(rng, n, int(self_distillation), dim), float)
                if not np.all(np.isfinite(z)):
                    raise ValueError(f"iteration {k}: the distillation sampler returned NaN or inf")
                z_pred = work.map(_predict, [(i, (models[i], z[i], trees[i])) for i in range(n)])
            # 2. every node refits on its augmented dataset (19) (+ self-distillation points (20))
            if coupled:  # the weights of the shared predictions (only used with coupling)
                scale = (1.0 / share_len) if weighting == "objective" else (pub_len / share_len)
            fits = []
            for i in range(n):
                x_parts, y_parts, w_parts = [xs[i]], [ys[i]], [local_w[i]]
                if coupled:
                    nbrs = adj.indices[adj.indptr[i]: adj.indptr[i + 1]]
                    a = alpha * adj.data[adj.indptr[i]: adj.indptr[i + 1]]
                    keep = a > 0
                    nbrs, a = nbrs[keep], a[keep]
                    idx = _ranges(share_start[nbrs], share_len[nbrs])
                    x_parts.append(pub_all[share_rows[idx]])
                    y_parts.append(shared_pred[idx])
                    w_parts.append(np.repeat(a * scale[nbrs], share_len[nbrs]))
                if self_distillation:
                    x_parts.append(z[i])
                    y_parts.append(np.asarray(z_pred[i], float))
                    w_parts.append(np.full(int(self_distillation), float(distillation_weight)))
                fits.append((i, (models[i], np.concatenate(x_parts), np.concatenate(y_parts),
                                  np.concatenate(w_parts), weight_keys[i], rng, trees[i])))
            work.map(_fit, fits)
            if record(k):
                break
    return FedRelaxResult(models, history)


def predict_nodes(estimators: Sequence[Any], features: Any) -> list[np.ndarray] | np.ndarray:
    """Every node's model on its own inputs: ``features[i]`` ``(m_i, d)`` -> ``(m_i,)``.

    A stacked ``(n, m, d)`` input gives an ``(n, m)`` array, a sequence a list of arrays.
    """
    preds = [np.asarray(est.predict(np.asarray(x, float)), float)
             for est, x in zip(estimators, features, strict=True)]
    if isinstance(features, np.ndarray) and features.ndim == 3:
        return np.stack(preds)
    return preds


_NOT_FITTED = "This %(name)s is not fitted yet: call fit(X, y) first."


def _public_arrays(public: Any, n: int, dim: int, coupled: bool) -> Any:
    """The public data ``fedrelax`` takes: one table ``(m', d)`` shared by every node, or one
    per node; without coupling (no edge, ``alpha = 0``) ``None`` stands for none."""
    if public is None:
        if coupled:
            raise ValueError("FedRelax shares predictions on public data along the edges: "
                             "fit(X, y, public=...) with one table (m', d) for every node or one per node")
        return [np.empty((0, dim))] * n
    shared = public.ndim == 2 if isinstance(public, np.ndarray) else bool(len(public)) and np.ndim(public[0]) == 1
    if shared:
        return [np.asarray(public, float)] * n  # one table for all: shared, not copied
    return public


class _FedRelaxBase(BaseEstimator):
    """The parameters and the fit shared by :class:`FedRelax` and :class:`FedRelaxClassifier`."""

    _kind = "regressor"

    def __init__(
        self,
        estimator: Any,
        graph: GraphLike | None = None,
        *,
        nodelist: Sequence[Any] | None = None,
        alpha: float = 0.01,
        n_iter: int = 5,
        weighting: Literal["paper", "objective"] = "paper",
        self_distillation: int = 0,
        distillation_weight: float = 1.0,
        distillation_sampler: Sampler | None = None,
        public_subsample: int | None = None,
        random_state: Seed = None,
        callback: Callback | None = None,
        progress: bool | None = None,
        n_jobs: int | None = None,
    ) -> None:
        self.estimator = estimator
        self.graph = graph
        self.nodelist = nodelist
        self.alpha = alpha
        self.n_iter = n_iter
        self.weighting = weighting
        self.self_distillation = self_distillation
        self.distillation_weight = distillation_weight
        self.distillation_sampler = distillation_sampler
        self.public_subsample = public_subsample
        self.random_state = random_state
        self.callback = callback
        self.progress = progress
        self.n_jobs = n_jobs

    def _check_kind(self) -> None:
        """A classifier template in the regressor (or the reverse) would give labels of the wrong
        kind without a word (codes as floats, means of labels): refuse it, naming the other."""
        from sklearn.base import is_classifier, is_regressor

        templates = self.estimator if isinstance(self.estimator, Sequence) else [self.estimator]
        for i, model in enumerate(templates):
            if not hasattr(model, "fit"):
                continue  # a factory: its models are the user's
            wrong = is_classifier(model) if self._kind == "regressor" else is_regressor(model)
            if wrong:
                other = "FedRelaxClassifier" if self._kind == "regressor" else "FedRelax"
                where = "" if model is self.estimator else f" (node {i})"
                raise TypeError(f"{type(self).__name__} takes {self._kind}s as local models; "
                                f"{type(model).__name__}{where} is not one: use {other}")

    def _fit_nodes(self, X: Any, y: Any, public: Any, more: tuple[Any, ...]) -> None:
        """Run FedRelax on the graph with every node's samples (numeric labels) and public data."""
        refuse_graph_first(self, X)
        if more:
            raise TypeError(f"{type(self).__name__}.fit() takes X, y and public, got {3 + len(more)} "
                            "positional arguments")
        self._check_kind()
        rng = as_rng(self.random_state, "random_state")
        if self.graph is None and self.nodelist is not None:
            raise ValueError(f"nodelist orders the nodes of a networkx graph; {type(self).__name__} has no graph")
        graph = EmpiricalGraph(1, np.empty((0, 2), dtype=np.int64), np.empty(0)) if self.graph is None \
            else as_graph(self.graph, nodelist=self.nodelist)
        n = graph.n_nodes
        features, labels, node, _ = node_samples(self, None if self.graph is None else n, X, y, reset=True)
        counts = np.bincount(node, minlength=n)
        if not counts.all():
            raise ValueError(f"node {int(np.flatnonzero(counts == 0)[0])} has no samples: FedRelax fits "
                             "every node's model on its own samples first (hold out samples, not nodes)")
        order = np.argsort(node, kind="stable")  # every node's samples, in the table's order
        cut = np.cumsum(counts)[:-1]
        xs, ys = np.split(features[order], cut), np.split(labels[order], cut)
        coupled = graph.n_edges > 0 and self.alpha > 0
        result = fedrelax(
            graph, xs, ys, _public_arrays(public, n, features.shape[1], coupled), self.estimator,
            alpha=self.alpha, n_iter=self.n_iter, weighting=self.weighting,
            self_distillation=self.self_distillation, distillation_weight=self.distillation_weight,
            distillation_sampler=self.distillation_sampler, public_subsample=self.public_subsample,
            seed=rng, callback=self.callback, progress=self.progress, n_jobs=self.n_jobs,
        )
        self.estimators_ = result.estimators
        self.history_ = result.history

    def _node_outputs(self, X: Any, method: str, width: int | None = None) -> Any:
        """Every sample's ``method`` (``predict``, ``predict_proba``) by its node's model, in the
        layout of ``X`` (one call per node: the models are black boxes); ``width`` columns per
        sample, ``None``: one value."""
        check_is_fitted(self, "estimators_", msg=_NOT_FITTED)
        refuse_graph_first(self, X)
        n = len(self.estimators_)
        features, _, node, sizes = node_samples(self, None if self.graph is None else n, X, reset=False)
        counts = np.bincount(node, minlength=n)
        order = np.argsort(node, kind="stable")
        values = np.zeros(len(features) if width is None else (len(features), width))
        for i, rows in enumerate(np.split(order, np.cumsum(counts)[:-1])):
            if rows.size:
                out = getattr(self.estimators_[i], method)(features[rows])
                values[rows] = self._node_columns(i, np.asarray(out, float))
        return per_node_output(values, X, sizes)

    def _node_columns(self, node: int, out: np.ndarray) -> np.ndarray:
        return out.ravel()


class FedRelax(RegressorMixin, _FedRelaxBase):
    """Scikit-learn-style FedRelax (Algorithm 1) for a network of arbitrary regressors
    (classifiers: :class:`FedRelaxClassifier`).

    The graph is a parameter and the data follow GTVRegressor's conventions: one table of the
    samples of all nodes whose first column is the node of each sample, or one array per node
    (``X[i]`` ``(m_i, d)``, ``y[i]``); without a graph every sample belongs to one node (the
    estimator is then its local model, refitted ``n_iter`` times).

    Example
    -------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> model = FedRelax(DecisionTreeRegressor(max_depth=5), graph, alpha=0.05, n_iter=5,
    ...                  self_distillation=100, random_state=0)
    >>> model.fit(X, y, public=P)                 # doctest: +SKIP
    >>> predictions = model.predict(X_val)        # doctest: +SKIP

    Parameters
    ----------
    estimator
        One template, a list with one model per node, or a factory ``f(i)``.
    graph
        The FL network (an ``EmpiricalGraph``, a networkx graph or an adjacency matrix);
        ``None``: one node.  Node ``i`` (the data ``X[i]``, or the rows whose node column is
        ``i``) is row ``i`` of an adjacency matrix, node ``i`` of an ``EmpiricalGraph`` and
        ``nodelist[i]`` of a networkx graph.
    nodelist
        The order of a networkx graph's nodes, as for :class:`~networkedfl.gtv.GTVRegressor`:
        ``X[i]`` is the data of node ``nodelist[i]``; needed unless the nodes are ``0 .. n-1``
        listed in that order by ``G.nodes`` (otherwise a ``GraphError`` naming ``nodelist``).
    alpha, n_iter, weighting, self_distillation, distillation_weight, distillation_sampler, public_subsample, n_jobs
        As for :func:`fedrelax`.
    random_state
        Seed of FedRelax's own random draws: ``None``, an int, a numpy ``Generator``,
        ``SeedSequence``, ``BitGenerator`` or ``RandomState`` (the local models keep their
        own ``random_state``).
    callback
        ``callback(k, estimators) -> dict | bool | None`` after the initial fit and every
        iteration: its entries form :attr:`history_`, ``True`` stops the run.
    progress
        tqdm progress bar.

    Attributes
    ----------
    estimators_
        The fitted local models, ``estimators_[i]`` at node ``i``.
    history_
        The rows returned by ``callback`` (empty without one).
    n_features_in_, feature_names_in_
        Columns of ``X`` seen in ``fit`` (with a graph: the node column and ``d`` features).
    """

    def fit(self, X: Any, y: Any, public: Any = None, *more: Any) -> FedRelax:
        """Run FedRelax on the graph with every node's samples and public data.

        Parameters
        ----------
        X, y
            One table of samples (with a graph: the node in column 0) and their labels, or one
            array per node.  Every node needs samples (its model is fitted on them first).
        public
            The public data ``P^(i)`` on which neighbours share predictions: one table
            ``(m', d)`` that every node reads, or one per node (a sequence or ``(n, m', d)``);
            ``None`` only without coupling (no graph, no edge or ``alpha = 0``).  (Model
            selection tools slice fit arguments as long as ``X`` like ``X``: give them a public
            table of another length.)
        """
        self._fit_nodes(X, y, public, more)
        return self

    def predict(self, X: Any) -> list[np.ndarray] | np.ndarray:
        """Every sample's prediction by its node's model: ``(N,)`` for a table, ``(n, m)`` for a
        stacked ``(n, m, d)`` array, one array per node for per-node arrays (one ``predict``
        call per node: the models are black boxes)."""
        return self._node_outputs(X, "predict")

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """R^2 of every sample's prediction by its node's model, pooled over the nodes (the
        ``score`` of scikit-learn regressors)."""
        from sklearn.metrics import r2_score

        per_node = self.graph is not None and is_per_node(X)
        pred = np.ravel(self.predict(X))  # an ndarray in X's layout (per_node_output)
        return float(r2_score(pooled_labels(y, per_node), pred, sample_weight=sample_weight))

    def predict_node(self, node: int, X: np.ndarray) -> np.ndarray:
        """Predictions of node ``node``'s model on its features ``X`` ``(m, d)``."""
        check_is_fitted(self, "estimators_", msg=_NOT_FITTED)
        return np.asarray(self.estimators_[node].predict(np.asarray(X, float)), float)


def _has_local(method: str) -> Callable[[Any], bool]:
    """Whether every local model (fitted, else the templates; a factory's are unknown) has ``method``."""
    def check(self: Any) -> bool:
        models = getattr(self, "estimators_", None)
        if models is None:
            models = self.estimator if isinstance(self.estimator, Sequence) else [self.estimator]
        return all(hasattr(m, method) for m in models if hasattr(m, "fit"))
    return check


class FedRelaxClassifier(ClassifierMixin, _FedRelaxBase):
    """Scikit-learn-style FedRelax (Algorithm 1) for a network of arbitrary classifiers.

    The non-parametric FedRelax of :class:`FedRelax` with classification losses (Abdurakhmanova
    et al. 2024, Sec. I: the method is "compatible with ... various choices for the loss
    function (regression or classification)"; Jung 2023 eq. (5): the discrepancy is measured
    with a loss of the label space).  The labels, of any type (strings, integers, ...), are
    encoded as the codes ``0 .. K-1`` of the sorted classes of the whole network (scikit-learn's
    ``LabelEncoder``); every node's classifier is fitted on codes, and neighbours share their
    *predicted classes* on the public data, which enter the augmented dataset (19) as
    pseudo-labels with weights ``alpha A_ii'``.  The refit (10) is then regularised weighted ERM
    with the local model's own classification loss (the classifier's ``sample_weight``),
    the 0/1 discrepancy's surrogate.  ``predict`` returns labels of ``y``'s type,
    ``predict_proba`` (where the local models have it) one column per class of the network
    (a node's model never shown a class gives it probability 0).

    Parameters and the data layout are those of :class:`FedRelax`; ``estimator`` holds
    classifiers (each with ``fit``, ``predict``, and ``sample_weight`` in ``fit`` or a weighted
    resample, see :func:`fedrelax`).

    Example
    -------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> model = FedRelaxClassifier(DecisionTreeClassifier(max_depth=5), graph, alpha=0.05)
    >>> model.fit(X, y, public=P).predict(X_val)   # doctest: +SKIP

    Attributes
    ----------
    classes_
        The sorted classes of ``y`` over all nodes, of ``y``'s dtype.
    estimators_
        The fitted local models, ``estimators_[i]`` at node ``i`` (fitted on the codes of
        ``classes_``).
    history_, n_features_in_, feature_names_in_
        As for :class:`FedRelax`.
    """

    _kind = "classifier"

    def fit(self, X: Any, y: Any, public: Any = None, *more: Any) -> FedRelaxClassifier:
        """Encode the labels of all nodes and run FedRelax on their codes (as :meth:`FedRelax.fit`)."""
        from sklearn.utils import assert_all_finite
        from sklearn.utils.multiclass import check_classification_targets

        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        per_node = self.graph is not None and is_per_node(X)
        parts = [np.asarray(v) for v in y] if per_node else [np.asarray(y)]
        pooled = np.concatenate([np.ravel(v) for v in parts]) if parts else np.empty(0)
        if any(v.ndim > 2 or (v.ndim == 2 and v.shape[1] != 1) for v in parts):
            raise ValueError("FedRelaxClassifier takes one label per sample (y of shape (N,) or one "
                             f"(m_i,) per node); got shape {next(v.shape for v in parts if v.ndim > 1)}")
        if pooled.dtype.kind in "fc":
            assert_all_finite(pooled, input_name="y")  # before the target type, which casts y
        check_classification_targets(pooled)
        self.classes_, codes = np.unique(pooled, return_inverse=True)
        codes = np.split(codes.ravel(), np.cumsum([v.size for v in parts])[:-1])
        coded = [c.reshape(v.shape) for c, v in zip(codes, parts, strict=True)]
        self._fit_nodes(X, coded if per_node else coded[0], public, more)
        return self

    def _labels(self, codes: Any) -> Any:
        if isinstance(codes, list):
            return [self.classes_[np.rint(c).astype(np.intp)] for c in codes]
        return self.classes_[np.rint(codes).astype(np.intp)]

    def _node_columns(self, node: int, out: np.ndarray) -> np.ndarray:
        if out.ndim == 1:
            return out
        local = np.rint(np.asarray(self.estimators_[node].classes_, float)).astype(np.intp)
        full = np.zeros((out.shape[0], len(self.classes_)))
        full[:, local] = out  # the node's classes where they are among the network's
        return full

    def predict(self, X: Any) -> list[np.ndarray] | np.ndarray:
        """Every sample's class by its node's model, of ``y``'s dtype, in the layout of ``X``
        (as :meth:`FedRelax.predict`)."""
        return self._labels(self._node_outputs(X, "predict"))

    @available_if(_has_local("predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        """Every sample's class probabilities by its node's model, one column per class of
        :attr:`classes_`: ``(N, K)`` for a table or for per-node arrays (node after node),
        ``(n, m, K)`` for a stacked array."""
        check_is_fitted(self, "estimators_", msg=_NOT_FITTED)
        return self._node_outputs(X, "predict_proba", len(self.classes_))

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy of every sample's prediction by its node's model, pooled over the nodes (the
        ``score`` of scikit-learn classifiers)."""
        from sklearn.metrics import accuracy_score

        per_node = self.graph is not None and is_per_node(X)
        pred = np.ravel(self.predict(X))  # an ndarray in X's layout (per_node_output)
        truth = np.concatenate([np.ravel(v) for v in y]) if per_node else np.ravel(y)
        return float(accuracy_score(truth, pred, sample_weight=sample_weight))

    def predict_node(self, node: int, X: np.ndarray) -> np.ndarray:
        """Classes predicted by node ``node``'s model for its features ``X`` ``(m, d)``."""
        check_is_fitted(self, "estimators_", msg=_NOT_FITTED)
        return self._labels(np.asarray(self.estimators_[node].predict(np.asarray(X, float)), float))
