"""Issue 35's bar: a researcher's first hour, written with only what the README, docs/package.md
and the tutorials show.  A networkx SBM and a scipy adjacency with ragged linear nodes for
GTVRegressor, lambda chosen by GridSearchCV with nodes held out, a scikit-learn tree in FedRelax,
and FedAvg, IFCA, DFL-SGD and local training of a small MLP on a Dirichlet split of scikit-learn's
digits, scored per client.  The last test checks that this file touches no private name."""

import ast
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.tree import DecisionTreeRegressor

import networkedfl
from networkedfl import FedRelax, GTVRegressor
from networkedfl.algorithms import (
    decentralized_fedavg,
    dfl_sgd,
    evaluate,
    fedavg,
    ifca,
    local_training,
)
from networkedfl.datasets import client_data, dirichlet_label_skew
from networkedfl.graphs import EmpiricalGraph
from networkedfl.nn import cross_entropy, from_module

N_PER_BLOCK = 10


def sbm_nodes(seed=0):
    """A networkx SBM of two blocks, one linear task per block, ragged local datasets."""
    rng = np.random.default_rng(seed)
    G = nx.stochastic_block_model([N_PER_BLOCK, N_PER_BLOCK], [[0.7, 0.02], [0.02, 0.7]], seed=seed)
    block = np.array([G.nodes[i]["block"] for i in G.nodes])
    true_w = np.array([[1.0, -1.0], [-1.5, 2.0]])[block]
    sizes = rng.integers(2, 9, size=len(block))
    X = [rng.standard_normal((m, 2)) for m in sizes]
    y = [x @ w + 0.1 * rng.standard_normal(len(x)) for x, w in zip(X, true_w, strict=True)]
    return G, X, y, true_w


def test_gtv_on_a_networkx_sbm_and_a_scipy_adjacency():
    G, X, y, true_w = sbm_nodes()
    model = GTVRegressor(G, lam=0.1, n_iter=3000).fit(X, y)
    assert model.coef_.shape == (2 * N_PER_BLOCK, 2) and model.score(X, y) > 0.9
    assert np.abs(model.coef_ - true_w).max() < 0.5
    same = GTVRegressor(nx.to_scipy_sparse_array(G), lam=0.1, n_iter=3000).fit(X, y)
    np.testing.assert_array_equal(same.coef_, model.coef_)
    assert networkedfl.GTVRegressor is GTVRegressor


def test_a_shuffled_node_order_gives_the_same_coefficients_or_a_clear_error():
    """Issue 42's bar: the same graph with its nodes inserted in another order.  Without an
    order the estimator refuses (it would have to guess which data is whose), with
    ``nodelist`` it fits what the sorted graph fits."""
    G, X, y, _ = sbm_nodes()
    shuffled = nx.Graph()
    shuffled.add_nodes_from(np.random.default_rng(0).permutation(len(X)).tolist())
    shuffled.add_edges_from(G.edges)
    sorted_fit = GTVRegressor(G, lam=0.1, n_iter=3000).fit(X, y)
    with pytest.raises(ValueError, match="nodelist"):
        GTVRegressor(shuffled, lam=0.1, n_iter=3000).fit(X, y)
    same = GTVRegressor(shuffled, lam=0.1, n_iter=3000, nodelist=range(len(X))).fit(X, y)
    np.testing.assert_allclose(same.coef_, sorted_fit.coef_, rtol=1e-8, atol=1e-10)


def test_lambda_by_grid_search_with_nodes_held_out():
    """The samples of all nodes in one table, the node in column 0; GroupKFold holds out nodes."""
    G, X, y, _ = sbm_nodes(1)
    node = np.repeat(np.arange(len(X)), [len(x) for x in X])
    table, target = np.column_stack([node, np.concatenate(X)]), np.concatenate(y)
    search = GridSearchCV(GTVRegressor(G, n_iter=1000), {"lam": [0.001, 0.1, 10.0]},
                          cv=GroupKFold(n_splits=4)).fit(table, target, groups=node)
    # held-out nodes have no loss term: once converged (the restarted default), any small lam
    # gives them the graph's smoothest weights, so 0.001 and 0.1 score alike; 10 over-smooths
    scores = search.cv_results_["mean_test_score"]
    assert search.best_params_["lam"] in (0.001, 0.1) and abs(scores[0] - scores[1]) < 1e-3
    assert scores[2] < scores[:2].min() - 0.5
    assert search.best_estimator_.predict(table).shape == target.shape


def test_fedrelax_with_a_tree_and_one_public_table():
    G, X, y, _ = sbm_nodes(2)
    public = np.random.default_rng(3).standard_normal((30, 2))  # one table every node can read
    model = FedRelax(DecisionTreeRegressor(max_depth=3, random_state=0), G, alpha=0.1, n_iter=3,
                     random_state=0).fit(X, y, public=public)
    assert model.score(X, y) > 0.5
    assert model.predict(X).shape == (sum(len(x) for x in X),)  # issue 42: an ndarray, one per sample


def digits_clients(n_clients=8, seed=0):
    """A Dirichlet label split of the digits; every client keeps a quarter of its own rows to
    test on (its test set follows its own label mix)."""
    digits = load_digits()
    x, labels = digits.data / 16.0, digits.target
    rng = np.random.default_rng(seed)
    parts = [rng.permutation(p) for p in dirichlet_label_skew(labels, n_clients, 0.5, seed=seed)]
    train = [p[: int(0.75 * len(p))] for p in parts]
    test = [p[int(0.75 * len(p)):] for p in parts]
    return client_data(x, labels, train), client_data(x, labels, test)


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))


