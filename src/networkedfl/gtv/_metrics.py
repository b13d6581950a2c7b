"""Evaluation metrics of the experiments."""

from __future__ import annotations

import numpy as np

from .._nodedata import NodeData

__all__ = ["label_mse", "linear_predictions", "parameter_mse", "per_node_parameter_error"]


def _select(nodes: np.ndarray | None, n: int) -> np.ndarray:
    if nodes is None:
        return np.arange(n)
    nodes = np.asarray(nodes)
    return np.flatnonzero(nodes) if nodes.dtype == bool else nodes


def per_node_parameter_error(weights: np.ndarray, true_weights: np.ndarray) -> np.ndarray:
    """``||w_hat_i - w_bar_i||^2`` per node."""
    diff = np.asarray(weights, float) - np.asarray(true_weights, float)
    return np.einsum("nd,nd->n", diff, diff)


def parameter_mse(
    weights: np.ndarray, true_weights: np.ndarray, nodes: np.ndarray | None = None
) -> float:
    """Parameter MSE of GTV eq. (39): ``(1/|V|) sum_i ||w_hat_i - w_bar_i||^2``.

    ``nodes`` (indices or a boolean mask) restricts the average to a subset.
    """
    err = per_node_parameter_error(weights, true_weights)
    return float(np.mean(err[_select(nodes, err.shape[0])]))


def linear_predictions(data: NodeData, weights: np.ndarray) -> np.ndarray:
    """Predictions ``x^T w_hat_i`` of every node's linear model on its own data, ``(n, m)``."""
    return np.einsum("nmd,nd->nm", data.features, weights)


def label_mse(predictions: np.ndarray, labels: np.ndarray, nodes: np.ndarray | None = None) -> float:
    """Label MSE: mean of ``(y - y_hat)^2`` over the selected nodes and all their samples."""
    sel = _select(nodes, labels.shape[0])
    return float(np.mean((np.asarray(labels)[sel] - np.asarray(predictions)[sel]) ** 2))
