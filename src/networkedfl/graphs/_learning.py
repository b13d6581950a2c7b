"""Empirical graphs learnt from the nodes' local datasets (GTV paper, Sec. VI-C).

The MNIST experiment of the GTV paper has no given graph: it is learnt from the data.

1. Every training image of every node is embedded in the plane by t-SNE
   (van der Maaten & Hinton 2008; here openTSNE, Poličar et al. 2024), one joint
   embedding of all the nodes' images (:func:`tsne_embedding`).
2. The distance between two nodes is the Kullback-Leibler divergence between the
   distributions of their embedded samples, estimated by the nearest-neighbour estimator
   of Pérez-Cruz (2008), GTV reference [17] (:func:`knn_kl_divergence`,
   :func:`pairwise_kl_divergences`), and symmetrised (:func:`symmetrised`).
3. Every node is linked to its ``k = 4`` nearest nodes (the undirected union of the
   directed k-NN relation), with edge weights ``A_e = exp(-distance)``
   (:func:`knn_graph`, :func:`exponential_kernel`).  Node vectors (rather than a distance
   matrix) go through a k-d tree instead (:func:`knn_graph_of_points`, no ``n x n`` array).

:func:`learn_graph` runs the three steps and times each of them.  The GTV authors'
notebooks learnt their graph with three differences that are options here (docs/variants.md
§8.7): each node's embedded points sorted column by column before the estimate
(:func:`sort_columns_per_node`), an approximate k-d tree query (``eps`` of
:func:`pairwise_kl_divergences`), and the directed k-NN rows of the divergence matrix as
edges with min-max rescaled weights (``relation="directed"``, ``rescale="minmax"`` of
:func:`knn_graph`).  Nothing here draws from
a global random state: t-SNE takes an explicit integer seed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from .._lazy import require
from ..seeding import Seed, int_seed
from ._graph import EmpiricalGraph, GraphError

__all__ = [
    "LearntGraph",
    "divergence_graph",
    "exponential_kernel",
    "knn_graph",
    "knn_graph_of_points",
    "knn_kl_divergence",
    "learn_graph",
    "pairwise_kl_divergences",
    "pca_projection",
    "sort_columns_per_node",
    "symmetrised",
    "tsne_embedding",
]

#: Nearest-neighbour distances below this are raised to it, so that duplicated samples
#: give a large but finite log-ratio instead of ``inf`` (see :func:`knn_kl_divergence`).
MIN_DISTANCE = 1e-10


# ------------------------------------------------------------------------ embedding


def pca_projection(features: np.ndarray, n_components: int) -> np.ndarray:
    """Centred features projected on their ``n_components`` leading principal axes.

    Computed from the eigendecomposition of the ``(F, F)`` scatter matrix (fast for many
    samples of moderate dimension); each axis is signed so that its largest-magnitude
    entry is positive, which makes the result deterministic.
    """
    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"features must be (N, F), got shape {x.shape}")
    if not 1 <= n_components <= x.shape[1]:
        raise ValueError(f"n_components must be in [1, {x.shape[1]}], got {n_components}")
    centred = x - x.mean(axis=0)
    _, vecs = np.linalg.eigh(centred.T @ centred)
    axes = vecs[:, ::-1][:, :n_components]
    signs = np.sign(axes[np.abs(axes).argmax(axis=0), np.arange(n_components)])
    return centred @ (axes * np.where(signs == 0, 1.0, signs))


def tsne_embedding(
    features: np.ndarray,
    *,
    seed: Seed,
    n_components: int = 2,
    perplexity: float = 30.0,
    early_exaggeration_iter: int = 250,
    n_iter: int = 500,
    pca_components: int | None = 50,
    neighbors: str = "exact",
    ints_in_interval: float = 2.0,
    negative_gradient_method: str = "auto",
    n_jobs: int = 1,
) -> np.ndarray:
    """Joint t-SNE embedding of all samples (openTSNE, FFT-accelerated gradients).

    Parameters
    ----------
    features
        ``(N, F)`` samples, e.g. flattened images of all nodes.
    seed
        Seed of openTSNE (nearest-neighbour index and optimisation): an ``int`` is passed
        on as it is, a numpy ``Generator`` gives one integer draw
        (:func:`networkedfl.seeding.int_seed`); the same seed gives the same embedding,
        also with another ``n_jobs`` (tests/unit/graphs/test_graph_learning.py).
    n_components
        Embedding dimension (2 in the GTV paper).
    perplexity, early_exaggeration_iter, n_iter
        openTSNE's perplexity and the iterations of its two optimisation phases.
    pca_components
        If given, the features are first projected on this many principal axes
        (:func:`pca_projection`): this makes the nearest-neighbour search of t-SNE several
        times faster on 784-pixel images; ``None`` embeds the raw features.
    neighbors
        Nearest-neighbour search of the affinities: ``"exact"`` (brute force, scikit-learn;
        deterministic and, after PCA, faster than the default approximate search) or one of
        openTSNE's approximate methods (``"annoy"``, ``"pynndescent"``).
    ints_in_interval
        Width of the interpolation intervals of the FFT-accelerated gradient (openTSNE's
        default is 1): 2 quarters the FFT grid of a widely spread embedding (such as MNIST
        digits) at a small loss of accuracy of the repulsive forces.
    negative_gradient_method
        ``"fft"`` (interpolation), ``"bh"`` (Barnes-Hut) or ``"auto"`` (openTSNE's choice:
        Barnes-Hut below 10,000 samples, FFT above).
    n_jobs
        Threads of openTSNE (its gradients; BLAS runs on one thread during the
        embedding so that the result does not depend on the BLAS thread count).

    Returns
    -------
    np.ndarray
        ``(N, n_components)`` float64 coordinates.
    """
    TSNE = require("openTSNE", "tsne_embedding").TSNE  # on first use: an optional dependency (tsne)
    from threadpoolctl import threadpool_limits

    # One BLAS thread: the PCA scatter matrix and the exact nearest-neighbour distances
    # are then summed in one fixed order, so the embedding does not depend on the
    # machine's BLAS thread count (t-SNE amplifies a last-bit difference into other edges).
    with threadpool_limits(limits=1, user_api="blas"):
        x = np.asarray(features, dtype=np.float64)
        if pca_components is not None and pca_components < x.shape[1]:
            x = pca_projection(x, int(pca_components))
        tsne = TSNE(
            n_components=int(n_components),
            perplexity=float(perplexity),
            early_exaggeration_iter=int(early_exaggeration_iter),
            n_iter=int(n_iter),
            neighbors=neighbors,
            knn_kwargs={"algorithm": "brute"} if neighbors == "exact" else None,
            negative_gradient_method=negative_gradient_method,
            ints_in_interval=float(ints_in_interval),
            n_jobs=int(n_jobs),
            random_state=int_seed(seed),
            verbose=False,
        )
        return np.asarray(tsne.fit(x), dtype=np.float64)


# ------------------------------------------------------------------------ KL estimator


def _kth_distance(tree: cKDTree, points: np.ndarray, k: int, workers: int, eps: float = 0.0) -> np.ndarray:
    dist, _ = tree.query(points, k=[k], workers=workers, eps=eps)
    return np.maximum(dist[:, 0], MIN_DISTANCE)


def sort_columns_per_node(samples: np.ndarray, node_of_sample: np.ndarray) -> np.ndarray:
    """Every node's samples with each coordinate sorted on its own (the GTV notebooks).

    Within the samples of one node, column ``c`` of the result holds the sorted values of
    column ``c`` of the input; the rows of a node keep their positions, so row ``r`` of
    node ``i`` becomes ``(r-th smallest x, r-th smallest y, ...)`` of node ``i``.  This
    destroys the pairing of the coordinates (the points move onto a monotone curve), and
    so changes the k-NN divergence estimates; the GTV authors' notebooks sorted the t-SNE
    coordinates this way before estimating (docs/variants.md §8.7).  One ``lexsort``
    per column, no loop over nodes.
    """
    x = np.asarray(samples, dtype=np.float64)
    node = np.asarray(node_of_sample, dtype=np.int64).reshape(-1)
    if x.ndim != 2 or node.shape[0] != x.shape[0]:
        raise ValueError(f"samples must be (N, d) with one node label each; got {x.shape} and {node.shape}")
    slots = np.argsort(node, kind="stable")  # the rows of each node, grouped, in input order
    out = np.empty_like(x)
    for c in range(x.shape[1]):  # over coordinates (2 for t-SNE), not nodes
        out[slots, c] = x[np.lexsort((x[:, c], node)), c]
    return out


def knn_kl_divergence(x: np.ndarray, y: np.ndarray, k: int = 1) -> float:
    """k-nearest-neighbour estimate of ``D(P || Q)`` from samples ``x ~ P``, ``y ~ Q``.

    Pérez-Cruz (2008), eq. (14) with the sign of the log-ratio as in Wang, Kulkarni and
    Verdú (2009)::

        D_hat = (d / n) sum_i log(nu_k(i) / rho_k(i)) + log(m / (n - 1))

    where ``rho_k(i)`` is the distance from ``x_i`` to its ``k``-th nearest neighbour
    among the other samples of ``x`` and ``nu_k(i)`` the distance to its ``k``-th nearest
    neighbour in ``y``.  The estimate is consistent (it converges to ``D(P || Q)`` as
    ``n, m`` grow) and can be slightly negative for finite samples.  Distances are
    exact (scipy ``cKDTree``); those below :data:`MIN_DISTANCE` are raised to it.

    Parameters
    ----------
    x, y
        ``(n, d)`` and ``(m, d)`` samples (``n > k``, ``m >= k``).
    k
        Neighbour order (the GTV authors' code uses ``k = 1``).
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    y = np.atleast_2d(np.asarray(y, dtype=np.float64))
    n, d = x.shape
    m = y.shape[0]
    if y.shape[1] != d:
        raise ValueError(f"x and y must have the same dimension, got {d} and {y.shape[1]}")
    if n <= k or m < k:
        raise ValueError(f"need more than k = {k} samples in x and at least k in y (got {n}, {m})")
    rho = _kth_distance(cKDTree(x), x, k + 1, 1)  # the nearest point of x is x_i itself
    nu = _kth_distance(cKDTree(y), x, k, 1)
    return float(d * np.mean(np.log(nu / rho)) + np.log(m / (n - 1.0)))


def pairwise_kl_divergences(
    samples: np.ndarray,
    node_of_sample: np.ndarray,
    *,
    n_nodes: int | None = None,
    k: int = 1,
    workers: int = 1,
    eps: float = 0.0,
) -> np.ndarray:
    """``D[i, j] = D_hat(P_i || P_j)`` for all ordered pairs of nodes (zero diagonal).

    The estimator of :func:`knn_kl_divergence` for every pair at once: one k-d tree per
    node, and each tree is queried once with the samples of *all* nodes, so the
    ``n (n - 1)`` estimates cost ``n`` vectorised queries of ``N`` points plus a
    segment sum (no loop over pairs).

    Parameters
    ----------
    samples
        ``(N, d)`` samples of all nodes (e.g. t-SNE coordinates).
    node_of_sample
        ``(N,)`` node index of every sample, in ``0 .. n_nodes - 1``; nodes may hold
        different numbers of samples (each at least ``k + 1``).
    n_nodes
        Number of nodes (default ``max(node_of_sample) + 1``).
    k
        Neighbour order.
    workers
        Threads of each k-d tree query (``-1``: all cores).
    eps
        Approximate nearest neighbours: every reported distance is at most ``1 + eps``
        times the true one (scipy ``cKDTree.query``).  0 (default) is exact; the GTV
        notebooks' estimator used 0.01.

    Returns
    -------
    np.ndarray
        ``(n_nodes, n_nodes)`` matrix, row ``i`` the divergences from node ``i``'s
        distribution; not symmetric (see :func:`symmetrised`).
    """
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"samples must be (N, d), got shape {x.shape}")
    node = np.asarray(node_of_sample, dtype=np.int64).reshape(-1)
    if node.shape[0] != x.shape[0]:
        raise ValueError(f"{node.shape[0]} node labels for {x.shape[0]} samples")
    n = int(node.max()) + 1 if n_nodes is None else int(n_nodes)
    if not eps >= 0:
        raise ValueError(f"eps must be non-negative, got {eps!r}")
    if node.size and (node.min() < 0 or node.max() >= n):
        raise ValueError(f"node labels must lie in [0, {n - 1}]")
    order = np.argsort(node, kind="stable")
    x, node = x[order], node[order]
    counts = np.bincount(node, minlength=n)
    if np.any(counts <= k):
        raise ValueError(f"every node needs more than k = {k} samples; counts {counts.tolist()}")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    d = x.shape[1]
    trees = [cKDTree(x[s : s + c]) for s, c in zip(starts, counts, strict=True)]
    log_rho = np.empty(x.shape[0])
    log_nu = np.empty((n, x.shape[0]))  # log_nu[j, s]: k-NN distance of sample s in node j
    for j, tree in enumerate(trees):  # over nodes (one vectorised query each), not pairs
        block = slice(starts[j], starts[j] + counts[j])
        log_rho[block] = np.log(_kth_distance(tree, x[block], k + 1, workers, eps))
        log_nu[j] = np.log(_kth_distance(tree, x, k, workers, eps))
    # sum over the samples s of node i of log nu_j(s) - log rho(s): a segment sum per row
    sums = np.add.reduceat(log_nu - log_rho, starts, axis=1)  # (n_j, n_i)
    div = d * sums.T / counts[:, None] + np.log(counts[None, :] / (counts[:, None] - 1.0))
    np.fill_diagonal(div, 0.0)
    return div


