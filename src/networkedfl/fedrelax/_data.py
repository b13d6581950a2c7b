"""Synthetic networked regression data of the FedRelax paper (Abdurakhmanova et al. 2024).

Two generators, both returning a :class:`FedRelaxData` (graph, local training and
validation sets, and one public unlabelled dataset per node):

* :func:`clustered_data` (Sec. IV-A, eq. (17)): a stochastic block model whose clusters
  share a true weight vector ``w_bar^(c) ~ N(0, I_d)``; features ``x ~ N(0, I_d)`` and
  labels ``y = x^T w_bar^(c_i) + e``, ``e ~ N(0, sigma^2)``.  With one cluster this is the
  single-cluster data (23) of Sec. V.
* :func:`noniid_data` (Sec. IV-B, Algorithm 3): every node draws its points from a mixture
  of ``K`` linear models with a node-specific softmax mixing vector ``rho_i``; the edge
  weights are the overlaps ``A_ii' = sum_k min(rho_i^(k), rho_i'^(k))`` of eq. (21).

Public datasets ``P^(i)`` hold ``x ~ N(0, I_d)`` drawn separately for every node (Sec. IV-A).
All randomness comes from the ``numpy.random.Generator`` passed in; nothing is seeded globally.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import renamed
from ..graphs import EmpiricalGraph, stochastic_block_model
from ..seeding import Seed, as_rng

__all__ = [
    "FedRelaxData",
    "clustered_data",
    "largest_remainder",
    "mixture_similarity",
    "noniid_data",
    "softmax",
]


@dataclass(frozen=True, eq=False)
class FedRelaxData:
    """Networked regression data: one training, validation and public dataset per node.

    Attributes
    ----------
    graph
        The FL network (edges, weights ``A_ii'``; ``clusters``: the true cluster of each
        node for clustered data, the dominant mixture component for non-i.i.d. data).
    features, labels
        Training sets ``D^(i)``: ``(n, m, d)`` and ``(n, m)``.
    noise
        The label noise ``e^(i,r)`` drawn for the training labels, ``(n, m)`` (it gives the
        error tolerance ``eps^(C) = sum_i ||e^(i)||^2 / m_i`` of eq. (25)).
    val_features, val_labels
        Validation sets, ``(n, m_val, d)`` and ``(n, m_val)``, from each node's own distribution.
    public
        Public unlabelled datasets ``P^(i)``, ``(n, m_pub, d)``.
    true_weights
        ``(n, d)`` true weight vector of each node's cluster (clustered data); ``None`` for
        non-i.i.d. data, where a node has no single true weight vector.
    component_weights
        ``(K, d)`` the mixture components' weight vectors (non-i.i.d. data), else ``None``.
    mixing
        ``(n, K)`` mixing vectors ``rho_i`` (non-i.i.d. data), else ``None``.
    """

    graph: EmpiricalGraph
    features: np.ndarray
    labels: np.ndarray
    noise: np.ndarray
    val_features: np.ndarray
    val_labels: np.ndarray
    public: np.ndarray
    true_weights: np.ndarray | None = None
    component_weights: np.ndarray | None = None
    mixing: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        return int(self.features.shape[0])

    @property
    def max_samples(self) -> int:
        """Local training-set size ``m`` (the same ``m_i = m`` at every node, no padding)."""
        return int(self.features.shape[1])

    @property
    def samples_per_node(self) -> np.ndarray:
        """``(n,)`` training-set sizes ``m_i`` (all equal to :attr:`max_samples`)."""
        return np.full(self.n_nodes, self.max_samples)

    n_samples = renamed("max_samples", "n_samples")

    @property
    def dim(self) -> int:
        return int(self.features.shape[2])


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def clustered_data(
    cluster_sizes: Sequence[int],
    p_in: float,
    p_out: float,
    dim: int,
    n_train: int,
    n_val: int,
    n_public: int,
    sigma: float,
    seed: Seed = None,
    *,
    edge_weight: float = 1.0,
) -> FedRelaxData:
    """Clustered data of FedRelax Sec. IV-A (eq. (17)) on a stochastic block model.

    Parameters
    ----------
    cluster_sizes
        Nodes per cluster (the paper: three clusters of 50; ``[n]`` gives the single
        cluster of eq. (23)).
    p_in, p_out
        Intra- and inter-cluster edge probabilities; every edge has weight ``edge_weight``.
    dim
        Feature dimension ``d``.
    n_train, n_val, n_public
        ``m_i``, ``m_i^(val)`` and ``m^(P)`` per node.
    sigma
        Label-noise standard deviation.
    seed
        Source of randomness (graph, true weights, features, noise, public data in that order).
    """
    rng = as_rng(seed)
    _check_sizes(dim=dim, n_train=n_train, n_val=n_val, n_public=n_public)
    if sigma < 0:
        raise ValueError(f"sigma must be non-negative, got {sigma}")
    graph = stochastic_block_model(cluster_sizes, p_in, p_out, rng, weight=edge_weight)
    n = graph.n_nodes
    cluster_w = rng.standard_normal((int(graph.clusters.max()) + 1, dim))
    true_w = cluster_w[graph.clusters]
    x = rng.standard_normal((n, n_train, dim))
    noise = sigma * rng.standard_normal((n, n_train))
    y = np.einsum("nmd,nd->nm", x, true_w) + noise
    x_val = rng.standard_normal((n, n_val, dim))
    y_val = np.einsum("nmd,nd->nm", x_val, true_w) + sigma * rng.standard_normal((n, n_val))
    public = rng.standard_normal((n, n_public, dim))
    return FedRelaxData(graph, x, y, noise, x_val, y_val, public, true_weights=true_w)


def softmax(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax (numerically stable)."""
    z = np.asarray(scores, float)
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def largest_remainder(total: int, proportions: np.ndarray) -> np.ndarray:
    """Integer counts proportional to each row of ``proportions`` that sum to ``total``.

    Algorithm 3 of FedRelax sets ``m_i^(k) = m_i rho^(i,k)``, which is not an integer; the
    largest-remainder (Hamilton) rounding keeps the floors and gives the missing units to the
    largest fractional parts (ties to the lower component index).  Shape ``(n, K)``, int64.
    """
    rho = np.atleast_2d(np.asarray(proportions, float))
    if np.any(rho < 0) or not np.allclose(rho.sum(axis=1), 1.0):
        raise ValueError("each row of proportions must be non-negative and sum to 1")
    quota = total * rho
    counts = np.floor(quota).astype(np.int64)
    missing = total - counts.sum(axis=1)
    order = np.argsort(-(quota - counts), axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(rho.shape[1])[None, :].repeat(rho.shape[0], 0), axis=1)
    return counts + (rank < missing[:, None])


