"""Synthetic data of the graph-aware FL chapter (Lu, Xing & Yu, Secs. 10.2 and 10.5.1).

* :func:`heterogeneous_nodes`: the five heterogeneous nodes of Fig. 10.1 (Sec. 10.2): one
  shared ground-truth weight ``w``, node ``i`` draws inputs uniformly from its own interval
  and labels ``y = f_i(x^T w)`` with its own nonlinearity (tanh, sigmoid, ReLU, sine,
  cosine).
* :func:`homologous_graphs`: Table 10.1 / Fig. 10.2: one mixture of Gaussians, two graphs
  (train and test) whose node vectors are drawn from it, each the k-nearest-neighbour graph
  of its nodes; node vectors reshaped to ``8 x 8`` ground-truth weights ``W_i``; node data
  ``X ~ U[-60, 60]^{100 x 8}``, ``Y = X W_i`` (:func:`node_regression_data`).
  :func:`homologous_graph` draws a further graph of the same mixture and components (e.g.
  a validation graph drawn as the test graph is).

Pure numpy; randomness only from explicit :class:`numpy.random.Generator` arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._validation import renamed, renamed_function, renamed_keywords
from ..graphs import EmpiricalGraph, knn_graph_of_points
from ..seeding import Seed, as_rng

__all__ = [
    "CHAPTER_INPUT_RANGES",
    "CHAPTER_NONLINEARITIES",
    "HeterogeneousNodes",
    "HomologousGraphs",
    "NONLINEARITIES",
    "gaussian_mixture_centers",
    "gaussian_mixture_centres",
    "heterogeneous_nodes",
    "homologous_graph",
    "homologous_graphs",
    "node_regression_data",
]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


#: The nonlinearities of Sec. 10.2 by name.
NONLINEARITIES = {
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "relu": lambda z: np.maximum(z, 0.0),
    "sine": np.sin,
    "cosine": np.cos,
}
#: Sec. 10.2, in the chapter's order ("[-50, -55]" read as [-55, -50]).
CHAPTER_INPUT_RANGES = ((-30.0, 30.0), (40.0, 100.0), (-55.0, -50.0), (-1.0, 1.0), (-0.1, 0.1))
CHAPTER_NONLINEARITIES = ("tanh", "sigmoid", "relu", "sine", "cosine")


@dataclass(frozen=True)
class HeterogeneousNodes:
    """Train and test data of the heterogeneous nodes.

    ``x_train`` ``(n, m, d)``, ``y_train`` ``(n, m)``, ``x_test`` ``(n, m_test, d)``,
    ``y_test`` ``(n, m_test)``, the shared weight ``w`` ``(d,)``, and the raw (unstandardised)
    input statistics per node ``input_mean``/``input_std`` ``(n, d)``.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    w: np.ndarray
    input_mean: np.ndarray
    input_std: np.ndarray


