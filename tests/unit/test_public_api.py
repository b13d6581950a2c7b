"""Issue 19's bar, as a user would write it: only the public API, a networkx karate-club graph
with random weights and int seeds, running GTV, FedRelax with a decision tree, and FedAvg on a
Dirichlet label partition."""

import networkx as nx
import numpy as np
from sklearn.tree import DecisionTreeRegressor

from networkedfl.algorithms import fedavg
from networkedfl.datasets import client_data, dirichlet_label_skew
from networkedfl.fedrelax import FedRelax
from networkedfl.gtv import GTVRegressor
from networkedfl.nn import softmax_regression


def test_own_network_with_the_public_api():
    rng = np.random.default_rng(0)
    graph = nx.karate_club_graph()
    for u, v in graph.edges:
        graph.edges[u, v]["weight"] = rng.uniform(0.5, 1.5)
    n = graph.number_of_nodes()
    club = np.array([graph.nodes[i]["club"] == "Officer" for i in graph.nodes], dtype=int)
    w = np.where(club[:, None] == 1, [1.0, -1.0], [-1.0, 2.0])  # one linear model per club
    x = rng.standard_normal((n, 10, 2))
    y = np.einsum("nmd,nd->nm", x, w) + 0.1 * rng.standard_normal((n, 10))

    gtv = GTVRegressor(graph, lam=0.1, n_iter=500).fit(x, y)
    assert gtv.coef_.shape == (n, 2) and gtv.score(x, y) > 0.95
    public = rng.standard_normal((n, 20, 2))
    trees = FedRelax(DecisionTreeRegressor(max_depth=3, random_state=0), graph, alpha=0.05, n_iter=3,
                     random_state=0).fit(x, y, public=public)
    assert trees.score(x, y) > 0.8

    features = rng.standard_normal((2000, 5))
    labels = (features @ rng.standard_normal((5, 3))).argmax(axis=1)
    parts = dirichlet_label_skew(labels, 10, 0.5, seed=1)
    result = fedavg(softmax_regression(5, 3), client_data(features, labels, parts), n_rounds=5,
                    local_epochs=1, batch_size=32, lr=0.1, seed=2)
    assert result.global_params.shape == (1, 18) and bool(np.isfinite(result.global_params.numpy()).all())


def test_the_package_and_the_pipeline_jobs_import_neither_torch_nor_scikit_learn():
    """Both cost about a second of every job's start-up: a job loads them only if its
    method needs them (the docstrings of networkedfl and networkedfl.algorithms say so)."""
    import subprocess
    import sys

    script = ("import sys, networkedfl, networkedfl.algorithms, networkedfl.pipeline.runner, "
              "networkedfl.io._atomic, networkedfl.pipeline.provenance, networkedfl.experiments\n"
              "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'sklearn'}))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
