"""Empirical graphs: undirected weighted graphs whose nodes carry local datasets.

The central type is :class:`EmpiricalGraph`.  Edges are stored once, oriented from the
smaller to the larger node index, which fixes the signed incidence matrix ``D`` of the
GTV paper (Sec. II, eq. (6)): row ``e = {i, j}`` with ``i < j`` holds ``+1`` in column
``i`` and ``-1`` in column ``j``.  Generators for the graphs of the experiments (stochastic
block model, chain of clusters with a bridge edge, star) draw from an explicit
``numpy.random.Generator``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph  # noqa: F401  (registers sp.csgraph)

from .._validation import check_int, check_int_array, check_representable
from ..seeding import Seed, as_rng

__all__ = [
    "EmpiricalGraph",
    "GraphError",
    "GraphLike",
    "as_graph",
    "is_networkx_graph",
    "check_graph",
    "chain_of_clusters",
    "cluster_graph",
    "disjoint_union",
    "stochastic_block_model",
    "ring",
    "star",
]


class GraphError(ValueError):
    """Raised for a malformed graph (bad edge list, weights, or node indices)."""


@dataclass(frozen=True, eq=False)
class EmpiricalGraph:
    """Undirected weighted graph with ``n_nodes`` nodes.

    Parameters
    ----------
    n_nodes
        Number of nodes, indexed ``0 .. n_nodes - 1``.
    edges
        Integer array of shape ``(E, 2)``; each undirected edge once.  Edges are
        re-oriented so that ``edges[e, 0] < edges[e, 1]``.  A float array is accepted
        when every entry is integral (``1.0``); ``1.7``, NaN or booleans are an error, as
        is any other shape (a ``(2, E)`` array is not transposed).  The rule for
        integers, here and for ``n_nodes`` and ``clusters``, is :mod:`networkedfl._validation`'s.
    weights
        Non-negative edge weights ``A_e`` of shape ``(E,)``.  A weight of 0 keeps the
        edge in the structure (and in the degrees used for step sizes) but removes its
        coupling from the GTV penalty.
    clusters
        Optional ground-truth cluster label per node (shape ``(n_nodes,)``), used by
        experiments and oracle baselines only.
    parallel_edges
        Allow a node pair to appear more than once (a multigraph): each copy is its own
        row of the incidence matrix, with its own weight and dual variable, and counts in
        the degrees.  The GTV authors' MNIST graph is such a graph (both directed k-NN
        rows of two mutual neighbours become edges; see
        :func:`networkedfl.graphs.knn_graph`).  By default a repeated pair is an
        error.
    """

    n_nodes: int
    edges: np.ndarray
    weights: np.ndarray
    clusters: np.ndarray | None = field(default=None)
    parallel_edges: bool = False

    def __post_init__(self) -> None:
        n = check_int(self.n_nodes, "n_nodes", error=GraphError)
        if n < 1:
            raise GraphError(f"n_nodes must be positive, got {self.n_nodes}")
        edges = np.asarray(self.edges)
        if edges.size == 0:
            edges = edges.reshape(0, 2)
        if edges.ndim != 2 or edges.shape[1] != 2:
            hint = " (a (2, E) array? pass its transpose)" if edges.ndim == 2 and edges.shape[0] == 2 else ""
            raise GraphError(f"edges must have shape (E, 2), got {edges.shape}{hint}")
        edges = check_int_array(edges, "edges", error=GraphError)
        try:
            weights = np.asarray(self.weights, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise GraphError(f"weights must be numbers, got {self.weights!r}") from exc
        if weights.ndim != 1:
            raise GraphError(f"weights must be one-dimensional (E,), got shape {weights.shape}")
        if weights.shape[0] != edges.shape[0]:
            raise GraphError(
                f"weights has {weights.shape[0]} entries but there are {edges.shape[0]} edges"
            )
        if edges.size and (edges.min() < 0 or edges.max() >= n):
            raise GraphError(f"edge endpoints must lie in [0, {n - 1}]")
        if np.any(edges[:, 0] == edges[:, 1]):
            raise GraphError("self-loops are not allowed in an empirical graph")
        if not np.all(np.isfinite(weights)):
            raise GraphError("edge weights must be finite (found NaN or inf)")
        if np.any(weights < 0):
            raise GraphError("edge weights must be non-negative")
        check_representable(weights, "edge weights", element="edge", error=GraphError)
        edges = np.sort(edges, axis=1)
        keys = edges[:, 0] * n + edges[:, 1]
        if not self.parallel_edges and np.any(np.diff(np.sort(keys)) == 0):  # sort: O(E log E)
            raise GraphError("duplicate edges: each undirected edge must appear once "
                             "(parallel_edges=True allows a multigraph)")
        object.__setattr__(self, "n_nodes", n)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "weights", weights)
        if self.clusters is not None:
            clusters = np.asarray(self.clusters)
            if clusters.ndim != 1:
                raise GraphError(f"clusters must be one-dimensional (n_nodes,), got shape {clusters.shape}")
            clusters = check_int_array(clusters, "clusters", error=GraphError)
            if clusters.shape[0] != n:
                raise GraphError(f"clusters has {clusters.shape[0]} labels for {n} nodes")
            object.__setattr__(self, "clusters", clusters)

    @classmethod
    def from_adjacency(cls, adjacency: Any, *, clusters: np.ndarray | None = None,
                       rtol: float = 1e-12) -> EmpiricalGraph:
        """The graph of a symmetric weighted adjacency matrix, dense or scipy sparse.

        Every non-zero entry ``A_ij = A_ji`` with ``i < j`` becomes an edge of weight
        ``A_ij``; zeros (stored or not) are non-edges.  The matrix must be square, finite,
        symmetric (up to ``rtol`` times its largest magnitude) and zero on the diagonal.
        """
        a = sp.csr_matrix(adjacency, dtype=np.float64) if sp.issparse(adjacency) else None
        if a is None:
            dense = np.asarray(adjacency, dtype=np.float64)
            if dense.ndim != 2:
                raise GraphError(f"adjacency must be a square matrix, got shape {dense.shape}")
            a = sp.csr_matrix(dense)
        if a.shape[0] != a.shape[1]:
            raise GraphError(f"adjacency must be square, got shape {a.shape}")
        if not np.all(np.isfinite(a.data)):
            raise GraphError("adjacency entries must be finite (found NaN or inf)")
        a.eliminate_zeros()
        loops = np.flatnonzero(a.diagonal())
        if loops.size:
            raise GraphError(f"adjacency has non-zero diagonal entries (self-loops) at nodes {_first(loops)}")
        asym = (a - a.T).tocoo()
        scale = float(np.abs(a.data).max(initial=0.0))
        bad = np.abs(asym.data) > rtol * max(scale, 1e-300)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            i, j = int(asym.row[k]), int(asym.col[k])
            raise GraphError(f"adjacency must be symmetric: A[{i}, {j}] = {a[i, j]} but A[{j}, {i}] = {a[j, i]}")
        upper = sp.triu(a, k=1).tocoo()
        return cls(a.shape[0], np.stack([upper.row, upper.col], axis=1).astype(np.int64), upper.data,
                   clusters=clusters)

    @classmethod
    def from_networkx(cls, graph: Any, *, weight: str | None = "weight", default: float = 1.0,
                      nodelist: Sequence[Any] | None = None, clusters: np.ndarray | None = None) -> EmpiricalGraph:
        """The graph of an undirected :mod:`networkx` graph (``Graph`` or ``MultiGraph``).

        Node ``i`` is the ``i``-th of ``nodelist``: the order in which the data are given
        (``X[i]`` is the data of ``nodelist[i]``).  Without ``nodelist`` the nodes must be the
        integers ``0 .. n - 1`` listed in that order by ``graph.nodes`` (node ``i`` is label
        ``i``); any other labels, or these in another order (nodes inserted as ``[2, 3, 0,
        1]``), are a :class:`GraphError` naming ``nodelist``: the order of the data cannot be
        guessed from the graph.  An edge's weight is its attribute ``weight`` (``default``
        where missing; ``weight=None``: every weight ``default``).  The parallel edges of a
        ``MultiGraph`` become one edge whose weight is their sum (with a warning naming the
        pairs): the GTV penalty ``sum_e A_e phi(w_i - w_j)`` is the same, and a mixing matrix
        sees one neighbour per pair.  Self-loops and directed graphs are refused.
        """
        if graph.is_directed():
            raise GraphError("a directed networkx graph has no empirical graph: pass graph.to_undirected()")
        nodes = _node_order(graph, nodelist)
        index = {node: i for i, node in enumerate(nodes)}
        rows = [(index[u], index[v], default if weight is None else data.get(weight, default))
                for u, v, data in graph.edges(data=True)]
        edges = np.array([(u, v) for u, v, _ in rows], dtype=np.int64).reshape(-1, 2)
        weights = np.array([w for _, _, w in rows], dtype=np.float64)
        if graph.is_multigraph():
            edges, weights = _sum_parallel_edges(edges, weights, len(nodes))
        return cls(len(nodes), edges, weights, clusters=clusters)

    def to_networkx(self) -> Any:
        """A :mod:`networkx` ``Graph`` (``MultiGraph`` with parallel edges) on nodes
        ``0 .. n - 1``, edge attribute ``weight``, node attribute ``cluster`` if known.
        :meth:`from_networkx` of a ``MultiGraph`` sums its parallel edges (one edge per pair)."""
        import networkx as nx  # optional: only this method needs it

        out = nx.MultiGraph() if self.parallel_edges else nx.Graph()
        if self.clusters is None:
            out.add_nodes_from(range(self.n_nodes))
        else:
            out.add_nodes_from((i, {"cluster": int(c)}) for i, c in enumerate(self.clusters))
        out.add_weighted_edges_from((int(i), int(j), float(w)) for (i, j), w in zip(self.edges, self.weights, strict=True))
        return out

    @property
    def n_edges(self) -> int:
        return int(self.edges.shape[0])

    @cached_property
    def incidence(self) -> sp.csr_matrix:
        """Signed incidence matrix ``D`` of shape ``(E, n)`` (GTV eq. (6))."""
        e = np.arange(self.n_edges)
        rows = np.concatenate([e, e])
        cols = np.concatenate([self.edges[:, 0], self.edges[:, 1]])
        vals = np.concatenate([np.ones(self.n_edges), -np.ones(self.n_edges)])
        return sp.csr_matrix((vals, (rows, cols)), shape=(self.n_edges, self.n_nodes))

    @cached_property
    def degrees(self) -> np.ndarray:
        """Number of neighbours of each node (unweighted degree)."""
        return np.bincount(self.edges.ravel(), minlength=self.n_nodes).astype(np.float64)

    @cached_property
    def weighted_degrees(self) -> np.ndarray:
        """Sum of incident edge weights of each node."""
        return np.bincount(
            self.edges.ravel(), weights=np.repeat(self.weights, 2), minlength=self.n_nodes
        )

    @cached_property
    def adjacency(self) -> sp.csr_matrix:
        """Symmetric weighted adjacency matrix ``A`` of shape ``(n, n)``."""
        i, j = self.edges[:, 0], self.edges[:, 1]
        return sp.csr_matrix(
            (np.concatenate([self.weights, self.weights]), (np.concatenate([i, j]), np.concatenate([j, i]))),
            shape=(self.n_nodes, self.n_nodes),
        )

    @cached_property
    def laplacian(self) -> sp.csr_matrix:
        """Weighted Laplacian ``L = D^T diag(A) D``."""
        d = self.incidence
        return (d.T @ sp.diags(self.weights) @ d).tocsr()

    @property
    def isolated_nodes(self) -> np.ndarray:
        return np.flatnonzero(self.degrees == 0)

    def is_connected(self) -> bool:
        """Whether the graph (ignoring weights) is connected."""
        n_comp, _ = sp.csgraph.connected_components(_structure(self), directed=False)
        return n_comp == 1

    def check(self, *, purpose: str, allow_isolated: bool = False, allow_zero_weights: bool = False,
              require_connected: bool = False) -> EmpiricalGraph:
        """This graph, after checking it suits ``purpose``; see :func:`check_graph`."""
        return check_graph(self, purpose=purpose, allow_isolated=allow_isolated,
                           allow_zero_weights=allow_zero_weights, require_connected=require_connected)

    def subgraph(self, nodes: np.ndarray) -> EmpiricalGraph:
        """Induced subgraph on ``nodes`` (relabelled ``0 .. len(nodes) - 1`` in the given order)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        relabel = np.full(self.n_nodes, -1, dtype=np.int64)
        relabel[nodes] = np.arange(nodes.size)
        keep = (relabel[self.edges[:, 0]] >= 0) & (relabel[self.edges[:, 1]] >= 0)
        clusters = None if self.clusters is None else self.clusters[nodes]
        return EmpiricalGraph(nodes.size, relabel[self.edges[keep]], self.weights[keep], clusters,
                              parallel_edges=self.parallel_edges)