def heterogeneous_nodes(
    seed: Seed = None,
    *,
    dim: int,
    n_train: int,
    n_test: int,
    input_ranges: Sequence[Sequence[float]] = CHAPTER_INPUT_RANGES,
    nonlinearities: Sequence[str] = CHAPTER_NONLINEARITIES,
    standardize: bool = True,
    standardize_targets: bool = False,
) -> HeterogeneousNodes:
    """The heterogeneous nodes of Sec. 10.2 (Fig. 10.1).

    One ``w ~ N(0, I_d)``; node ``i`` draws ``x ~ U[a_i, b_i]^d`` and ``y = f_i(x^T w)``.
    ``standardize``: inputs are then standardised per node and coordinate with the node's
    training mean and standard deviation (labels are computed from the raw inputs).
    ``standardize_targets``: labels likewise, per node (a node whose training labels are
    constant, e.g. a saturated sigmoid or an inactive ReLU, is only centerd).
    """
    rng = as_rng(seed)
    if len(input_ranges) != len(nonlinearities):
        raise ValueError("need one input range per nonlinearity")
    unknown = [f for f in nonlinearities if f not in NONLINEARITIES]
    if unknown:
        raise ValueError(f"unknown nonlinearities {unknown}; known: {sorted(NONLINEARITIES)}")
    w = rng.standard_normal(dim)
    xs, ys = [], []
    for (lo, hi), name in zip(input_ranges, nonlinearities, strict=True):
        lo, hi = min(lo, hi), max(lo, hi)
        x = rng.uniform(lo, hi, size=(n_train + n_test, dim))
        xs.append(x)
        ys.append(NONLINEARITIES[name](x @ w))
    x, y = np.stack(xs), np.stack(ys)
    x_tr, x_te = x[:, :n_train], x[:, n_train:]
    mean = x_tr.mean(axis=1)
    std = x_tr.std(axis=1)
    if standardize:
        safe = np.where(std > 0, std, 1.0)
        x_tr = (x_tr - mean[:, None]) / safe[:, None]
        x_te = (x_te - mean[:, None]) / safe[:, None]
    y_tr, y_te = y[:, :n_train], y[:, n_train:]
    if standardize_targets:
        y_mean, y_std = y_tr.mean(axis=1, keepdims=True), y_tr.std(axis=1, keepdims=True)
        constant = y_std <= 1e-12 * np.maximum(1.0, np.abs(y_mean))
        y_std = np.where(constant, 1.0, y_std)
        y_tr, y_te = (y_tr - y_mean) / y_std, (y_te - y_mean) / y_std
    return HeterogeneousNodes(x_tr, y_tr, x_te, y_te, w, mean, std)


@renamed_keywords(n_centres="n_centers", centre_range="center_range")
def gaussian_mixture_centers(
    seed: Seed, n_centers: int, dim: int, center_range: Sequence[float]
) -> np.ndarray:
    """``(K, dim)`` mixture centers with i.i.d. entries ``U[lo, hi]`` (Table 10.1: range of
    center ``[-0.5, 0.5]``)."""
    rng = as_rng(seed)
    lo, hi = center_range
    return rng.uniform(lo, hi, size=(n_centers, dim))


@dataclass(frozen=True)
class HomologousGraphs:
    """The two homologous graphs of Fig. 10.2 and their ground truth.

    ``centers`` ``(K, D)`` the shared mixture; ``components`` ``(n,)`` the mixture component
    of node ``i`` in both graphs; ``z_train``/``z_test`` ``(n, D)`` node vectors;
    ``train_graph``/``test_graph`` their k-NN graphs; ``w_train``/``w_test`` ``(n, r, c)``
    ground-truth weights.
    """

    centers: np.ndarray
    components: np.ndarray
    z_train: np.ndarray
    z_test: np.ndarray
    train_graph: EmpiricalGraph
    test_graph: EmpiricalGraph
    w_train: np.ndarray
    w_test: np.ndarray

    centres = renamed("centers", "centres")


def _gcn_propagation(graph: EmpiricalGraph) -> sp.csr_matrix:
    """``P = D~^{-1/2} (A + I) D~^{-1/2}`` (eq. (10.13)) as a sparse matrix: ``O(n k)``
    memory, no ``(n, n)`` array (issue 42); the entries ``(d_i a_ij) d_j`` as the dense
    product forms them."""
    a = (graph.adjacency + sp.identity(graph.n_nodes, format="csr")).tocsr()
    d = 1.0 / np.sqrt(np.asarray(a.sum(axis=1)).ravel())
    return (sp.diags(d) @ a @ sp.diags(d)).tocsr()