def symmetrised(divergences: np.ndarray) -> np.ndarray:
    """``(D + D^T) / 2``: a symmetric node distance from directed divergences."""
    div = np.asarray(divergences, dtype=np.float64)
    if div.ndim != 2 or div.shape[0] != div.shape[1]:
        raise ValueError(f"divergences must be square, got shape {div.shape}")
    return 0.5 * (div + div.T)


# ------------------------------------------------------------------------ graph


def exponential_kernel(distances: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """Edge weights ``A_e = exp(-distance / scale)`` (GTV Sec. VI-C: ``scale = 1``)."""
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale!r}")
    return np.exp(-np.asarray(distances, dtype=np.float64) / scale)


#: How :func:`knn_graph` turns the k-NN relation into edges.
RELATIONS = ("union", "directed")
#: How :func:`knn_graph` rescales the kernel weights.
RESCALINGS = ("none", "minmax", "unit")


def knn_graph(
    distances: np.ndarray,
    k: int = 4,
    *,
    scale: float = 1.0,
    clusters: np.ndarray | None = None,
    relation: str = "union",
    rescale: str = "none",
) -> EmpiricalGraph:
    """Link every node to its ``k`` nearest nodes; weights by :func:`exponential_kernel`.

    With ``relation="union"`` (the GTV paper) the directed relation "j is among the k
    nearest of i" is symmetrised by union, so every node has degree at least ``k``; the
    distances must be symmetric.  With ``relation="directed"`` (the GTV notebooks) every
    row ``i`` of a possibly non-symmetric distance matrix (e.g. the directed divergences
    ``D_hat(P_i || P_j)``) contributes its ``k`` edges ``(i, j)`` weighted by
    ``distances[i, j]``; two mutual neighbours then share two parallel edges, and the
    result is a multigraph (``parallel_edges=True``) with exactly ``n k`` edges.  Ties
    are broken by the smaller node index.

    Parameters
    ----------
    distances
        ``(n, n)`` node distances (the diagonal is ignored).
    k
        Neighbours per node (GTV: 4); ``1 <= k < n``.
    scale
        Kernel scale.
    clusters
        Optional true cluster of each node, stored in the graph (for evaluation only).
    relation
        ``"union"`` or ``"directed"`` (see above).
    rescale
        ``"none"``: ``A_e = exp(-d_e / scale)``.  ``"minmax"`` (the GTV notebooks): those
        weights mapped affinely onto ``[0, 1]`` over the edges, so the weakest edge gets
        weight 0 (it stays in the degrees but couples nothing) and the strongest 1; equal
        weights all become 1.  ``"unit"``: every edge weight 1 (the chapter's k-NN graphs
        of node vectors, Sec. 10.4).
    """
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
    if rescale not in RESCALINGS:
        raise ValueError(f"rescale must be one of {RESCALINGS}, got {rescale!r}")
    dist = np.asarray(distances, dtype=np.float64)
    n = dist.shape[0]
    if dist.shape != (n, n):
        raise ValueError(f"distances must be square, got shape {dist.shape}")
    if relation == "union" and not np.allclose(dist, dist.T, rtol=1e-12, atol=1e-12):
        raise ValueError("distances must be symmetric for relation='union' (see symmetrised)")
    if not 1 <= k < n:
        raise GraphError(f"k must be in [1, {n - 1}] for {n} nodes, got {k}")
    if not np.all(np.isfinite(dist[~np.eye(n, dtype=bool)])):
        raise ValueError("distances between distinct nodes must be finite")
    masked = dist.copy()
    np.fill_diagonal(masked, np.inf)
    nearest = np.argsort(masked, axis=1, kind="stable")[:, :k]
    rows = np.repeat(np.arange(n), k)
    directed = np.stack([rows, nearest.ravel()], axis=1)
    edges = np.unique(np.sort(directed, axis=1), axis=0) if relation == "union" else directed
    return _kernel_graph(n, edges, dist[edges[:, 0], edges[:, 1]], scale, rescale, clusters, relation)


