"""The MNIST graph in three stages (GTV Sec. VI-C) and the notebooks' graph options (§8.7).

Pins each notebook option's definition (column sorting, approximate query, directed rows,
min-max rescaling), the split of a spec into its stages, and that the stages composed give
:func:`build_mnist_graph` exactly.  The Snakemake side (the kNN stage reruns alone when
only k changes) is tested on the built test DAG in test_pipeline.py."""

import numpy as np
import pytest

from networkedfl.datasets.mnist import load_mnist
from networkedfl.experiments.gtv.mnist_graph import (
    STAGE_KEYS,
    build_mnist_graph,
    embed_mnist,
    embedding_rows,
    graph_names,
    load_mnist_divergences,
    load_mnist_embedding,
    load_mnist_graph,
    mnist_divergences,
    mnist_knn_graph,
    save_mnist_divergences,
    save_mnist_embedding,
    save_mnist_graph,
    stage_spec,
)
from networkedfl.graphs import (
    EmpiricalGraph,
    GraphError,
    disjoint_union,
    knn_graph,
    pairwise_kl_divergences,
    sort_columns_per_node,
)

TINY_TSNE = {"early_exaggeration_iter": 20, "n_iter": 20, "pca_components": 10}


@pytest.fixture(scope="module")
def train(repo):
    return load_mnist(repo / "data" / "vendored" / "mnist", "train")


def small_spec(**extra):
    return {"clusters": [[0, 1], [2, 3]], "nodes_per_cluster": 3, "train_per_node": 12, "val_per_node": 4,
            "tsne": TINY_TSNE, **extra}


# ------------------------------------------------------------------ options (package)


def test_sort_columns_sorts_each_coordinate_within_each_node_only():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(11, 3))
    node = np.array([2, 0, 1, 0, 2, 2, 1, 0, 2, 1, 0])
    out = sort_columns_per_node(x, node)
    for i in range(3):  # reference: a loop over nodes
        rows = np.flatnonzero(node == i)
        assert np.array_equal(out[rows], np.sort(x[rows], axis=0))
    assert not np.array_equal(np.sort(out, axis=0), out)  # sorted within nodes, not globally


def test_kl_eps_zero_is_the_exact_estimate_and_eps_bounds_the_error():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(120, 2)) + np.repeat(np.arange(4), 30)[:, None] * 0.5
    node = np.repeat(np.arange(4), 30)
    exact = pairwise_kl_divergences(x, node)
    assert np.array_equal(pairwise_kl_divergences(x, node, eps=0.0), exact)
    approx = pairwise_kl_divergences(x, node, eps=0.01)
    # every distance within a factor 1.01: each log-ratio moves by at most d log(1.01)
    assert np.all(np.abs(approx - exact) <= 2 * np.log(1.01) + 1e-12)
    with pytest.raises(ValueError, match="eps"):
        pairwise_kl_divergences(x, node, eps=-1.0)


def test_directed_knn_graph_has_each_nodes_own_k_nearest_rows_with_parallel_edges():
    d = np.array([[0.0, 1.0, 2.0, 9.0],
                  [0.5, 0.0, 3.0, 4.0],
                  [7.0, 0.2, 0.0, 0.1],
                  [8.0, 6.0, 0.3, 0.0]])
    g = knn_graph(d, k=1, relation="directed")
    # rows: 0 -> 1, 1 -> 0, 2 -> 3, 3 -> 2: two mutual pairs, each as two parallel edges
    assert g.parallel_edges and g.n_edges == 4
    assert sorted(map(tuple, g.edges.tolist())) == [(0, 1), (0, 1), (2, 3), (2, 3)]
    assert np.allclose(sorted(g.weights), sorted(np.exp(-np.array([1.0, 0.5, 0.1, 0.3]))))
    assert np.array_equal(g.degrees, [2, 2, 2, 2])  # parallel edges count in the degrees
    g2 = knn_graph(d, k=2, relation="directed")
    assert g2.n_edges == 8  # n k edges, always
    with pytest.raises(ValueError, match="symmetric"):
        knn_graph(d, k=1)  # union needs symmetric distances
    with pytest.raises(ValueError, match="relation"):
        knn_graph(d, k=1, relation="mutual")


