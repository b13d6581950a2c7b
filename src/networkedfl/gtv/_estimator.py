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

A fit whose numbers may mean nothing says so: a :class:`~sklearn.exceptions.ConvergenceWarning`
when the stopping rule is not met within ``n_iter`` iterations, and a warning naming the
connected components of the graph that hold no data (their weights stay at the zero start:
nothing in the GTV problem moves them).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
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
from ._gap import _Certificate, _edge_radius, relative_gap
from ._losses import SquaredErrorLoss
from ._penalties import get_penalty
from ._primal_dual import IterationState, _warn_unconverged, default_step_sizes, gtv_primal_dual

__all__ = ["GTVRegressor"]

#: The primal step of a node without edges: its iteration is the proximal point method on its
#: own loss, which converges faster the larger the step (``1/deg_i`` is undefined there).
ISOLATED_TAU = 1000.0

#: A gap this small relative to ``max(1, objective)`` is optimal to rounding: an exact fit,
#: objective and gap ~ 0, whose relative gap ``gap / objective`` says nothing.
EXACT_GAP = 1e-14


class GTVRegressor(RegressorMixin, BaseEstimator):
    """One linear model per node of an empirical graph, coupled by GTV (GTV Algorithm 1).

    Minimises ``sum_{i in M} L_i(w_i) + lam sum_{e = {i,j}} A_e phi(w_i - w_j)`` with the
    average squared error ``L_i`` of eq. (38) at the nodes ``M`` that hold samples.

    Parameters
    ----------
    graph
        The empirical graph: an :class:`~networkedfl.graphs.EmpiricalGraph`, a networkx graph
        or a symmetric adjacency matrix (:func:`~networkedfl.graphs.as_graph`).  ``None``:
        every sample belongs to one node (least squares).  Node ``i`` (the data ``X[i]``, or
        the rows whose node column is ``i``) is row ``i`` of a matrix, node ``i`` of an
        ``EmpiricalGraph``, and ``nodelist[i]`` of a networkx graph.
    nodelist
        The order of a networkx graph's nodes: ``X[i]`` is the data of node ``nodelist[i]``.
        Needed unless the graph's nodes are ``0 .. n - 1`` listed in that order (nodes
        inserted as ``[2, 3, 0, 1]``, or labelled by names, are an error without it: the
        order of the data cannot be guessed).
    lam
        GTV parameter ``lambda`` of eq. (16).
    penalty
        ``"nlasso"`` (``||.||_2``, default), ``"l1"`` or ``"mocha"`` (``||.||_2^2``).
    n_iter
        Maximum number of primal-dual iterations.  The defaults here (``method="restarted"``,
        ``n_iter=10_000`` (10,000) as a cap, ``rel_gap_tol=1e-6``) differ from those of
        :func:`~networkedfl.gtv.gtv_primal_dual` (the paper's ``method="pdhg"`` for 1,000
        iterations, no stopping rule): the estimator certifies its fit, the function runs
        the paper's iteration.
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
        ``True`` (default, as scikit-learn's linear models): every node has an intercept,
        the weight of a constant feature, coupled by GTV like the other weights (node
        ``i``'s parameters are ``(coef_[i], intercept_[i])`` in ``phi(w_i - w_j)``, so
        neighbours share intercepts as they share slopes).  ``False``: the paper's model
        through the origin (eq. (37), centred data).
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
        The certified primal-dual gap (34) of the returned weights: an upper bound on their
        objective minus the optimum (``inf`` where no feasible dual point can be formed).
    converged_
        Whether the gap met its tolerance (``gap_tol`` or ``rel_gap_tol``); without either,
        ``False``.  An unmet tolerance after ``n_iter`` iterations also gives a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    n_features_in_, feature_names_in_
        Columns of ``X`` seen in ``fit`` (with a graph: the node column and ``d`` features).

    Examples
    --------
    >>> model = GTVRegressor(graph, lam=0.1).fit(X, y)  # X[i], y[i]: node i's samples  # doctest: +SKIP
    >>> search = GridSearchCV(GTVRegressor(graph), {"lam": [0.01, 0.1, 1.0]}, cv=GroupKFold(5))  # doctest: +SKIP
    >>> search.fit(table, target, groups=table[:, 0])  # the node in column 0: nodes held out  # doctest: +SKIP
    """

    def __init__(self, graph: GraphLike | None = None, *, nodelist: Sequence[Any] | None = None,
                 lam: float = 1.0, penalty: str = "nlasso",
                 n_iter: int = 10_000, gap_tol: float | None = None, method: str = "restarted",
                 rel_gap_tol: float | None = 1e-6, tau: Any = None, sigma: Any = None,
                 fit_intercept: bool = True,
                 callback: Callable[[IterationState], bool | None] | None = None,
                 progress: bool | None = None) -> None:
        self.graph = graph
        self.nodelist = nodelist
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
        _warn_components_without_data(graph, use)
        loss = SquaredErrorLoss(NodeData.from_samples(features, labels, node, n), mask=None if use.all() else use)
        with warnings.catch_warnings():  # warned below, with the gap of the returned weights
            warnings.simplefilter("ignore", ConvergenceWarning)
            result = gtv_primal_dual(
                graph, loss, self.penalty, float(self.lam), self.n_iter, tau=self._tau(graph), sigma=self.sigma,
                gap_tol=self.gap_tol, method=self.method, rel_gap_tol=self.rel_gap_tol,
                callback=self.callback, progress=self.progress)
        self.gap_, self.converged_ = self._certify(graph, loss, result)
        self.weights_ = result.weights
        d = result.weights.shape[1] - int(bool(self.fit_intercept))
        self.coef_ = result.weights[:, :d]
        self.intercept_ = result.weights[:, d] if self.fit_intercept else np.zeros(n)
        self.n_iter_ = result.n_iter
        return self

    def _certify(self, graph: EmpiricalGraph, loss: SquaredErrorLoss, result: Any) -> tuple[float, bool]:
        """The gap of the returned weights and whether it meets the tolerance; a
        ``ConvergenceWarning`` when ``n_iter`` iterations ran out before it did."""
        if result.converged:  # the rule was met at the returned weights
            return float(result.gap), True
        radius = _edge_radius(graph, float(self.lam))
        primal, dual = _Certificate(graph, loss, get_penalty(self.penalty), radius)(result.weights, result.duals)
        gap, rel_gap = primal - dual, relative_gap(primal, dual)
        tolerances = [(gap, self.gap_tol), (rel_gap, self.rel_gap_tol),
                      (gap, EXACT_GAP * max(1.0, abs(primal)))]  # an exact fit: objective and gap ~ 0
        converged = any(tol is not None and value <= tol for value, tol in tolerances)
        if not converged and result.n_iter == self.n_iter and (self.gap_tol, self.rel_gap_tol) != (None, None):
            _warn_unconverged(type(self).__name__, result.n_iter, gap, rel_gap, self.gap_tol, self.rel_gap_tol)
        return float(gap), converged

    def _graph(self, X: Any) -> EmpiricalGraph | None:
        refuse_graph_first(self, X)
        if self.graph is None:
            if self.nodelist is not None:
                raise ValueError("nodelist orders the nodes of a networkx graph; GTVRegressor has no graph")
            return None
        return as_graph(self.graph, nodelist=self.nodelist)

    def _tau(self, graph: EmpiricalGraph) -> Any:
        if self.tau is not None:
            return self.tau
        if not graph.isolated_nodes.size:
            return default_step_sizes(graph)[0]
        degrees = np.asarray(graph.degrees, float)
        return np.where(degrees > 0, 1.0 / np.where(degrees > 0, degrees, 1.0), ISOLATED_TAU)

    def predict(self, X: Any) -> np.ndarray:
        """Every sample's prediction by its node's model: ``(N,)`` for a table, ``(n, m)`` for a
        stacked ``(n, m, d)`` array, ``(N,)`` for per-node arrays (node after node, in the order
        of ``X``'s samples: node ``i``'s are ``np.split(p, np.cumsum(sizes)[:-1])[i]``)."""
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
        pred = np.ravel(self.predict(X))
        return float(r2_score(pooled_labels(y, per_node), pred, sample_weight=sample_weight))


