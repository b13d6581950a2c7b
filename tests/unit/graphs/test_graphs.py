"""Empirical graphs: structure matrices, validation and the random/structured generators."""

import numpy as np
import pytest

from networkedfl.graphs._graph import (
    EmpiricalGraph,
    GraphError,
    _upper_triangle_pair,
    as_graph,
    chain_of_clusters,
    cluster_graph,
    disjoint_union,
    star,
    stochastic_block_model,
)


def _random_graph(seed, n=9, p=0.45, weight_low=0.1, weight_high=3.0):
    """A random graph given with random edge orientation, plus the edge list it was built from."""
    rng = np.random.default_rng(seed)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    given = [(j, i) if rng.random() < 0.5 else (i, j) for i, j in pairs]
    weights = rng.uniform(weight_low, weight_high, len(pairs))
    return EmpiricalGraph(n, np.array(given), weights), pairs, weights


# ---------------------------------------------------------------- structure matrices


def test_edges_are_oriented_from_smaller_to_larger_index():
    graph, pairs, weights = _random_graph(0)
    np.testing.assert_array_equal(graph.edges, np.array(pairs))
    np.testing.assert_array_equal(graph.weights, weights)
    assert graph.n_edges == len(pairs)


def test_incidence_matrix_rows():
    graph, pairs, _ = _random_graph(1)
    dense = graph.incidence.toarray()
    assert dense.shape == (len(pairs), graph.n_nodes)
    for e, (i, j) in enumerate(pairs):
        expected = np.zeros(graph.n_nodes)
        expected[min(i, j)] = 1.0
        expected[max(i, j)] = -1.0
        np.testing.assert_array_equal(dense[e], expected)
    # D w gives the differences w_i - w_j along each edge
    w = np.random.default_rng(2).standard_normal((graph.n_nodes, 2))
    np.testing.assert_allclose(graph.incidence @ w, [w[i] - w[j] for i, j in pairs])


def test_degrees_adjacency_and_laplacian():
    graph, pairs, weights = _random_graph(3)
    n = graph.n_nodes
    deg = np.zeros(n)
    wdeg = np.zeros(n)
    adj = np.zeros((n, n))
    for (i, j), a in zip(pairs, weights, strict=True):
        deg[i] += 1
        deg[j] += 1
        wdeg[i] += a
        wdeg[j] += a
        adj[i, j] = adj[j, i] = a
    np.testing.assert_array_equal(graph.degrees, deg)
    np.testing.assert_allclose(graph.weighted_degrees, wdeg, rtol=1e-14)
    np.testing.assert_allclose(graph.adjacency.toarray(), adj)
    lap = graph.laplacian.toarray()
    np.testing.assert_allclose(lap, np.diag(wdeg) - adj, atol=1e-13)
    d = graph.incidence.toarray()
    np.testing.assert_allclose(lap, d.T @ np.diag(weights) @ d, atol=1e-13)
    # quadratic form of the Laplacian: sum_e A_e (w_i - w_j)^2
    w = np.random.default_rng(4).standard_normal(n)
    quad = sum(a * (w[i] - w[j]) ** 2 for (i, j), a in zip(pairs, weights, strict=True))
    np.testing.assert_allclose(w @ lap @ w, quad, rtol=1e-12)