def _kernel_graph(n: int, edges: np.ndarray, lengths: np.ndarray, scale: float, rescale: str,
                  clusters: np.ndarray | None, relation: str) -> EmpiricalGraph:
    """The k-NN graph with weights ``exponential_kernel(lengths)``, rescaled by ``rescale``."""
    weights = exponential_kernel(lengths, scale)
    if rescale == "minmax":
        span = weights.max() - weights.min()
        weights = (weights - weights.min()) / span if span > 0 else np.ones_like(weights)
    elif rescale == "unit":
        weights = np.ones_like(weights)
    return EmpiricalGraph(n, edges, weights, clusters=clusters, parallel_edges=relation == "directed")


def knn_graph_of_points(
    points: np.ndarray,
    k: int = 4,
    *,
    scale: float = 1.0,
    clusters: np.ndarray | None = None,
    relation: str = "union",
    rescale: str = "none",
    workers: int = 1,
) -> EmpiricalGraph:
    """:func:`knn_graph` of the Euclidean distances between node vectors, through a k-d tree.

    The same graph as ``knn_graph(cdist(points, points), k, ...)`` without the ``(n, n)``
    distance matrix: one :class:`scipy.spatial.cKDTree` query of the ``k + 1`` nearest
    points of every point (itself included), so time ``O(n k log n)`` and memory ``O(n k)``;
    10^6 nodes take seconds.  A node is never its own neighbour (of duplicated points, the
    other copy is a neighbour at distance 0).  Ties at equal distance follow the tree's
    order, not necessarily the smaller node index as in :func:`knn_graph`.

    Parameters
    ----------
    points
        ``(n, d)`` node vectors (``(n,)``: one coordinate per node).
    k, scale, clusters, relation, rescale
        As :func:`knn_graph`.
    workers
        Threads of the tree query (``-1``: all).
    """
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
    if rescale not in RESCALINGS:
        raise ValueError(f"rescale must be one of {RESCALINGS}, got {rescale!r}")
    x = np.asarray(points, dtype=np.float64)
    x = x[:, None] if x.ndim == 1 else x
    if x.ndim != 2:
        raise ValueError(f"points must be (n, d), got shape {x.shape}")
    n = x.shape[0]
    if not 1 <= k < n:
        raise GraphError(f"k must be in [1, {n - 1}] for {n} nodes, got {k}")
    if not np.all(np.isfinite(x)):
        raise ValueError("points must be finite")
    lengths, nearest = cKDTree(x).query(x, k=k + 1, workers=workers)
    own = nearest == np.arange(n)[:, None]
    # drop each point itself; where a duplicate hid it from the query, the farthest of the k + 1
    keep = np.ones_like(own)
    keep[np.arange(n), np.where(own.any(axis=1), own.argmax(axis=1), k)] = False
    directed = np.stack([np.repeat(np.arange(n), k), nearest[keep]], axis=1)
    lengths = lengths[keep]
    if relation == "union":  # each pair once, in lexicographic order (as np.unique of the rows)
        pairs = np.sort(directed, axis=1)
        keys = pairs[:, 0] * n + pairs[:, 1]
        order = np.argsort(keys, kind="stable")  # a sort: numpy's hashing np.unique is slower
        first = order[np.concatenate([[True], np.diff(keys[order]) != 0])]
        directed, lengths = pairs[first], lengths[first]
    return _kernel_graph(n, directed, lengths, scale, rescale, clusters, relation)


