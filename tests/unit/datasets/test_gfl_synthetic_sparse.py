"""Issue 42, item 3: the chapter's homologous graphs are built without an ``(n, n)`` array (a
k-d tree for the k-NN graph, a sparse GCN propagation matrix) and give the graphs and ground
truths of the dense construction they replace."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from networkedfl.datasets import _gfl_synthetic as gs
from networkedfl.datasets import gaussian_mixture_centers, homologous_graph
from networkedfl.graphs import knn_graph


def dense_reference(z, k):
    """The construction before issue 42: all pairwise distances, a dense ``P``."""
    graph = knn_graph(cdist(z, z), k, rescale="unit")
    a = graph.adjacency.toarray() + np.eye(graph.n_nodes)
    d = 1.0 / np.sqrt(a.sum(axis=1))
    return graph, (d[:, None] * a * d[None, :]) @ z


@pytest.mark.parametrize(("n", "k", "seed"), [(50, 4, 0), (50, 4, 1), (200, 7, 2), (31, 1, 3)])
def test_sparse_homologous_graph_equals_the_dense_construction(n, k, seed):
    rng = np.random.default_rng(seed)
    centers = gaussian_mixture_centers(rng, 3, 64, (-0.5, 0.5))
    components = rng.integers(0, 3, n)
    z, graph, w = homologous_graph(seed, centers, components, std=0.5, weight_shape=(8, 8), n_neighbours=k)
    ref_graph, ref_w = dense_reference(z, k)
    assert np.array_equal(np.asarray(graph.edges), np.asarray(ref_graph.edges))
    np.testing.assert_allclose(w.reshape(n, -1), ref_w, rtol=0, atol=1e-12)


def test_the_propagation_matrix_is_sparse_and_symmetric():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((100, 5))
    graph, _ = dense_reference(z, 4)
    p = gs._gcn_propagation(graph)
    assert sp.issparse(p) and p.nnz == 2 * graph.n_edges + graph.n_nodes
    assert abs(p - p.T).max() == 0
    # rows of D~^{-1/2} (A + I) D~^{-1/2}: the largest eigenvalue is 1 (eigenvector D~^{1/2} 1)
    deg = np.asarray((graph.adjacency + sp.identity(100)).sum(axis=1)).ravel()
    np.testing.assert_allclose(p @ np.sqrt(deg), np.sqrt(deg), rtol=1e-12)