def test_isolated_nodes():
    graph = EmpiricalGraph(5, np.array([[0, 1], [1, 3]]), np.ones(2))
    np.testing.assert_array_equal(graph.isolated_nodes, [2, 4])
    assert not graph.is_connected()


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("n", "edges", "weights"),
    [
        pytest.param(3, [[0, 1], [2, 2]], [1.0, 1.0], id="self-loop"),
        pytest.param(3, [[0, 1], [1, 2]], [1.0, -0.5], id="negative-weight"),
        pytest.param(3, [[0, 1], [1, 2]], [np.nan, 1.0], id="nan-weight"),
        pytest.param(3, [[0, 1], [1, 2]], [np.inf, 1.0], id="inf-weight"),
        pytest.param(3, [[0, 1], [1, 2], [0, 1]], [1.0, 1.0, 1.0], id="duplicate-edge"),
        pytest.param(3, [[0, 1], [1, 2], [1, 0]], [1.0, 1.0, 1.0], id="duplicate-reversed"),
        pytest.param(3, [[0, 1], [1, 3]], [1.0, 1.0], id="node-too-large"),
        pytest.param(3, [[0, 1], [-1, 2]], [1.0, 1.0], id="negative-node"),
        pytest.param(3, [[0, 1], [1, 2]], [1.0], id="weight-count"),
        pytest.param(0, np.empty((0, 2)), [], id="no-nodes"),
    ],
)
def test_graph_validation_errors(n, edges, weights):
    assert issubclass(GraphError, ValueError)
    with pytest.raises(GraphError):
        EmpiricalGraph(n, np.array(edges), np.array(weights, dtype=float))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"edges": [[0, 1.7]]}, "edges must hold integers", id="float-index"),
        pytest.param({"edges": [[0, np.nan]]}, "edges must hold integers", id="nan-index"),
        pytest.param({"edges": [[0, 1, 2], [1, 2, 0]], "weights": [1.0, 1.0, 1.0]},
                     r"shape \(E, 2\).*transpose", id="edges-2-by-3"),
        pytest.param({"edges": [0, 1, 1, 2]}, r"shape \(E, 2\)", id="flat-edges"),
        pytest.param({"edges": [["a", "b"]]}, "edges must hold integers", id="string-index"),
        pytest.param({"n_nodes": 2.7}, "n_nodes must be an integer", id="float-n-nodes"),
        pytest.param({"n_nodes": True}, "n_nodes must be an integer", id="bool-n-nodes"),
        pytest.param({"n_nodes": "3"}, "n_nodes must be an integer", id="string-n-nodes"),
        pytest.param({"weights": [[1.0], [1.0]]}, "weights must be one-dimensional", id="weights-column"),
        pytest.param({"clusters": [0, 0.5, 1]}, "clusters must hold integers", id="float-cluster"),
        pytest.param({"clusters": [[0, 0, 1]]}, "clusters must be one-dimensional", id="cluster-row"),
    ],
)
def test_no_silent_coercion_of_indices_shapes_and_counts(kwargs, message):
    """Issue 22: a float index is not truncated, a (2, 3) array is not reshaped into three
    edges, 2.7 nodes are not 2; the error names the argument."""
    args = {"n_nodes": 3, "edges": [[0, 1], [1, 2]], "weights": [1.0, 1.0], **kwargs}
    with pytest.raises(GraphError, match=message):
        EmpiricalGraph(**args)


def test_integral_floats_and_numpy_integers_are_accepted_as_indices():
    g = EmpiricalGraph(np.int64(3), np.array([[0.0, 1.0], [2.0, 1.0]]), [1.0, 2.0], clusters=[0.0, 0.0, 1.0])
    assert g.n_nodes == 3 and g.edges.dtype == np.int64 and g.edges.tolist() == [[0, 1], [1, 2]]
    assert g.clusters.tolist() == [0, 0, 1]
    assert EmpiricalGraph(4.0, [], []).n_edges == 0


def test_cluster_label_count_is_validated():
    with pytest.raises(GraphError):
        EmpiricalGraph(3, np.array([[0, 1]]), np.ones(1), clusters=np.array([0, 1]))


def test_zero_weight_edge_is_valid_and_kept():
    graph = EmpiricalGraph(3, np.array([[0, 1], [1, 2]]), np.array([0.0, 1.0]))
    assert graph.n_edges == 2
    np.testing.assert_array_equal(graph.degrees, [1, 2, 1])


# ---------------------------------------------------------------- stochastic block model


def _sbm_edge_counts(graph, sizes):
    labels = graph.clusters
    a, b = labels[graph.edges[:, 0]], labels[graph.edges[:, 1]]
    per_cluster = [int(np.sum((a == c) & (b == c))) for c in range(len(sizes))]
    return per_cluster, int(np.sum(a != b))


def _assert_simple(graph):
    assert np.all(graph.edges[:, 0] < graph.edges[:, 1])
    assert np.unique(graph.edges, axis=0).shape[0] == graph.n_edges


