"""Metrics of the FedRelax experiments and the variation bound of its Section V.

* :func:`weight_mse`: ``MSE(w_hat) = (1/d) ||w_hat_i - w_bar^(c_i)||^2`` (eq. (18)), averaged
  over nodes;
* :func:`validation_mse`: ``MSE^(val)``, each node's mean squared error on its validation
  set, averaged over nodes;
* :func:`variation`: ``sum_{i in C} ||w_tilde_i||^2`` with ``w_tilde_i = w_hat_i - mean_C w_hat``
  (eq. (22));
* :func:`error_tolerance`: ``eps^(C) = sum_{i in C} ||e^(i)||^2 / m_i``, the value of
  ``sum_i L_i(w_bar^(C))`` for the single-cluster data (23), which satisfies (24);
* :func:`algebraic_connectivity`: ``lambda_2(L^(C))`` of the cluster Laplacian;
* :func:`variation_bound`: the right-hand side ``eps^(C) / (alpha lambda_2(L^(C)))`` of (25).

NumPy and SciPy only.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..graphs import EmpiricalGraph

__all__ = [
    "algebraic_connectivity",
    "cluster_laplacian",
    "error_tolerance",
    "validation_mse",
    "variation",
    "variation_bound",
    "weight_mse",
]


def _nodes(nodes: np.ndarray | None, n: int) -> np.ndarray:
    if nodes is None:
        return np.arange(n)
    nodes = np.asarray(nodes)
    return np.flatnonzero(nodes) if nodes.dtype == bool else nodes.astype(np.int64)


def weight_mse(weights: np.ndarray, true_weights: np.ndarray) -> float:
    """FedRelax eq. (18), ``(1/d) ||w_hat_i - w_bar_i||^2``, averaged over the nodes.

    ``weights`` and ``true_weights`` have shape ``(n, d)``; leading batch dimensions
    ``(..., n, d)`` are averaged too.
    """
    diff = np.asarray(weights, float) - np.asarray(true_weights, float)
    return float(np.mean(diff**2))


def validation_mse(predictions: np.ndarray, labels: np.ndarray) -> float:
    """``MSE^(val)``: per-node mean squared error on the validation set, averaged over nodes.

    Both arguments are ``(n, m_val)``; with equal validation sizes this is the mean over all
    validation points.
    """
    return float(np.mean((np.asarray(predictions, float) - np.asarray(labels, float)) ** 2))


def variation(weights: np.ndarray, nodes: np.ndarray | None = None) -> float | np.ndarray:
    """``sum_{i in C} ||w_hat_i - (1/|C|) sum_{i' in C} w_hat_i'||^2`` (eqs. (22), (25)).

    ``weights`` is ``(n, d)`` or a stack ``(..., n, d)`` (one value per leading index);
    ``nodes`` (indices or a boolean mask) selects the cluster ``C`` (default: all nodes).
    """
    w = np.asarray(weights, float)
    w = w[..., _nodes(nodes, w.shape[-2]), :]
    dev = w - w.mean(axis=-2, keepdims=True)
    out = np.sum(dev**2, axis=(-2, -1))
    return float(out) if np.ndim(out) == 0 else out


def error_tolerance(noise: np.ndarray, nodes: np.ndarray | None = None) -> float:
    """``eps^(C) = sum_{i in C} (1/m_i) ||e^(i)||^2`` from the drawn label noise ``(n, m)``.

    For the single-cluster data (23) with linear models and the squared error, this equals
    ``sum_i L_i(w_bar^(C))`` and so satisfies assumption (24) with equality.
    """
    e = np.asarray(noise, float)
    e = e[_nodes(nodes, e.shape[0])]
    return float(np.sum(np.mean(e**2, axis=1)))


def cluster_laplacian(graph: EmpiricalGraph, nodes: np.ndarray | None = None) -> sp.csr_matrix:
    """Laplacian ``L^(C)`` of the subgraph induced by the cluster ``nodes`` (Sec. V).

    ``L_ii = sum_{i'' in C \\ i} A_ii''``, ``L_ii' = -A_ii'`` for edges inside ``C``.
    """
    sub = graph if nodes is None else graph.subgraph(_nodes(nodes, graph.n_nodes))
    return sub.laplacian


def algebraic_connectivity(graph: EmpiricalGraph, nodes: np.ndarray | None = None) -> float:
    """Second-smallest eigenvalue ``lambda_2(L^(C))`` of the cluster Laplacian.

    0 when the cluster is disconnected (or has one node).  Dense eigenvalues up to 2000
    nodes, a shift-invert Lanczos solve beyond.
    """
    lap = cluster_laplacian(graph, nodes)
    n = lap.shape[0]
    if n < 2:
        return 0.0
    if n <= 2000:
        vals = np.linalg.eigvalsh(lap.toarray())
    else:
        vals = spla.eigsh(lap.tocsc(), k=2, sigma=-1e-3, which="LM", return_eigenvectors=False)
    vals = np.sort(vals)
    return float(max(vals[1], 0.0))


def variation_bound(
    graph: EmpiricalGraph,
    noise: np.ndarray,
    alpha: float,
    nodes: np.ndarray | None = None,
) -> float:
    """Right-hand side of FedRelax eq. (25): ``eps^(C) / (alpha lambda_2(L^(C)))``.

    ``noise`` is the drawn label noise ``(n, m)`` of the single-cluster data (23), from
    which ``eps^(C)`` is computed (:func:`error_tolerance`).  ``inf`` when ``alpha = 0`` or
    the cluster is disconnected.
    """
    eps = error_tolerance(noise, nodes)
    denom = float(alpha) * algebraic_connectivity(graph, nodes)
    return float(eps / denom) if denom > 0 else float("inf")