def mixture_similarity(mixing: np.ndarray) -> np.ndarray:
    """Edge weights of FedRelax eq. (21): ``A_ii' = sum_k min(rho_i^(k), rho_i'^(k))``, ``(n, n)``.

    The diagonal is 1 (a node overlaps fully with itself); only off-diagonal entries are edges.
    """
    rho = np.asarray(mixing, float)
    return np.minimum(rho[:, None, :], rho[None, :, :]).sum(axis=-1)


def _mixture_samples(
    counts: np.ndarray, weights: np.ndarray, sigma: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n, k = counts.shape
    m = int(counts[0].sum())
    component = np.repeat(np.tile(np.arange(k), n), counts.ravel()).reshape(n, m)
    x = rng.standard_normal((n, m, weights.shape[1]))
    noise = sigma * rng.standard_normal((n, m))
    y = np.einsum("nmd,nmd->nm", x, weights[component]) + noise
    return x, y, noise


def noniid_data(
    n_nodes: int,
    n_components: int,
    dim: int,
    n_train: int,
    n_val: int,
    n_public: int,
    sigma: float,
    seed: Seed = None,
) -> FedRelaxData:
    """Non-i.i.d. local datasets of FedRelax Algorithm 3 on the complete similarity graph.

    Node ``i`` draws ``s_i ~ N(0, I_K)`` and mixes the ``K`` linear models
    ``w_bar^(k) ~ N(0, I_d)`` with ``rho_i = softmax(s_i)``: ``m_i rho_i^(k)`` of its
    points (largest-remainder rounding) follow component ``k``.  The validation set is
    drawn the same way from ``rho_i``.  Every pair of nodes is joined with the weight (21)
    (positive, since softmax vectors are positive).

    Parameters
    ----------
    n_nodes, n_components
        ``n`` and ``K`` (the paper: 150 and 3).
    dim, n_train, n_val, n_public, sigma
        As in :func:`clustered_data`.
    seed
        Source of randomness.
    """
    rng = as_rng(seed)
    _check_sizes(n_nodes=n_nodes, n_components=n_components, dim=dim, n_train=n_train,
                 n_val=n_val, n_public=n_public)
    if sigma < 0:
        raise ValueError(f"sigma must be non-negative, got {sigma}")
    component_w = rng.standard_normal((n_components, dim))
    rho = softmax(rng.standard_normal((n_nodes, n_components)))
    x, y, noise = _mixture_samples(largest_remainder(n_train, rho), component_w, sigma, rng)
    x_val, y_val, _ = _mixture_samples(largest_remainder(n_val, rho), component_w, sigma, rng)
    public = rng.standard_normal((n_nodes, n_public, dim))
    i, j = np.triu_indices(n_nodes, k=1)
    weights = mixture_similarity(rho)[i, j]
    graph = EmpiricalGraph(n_nodes, np.stack([i, j], axis=1), weights, np.argmax(rho, axis=1))
    return FedRelaxData(graph, x, y, noise, x_val, y_val, public,
                        component_weights=component_w, mixing=rho)