def test_sbm_edge_counts_match_binomial_expectations():
    sizes, p_in, p_out = [300, 300], 0.3, 0.05
    n_within = [s * (s - 1) // 2 for s in sizes]
    n_between = sizes[0] * sizes[1]
    seeds = range(8)
    intra_all, inter_all = [], []
    for seed in seeds:
        graph = stochastic_block_model(sizes, p_in, p_out, np.random.default_rng(seed))
        assert graph.n_nodes == sum(sizes)
        np.testing.assert_array_equal(graph.clusters, np.repeat([0, 1], sizes))
        _assert_simple(graph)
        per_cluster, inter = _sbm_edge_counts(graph, sizes)
        for count, pairs in zip(per_cluster, n_within, strict=True):
            assert abs(count - pairs * p_in) <= 5 * np.sqrt(pairs * p_in * (1 - p_in))
        assert abs(inter - n_between * p_out) <= 5 * np.sqrt(n_between * p_out * (1 - p_out))
        intra_all.append(sum(per_cluster))
        inter_all.append(inter)
    k = len(seeds)
    total_within = sum(n_within)
    sd_in = np.sqrt(total_within * p_in * (1 - p_in) / k)
    sd_out = np.sqrt(n_between * p_out * (1 - p_out) / k)
    assert abs(np.mean(intra_all) - total_within * p_in) <= 5 * sd_in
    assert abs(np.mean(inter_all) - n_between * p_out) <= 5 * sd_out
    # the counts do vary across seeds (they are random, not fixed at the expectation)
    assert len(set(intra_all)) > 1 and len(set(inter_all)) > 1


def test_sbm_every_pair_equally_likely():
    """On a tiny SBM, each pair's empirical edge frequency matches its probability."""
    sizes, p_in, p_out = [5, 4], 0.4, 0.2
    n = sum(sizes)
    labels = np.repeat([0, 1], sizes)
    reps = 1500
    counts = np.zeros((n, n))
    rng = np.random.default_rng(11)
    for _ in range(reps):
        graph = stochastic_block_model(sizes, p_in, p_out, rng)
        _assert_simple(graph)
        counts[graph.edges[:, 0], graph.edges[:, 1]] += 1
    for i in range(n):
        for j in range(n):
            if j <= i:
                assert counts[i, j] == 0
                continue
            p = p_in if labels[i] == labels[j] else p_out
            assert abs(counts[i, j] / reps - p) <= 5 * np.sqrt(p * (1 - p) / reps)


def test_sbm_extreme_probabilities():
    sizes = [4, 3]
    full = stochastic_block_model(sizes, 1.0, 0.0, np.random.default_rng(0), weight=2.5)
    per_cluster, inter = _sbm_edge_counts(full, sizes)
    assert per_cluster == [6, 3] and inter == 0
    np.testing.assert_array_equal(full.weights, 2.5)
    bip = stochastic_block_model(sizes, 0.0, 1.0, np.random.default_rng(0))
    per_cluster, inter = _sbm_edge_counts(bip, sizes)
    assert per_cluster == [0, 0] and inter == 12
    with pytest.raises(GraphError):
        stochastic_block_model(sizes, 1.2, 0.1, np.random.default_rng(0))
    with pytest.raises(GraphError):
        stochastic_block_model(sizes, 0.5, -0.1, np.random.default_rng(0))


def test_upper_triangle_decoding_matches_triu_indices():
    for size in (2, 3, 37):
        i, j = np.triu_indices(size, 1)
        pairs = _upper_triangle_pair(np.arange(size * (size - 1) // 2), size)
        np.testing.assert_array_equal(pairs[:, 0], i)
        np.testing.assert_array_equal(pairs[:, 1], j)


def test_sbm_reproducible_per_seed():
    a = stochastic_block_model([40, 30], 0.3, 0.05, np.random.default_rng(7))
    b = stochastic_block_model([40, 30], 0.3, 0.05, np.random.default_rng(7))
    c = stochastic_block_model([40, 30], 0.3, 0.05, np.random.default_rng(8))
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.edges.shape != c.edges.shape or not np.array_equal(a.edges, c.edges)


# ---------------------------------------------------------------- structured generators


def test_chain_of_clusters_structure():
    sizes = [3, 4, 2]
    graph = chain_of_clusters(sizes, bridge_weight=0.1, weight=2.0)
    n = sum(sizes)
    assert graph.n_nodes == n
    np.testing.assert_array_equal(graph.edges, [[i, i + 1] for i in range(n - 1)])
    np.testing.assert_array_equal(graph.clusters, [0, 0, 0, 1, 1, 1, 1, 2, 2])
    # bridges are exactly the edges between the last node of a cluster and the next one
    expected = [0.1 if (i, i + 1) in {(2, 3), (6, 7)} else 2.0 for i in range(n - 1)]
    np.testing.assert_array_equal(graph.weights, expected)
    np.testing.assert_array_equal(graph.degrees, [1] + [2] * (n - 2) + [1])
    assert graph.is_connected()


def test_chain_single_cluster_and_zero_bridge():
    graph = chain_of_clusters([5], bridge_weight=0.0)
    np.testing.assert_array_equal(graph.weights, np.ones(4))
    zero = chain_of_clusters([2, 2], bridge_weight=0.0)
    np.testing.assert_array_equal(zero.weights, [1.0, 0.0, 1.0])
    # connectivity ignores weights
    assert zero.is_connected()


def test_star():
    graph = star(6, weight=0.5)
    assert graph.n_edges == 5
    assert np.all(graph.edges[:, 0] == 0)
    np.testing.assert_array_equal(np.sort(graph.edges[:, 1]), np.arange(1, 6))
    np.testing.assert_array_equal(graph.weights, 0.5)
    np.testing.assert_array_equal(graph.degrees, [5, 1, 1, 1, 1, 1])
    assert graph.is_connected()
    with pytest.raises(GraphError):
        star(1)


def test_disjoint_union_offsets_edges_and_clusters():
    g1 = chain_of_clusters([2, 3], bridge_weight=0.2)
    g2 = stochastic_block_model([3, 2], 0.9, 0.5, np.random.default_rng(0))
    g3 = chain_of_clusters([4], bridge_weight=0.0, weight=3.0)
    union, offsets = disjoint_union([g1, g2, g3])
    np.testing.assert_array_equal(offsets, [0, 5, 10, 14])
    assert union.n_nodes == 14
    assert union.n_edges == g1.n_edges + g2.n_edges + g3.n_edges
    expected_edges = {
        (int(i) + off, int(j) + off): a
        for g, off in zip((g1, g2, g3), offsets[:-1], strict=True)
        for (i, j), a in zip(g.edges, g.weights, strict=True)
    }
    got = {(int(i), int(j)): a for (i, j), a in zip(union.edges, union.weights, strict=True)}
    assert got == expected_edges
    np.testing.assert_array_equal(union.clusters, [0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 4, 4])
    assert not union.is_connected()
    # the subgraphs on the blocks give back the parts
    for g, lo, hi in zip((g1, g2, g3), offsets[:-1], offsets[1:], strict=True):
        part = union.subgraph(np.arange(lo, hi))
        np.testing.assert_array_equal(part.edges, g.edges)
        np.testing.assert_array_equal(part.weights, g.weights)


def test_disjoint_union_without_clusters():
    union, offsets = disjoint_union([star(3), chain_of_clusters([2], 1.0)])
    assert union.clusters is None
    np.testing.assert_array_equal(offsets, [0, 3, 5])


def test_cluster_graph_weights_by_double_loop():
    rng = np.random.default_rng(5)
    graph, pairs, weights = _random_graph(6, n=12, p=0.35)
    labels = rng.permutation(np.arange(12) % 4)
    # a zero-weight edge still joins its clusters
    weights = weights.copy()
    weights[0] = 0.0
    graph = EmpiricalGraph(12, np.array(pairs), weights, clusters=labels)
    k = 4
    total = np.zeros((k, k))
    joined = np.zeros((k, k), bool)
    edge_weight = dict(zip(pairs, weights, strict=True))
    for i in range(12):
        for j in range(i + 1, 12):
            if (i, j) in edge_weight and labels[i] != labels[j]:
                lo, hi = sorted((labels[i], labels[j]))
                total[lo, hi] += edge_weight[(i, j)]
                joined[lo, hi] = True
    for quotient in (cluster_graph(graph), cluster_graph(EmpiricalGraph(12, pairs, weights), labels)):
        assert quotient.n_nodes == k
        assert np.all(quotient.edges[:, 0] != quotient.edges[:, 1])
        got = {(int(a), int(b)): w for (a, b), w in zip(quotient.edges, quotient.weights, strict=True)}
        expected = {(a, b): total[a, b] for a in range(k) for b in range(k) if joined[a, b]}
        assert got.keys() == expected.keys()
        for key, w in expected.items():
            assert got[key] == pytest.approx(w, rel=1e-13, abs=1e-15)
        np.testing.assert_array_equal(quotient.clusters, np.arange(k))


def test_cluster_graph_of_chain_and_missing_labels():
    graph = chain_of_clusters([3, 2, 4], bridge_weight=0.3)
    quotient = cluster_graph(graph)
    np.testing.assert_array_equal(quotient.edges, [[0, 1], [1, 2]])
    np.testing.assert_allclose(quotient.weights, [0.3, 0.3])
    with pytest.raises(GraphError):
        cluster_graph(star(4))


def test_is_connected():
    assert star(5).is_connected()
    assert EmpiricalGraph(1, np.empty((0, 2)), np.empty(0)).is_connected()
    two_parts = EmpiricalGraph(4, np.array([[0, 1], [2, 3]]), np.ones(2))
    assert not two_parts.is_connected()
    joined = EmpiricalGraph(4, np.array([[0, 1], [2, 3], [1, 2]]), np.ones(3))
    assert joined.is_connected()


def test_subgraph_relabels_in_given_order():
    graph, pairs, weights = _random_graph(8, n=10, p=0.5)
    labels = np.arange(10) % 3
    graph = EmpiricalGraph(10, np.array(pairs), weights, clusters=labels)
    nodes = np.array([7, 2, 9, 0, 4])
    sub = graph.subgraph(nodes)
    assert sub.n_nodes == 5
    np.testing.assert_array_equal(sub.clusters, labels[nodes])
    pos = {int(v): k for k, v in enumerate(nodes)}
    expected = {}
    for (i, j), w in zip(pairs, weights, strict=True):
        if i in pos and j in pos:
            expected[tuple(sorted((pos[i], pos[j])))] = w
    got = {(int(a), int(b)): w for (a, b), w in zip(sub.edges, sub.weights, strict=True)}
    assert got == expected
    assert len(expected) > 0


def test_check_graph_names_isolated_nodes_zero_weight_edges_and_components():
    from networkedfl.graphs import check_graph

    g = EmpiricalGraph(5, np.array([[0, 1], [1, 2]]), np.array([1.0, 0.0]))
    with pytest.raises(GraphError, match=r"my algorithm: .*isolated nodes.*3, 4"):
        check_graph(g, purpose="my algorithm")
    with pytest.raises(GraphError, match=r"weight 0 on edges \{1, 2\}"):
        check_graph(g, purpose="x", allow_isolated=True)
    with pytest.raises(GraphError, match="3 components"):
        check_graph(g, purpose="x", allow_isolated=True, allow_zero_weights=True, require_connected=True)
    ok = EmpiricalGraph(3, np.array([[0, 1], [1, 2]]), np.array([1.0, 2.0]))
    assert check_graph(ok, purpose="x", require_connected=True) is ok


def test_non_finite_or_negative_weights_are_rejected_at_construction():
    for bad in (np.nan, np.inf, -1.0):
        with pytest.raises(GraphError, match="finite|non-negative"):
            EmpiricalGraph(2, np.array([[0, 1]]), np.array([bad]))


def _canonical(graph):
    """Edges (sorted) with their weights: equal for the same graph in any edge order."""
    return sorted(zip(map(tuple, graph.edges.tolist()), graph.weights.tolist(), strict=True))


def test_graphs_from_adjacency_and_networkx_round_trip():
    """Issue 19: the graph formats users have (dense or scipy sparse adjacency, networkx)
    give the same EmpiricalGraph, and back."""
    import networkx as nx

    g = stochastic_block_model([4, 5], 0.8, 0.2, np.random.default_rng(3))
    g = EmpiricalGraph(g.n_nodes, g.edges, np.random.default_rng(4).uniform(0.5, 2, g.n_edges), g.clusters)
    for adjacency in (g.adjacency, g.adjacency.toarray(), g.adjacency.tocoo()):
        assert _canonical(EmpiricalGraph.from_adjacency(adjacency)) == _canonical(g)
    nxg = g.to_networkx()
    assert isinstance(nxg, nx.Graph) and nxg.number_of_edges() == g.n_edges
    assert nxg.nodes[0]["cluster"] == g.clusters[0]
    assert _canonical(EmpiricalGraph.from_networkx(nxg)) == _canonical(g)
    # node labels of any kind, in the order of nodelist
    labelled = nx.relabel_nodes(nxg, {i: f"client-{i}" for i in range(g.n_nodes)})
    order = [f"client-{i}" for i in range(g.n_nodes)]
    assert _canonical(EmpiricalGraph.from_networkx(labelled, nodelist=order)) == _canonical(g)
    weightless = EmpiricalGraph.from_networkx(labelled, weight=None, nodelist=order)
    assert np.array_equal(weightless.weights, np.ones(g.n_edges))
    for same in (g, nxg, g.adjacency, g.adjacency.toarray()):
        assert _canonical(as_graph(same)) == _canonical(g)


def test_graph_conversions_name_what_is_wrong():
    with pytest.raises(GraphError, match=r"symmetric: A\[0, 1\] = 1.0 but A\[1, 0\] = 0.0"):
        EmpiricalGraph.from_adjacency(np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(GraphError, match="self-loops"):
        EmpiricalGraph.from_adjacency(np.eye(2))
    with pytest.raises(GraphError, match="square"):
        EmpiricalGraph.from_adjacency(np.zeros((2, 3)))
    with pytest.raises(GraphError, match="finite"):
        EmpiricalGraph.from_adjacency(np.array([[0.0, np.nan], [np.nan, 0.0]]))
    import networkx as nx

    with pytest.raises(GraphError, match="directed"):
        EmpiricalGraph.from_networkx(nx.DiGraph([(0, 1)]))
    with pytest.raises(TypeError, match="graph must be an EmpiricalGraph, a networkx graph or an adjacency matrix"):
        as_graph("ring")


def test_entry_points_take_networkx_graphs_and_adjacency_matrices():
    """gtv_primal_dual and mixing_matrix give the same result for the three formats."""
    import networkx as nx

    from networkedfl import NodeData
    from networkedfl.algorithms import mixing_matrix
    from networkedfl.gtv import SquaredErrorLoss, gtv_primal_dual

    rng = np.random.default_rng(0)
    g = stochastic_block_model([4, 4], 0.9, 0.1, rng)
    loss = SquaredErrorLoss(NodeData(rng.standard_normal((8, 3, 2)), rng.standard_normal((8, 3))))
    reference = gtv_primal_dual(g, loss, lam=0.2, n_iter=20).weights
    for other in (g.to_networkx(), g.adjacency, g.adjacency.toarray()):
        # the same problem; edges may come in another order (summation order only)
        np.testing.assert_allclose(gtv_primal_dual(other, loss, lam=0.2, n_iter=20).weights, reference,
                                   rtol=1e-12, atol=1e-12)
        assert (mixing_matrix(other) != mixing_matrix(g)).nnz == 0
    assert isinstance(g.to_networkx(), nx.Graph)
    # DFL (a matrix there is the mixing matrix W itself) and BiG-FL take networkx graphs too
    from networkedfl.algorithms import mixing_operator, normalized_adjacency

    torch_w, messages = mixing_operator(g)
    torch_w_nx, messages_nx = mixing_operator(g.to_networkx())
    assert messages_nx == messages
    assert np.allclose(torch_w_nx.to_dense().numpy(), torch_w.to_dense().numpy())
    assert np.allclose(normalized_adjacency(g.to_networkx()).numpy(), normalized_adjacency(g).numpy())