@renamed_keywords(n_centres="n_centers", centre_range="center_range")
def homologous_graphs(
    seed: Seed = None,
    *,
    n_nodes: int,
    n_centers: int,
    center_range: Sequence[float],
    std: float,
    weight_shape: Sequence[int],
    n_neighbours: int,
    propagate: bool = True,
) -> HomologousGraphs:
    """Table 10.1's homologous train/test graphs with ground-truth weights.

    One set of ``K`` centers (:func:`gaussian_mixture_centers`) in dimension ``D = r * c``;
    node ``i`` belongs to component ``c_i`` (uniform, shared by both graphs, so train node
    ``i`` and test node ``i`` come from the same Gaussian); ``z = center_{c_i} + std * N(0,
    I_D)`` drawn independently for the two graphs; each graph is the ``n_neighbours``-NN
    graph of its vectors (:func:`networkedfl.graphs.knn_graph_of_points` with unit weights: the
    graph of ``knn_graph(cdist(z, z))`` through a k-d tree).  Ground truth ``W_i`` = row ``i`` of ``P Z``
    reshaped to ``(r, c)``, with ``P`` the graph's GCN propagation matrix
    ``D~^{-1/2} (A + I) D~^{-1/2}`` ("following Eq. (10.13)"); ``propagate=False``: ``W_i =
    z_i``.
    """
    rng = as_rng(seed)
    r, c = (int(v) for v in weight_shape)
    centers = gaussian_mixture_centers(rng, n_centers, r * c, center_range)
    components = rng.integers(n_centers, size=n_nodes)
    # the train graph's node vectors are drawn first, then the test graph's (the k-NN graphs
    # and the propagation draw nothing)
    z_train, g_train, w_train = homologous_graph(rng, centers, components, std=std, weight_shape=(r, c),
                                                 n_neighbours=n_neighbours, propagate=propagate)
    z_test, g_test, w_test = homologous_graph(rng, centers, components, std=std, weight_shape=(r, c),
                                              n_neighbours=n_neighbours, propagate=propagate)
    return HomologousGraphs(centers, components, z_train, z_test, g_train, g_test, w_train, w_test)


@renamed_keywords(centres="centers")
def homologous_graph(
    seed: Seed,
    centers: np.ndarray,
    components: np.ndarray,
    *,
    std: float,
    weight_shape: Sequence[int],
    n_neighbours: int,
    propagate: bool = True,
) -> tuple[np.ndarray, EmpiricalGraph, np.ndarray]:
    """One graph of a mixture: node ``i`` drawn from component ``components[i]``.

    ``z_i = centers[components[i]] + std * N(0, I_D)``; the graph is the ``n_neighbours``-NN
    graph of the ``z`` (unit weights) and the ground truth ``W = P Z`` (``propagate``; else
    ``Z``) reshaped to ``(n, r, c)``.  Returns ``(z, graph, w)``.  :func:`homologous_graphs`
    draws its train and test graphs with it; a further call with the same centers and
    components draws a third graph homologous to both (e.g. for validation).
    """
    rng = as_rng(seed)
    r, c = (int(v) for v in weight_shape)
    centers, components = np.asarray(centers, float), np.asarray(components)
    if centers.ndim != 2 or centers.shape[1] != r * c:
        raise ValueError(f"centers must be (K, {r * c}) for weight_shape ({r}, {c}), got {centers.shape}")
    z = centers[components] + std * rng.standard_normal((components.shape[0], r * c))
    graph = knn_graph_of_points(z, n_neighbours, rescale="unit")  # a k-d tree: no (n, n) distances
    w = _gcn_propagation(graph) @ z if propagate else z
    return z, graph, w.reshape(-1, r, c)


def node_regression_data(
    seed: Seed, weights: np.ndarray, n_samples: int, input_range: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Node data of Table 10.1: ``X_i ~ U[lo, hi]^{m x r}`` and ``Y_i = X_i W_i`` for the
    weights ``(n, r, c)``; returns ``X`` ``(n, m, r)`` and ``Y`` ``(n, m, c)``."""
    rng = as_rng(seed)
    lo, hi = input_range
    n, r, _ = weights.shape
    x = rng.uniform(lo, hi, size=(n, n_samples, r))
    return x, np.einsum("nmr,nrc->nmc", x, weights)


# the British spelling of issue 43 item 5 (one spelling, -ize/-er as scikit-learn's): warns
gaussian_mixture_centres = renamed_function(gaussian_mixture_centers, "gaussian_mixture_centres")
