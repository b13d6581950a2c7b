"""Synthetic local datasets for federated learning over networks.

The clustered noisy linear model of the GTV paper (eq. (37)): node ``i`` holds ``m``
data points ``(x, y)`` with ``x ~ N(0, Sigma_i)`` (``Sigma_i = I`` unless a cluster-wise
covariance is given) and ``y = x^T w_bar_i + e``, ``e ~ N(0, sigma^2)`` drawn per data
point.  True weights are constant over clusters, optionally perturbed per node.
"""

from __future__ import annotations

import numpy as np

from .._nodedata import NodeData
from ..seeding import Seed, as_rng

__all__ = [
    "LABEL_NOISE",
    "cluster_weights_per_node",
    "linear_model_data",
    "perturb_cluster_weights",
    "perturb_weights",
    "sampling_mask",
]


#: Values of ``noise`` in :func:`linear_model_data`.
LABEL_NOISE = ("per_sample", "per_node")


def cluster_weights_per_node(clusters: np.ndarray, cluster_weights: np.ndarray) -> np.ndarray:
    """True weight ``w_bar_i = w_bar^(c_i)`` of every node, shape ``(n, d)``."""
    return np.asarray(cluster_weights, float)[np.asarray(clusters)]


def perturb_weights(
    weights: np.ndarray, scale: float, seed: Seed = None
) -> np.ndarray:
    """Per-node perturbation ``w_i + scale * eps_i / ||w_i||``, ``eps_i ~ N(0, I)``.

    This is the unbalanced-clusters setting of GTV Sec. IX-B2 with ``scale = 1e-3``.
    """
    rng = as_rng(seed)
    weights = np.asarray(weights, float)
    norms = np.linalg.norm(weights, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("cannot scale a perturbation by the norm of a zero weight vector")
    return weights + scale * rng.standard_normal(weights.shape) / norms


def perturb_cluster_weights(
    cluster_weights: np.ndarray, scale: float, seed: Seed = None
) -> np.ndarray:
    """One perturbation per cluster: ``w^(c) + scale * z_c / |w^(c)|``, ``z_c ~ N(0, 1)``.

    What the authors' notebook ``SBM_experiment_non_iid`` computes instead of the paper's
    per-node perturbation (:func:`perturb_weights`; docs/variants.md §8.9): one scalar
    draw per cluster, divided entrywise by the absolute weights, shared by all nodes of the
    cluster, so the true weights stay piecewise constant over the clusters.
    """
    rng = as_rng(seed)
    w = np.asarray(cluster_weights, float)
    if np.any(w == 0):
        raise ValueError("cannot divide a perturbation by a zero entry of a cluster weight")
    z = rng.standard_normal((w.shape[0], 1))
    return w + scale * z / np.abs(w)


def linear_model_data(
    true_weights: np.ndarray,
    n_samples: int,
    noise_std: float,
    seed: Seed = None,
    *,
    feature_cov: np.ndarray | None = None,
    noise: str = "per_sample",
) -> NodeData:
    """Local datasets of the noisy linear model (GTV eq. (37)).

    Parameters
    ----------
    true_weights
        ``(n, d)`` true parameter vector of every node.
    n_samples
        Data points per node ``m``.
    noise_std
        Standard deviation ``sigma`` of the label noise, drawn per data point.
    seed
        Source of randomness.
    feature_cov
        Optional covariance of the features: ``(d, d)`` for all nodes or ``(n, d, d)``
        per node (GTV Sec. IX-B1 uses one covariance per cluster).
    noise
        ``"per_sample"`` (default, eq. (37)): ``e ~ N(0, sigma^2)`` drawn for every data
        point.  ``"per_node"``: one draw ``e_i ~ N(0, sigma^2)`` per node, added to all of
        its labels, as the authors' notebooks do (docs/variants.md §8.2; the
        ``published`` variant).  Both draw the features first, so the features of the two
        options are identical for one generator state.
    """
    rng = as_rng(seed)
    w = np.asarray(true_weights, float)
    n, d = w.shape
    if noise_std < 0:
        raise ValueError(f"noise_std must be non-negative, got {noise_std}")
    if noise not in LABEL_NOISE:
        raise ValueError(f"noise must be one of {LABEL_NOISE}, got {noise!r}")
    z = rng.standard_normal((n, n_samples, d))
    if feature_cov is not None:
        cov = np.broadcast_to(np.asarray(feature_cov, float), (n, d, d))
        chol = np.linalg.cholesky(cov)
        z = np.einsum("nij,nmj->nmi", chol, z)
    shape = (n, n_samples) if noise == "per_sample" else (n, 1)
    e = noise_std * rng.standard_normal(shape)
    y = np.einsum("nmd,nd->nm", z, w) + e
    return NodeData(z, y)


def sampling_mask(n_nodes: int, fraction: float, seed: Seed = None) -> np.ndarray:
    """Boolean mask of the sampling set ``M``: ``floor(fraction * n)`` nodes drawn uniformly."""
    rng = as_rng(seed)
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"sampling fraction M must be in [0, 1], got {fraction}")
    k = int(np.floor(fraction * n_nodes + 1e-9))
    mask = np.zeros(n_nodes, dtype=bool)
    mask[rng.choice(n_nodes, size=k, replace=False)] = True
    return mask