def divergence_graph(divergences: np.ndarray, k: int = 4, **options: Any) -> EmpiricalGraph:
    """:func:`knn_graph` of directed divergences ``D_hat(P_i || P_j)``: of their
    symmetrisation (:func:`symmetrised`) with ``relation="union"`` (the default), of the
    divergences themselves with ``"directed"`` (each node's own row).  ``options`` are the
    keyword arguments of :func:`knn_graph` (``scale``, ``clusters``, ``relation``,
    ``rescale``), with its defaults."""
    div = np.asarray(divergences, dtype=np.float64)
    directed = options.get("relation", "union") == "directed"
    return knn_graph(div if directed else symmetrised(div), k, **options)


@dataclass(frozen=True)
class LearntGraph:
    """The result of :func:`learn_graph`.

    Attributes
    ----------
    graph
        The k-NN graph with exponential-kernel weights.
    embedding
        ``(N, 2)`` t-SNE coordinates of the samples (in the input order).
    divergences
        ``(n, n)`` directed KL estimates ``D_hat(P_i || P_j)``.
    distances
        ``(n, n)`` symmetrised distances.
    seconds
        Wall-clock time of each stage: ``tsne``, ``kl``, ``knn``.
    """

    graph: EmpiricalGraph
    embedding: np.ndarray
    divergences: np.ndarray
    distances: np.ndarray
    seconds: dict[str, float] = field(default_factory=dict)