def _node_order(graph: Any, nodelist: Sequence[Any] | None) -> list[Any]:
    """The nodes of a networkx graph in the order of the data: ``nodelist``, or the labels
    ``0 .. n - 1`` when ``graph.nodes`` lists exactly these in that order; else an error."""
    labels = list(graph.nodes)
    if nodelist is None:
        if all(isinstance(v, int | np.integer) and not isinstance(v, bool) and v == i
               for i, v in enumerate(labels)):
            return labels
        shown = ", ".join(repr(v) for v in labels[:10]) + (", ..." if len(labels) > 10 else "")
        integers = all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in labels)
        why = ("its integer labels are not their positions in graph.nodes" if integers
               else "its labels are not the integers 0 .. n-1")
        raise GraphError(f"a networkx graph whose nodes are [{shown}]: {why}, so the order of the data "
                         "is not known; pass nodelist= (node i is nodelist[i], the node of X[i]; e.g. "
                         "nodelist=sorted(G) when X[i] is the data of node label i) to GTVRegressor, FedRelax "
                         "or FedRelaxClassifier, or give the functions as_graph(G, nodelist=...)")
    nodes = list(nodelist)
    if len(set(nodes)) != len(nodes) or len(nodes) != len(labels):
        raise GraphError(f"nodelist must hold every node of the graph exactly once: {len(nodes)} entries "
                         f"({len(set(nodes))} distinct) for {len(labels)} nodes")
    unknown = [v for v in nodes if v not in graph]
    if unknown:
        raise GraphError(f"nodelist holds {unknown[0]!r}, which is not a node of the graph")
    return nodes


