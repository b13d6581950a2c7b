"""Graphs learnt from data: the k-NN KL estimator, pairwise divergences, the k-NN graph, t-SNE."""

import numpy as np
import pytest

from networkedfl.graphs import (
    exponential_kernel,
    knn_graph,
    knn_kl_divergence,
    learn_graph,
    pairwise_kl_divergences,
    pca_projection,
    symmetrised,
    tsne_embedding,
)

MU0, COV0 = np.zeros(2), np.eye(2)
MU1, COV1 = np.array([1.0, 0.5]), np.array([[2.0, 0.3], [0.3, 1.0]])


def gaussian_kl(m0, s0, m1, s1):
    """Closed-form KL(N(m0, s0) || N(m1, s1))."""
    inv = np.linalg.inv(s1)
    d = m1 - m0
    return 0.5 * (np.trace(inv @ s0) + d @ inv @ d - len(m0) + np.log(np.linalg.det(s1) / np.linalg.det(s0)))


def test_kl_estimate_converges_to_the_gaussian_closed_form():
    exact = gaussian_kl(MU0, COV0, MU1, COV1)  # 0.423
    errors = []
    for n in (300, 3000, 30000):
        rng = np.random.default_rng(n)
        est = [knn_kl_divergence(rng.multivariate_normal(MU0, COV0, n), rng.multivariate_normal(MU1, COV1, n))
               for _ in range(3)]
        errors.append(abs(np.mean(est) - exact))
    assert errors[-1] < 0.03
    assert errors[-1] < errors[0]
    # the reverse direction has its own value, also recovered
    rng = np.random.default_rng(7)
    back = knn_kl_divergence(rng.multivariate_normal(MU1, COV1, 30000), rng.multivariate_normal(MU0, COV0, 30000))
    assert back == pytest.approx(gaussian_kl(MU1, COV1, MU0, COV0), abs=0.05)


def test_kl_estimate_is_near_zero_for_one_distribution_and_permutation_invariant():
    rng = np.random.default_rng(3)
    x, y = rng.multivariate_normal(MU1, COV1, 20000), rng.multivariate_normal(MU1, COV1, 15000)
    assert abs(knn_kl_divergence(x, y)) < 0.03
    d = knn_kl_divergence(x[:2000], y[:2000])
    assert knn_kl_divergence(rng.permutation(x[:2000]), rng.permutation(y[:2000])) == pytest.approx(d, abs=1e-12)
    # a higher neighbour order is a consistent estimate too
    assert abs(knn_kl_divergence(x, y, k=5)) < 0.03


def test_pairwise_divergences_equal_the_single_pair_estimator():
    rng = np.random.default_rng(0)
    sizes = [40, 55, 30, 61]
    shifts = rng.normal(0, 2, (4, 2))
    samples = [rng.normal(size=(m, 2)) + s for m, s in zip(sizes, shifts, strict=True)]
    node = np.concatenate([np.full(m, i) for i, m in enumerate(sizes)])
    stacked = np.concatenate(samples)
    order = rng.permutation(len(node))  # the samples of a node need not be contiguous
    div = pairwise_kl_divergences(stacked[order], node[order], k=2)
    for i in range(4):
        for j in range(4):
            expected = 0.0 if i == j else knn_kl_divergence(samples[i], samples[j], k=2)
            assert div[i, j] == pytest.approx(expected, abs=1e-10)
    sym = symmetrised(div)
    assert np.allclose(sym, sym.T) and sym[0, 1] == pytest.approx((div[0, 1] + div[1, 0]) / 2)


def test_knn_graph_is_the_union_of_the_nearest_neighbours_with_kernel_weights():
    # points on a line: the nearest nodes are the adjacent ones
    pos = np.array([0.0, 1.0, 2.5, 4.5, 7.0])
    dist = np.abs(pos[:, None] - pos[None, :])
    g = knn_graph(dist, k=1)
    # 0->1, 1->0, 2->1, 3->2, 4->3: the union is the chain
    assert g.edges.tolist() == [[0, 1], [1, 2], [2, 3], [3, 4]]
    assert np.allclose(g.weights, np.exp(-np.array([1.0, 1.5, 2.0, 2.5])))
    g2 = knn_graph(dist, k=2, clusters=np.array([0, 0, 0, 1, 1]))
    assert g2.degrees.min() >= 2 and g2.clusters.tolist() == [0, 0, 0, 1, 1]
    assert [0, 2] in g2.edges.tolist() and [0, 4] not in g2.edges.tolist()
    assert np.allclose(exponential_kernel(dist, 2.0), np.exp(-dist / 2))
    with pytest.raises(ValueError, match="symmetric"):
        knn_graph(dist + np.triu(np.ones((5, 5))), k=1)


def test_pca_projection_orders_the_variances_and_is_deterministic():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(500, 6)) * np.array([5.0, 0.1, 3.0, 1.0, 0.5, 2.0])
    p = pca_projection(x, 3)
    var = p.var(axis=0)
    assert np.all(np.diff(var) < 0) and var[0] == pytest.approx(25, rel=0.2)
    assert np.allclose(p.T @ p, np.diag(np.diag(p.T @ p)), atol=1e-8)  # uncorrelated
    assert np.array_equal(p, pca_projection(x, 3))


def test_tsne_and_learnt_graph_separate_two_clusters_reproducibly():
    rng = np.random.default_rng(2)
    n_nodes, m = 6, 40
    centres = np.where(np.arange(n_nodes) < 3, 0.0, 8.0)
    features = rng.normal(size=(n_nodes * m, 10)) + np.repeat(centres, m)[:, None]
    node = np.repeat(np.arange(n_nodes), m)
    tsne = {"early_exaggeration_iter": 50, "n_iter": 100, "perplexity": 10, "pca_components": 5}
    a = learn_graph(features, node, seed=4, n_neighbours=2, tsne=tsne)
    b = learn_graph(features, node, seed=4, n_neighbours=2, tsne=tsne)
    assert np.array_equal(a.embedding, b.embedding) and np.array_equal(a.graph.edges, b.graph.edges)
    assert a.embedding.shape == (n_nodes * m, 2)
    cluster = (np.arange(n_nodes) >= 3).astype(int)
    same = cluster[:, None] == cluster[None, :]
    off = ~np.eye(n_nodes, dtype=bool)
    assert a.distances[same & off].max() < a.distances[~same].min()
    assert np.all(cluster[a.graph.edges[:, 0]] == cluster[a.graph.edges[:, 1]])
    assert set(a.seconds) == {"tsne", "kl", "knn"}
    other = tsne_embedding(features, seed=5, **tsne)
    assert not np.array_equal(other, a.embedding)


@pytest.mark.parametrize("method", ["fft", "bh"])
def test_tsne_embedding_does_not_depend_on_the_thread_count(method):
    """The MNIST graph stages run on one core (workflow/rules/cache.smk): their embedding is
    the one that two threads give, bit for bit, with both of openTSNE's gradient methods."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 1, (300, 20)), rng.normal(3, 1, (300, 20))])
    kw = {"seed": 1, "n_iter": 60, "early_exaggeration_iter": 30, "pca_components": None,
          "negative_gradient_method": method}
    one, two = tsne_embedding(x, n_jobs=1, **kw), tsne_embedding(x, n_jobs=2, **kw)
    assert np.array_equal(one, two) and np.isfinite(one).all() and one.std() > 0
