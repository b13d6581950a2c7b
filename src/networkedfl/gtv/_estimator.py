"""GTV minimisation for networked linear regression as a scikit-learn estimator.

:class:`GTVRegressor` wraps :func:`~networkedfl.gtv.gtv_primal_dual`
with the squared-error loss (GTV paper, eq. (38)): parameters in ``__init__``, fitted
attributes ending in ``_``, :func:`sklearn.base.clone` and ``get_params``/``set_params``
work.  Its ``fit`` takes the graph first, ``fit(graph, X, y, mask=None)``, because every
node has its own model; node ``i``'s data is ``X[i]`` ``(m_i, d)`` and ``y[i]`` ``(m_i,)``
(a stacked ``(n, m, d)`` array, or per-node arrays of different sizes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._nodedata import NodeData
from ..graphs import GraphLike, as_graph
from ._losses import SquaredErrorLoss
from ._primal_dual import gtv_primal_dual

__all__ = ["GTVRegressor"]


def _node_data(X: Any, y: Any) -> NodeData:
    if isinstance(X, np.ndarray) and X.ndim == 3:
        return NodeData(X, np.asarray(y, float))
    return NodeData.from_ragged(list(X), list(y))


class GTVRegressor(RegressorMixin, BaseEstimator):
    """One linear model per node of an empirical graph, coupled by GTV (GTV Algorithm 1).

    Minimises ``sum_{i in M} L_i(w_i) + lam sum_{e = {i,j}} A_e phi(w_i - w_j)`` with the
    average squared error ``L_i`` of eq. (38) at the nodes of the sampling set ``M``.

    Parameters
    ----------
    lam
        GTV parameter ``lambda`` of eq. (16).
    penalty
        ``"nlasso"`` (``||.||_2``, default), ``"l1"`` or ``"mocha"`` (``||.||_2^2``).
    n_iter
        Maximum number of primal-dual iterations.
    gap_tol
        Stop once the primal-dual gap (34) is at most this (checked every 10 iterations);
        ``None``: run ``n_iter`` iterations.

    Attributes
    ----------
    weights_
        ``(n, d)`` fitted weights, row ``i`` node ``i``'s.
    n_iter_
        Iterations run.
    gap_
        Last primal-dual gap evaluated (NaN without ``gap_tol``).
    """

    def __init__(self, lam: float = 1.0, penalty: str = "nlasso", n_iter: int = 1000,
                 gap_tol: float | None = None) -> None:
        self.lam = lam
        self.penalty = penalty
        self.n_iter = n_iter
        self.gap_tol = gap_tol

    def fit(self, graph: GraphLike, X: Any, y: Any, mask: np.ndarray | None = None) -> GTVRegressor:
        """Fit every node's weights on ``graph`` (an ``EmpiricalGraph``, a networkx graph
        or an adjacency matrix) from ``(X[i], y[i])``; ``mask``: the nodes whose data are
        used (default all), the others are fitted through the graph alone."""
        graph = as_graph(graph)
        data = _node_data(X, y)
        if not np.isfinite(self.lam) or self.lam < 0:
            raise ValueError(f"lam must be finite and non-negative, got {self.lam!r}")
        result = gtv_primal_dual(graph, SquaredErrorLoss(data, mask=mask), self.penalty, float(self.lam),
                                 self.n_iter, gap_tol=self.gap_tol)
        self.weights_ = result.weights
        self.n_iter_ = result.n_iter
        self.gap_ = result.gap
        return self

    def predict(self, X: Any) -> np.ndarray | list[np.ndarray]:
        """Node ``i``'s predictions ``X[i] w_i``: ``(n, m)`` for a stacked ``(n, m, d)``
        array, else one array per node."""
        check_is_fitted(self, "weights_", msg="This %(name)s is not fitted yet: call fit(graph, X, y) first.")
        if isinstance(X, np.ndarray) and X.ndim == 3:
            return np.einsum("nmd,nd->nm", X, self.weights_)
        if len(X) != self.weights_.shape[0]:
            raise ValueError(f"X holds data of {len(X)} nodes, the model {self.weights_.shape[0]}")
        return [np.asarray(x, float) @ w for x, w in zip(X, self.weights_, strict=True)]

    def score(self, X: Any, y: Any, sample_weight: Sequence[float] | None = None) -> float:
        """R^2 of the predictions of all nodes, pooled over their samples."""
        from sklearn.metrics import r2_score

        # rows of a stacked array and per-node arrays flatten alike
        pred = np.concatenate([np.ravel(p) for p in self.predict(X)])
        return float(r2_score(np.concatenate([np.ravel(t) for t in y]), pred, sample_weight=sample_weight))