def test_minmax_rescaling_maps_the_kernel_weights_affinely_onto_0_1():
    rng = np.random.default_rng(2)
    a = rng.uniform(0.1, 2.0, size=(6, 6))
    d = a + a.T
    plain, scaled = knn_graph(d, k=2), knn_graph(d, k=2, rescale="minmax")
    assert np.array_equal(plain.edges, scaled.edges)
    w = plain.weights
    assert np.allclose(scaled.weights, (w - w.min()) / (w.max() - w.min()), rtol=0, atol=1e-15)
    assert scaled.weights.min() == 0.0 and scaled.weights.max() == 1.0


def test_parallel_edges_are_an_error_unless_asked_for_and_survive_unions():
    with pytest.raises(GraphError, match="duplicate edges"):
        EmpiricalGraph(3, [[0, 1], [1, 0]], [1.0, 2.0])
    g = EmpiricalGraph(3, [[0, 1], [1, 0], [1, 2]], [1.0, 2.0, 1.0], parallel_edges=True)
    assert g.incidence.shape == (3, 3) and np.array_equal(g.degrees, [2, 3, 1])
    union, _ = disjoint_union([g, g])
    assert union.parallel_edges and union.n_edges == 6
    assert g.subgraph(np.array([0, 1])).n_edges == 2


# ---------------------------------------------------------------------- stages (MNIST)


def test_a_spec_splits_into_its_three_stages_and_unknown_keys_are_named():
    spec = small_spec(neighbours=3, kl_k=1, kl_eps=0.01, sort_columns=True, relation="directed",
                      rescale="minmax", tsne_images="digits", draws_from="x", kernel_scale=1.0)
    parts = [stage_spec(spec, s) for s in STAGE_KEYS]
    assert sorted(k for p in parts for k in p) == sorted(spec)  # a partition of the keys
    assert stage_spec(spec, "graph") == {"neighbours": 3, "kernel_scale": 1.0, "relation": "directed",
                                         "rescale": "minmax"}
    with pytest.raises(ValueError, match="neighbors"):
        stage_spec({**spec, "neighbors": 4}, "graph")


def test_embedding_rows_locate_every_node_image_among_the_embedded_ones():
    labels = np.array([5, 0, 1, 2, 0, 7, 1, 3, 0, 2])
    train_idx = np.array([[1, 4], [3, 9]])
    rows, pos = embedding_rows(labels, [[0, 1], [2, 3]], train_idx, "digits")
    assert rows.tolist() == [1, 2, 3, 4, 6, 7, 8, 9]  # every image of the clusters' digits
    assert np.array_equal(rows[pos], train_idx)
    rows, pos = embedding_rows(labels, [[0, 1], [2, 3]], train_idx, "nodes")
    assert rows.tolist() == [1, 4, 3, 9] and np.array_equal(rows[pos], train_idx)
    with pytest.raises(ValueError, match="tsne_images"):
        embedding_rows(labels, [[0, 1]], train_idx, "all")


def test_the_stages_composed_through_their_files_give_build_mnist_graph(train, tmp_path):
    spec = small_spec(neighbours=2, relation="directed", rescale="minmax", sort_columns=True, kl_eps=0.01)
    whole = build_mnist_graph("g", spec, train, 7)
    save_mnist_embedding(embed_mnist("g", spec, train, 7), tmp_path / "e.npz")
    emb = load_mnist_embedding(tmp_path / "e.npz")
    save_mnist_divergences(mnist_divergences(emb, spec), tmp_path / "d.npz")
    graph = mnist_knn_graph(emb, load_mnist_divergences(tmp_path / "d.npz"), spec)
    save_mnist_graph(graph, tmp_path / "g.npz")
    back = load_mnist_graph(tmp_path / "g.npz")
    for key in ("indices", "embedding", "divergences", "edges", "weights"):
        assert np.array_equal(getattr(back, key), getattr(whole, key)), key
    assert back.graph.parallel_edges and back.graph.n_edges == 6 * 2
    assert back.spec == {k: v for k, v in whole.spec.items()} and back.spec["relation"] == "directed"