def test_fedavg_ifca_dfl_and_local_training_on_digits_with_an_mlp():
    train, test = digits_clients()
    model = from_module(mlp(), cross_entropy)
    common = dict(n_rounds=5, batch_size=32, lr=0.5, seed=0)
    results = {
        "FedAvg": fedavg(model, train, local_epochs=1, **common),
        "IFCA": ifca(model, train, n_clusters=3, local_epochs=1, **common),
        "DFL-SGD": dfl_sgd(model, train, nx.cycle_graph(8), local_steps=5, **common),
        "local": local_training(model, train, local_epochs=1, **common),
    }
    for name, result in results.items():
        scores = evaluate(model, result, test)
        assert scores["accuracy"].shape == (8,), name
        assert ((scores["accuracy"] >= 0) & (scores["accuracy"] <= 1)).all(), name
        assert result.client_params.dtype == torch.float32, name  # the default precision
    assert evaluate(model, results["FedAvg"], test)["accuracy"].mean() > 0.5
    again = fedavg(model, train, local_epochs=1, **common)  # an int seed: bit-identical reruns
    assert torch.equal(again.global_params, results["FedAvg"].global_params)


def shuffled_ring(n):
    """``nx.cycle_graph(n)`` with its nodes inserted in another order (issue 42's case)."""
    graph = nx.Graph()
    graph.add_nodes_from([*range(2, n), 0, 1])
    graph.add_edges_from(nx.cycle_graph(n).edges)
    return graph


@pytest.mark.parametrize("method", ["dfl_sgd", "decentralized_fedavg"])
def test_a_shuffled_ring_in_the_torch_methods_gives_the_sorted_run_or_a_clear_error(method):
    """Issue 42's bar for the decentralised methods: the shuffled graph is refused naming
    ``nodelist``; with the order given (``EmpiricalGraph.from_networkx``) the run equals the
    sorted graph's bit for bit."""
    train, _ = digits_clients()
    model = from_module(mlp(), cross_entropy)
    run = {"dfl_sgd": lambda g: dfl_sgd(model, train, g, local_steps=2, n_rounds=2, batch_size=32, lr=0.3, seed=0),
           "decentralized_fedavg": lambda g: decentralized_fedavg(model, train, g, local_epochs=1, n_rounds=2,
                                                                  batch_size=32, lr=0.3, seed=0)}[method]
    with pytest.raises(ValueError, match="nodelist"):
        run(shuffled_ring(8))
    ordered = run(EmpiricalGraph.from_networkx(shuffled_ring(8), nodelist=range(8)))
    assert torch.equal(ordered.client_params, run(nx.cycle_graph(8)).client_params)


def test_a_shuffled_graph_in_fedrelax_gives_the_sorted_fit_or_a_clear_error():
    G, X, y, _ = sbm_nodes(2)
    shuffled = nx.Graph()
    shuffled.add_nodes_from(np.random.default_rng(1).permutation(len(X)).tolist())
    shuffled.add_edges_from(G.edges)
    public = np.random.default_rng(3).standard_normal((30, 2))

    def fit(graph):
        return FedRelax(DecisionTreeRegressor(max_depth=3, random_state=0), graph, alpha=0.1, n_iter=3,
                        random_state=0).fit(X, y, public=public)

    with pytest.raises(ValueError, match="nodelist"):
        fit(shuffled)
    ordered = fit(EmpiricalGraph.from_networkx(shuffled, nodelist=range(len(X))))
    np.testing.assert_array_equal(ordered.predict(X), fit(G).predict(X))


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_the_fedrelax_estimators_take_a_nodelist_as_gtv_regressor_does(kind):
    """Issue 42 item 1: every estimator that takes a graph takes the order of its nodes."""
    from sklearn.tree import DecisionTreeClassifier

    from networkedfl import FedRelaxClassifier

    G, X, y, _ = sbm_nodes(2)
    if kind == "classifier":
        y = [np.where(labels > np.median(labels), "high", "low") for labels in y]
    shuffled = nx.Graph()
    shuffled.add_nodes_from(np.random.default_rng(1).permutation(len(X)).tolist())
    shuffled.add_edges_from(G.edges)
    public = np.random.default_rng(3).standard_normal((30, 2))
    template = (DecisionTreeRegressor if kind == "regressor" else DecisionTreeClassifier)(max_depth=3, random_state=0)
    estimator = FedRelax if kind == "regressor" else FedRelaxClassifier

    def predict(graph, **kw):
        return estimator(template, graph, alpha=0.1, n_iter=2, random_state=0, **kw).fit(X, y, public=public).predict(X)

    with pytest.raises(ValueError, match=f"nodelist.*{estimator.__name__}"):
        predict(shuffled)
    np.testing.assert_array_equal(predict(shuffled, nodelist=range(len(X))), predict(G))
    with pytest.raises(ValueError, match=f"{estimator.__name__} has no graph"):  # one node: plain samples
        estimator(template, None, nodelist=range(len(X))).fit(np.vstack(X), np.concatenate(y))


def test_a_callback_stops_a_run():
    train, _ = digits_clients()
    result = fedavg(from_module(mlp(), cross_entropy), train, n_rounds=10, local_epochs=1,
                    batch_size=32, lr=0.1, seed=0, callback=lambda state: state.round == 2)
    assert result.n_rounds == 2


def test_this_script_uses_no_private_name():
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    private = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("networkedfl"):
            private += [node.module] if any(p.startswith("_") for p in node.module.split(".")) else []
            private += [a.name for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.endswith("__"):
            private.append(node.attr)
    assert not private, private


@pytest.mark.parametrize("name", ["GTVRegressor", "FedRelax", "NodeData"])
def test_the_estimators_and_the_node_container_are_top_level_names(name):
    assert name in networkedfl.__all__ and getattr(networkedfl, name).__name__ == name
