"""Synthetic local datasets for federated learning over networks.

The clustered noisy linear model of the GTV paper (eq. (37)): node ``i`` holds ``m``
data points ``(x, y)`` with ``x ~ N(0, Sigma_i)`` (``Sigma_i = I`` unless a cluster-wise
covariance is given) and ``y = x^T w_bar_i + e``, ``e ~ N(0, sigma^2)`` drawn per data
point.  True weights are constant over clusters, optionally perturbed per node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import check_int_array
from ..seeding import Seed, as_rng

__all__ = [
    "LABEL_NOISE",
    "NodeData",
    "cluster_weights_per_node",
    "linear_model_data",
    "perturb_cluster_weights",
    "perturb_weights",
    "sampling_mask",
]


#: Values of ``noise`` in :func:`linear_model_data`.
LABEL_NOISE = ("per_sample", "per_node")


@dataclass(frozen=True, eq=False)
class NodeData:
    """Local datasets of all nodes, stacked (padded when their sizes differ).

    Attributes
    ----------
    features
        Array of shape ``(n, m, d)``: up to ``m`` feature vectors per node.
    labels
        Array of shape ``(n, m)``.
    counts
        Optional ``(n,)`` number of real samples of every node (``1 <= counts[i] <= m``;
        integers, integral floats such as ``2.0`` too, see :mod:`networkedfl._validation`):
        node ``i``'s samples are its first ``counts[i]`` rows, and the rows after them are
        padding, set to zero on construction.  ``None``: every node has ``m`` samples.
        :meth:`from_ragged` builds it from per-node arrays.  Zero rows add nothing to a
        squared error, so :class:`~networkedfl.gtv.SquaredErrorLoss` (and with it
        :func:`~networkedfl.gtv.gtv_primal_dual`) only needs the counts
        for its ``1/m_i``.
    """

    features: np.ndarray
    labels: np.ndarray
    counts: np.ndarray | None = None

    def __post_init__(self) -> None:
        x, y = np.asarray(self.features, float), np.asarray(self.labels, float)
        if x.ndim != 3:
            raise ValueError(f"features must have shape (n, m, d), got {x.shape}")
        if y.shape != x.shape[:2]:
            raise ValueError(f"labels must have shape {x.shape[:2]} (one row per node of features), got {y.shape}")
        if not x.shape[0] or not x.shape[1]:
            raise ValueError(f"features hold no {'node' if not x.shape[0] else 'sample'} (shape {x.shape}): "
                             "need at least one")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            raise ValueError("local datasets contain NaN or infinite values")
        if self.counts is not None:
            counts = check_int_array(self.counts, "counts")
            if counts.shape != (x.shape[0],):
                raise ValueError(f"counts must have shape ({x.shape[0]},) (one per node of features), "
                                 f"got {counts.shape}")
            bad = np.flatnonzero((counts < 1) | (counts > x.shape[1]))
            if bad.size:
                raise ValueError(f"counts must lie in [1, {x.shape[1]}]; nodes {bad[:10].tolist()} have "
                                 f"{counts[bad[:10]].tolist()}")
            padding = np.arange(x.shape[1])[None, :] >= counts[:, None]
            x, y = np.where(padding[:, :, None], 0.0, x), np.where(padding, 0.0, y)  # copies
            object.__setattr__(self, "counts", counts.astype(np.int64))
        object.__setattr__(self, "features", x)
        object.__setattr__(self, "labels", y)

    @classmethod
    def from_ragged(cls, features: Sequence[np.ndarray], labels: Sequence[np.ndarray]) -> NodeData:
        """From per-node arrays ``features[i]`` ``(m_i, d)`` and ``labels[i]`` ``(m_i,)`` of
        different sizes, zero-padded to the largest ``m_i``."""
        if len(features) != len(labels) or not len(features):
            raise ValueError(f"need one features and one labels array per node, got {len(features)} and {len(labels)}")
        xs = [np.asarray(f, float) for f in features]
        ys = [np.asarray(v, float) for v in labels]
        for i, (f, v) in enumerate(zip(xs, ys, strict=True)):
            if f.ndim != 2 or v.shape != f.shape[:1] or f.shape[1] != xs[0].shape[1]:
                raise ValueError(f"node {i}: features must be (m_i, {xs[0].shape[1]}) and labels (m_i,), "
                                 f"got {f.shape} and {v.shape}")
        counts = np.array([len(v) for v in ys], dtype=np.int64)
        m, d = int(counts.max()), xs[0].shape[1]
        x, y = np.zeros((len(xs), m, d)), np.zeros((len(xs), m))
        for i, (f, v) in enumerate(zip(xs, ys, strict=True)):  # data assembly, once
            x[i, : len(v)], y[i, : len(v)] = f, v
        return cls(x, y, counts)

    def to_ragged(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per-node features ``(m_i, d)`` and labels ``(m_i,)`` without the padding: the
        inverse of :meth:`from_ragged`, and the ``X, y`` that the estimators
        (``GTVRegressor``, ``FedRelax``) and scikit-learn models take."""
        m = self.samples_per_node
        return ([self.features[i, : m[i]] for i in range(self.n_nodes)],
                [self.labels[i, : m[i]] for i in range(self.n_nodes)])

    @property
    def n_nodes(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_samples(self) -> int:
        """The padded length ``m`` (every node's sample count when :attr:`counts` is ``None``)."""
        return int(self.features.shape[1])

    @property
    def samples_per_node(self) -> np.ndarray:
        """``(n,)`` real sample counts ``m_i``."""
        return np.full(self.n_nodes, self.n_samples) if self.counts is None else self.counts

    @property
    def dim(self) -> int:
        return int(self.features.shape[2])

    def pooled(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Features ``(sum m_i, d)`` and labels ``(sum m_i,)`` of the selected nodes'
        real samples, concatenated."""
        nodes = np.asarray(nodes)
        real = np.arange(self.n_samples)[None, :] < self.samples_per_node[nodes][:, None]
        return self.features[nodes][real], self.labels[nodes][real]


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
    per-node perturbation (:func:`perturb_weights`; EXPERIMENTS.md §8 item 9): one scalar
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
        its labels, as the authors' notebooks do (EXPERIMENTS.md §8 item 2; the
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
