"""k-NN graphs of points through a k-d tree (issue 42, item 3): the same graph as
:func:`knn_graph` of the full distance matrix, without any ``n x n`` array."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from networkedfl.graphs import GraphError, knn_graph, knn_graph_of_points


@pytest.mark.parametrize("relation", ["union", "directed"])
@pytest.mark.parametrize("rescale", ["none", "minmax", "unit"])
def test_the_tree_graph_is_the_distance_matrix_graph(relation, rescale):
    points = np.random.default_rng(0).standard_normal((60, 3))
    clusters = np.arange(60) % 3
    expected = knn_graph(cdist(points, points), 4, scale=0.7, relation=relation, rescale=rescale,
                         clusters=clusters)
    got = knn_graph_of_points(points, 4, scale=0.7, relation=relation, rescale=rescale, clusters=clusters)
    order = lambda g: np.lexsort(g.edges.T[::-1])  # noqa: E731 - edges in lexicographic order
    np.testing.assert_array_equal(got.edges[order(got)], expected.edges[order(expected)])
    np.testing.assert_allclose(got.weights[order(got)], expected.weights[order(expected)], rtol=1e-12)
    np.testing.assert_array_equal(got.clusters, clusters)
    assert got.n_nodes == 60 and sp.issparse(got.adjacency)


def test_a_duplicated_point_is_not_its_own_neighbour():
    points = np.array([[0.0], [0.0], [1.0], [3.0]])
    g = knn_graph_of_points(points, 1, relation="directed")
    assert not np.any(g.edges[:, 0] == g.edges[:, 1])
    np.testing.assert_array_equal(np.sort(g.edges[:2], axis=1), [[0, 1], [0, 1]])


def test_bad_points_are_refused_by_name():
    with pytest.raises(GraphError, match=r"k must be in \[1, 2\]"):
        knn_graph_of_points(np.zeros((3, 2)), 3)
    with pytest.raises(ValueError, match="points must be finite"):
        knn_graph_of_points(np.array([[0.0], [np.nan], [1.0]]), 1)
    with pytest.raises(ValueError, match=r"points must be \(n, d\)"):
        knn_graph_of_points(np.zeros((2, 2, 2)), 1)


def test_a_hundred_thousand_points_on_a_line_stay_sparse():
    """10^5 points on a line: the union 2-NN graph is the path (tree query, O(n k) memory)."""
    n = 100_000
    points = np.random.default_rng(1).permutation(n).astype(float)[:, None]
    g = knn_graph_of_points(points, 2, rescale="unit")
    assert g.n_nodes == n and g.is_connected and g.degrees.max() <= 4