def _warn_components_without_data(graph: EmpiricalGraph, use: np.ndarray) -> None:
    """A warning naming the connected components (through edges of positive weight) where no
    node's samples are used: nothing in the GTV problem moves their weights from zero."""
    coupled = graph.weights > 0
    i, j = graph.edges[coupled, 0], graph.edges[coupled, 1]
    structure = sp.csr_matrix((np.ones(i.size), (i, j)), shape=(graph.n_nodes, graph.n_nodes))
    _, labels = connected_components(structure, directed=False)
    empty = np.flatnonzero(np.bincount(labels, weights=use.astype(float)) == 0)
    if not empty.size:
        return
    shown = "; ".join(f"nodes {_first_nodes(np.flatnonzero(labels == c))}" for c in empty[:5])
    more = f"; ... ({empty.size} components in all)" if empty.size > 5 else ""
    warnings.warn(f"{empty.size} connected component(s) of the graph hold no data ({shown}{more}): "
                  "their weights stay 0 and their predictions 0, since no edge links them to a node "
                  "with samples; link them to nodes with data (edges of positive weight) or leave "
                  "them out of the graph", UserWarning, stacklevel=3)


def _first_nodes(nodes: np.ndarray, k: int = 10) -> str:
    return str(nodes[:k].tolist())[:-1] + (f", ...] ({nodes.size} nodes)" if nodes.size > k else "]")
