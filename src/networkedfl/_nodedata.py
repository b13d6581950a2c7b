"""The local datasets of the nodes of a network, stacked: the container that GTV
(:mod:`networkedfl.gtv`), the torch clients (:meth:`networkedfl.nn.ClientData.from_node_data`)
and the partitions (:func:`networkedfl.datasets.node_data`) share.  NumPy only; public as
:class:`networkedfl.NodeData`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._validation import check_int_array

__all__ = ["NodeData"]


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
