"""Pooled (centralised) baselines: one scikit-learn model on the pooled data of ``M``.

As in the GTV paper's Table I and Sec. IX-B1: ``LinearRegression`` and
``DecisionTreeRegressor(max_depth=2)`` fitted to the union of the local datasets of the
sampled nodes, then used at every node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._nodedata import NodeData
from ..seeding import Seed, as_rng

if TYPE_CHECKING:  # scikit-learn is imported on first use: `import networkedfl` stays light
    from sklearn.base import RegressorMixin

__all__ = ["PooledFit", "pooled_fit", "pooled_linear_regression", "pooled_per_group", "pooled_tree"]


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
    data: NodeData, mask: np.ndarray, seed: Seed = None, max_depth: int = 2
) -> PooledFit:
    """Pooled ``DecisionTreeRegressor(max_depth)``; ``rng`` fixes its tie-breaking."""
    rng = as_rng(seed)
    from sklearn.tree import DecisionTreeRegressor

    seed = int(rng.integers(2**31 - 1))
    return pooled_fit(DecisionTreeRegressor(max_depth=max_depth, random_state=seed), data, mask)


def pooled_per_group(data: NodeData, mask: np.ndarray, groups: np.ndarray) -> PooledFit:
    """The cluster oracle: one least-squares model (no intercept) per group, on its pooled data.

    Each node uses the model of its group (e.g. the true cluster).  ``model`` is the list
    of fitted per-group estimators.
    """
    from sklearn.linear_model import LinearRegression

    groups = np.asarray(groups)
    mask = np.asarray(mask, bool)
    predictions = np.empty(data.labels.shape)
    weights = np.empty((data.n_nodes, data.dim))
    models = []
    for g in np.unique(groups):  # over groups (clusters), not nodes
        members = groups == g
        if not np.any(members & mask):
            raise ValueError(f"group {g} has no node in the sampling set; nothing to fit")
        fit = pooled_fit(LinearRegression(fit_intercept=False), data, members & mask)
        predictions[members] = fit.predictions[members]
        weights[members] = fit.weights[members]
        models.append(fit.model)
    return PooledFit(models, predictions, weights)
