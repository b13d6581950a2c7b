"""Pooled (centralised) baselines: one scikit-learn model on the pooled data of ``M``.

As in the GTV paper's Table I and Sec. IX-B1: ``LinearRegression`` and
``DecisionTreeRegressor(max_depth=2)`` fitted to the union of the local datasets of the
sampled nodes, then used at every node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data import NodeData

if TYPE_CHECKING:  # scikit-learn is imported on first use: `import networkedfl` stays light
    from sklearn.base import RegressorMixin

__all__ = ["PooledFit", "pooled_fit", "pooled_linear_regression", "pooled_tree"]


@dataclass(frozen=True)
class PooledFit:
    """A fitted pooled model and its predictions at every node's data, ``(n, m)``."""

    model: Any
    predictions: np.ndarray
    weights: np.ndarray | None


def pooled_fit(estimator: RegressorMixin, data: NodeData, mask: np.ndarray) -> PooledFit:
    """Fit a clone of ``estimator`` on the pooled data of the nodes in ``mask``."""
    from sklearn.base import clone

    x, y = data.pooled(np.flatnonzero(mask))
    model = clone(estimator).fit(x, y)
    predictions = model.predict(data.features.reshape(-1, data.dim)).reshape(data.labels.shape)
    coef = getattr(model, "coef_", None)
    weights = None if coef is None else np.broadcast_to(np.asarray(coef, float), (data.n_nodes, data.dim))
    return PooledFit(model, predictions, weights)


def pooled_linear_regression(data: NodeData, mask: np.ndarray) -> PooledFit:
    """Pooled ``LinearRegression`` (with intercept, as scikit-learn's default)."""
    from sklearn.linear_model import LinearRegression

    return pooled_fit(LinearRegression(), data, mask)


def pooled_tree(
    data: NodeData, mask: np.ndarray, rng: np.random.Generator, max_depth: int = 2
) -> PooledFit:
    """Pooled ``DecisionTreeRegressor(max_depth)``; ``rng`` fixes its tie-breaking."""
    from sklearn.tree import DecisionTreeRegressor

    seed = int(rng.integers(2**31 - 1))
    return pooled_fit(DecisionTreeRegressor(max_depth=max_depth, random_state=seed), data, mask)