def test_draws_from_gives_two_graphs_the_same_local_datasets(train):
    a = embed_mnist("paper_graph", small_spec(), train, 7)
    b = embed_mnist("notebook_graph", small_spec(draws_from="paper_graph", tsne_images="nodes"), train, 7)
    c = embed_mnist("notebook_graph", small_spec(), train, 7)
    assert np.array_equal(a.indices, b.indices) and np.array_equal(a.embedding, b.embedding)
    assert not np.array_equal(a.indices, c.indices)


def test_sorting_the_columns_changes_the_divergences(train):
    emb = embed_mnist("g", small_spec(), train, 7)
    plain, notebook = mnist_divergences(emb, {}), mnist_divergences(emb, {"sort_columns": True})
    assert plain.divergences.shape == (6, 6) and not np.allclose(plain.divergences, notebook.divergences)


def test_graph_names_collect_variants_and_ablation_cases(test_config):
    fig6 = test_config["experiments"]["gtv_fig06_mnist_methods"]
    assert graph_names(fig6) == ["two_clusters", "two_clusters_notebook"]
    assert graph_names(test_config["experiments"]["gtv_quirk_ablation_mnist"]) == \
        ["two_clusters", "two_clusters_notebook"]
    assert graph_names(test_config["experiments"]["gtv_fig07_mnist_five_clusters"]) == \
        ["five_clusters", "five_clusters_notebook"]


def test_the_published_mnist_variants_run_on_the_notebooks_graph(test_config, inputs_for):
    from networkedfl.experiments.gtv.mnist_graph import graph_file

    published = inputs_for("gtv_fig06_mnist_methods", setting="published.all")
    paper = inputs_for("gtv_fig06_mnist_methods", setting="paper.all")
    assert published["graph"].endswith(graph_file("two_clusters_notebook"))
    assert paper["graph"].endswith(graph_file("two_clusters"))
    notebook, plain = load_mnist_graph(published["graph"]), load_mnist_graph(paper["graph"])
    assert np.array_equal(notebook.indices, plain.indices)  # same local datasets
    assert notebook.graph.parallel_edges and notebook.weights.min() == 0.0
    assert len(notebook.edges) == notebook.n_nodes * test_config["mnist_graphs"]["two_clusters_notebook"]["neighbours"]


def test_edge_signs_give_the_notebooks_incidence_of_the_knn_rows(train):
    spec = small_spec(neighbours=2, relation="directed", rescale="minmax")
    g = build_mnist_graph("g", spec, train, 7)
    signs = g.edge_signs()
    # the notebooks' D: the edge of node i's k-NN row has +1 at i (the e // k-th node)
    source = np.repeat(np.arange(g.n_nodes), 2)
    notebook = np.zeros((len(g.edges), g.n_nodes))
    notebook[np.arange(len(g.edges)), source] = 1.0
    target = np.where(g.edges[:, 0] == source, g.edges[:, 1], g.edges[:, 0])
    notebook[np.arange(len(g.edges)), target] = -1.0
    np.testing.assert_array_equal(signs[:, None] * g.graph.incidence.toarray(), notebook)
    assert (signs < 0).any() and (signs > 0).any()
    union = build_mnist_graph("g", small_spec(neighbours=2), train, 7)
    np.testing.assert_array_equal(union.edge_signs(), np.ones(len(union.edges)))