def _sum_parallel_edges(edges: np.ndarray, weights: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """One edge per node pair, weighted by the sum of its parallel edges (with a warning)."""
    pairs = np.sort(edges, axis=1)
    keys, inverse, counts = np.unique(pairs[:, 0] * n + pairs[:, 1], return_inverse=True, return_counts=True)
    if (counts == 1).all():
        return edges, weights
    repeated = keys[counts > 1]
    shown = ", ".join(f"{{{k // n}, {k % n}}}" for k in repeated[:10].tolist())
    warnings.warn(f"the MultiGraph has parallel edges between {repeated.size} node pairs ({shown}"
                  f"{', ...' if repeated.size > 10 else ''}): their weights are summed into one edge "
                  "per pair (the same GTV penalty)", UserWarning, stacklevel=3)
    return np.stack([keys // n, keys % n], axis=1), np.bincount(inverse, weights=weights, minlength=keys.size)


def _structure(graph: EmpiricalGraph) -> sp.csr_matrix:
    i, j = graph.edges[:, 0], graph.edges[:, 1]
    ones = np.ones(2 * graph.n_edges)
    return sp.csr_matrix(
        (ones, (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(graph.n_nodes, graph.n_nodes)
    )


def _cluster_labels(sizes: Sequence[int]) -> np.ndarray:
    return np.repeat(np.arange(len(sizes)), np.asarray(sizes, dtype=np.int64))


def _upper_triangle_pair(idx: np.ndarray, size: int) -> np.ndarray:
    """Decode linear indices of the row-major strict upper triangle into pairs ``(i, j)``."""
    i = size - 2 - np.floor(np.sqrt(-8.0 * idx + 4.0 * size * (size - 1) - 7) / 2.0 - 0.5)
    i = i.astype(np.int64)
    j = idx + i + 1 - size * (size - 1) // 2 + (size - i) * (size - i - 1) // 2
    return np.stack([i, j], axis=1)


def _sample_pairs_within(size: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """Each of the ``size*(size-1)/2`` unordered pairs independently with probability ``p``."""
    n_pairs = size * (size - 1) // 2
    count = rng.binomial(n_pairs, p) if n_pairs else 0
    idx = np.sort(rng.choice(n_pairs, size=count, replace=False)) if count else np.empty(0, np.int64)
    return _upper_triangle_pair(idx, size)


def _sample_pairs_between(size_a: int, size_b: int, p: float, rng: np.random.Generator) -> np.ndarray:
    n_pairs = size_a * size_b
    count = rng.binomial(n_pairs, p)
    idx = np.sort(rng.choice(n_pairs, size=count, replace=False)) if count else np.empty(0, np.int64)
    return np.stack([idx // size_b, idx % size_b], axis=1)


def stochastic_block_model(
    sizes: Sequence[int],
    p_in: float,
    p_out: float,
    seed: Seed = None,
    *,
    weight: float = 1.0,
) -> EmpiricalGraph:
    """Stochastic block model with clusters of the given ``sizes``.

    Every pair of nodes in the same cluster is joined with probability ``p_in`` and
    every pair in different clusters with probability ``p_out``, independently.  The
    sampler draws the number of edges of each block from its binomial distribution and
    then a uniform subset of pairs of that size, which is the same distribution as
    independent Bernoulli trials but costs ``O(E)`` instead of ``O(n^2)``.

    Parameters
    ----------
    sizes
        Number of nodes per cluster; nodes are numbered cluster by cluster.
    p_in, p_out
        Intra- and inter-cluster edge probabilities.
    seed
        Source of randomness.
    weight
        Weight ``A_e`` of every edge.
    """
    rng = as_rng(seed)
    for name, p in (("p_in", p_in), ("p_out", p_out)):
        if not 0.0 <= p <= 1.0:
            raise GraphError(f"{name} must be a probability in [0, 1], got {p}")
    sizes = [int(s) for s in sizes]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    blocks = []
    for a, size_a in enumerate(sizes):
        pairs = _sample_pairs_within(size_a, p_in, rng)
        blocks.append(pairs + offsets[a])
        for b in range(a + 1, len(sizes)):
            pairs = _sample_pairs_between(size_a, sizes[b], p_out, rng)
            blocks.append(pairs + np.array([offsets[a], offsets[b]]))
    edges = np.concatenate(blocks) if blocks else np.empty((0, 2), np.int64)
    return EmpiricalGraph(
        int(offsets[-1]), edges, np.full(edges.shape[0], float(weight)), _cluster_labels(sizes)
    )


def chain_of_clusters(
    sizes: Sequence[int], bridge_weight: float, *, weight: float = 1.0
) -> EmpiricalGraph:
    """Chain (path) graph ``{i, i+1}`` whose consecutive clusters meet at one bridge edge.

    GTV paper Sec. VI-B: intra-cluster edges have weight ``weight`` and each edge
    between the last node of a cluster and the first node of the next has weight
    ``bridge_weight`` (the paper's epsilon).
    """
    sizes = [int(s) for s in sizes]
    n = sum(sizes)
    edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    weights = np.full(n - 1, float(weight))
    bridges = np.cumsum(sizes)[:-1] - 1
    weights[bridges] = float(bridge_weight)
    return EmpiricalGraph(n, edges, weights, _cluster_labels(sizes))


def star(n_nodes: int, *, weight: float = 1.0) -> EmpiricalGraph:
    """Star graph: node 0 is the centre, joined to every other node with weight ``weight``."""
    if n_nodes < 2:
        raise GraphError(f"a star needs at least 2 nodes, got {n_nodes}")
    leaves = np.arange(1, n_nodes)
    edges = np.stack([np.zeros_like(leaves), leaves], axis=1)
    return EmpiricalGraph(n_nodes, edges, np.full(n_nodes - 1, float(weight)))


def ring(n_nodes: int, *, weight: float = 1.0) -> EmpiricalGraph:
    """Ring (cycle): node ``i`` joined to ``i + 1`` and node ``n - 1`` to node 0."""
    if n_nodes < 3:
        raise GraphError(f"a ring needs at least 3 nodes, got {n_nodes}")
    heads = np.arange(n_nodes)
    edges = np.sort(np.stack([heads, (heads + 1) % n_nodes], axis=1), axis=1)
    return EmpiricalGraph(n_nodes, edges, np.full(n_nodes, float(weight)))


def disjoint_union(graphs: Sequence[EmpiricalGraph]) -> tuple[EmpiricalGraph, np.ndarray]:
    """Disjoint union of graphs, so that independent problems can be solved in one batch.

    Returns the union and the node offsets: graph ``k`` occupies nodes
    ``offsets[k] .. offsets[k+1] - 1``.  Cluster labels are kept per graph and shifted
    so that clusters of different graphs stay distinct.
    """
    sizes = np.array([g.n_nodes for g in graphs], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    edges = np.concatenate([g.edges + offsets[k] for k, g in enumerate(graphs)])
    weights = np.concatenate([g.weights for g in graphs])
    clusters = None
    if all(g.clusters is not None for g in graphs):
        shift = 0
        parts = []
        for g in graphs:
            parts.append(g.clusters + shift)
            shift += int(g.clusters.max()) + 1
        clusters = np.concatenate(parts)
    parallel = any(g.parallel_edges for g in graphs)
    return EmpiricalGraph(int(offsets[-1]), edges, weights, clusters, parallel_edges=parallel), offsets


def cluster_graph(graph: EmpiricalGraph, labels: np.ndarray | None = None) -> EmpiricalGraph:
    """Cluster (quotient) graph: each cluster becomes one node (GTV Sec. IX-A, Fig. 8).

    Two cluster nodes are joined iff some edge joins the clusters; the weight is the sum
    of the weights of those edges.  Intra-cluster edges disappear (no self-loops).
    """
    labels = graph.clusters if labels is None else np.asarray(labels, dtype=np.int64)
    if labels is None:
        raise GraphError("cluster_graph needs cluster labels (graph.clusters or labels=)")
    k = int(labels.max()) + 1
    a, b = labels[graph.edges[:, 0]], labels[graph.edges[:, 1]]
    between = a != b
    lo, hi = np.minimum(a, b)[between], np.maximum(a, b)[between]
    keys, inverse = np.unique(lo * k + hi, return_inverse=True)
    weights = np.bincount(inverse, weights=graph.weights[between], minlength=keys.size)
    edges = np.stack([keys // k, keys % k], axis=1)
    return EmpiricalGraph(k, edges, weights, np.arange(k))


def _first(ids: np.ndarray, k: int = 10) -> str:
    shown = ", ".join(str(int(i)) for i in ids[:k])
    return shown + (f", ... ({ids.size} in all)" if ids.size > k else "")


def check_graph(
    graph: EmpiricalGraph,
    *,
    purpose: str,
    allow_isolated: bool = False,
    allow_zero_weights: bool = False,
    require_connected: bool = False,
) -> EmpiricalGraph:
    """Check that ``graph`` suits an algorithm that needs every node linked by positive weights.

    Construction already rejects negative, NaN and infinite weights.  Algorithms that
    normalise by degrees (a GCN layer), average over neighbours, or need consensus call this
    at their entry, so a bad graph fails with a message naming the offending nodes or edges
    instead of producing NaNs later.

    Raises
    ------
    GraphError
        Naming ``purpose`` and the isolated nodes, the zero-weight edges, or the number of
        connected components.
    """
    if not allow_isolated:
        isolated = graph.isolated_nodes
        if isolated.size:
            raise GraphError(f"{purpose}: the graph has isolated nodes (no neighbour): {_first(isolated)}")
    if not allow_zero_weights:
        zero = np.flatnonzero(graph.weights <= 0)
        if zero.size:
            pairs = ", ".join(f"{{{a}, {b}}}" for a, b in graph.edges[zero[:10]])
            more = f", ... ({zero.size} in all)" if zero.size > 10 else ""
            raise GraphError(f"{purpose}: edge weights must be positive; weight 0 on edges {pairs}{more}")
    if require_connected and not graph.is_connected():
        n_comp, _ = sp.csgraph.connected_components(_structure(graph), directed=False)
        raise GraphError(f"{purpose}: the graph must be connected, it has {n_comp} components")
    return graph


def is_networkx_graph(obj: Any) -> bool:
    """Whether ``obj`` looks like a :mod:`networkx` graph (checked by its methods, so that
    networkx is never imported here)."""
    return all(hasattr(obj, name) for name in ("is_directed", "edges", "nodes"))


#: What the public entry points accept as a graph (:func:`as_graph`).
GraphLike = Any


def as_graph(graph: GraphLike, *, name: str = "graph", nodelist: Sequence[Any] | None = None) -> EmpiricalGraph:
    """An :class:`EmpiricalGraph` from what users have: an ``EmpiricalGraph`` (returned as
    it is), an undirected :mod:`networkx` graph (:meth:`EmpiricalGraph.from_networkx`, with
    ``nodelist``: the order of the data, needed unless the nodes are ``0 .. n - 1`` in that
    order) or a symmetric adjacency matrix, dense or scipy sparse
    (:meth:`EmpiricalGraph.from_adjacency`: node ``i`` is row ``i``).  Every public entry
    point that takes a graph accepts all three."""
    if nodelist is not None and not is_networkx_graph(graph):
        raise ValueError(f"nodelist orders the nodes of a networkx graph; {name} is a "
                         f"{type(graph).__name__}, whose node i is already its row i")
    if isinstance(graph, EmpiricalGraph):
        return graph
    if is_networkx_graph(graph):
        return EmpiricalGraph.from_networkx(graph, nodelist=nodelist)
    if sp.issparse(graph) or isinstance(graph, np.ndarray | list):
        return EmpiricalGraph.from_adjacency(graph)
    raise TypeError(f"{name} must be an EmpiricalGraph, a networkx graph or an adjacency matrix, "
                    f"got {type(graph).__name__}")