def learn_graph(
    features: np.ndarray,
    node_of_sample: Sequence[int] | np.ndarray,
    *,
    seed: Seed,
    n_neighbours: int = 4,
    kl_k: int = 1,
    kernel_scale: float = 1.0,
    clusters: np.ndarray | None = None,
    tsne: dict | None = None,
    n_jobs: int = 1,
    sort_columns: bool = False,
    kl_eps: float = 0.0,
    relation: str = "union",
    rescale: str = "none",
) -> LearntGraph:
    """t-SNE, pairwise KL estimates and the k-NN graph (GTV Sec. VI-C), timed per stage.

    Parameters
    ----------
    features
        ``(N, F)`` training samples of all nodes.
    node_of_sample
        ``(N,)`` node of every sample.
    seed
        Seed of t-SNE (see :func:`tsne_embedding`).
    n_neighbours
        ``k`` of the k-NN graph (GTV: 4).
    kl_k
        Neighbour order of the KL estimator.
    kernel_scale
        Scale of the exponential kernel.
    clusters
        True clusters, stored in the graph.
    tsne
        Keyword arguments of :func:`tsne_embedding` (perplexity, iterations, PCA).
    n_jobs
        Threads for t-SNE and the k-d tree queries.
    sort_columns, kl_eps, relation, rescale
        The GTV notebooks' graph details (module docstring): :func:`sort_columns_per_node`
        before the estimate, ``eps`` of :func:`pairwise_kl_divergences`, and the options
        of :func:`knn_graph` (with ``relation="directed"`` the directed divergences are
        the distances; with ``"union"`` their symmetrisation).
    """
    node = np.asarray(node_of_sample, dtype=np.int64)
    n_nodes = int(node.max()) + 1
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    embedding = tsne_embedding(features, seed=seed, n_jobs=n_jobs, **(tsne or {}))
    seconds["tsne"] = time.perf_counter() - start
    start = time.perf_counter()
    points = sort_columns_per_node(embedding, node) if sort_columns else embedding
    div = pairwise_kl_divergences(points, node, n_nodes=n_nodes, k=kl_k, workers=n_jobs, eps=kl_eps)
    seconds["kl"] = time.perf_counter() - start
    start = time.perf_counter()
    graph = divergence_graph(div, n_neighbours, scale=kernel_scale, clusters=clusters,
                             relation=relation, rescale=rescale)
    seconds["knn"] = time.perf_counter() - start
    return LearntGraph(graph, embedding, div, symmetrised(div), seconds)
