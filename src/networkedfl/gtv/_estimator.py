"""GTV minimisation for networked linear regression as a scikit-learn estimator.

:class:`GTVRegressor` wraps :func:`~networkedfl.gtv.gtv_primal_dual` with the squared-error
loss (GTV paper, eq. (38)).  The graph is a parameter (``GTVRegressor(graph, lam=...)``) and
the data follow scikit-learn's conventions, so that ``clone``, ``GridSearchCV`` and
``cross_val_score`` work: ``X`` is one table of the samples of all nodes whose first column
is the node of each sample (``GroupKFold`` on that column holds out whole nodes, which are
then fitted through the graph alone), or, for convenience, one array per node (a stacked
``(n, m, d)`` array or ``n`` arrays ``(m_i, d)``).  Without a graph every sample belongs to
one node: GTV is then least squares, and the estimator passes scikit-learn's
``check_estimator`` (the checks it does not pass, and why: ``docs/package.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._nodedata import (
    NodeData,
    is_per_node,
    node_samples,
    per_node_output,
    pooled_labels,
    refuse_graph_first,
)
from .._validation import check_finite, check_node_mask
from ..graphs import EmpiricalGraph, GraphLike, as_graph
from ._losses import SquaredErrorLoss
from ._primal_dual import IterationState, default_step_sizes, gtv_primal_dual

__all__ = ["GTVRegressor"]

#: The primal step of a node without edges: its iteration is the proximal point method on its
#: own loss, which converges faster the larger the step (``1/deg_i`` is undefined there).
ISOLATED_TAU = 1000.0


class GTVRegressor(RegressorMixin, BaseEstimator):
    """One linear model per node of an empirical graph, coupled by GTV (GTV Algorithm 1).

    Minimises ``sum_{i in M} L_i(w_i) + lam sum_{e = {i,j}} A_e phi(w_i - w_j)`` with the
    average squared error ``L_i`` of eq. (38) at the nodes ``M`` that hold samples.

    Parameters
    ----------
    graph
        The empirical graph: an :class:`~networkedfl.graphs.EmpiricalGraph`, a networkx graph
        or a symmetric adjacency matrix (:func:`~networkedfl.graphs.as_graph`).  ``None``:
        every sample belongs to one node (least squares).
    lam
        GTV parameter ``lambda`` of eq. (16).
    penalty
        ``"nlasso"`` (``||.||_2``, default), ``"l1"`` or ``"mocha"`` (``||.||_2^2``).
    n_iter
        Maximum number of primal-dual iterations.
    gap_tol
        Stop once the certified primal-dual gap (34) is at most this.
    method
        ``"restarted"`` (default): Algorithm 1 with adaptive restarts, primal weight and step
        scale; ``"pdhg"``: with the paper's fixed steps (:func:`~networkedfl.gtv.gtv_primal_dual`).
    rel_gap_tol
        Stop once the certified relative gap ``gap / objective`` is at most this (default
        1e-6: the objective within 1e-6 of the optimum, relatively); with neither tolerance
        the method runs ``n_iter`` iterations.
    tau, sigma
        Primal (per node) and dual (per edge) step sizes of :func:`gtv_primal_dual`; ``None``:
        ``1/deg_i`` (:data:`ISOLATED_TAU` at a node without edges) and 0.45.
    fit_intercept
        Give every node an intercept, a constant feature whose weight GTV couples like the
        others; ``False`` (default): the paper's model through the origin (centred data).
    callback
        ``callback(state)`` after every iteration with an
        :class:`~networkedfl.gtv.IterationState`; returning ``True`` stops the iteration.
    progress
        tqdm progress bar (``None``: as the environment says).

    Attributes
    ----------
    coef_
        ``(n, d)`` fitted weights, row ``i`` node ``i``'s.
    intercept_
        ``(n,)`` intercepts (zeros without ``fit_intercept``).
    weights_
        ``(n, d + fit_intercept)`` the solver's weights (``coef_`` and the intercept column).
    n_iter_
        Iterations run.
    gap_
        Last certified primal-dual gap evaluated (NaN without a tolerance).
    converged_
        Whether the gap fell below its tolerance (``gap_tol`` or ``rel_gap_tol``).
    n_features_in_, feature_names_in_
        Columns of ``X`` seen in ``fit`` (with a graph: the node column and ``d`` features).

    Examples
    --------
    >>> model = GTVRegressor(graph, lam=0.1).fit(X, y)  # X[i], y[i]: node i's samples  # doctest: +SKIP
    >>> search = GridSearchCV(GTVRegressor(graph), {"lam": [0.01, 0.1, 1.0]}, cv=GroupKFold(5))  # doctest: +SKIP
    >>> search.fit(table, target, groups=table[:, 0])  # the node in column 0: nodes held out  # doctest: +SKIP
    """

    def __init__(self, graph: GraphLike | None = None, *, lam: float = 1.0, penalty: str = "nlasso",
                 n_iter: int = 10_000, gap_tol: float | None = None, method: str = "restarted",
                 rel_gap_tol: float | None = 1e-6, tau: Any = None, sigma: Any = None,
                 fit_intercept: bool = False,
                 callback: Callable[[IterationState], bool | None] | None = None,
                 progress: bool | None = None) -> None:
        self.graph = graph
        self.lam = lam
        self.penalty = penalty
        self.n_iter = n_iter
        self.gap_tol = gap_tol
        self.method = method
        self.rel_gap_tol = rel_gap_tol
        self.tau = tau
        self.sigma = sigma
        self.fit_intercept = fit_intercept
        self.callback = callback
        self.progress = progress

    def fit(self, X: Any, y: Any, mask: Any = None) -> GTVRegressor:
        """Fit every node's weights from its samples.

        Parameters
        ----------
        X, y
            One table of samples (with a graph: the node in column 0) and their labels, or one
            array per node: ``X[i]`` ``(m_i, d)`` and ``y[i]`` ``(m_i,)`` (a node may hold none).
        mask
            Optional ``(n,)`` boolean: the nodes whose samples are used (default: those that
            hold samples); the others are fitted through the graph alone.
        """
        graph = self._graph(X)
        check_finite(self.lam, "lam", sign="non-negative")
        n = 1 if graph is None else graph.n_nodes
        features, labels, node, _ = node_samples(self, None if graph is None else n, X, y, reset=True)
        if graph is None:
            graph = EmpiricalGraph(1, np.empty((0, 2), dtype=np.int64), np.empty(0))
        if self.fit_intercept:
            features = np.column_stack([features, np.ones(len(features))])
        counts = np.bincount(node, minlength=n)
        use = check_node_mask(mask, n)
        empty = counts == 0
        if (use & empty).any() and mask is not None:
            i = int(np.flatnonzero(use & empty)[0])
            raise ValueError(f"node {i} has no samples but mask is True there: mask=False holds a "
                             "node out (it is then fitted through the graph alone)")
        if empty.any():  # a zero sample where there is none; mask=False there: it never counts
            features = np.concatenate([features, np.zeros((int(empty.sum()), features.shape[1]))])
            labels = np.concatenate([labels, np.zeros(int(empty.sum()))])
            node = np.concatenate([node, np.flatnonzero(empty)])
        use &= ~empty
        data = NodeData.from_samples(features, labels, node, n)
        result = gtv_primal_dual(
            graph, SquaredErrorLoss(data, mask=None if use.all() else use), self.penalty,
            float(self.lam), self.n_iter, tau=self._tau(graph), sigma=self.sigma, gap_tol=self.gap_tol,
            method=self.method, rel_gap_tol=self.rel_gap_tol, callback=self.callback, progress=self.progress)
        self.weights_ = result.weights
        d = result.weights.shape[1] - int(bool(self.fit_intercept))
        self.coef_ = result.weights[:, :d]
        self.intercept_ = result.weights[:, d] if self.fit_intercept else np.zeros(n)
        self.n_iter_ = result.n_iter
        self.gap_ = result.gap
        self.converged_ = bool(result.converged)
        return self

    def _graph(self, X: Any) -> EmpiricalGraph | None:
        refuse_graph_first(self, X)
        return None if self.graph is None else as_graph(self.graph)

    def _tau(self, graph: EmpiricalGraph) -> Any:
        if self.tau is not None:
            return self.tau
        if not graph.isolated_nodes.size:
            return default_step_sizes(graph)[0]
        degrees = np.asarray(graph.degrees, float)
        return np.where(degrees > 0, 1.0 / np.where(degrees > 0, degrees, 1.0), ISOLATED_TAU)

    def predict(self, X: Any) -> Any:
        """Every sample's prediction by its node's model: ``(N,)`` for a table, ``(n, m)`` for a
        stacked ``(n, m, d)`` array, one array per node for per-node arrays."""
        check_is_fitted(self, "weights_", msg="This %(name)s is not fitted yet: call fit(X, y) first.")
        refuse_graph_first(self, X)
        n_nodes = None if self.graph is None else self.coef_.shape[0]
        features, _, node, sizes = node_samples(self, n_nodes, X, reset=False)
        values = np.einsum("nd,nd->n", features, self.coef_[node]) + self.intercept_[node]
        return per_node_output(values, X, sizes)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """R^2 of the predictions of all samples, pooled over the nodes."""
        from sklearn.metrics import r2_score

        per_node = self.graph is not None and is_per_node(X)
        predictions = self.predict(X)
        pred = np.concatenate([np.ravel(p) for p in predictions]) if per_node else predictions
        return float(r2_score(pooled_labels(y, per_node), pred, sample_weight=sample_weight))
