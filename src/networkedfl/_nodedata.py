"""The local datasets of the nodes of a network, stacked: the container that GTV
(:mod:`networkedfl.gtv`), the torch clients (:meth:`networkedfl.nn.ClientData.from_node_data`)
and the partitions (:func:`networkedfl.datasets.node_data`) share.  NumPy only; public as
:class:`networkedfl.NodeData`.

Also the conventions of the estimators on a graph (``GTVRegressor``, ``FedRelax``) for their
data: one table of the samples of all nodes whose first column is the node of each sample
(what scikit-learn's splitters cut: ``GroupKFold`` on that column holds out nodes), or one
array per node; :func:`node_samples` validates either with scikit-learn's ``validate_data``
(imported when an estimator calls it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import check_int_array, check_representable, renamed

__all__ = ["NodeData", "is_per_node", "node_samples", "node_table", "per_node_output", "pooled_labels",
           "refuse_graph_first"]


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
        check_representable(x, "features")
        check_representable(y, "labels")
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

    @classmethod
    def from_samples(cls, features: np.ndarray, labels: np.ndarray, node: np.ndarray,
                     n_nodes: int) -> NodeData:
        """From one table of samples: ``features`` ``(N, d)``, ``labels`` ``(N,)`` and the
        ``node`` ``(N,)`` of every sample (integers in ``[0, n_nodes)``; every node needs a
        sample), padded per node in the table's order (no loop over nodes or samples)."""
        x, y = np.asarray(features, float), np.asarray(labels, float)
        node = check_int_array(node, "node")
        if x.ndim != 2 or y.shape != x.shape[:1] or node.shape != x.shape[:1]:
            raise ValueError(f"features must be (N, d), labels and node (N,); got {x.shape}, {y.shape} "
                             f"and {node.shape}")
        if node.size and (node.min() < 0 or node.max() >= n_nodes):
            raise ValueError(f"node must hold node indices in [0, {n_nodes}), got {node.min()} .. {node.max()}")
        counts = np.bincount(node, minlength=n_nodes)
        empty = np.flatnonzero(counts == 0)
        if empty.size:
            raise ValueError(f"nodes {empty[:10].tolist()} have no sample")
        order = np.argsort(node, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(node.size) - starts[node[order]]  # position of each sample in its node
        padded_x = np.zeros((n_nodes, int(counts.max()), x.shape[1]))
        padded_y = np.zeros((n_nodes, int(counts.max())))
        padded_x[node[order], slot], padded_y[node[order], slot] = x[order], y[order]
        return cls(padded_x, padded_y, counts)

    def to_table(self) -> tuple[np.ndarray, np.ndarray]:
        """All real samples as one table, node by node: ``(N, 1 + d)`` with every sample's
        node in column 0, and the labels ``(N,)``.  The ``X, y`` of the estimators for
        scikit-learn's model selection (``GroupKFold`` on column 0 holds out nodes)."""
        real = np.arange(self.max_samples)[None, :] < self.samples_per_node[:, None]
        node = np.broadcast_to(np.arange(self.n_nodes)[:, None], real.shape)[real]
        return np.column_stack([node, self.features[real]]), self.labels[real]

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
    def max_samples(self) -> int:
        """The padded length ``m = max_i m_i`` (every node's sample count when :attr:`counts`
        is ``None``)."""
        return int(self.features.shape[1])

    n_samples = renamed("max_samples", "n_samples")

    @property
    def samples_per_node(self) -> np.ndarray:
        """``(n,)`` real sample counts ``m_i``."""
        return np.full(self.n_nodes, self.max_samples) if self.counts is None else self.counts

    @property
    def dim(self) -> int:
        return int(self.features.shape[2])

    def pooled(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Features ``(sum m_i, d)`` and labels ``(sum m_i,)`` of the selected nodes'
        real samples, concatenated."""
        nodes = np.asarray(nodes)
        real = np.arange(self.max_samples)[None, :] < self.samples_per_node[nodes][:, None]
        return self.features[nodes][real], self.labels[nodes][real]


def is_per_node(X: Any) -> bool:
    """Whether ``X`` holds one array per node (a 3-d array, or a sequence of 2-d arrays) rather
    than one table of samples (2-d)."""
    if isinstance(X, np.ndarray):
        return X.ndim == 3
    if hasattr(X, "shape") or isinstance(X, str | bytes) or not isinstance(X, Sequence) or not len(X):
        return False
    return np.ndim(X[0]) == 2


def node_table(X: Any, y: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-node arrays ``X[i]`` ``(m_i, d)`` (and labels ``y[i]`` ``(m_i,)`` or ``(m_i, 1)``) as
    one table ``(N, 1 + d)`` with the node in column 0 (and the labels stacked in the same
    order; column labels stay columns, for the estimator's validation to flatten with a
    warning).  A node may hold no sample (an empty ``(0, d)`` array)."""
    xs = [np.asarray(x) for x in X]
    for i, x in enumerate(xs):
        if x.ndim != 2 or x.shape[1] != xs[0].shape[1]:
            raise ValueError(f"X[{i}] must be ({x.shape[0] if x.ndim else 'm_i'}, {xs[0].shape[-1]}) "
                             f"(samples x features, the same features at every node), got {x.shape}")
    sizes = np.array([x.shape[0] for x in xs], dtype=np.int64)
    table = np.column_stack([np.repeat(np.arange(len(xs)), sizes), np.concatenate(xs)])
    if y is None:
        return table, None
    ys = [np.asarray(v) for v in y]
    if len(ys) != len(xs):
        raise ValueError(f"X holds {len(xs)} nodes but y {len(ys)}: one label array per node")
    for i, (v, m) in enumerate(zip(ys, sizes, strict=True)):
        if v.shape[:1] != (m,) or v.ndim > 2 or (v.ndim == 2 and v.shape[1] != 1):
            raise ValueError(f"y[{i}] must be ({m},) (one label per sample of X[{i}]), got {v.shape}")
    if len({v.ndim for v in ys}) > 1:
        ys = [v.reshape(-1, 1) for v in ys]
    return table, np.concatenate(ys)


def refuse_graph_first(estimator: Any, X: Any) -> None:
    """A ``TypeError`` for the graph-first call of earlier versions, ``fit(graph, X, y)``: the
    estimators take the graph at construction."""
    import scipy.sparse as sp

    name = type(estimator).__name__
    first = "estimator, graph" if name.startswith("FedRelax") else "graph"
    moved = (f"{name} takes the graph at construction: {name}({first}, ...).fit(X, y) (the first "
             "argument of fit is the data; fit(graph, X, y) was the old call)")
    if sp.issparse(X):
        raise TypeError(f"{name} needs dense data, X is a sparse matrix; if it is the graph's adjacency: {moved}")
    if (hasattr(X, "incidence") and hasattr(X, "n_nodes")) or type(X).__module__.split(".")[0] == "networkx":
        raise TypeError(moved)


def node_samples(estimator: Any, n_nodes: int | None, X: Any, y: Any = None, *,
                 reset: bool) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, list[int] | None]:
    """Validated samples of an estimator on a graph of ``n_nodes`` nodes (``None``: no graph,
    every sample at one node): ``features (N, d)``, ``labels (N,)`` (``None`` without ``y``),
    the ``node (N,)`` of every sample and, for per-node input, the nodes' sizes.

    ``X`` is a table (with a graph: the node in column 0) or, with a graph, one array per node;
    scikit-learn's :func:`~sklearn.utils.validation.validate_data` checks the table (finite
    numbers, shapes, ``n_features_in_`` and feature names; labels ``(N, 1)`` are flattened
    with a ``DataConversionWarning``)."""
    from sklearn.utils.validation import validate_data

    name = type(estimator).__name__
    sizes = None
    if n_nodes is not None and is_per_node(X):
        if len(X) != n_nodes:
            raise ValueError(f"X holds the data of {len(X)} nodes, the graph has {n_nodes}: one array "
                             "per node (or one table of samples with the node in column 0)")
        sizes = [int(np.shape(x)[0]) for x in X]
        X, y = node_table(X, y)
    if y is None and not reset:
        table, labels = validate_data(estimator, X, reset=False, dtype=np.float64), None
    else:
        table, labels = validate_data(estimator, X, y, reset=reset, dtype=np.float64, y_numeric=True)
        check_representable(labels, "y")
    check_representable(table, "X")
    if n_nodes is None:
        return table, labels, np.zeros(table.shape[0], dtype=np.int64), sizes
    if table.shape[1] < 2:
        raise ValueError(f"with a graph, X's first column is the node of each sample and the others "
                         f"its features: {name} got {table.shape[1]} column(s)")
    node = table[:, 0]
    bad = (node != np.round(node)) | (node < 0) | (node >= n_nodes)
    if bad.any():
        raise ValueError(f"X's first column must hold node indices in [0, {n_nodes}) (the graph's "
                         f"nodes); row {int(np.flatnonzero(bad)[0])} has {node[bad][0]!r}.  A scaler in "
                         "a Pipeline must leave that column out: ColumnTransformer([('node', "
                         "'passthrough', [0]), ('x', StandardScaler(), slice(1, None))]) (docs/package.md)")
    return table[:, 1:], labels, node.astype(np.int64), sizes


def per_node_output(values: np.ndarray, X: Any, sizes: list[int] | None) -> np.ndarray:
    """Per-sample ``values`` (``(N,)``, or ``(N, K)`` such as class probabilities) as an
    ndarray in the layout of ``X``: ``(N, ...)`` for a table, ``(n, m, ...)`` for a stacked
    ``(n, m, d)`` array, and ``(N, ...)`` for a sequence of per-node arrays, node after node in
    the order of their samples (node ``i``'s predictions are
    ``np.split(values, np.cumsum(sizes)[:-1])[i]``), as scikit-learn's ``predict`` returns."""
    if sizes is not None and isinstance(X, np.ndarray):
        return values.reshape(len(sizes), -1, *values.shape[1:])
    return values


def pooled_labels(y: Any, per_node: bool) -> np.ndarray:
    """Labels as one ``(N,)`` array, whether given per node (arrays or rows) or as one."""
    if per_node:
        return np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in y])
    return np.ravel(np.asarray(y, dtype=float))
