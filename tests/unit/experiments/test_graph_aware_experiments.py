"""Synthetic data and targets of the graph-aware FL chapter (Figs 10.1-10.3, Table 10.1)."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist

from networkedfl.datasets import (
    CHAPTER_INPUT_RANGES,
    heterogeneous_nodes,
    homologous_graphs,
    node_regression_data,
)
from networkedfl.experiments.gfl.claims import homologous_graphs_claims, settings_table_claims
from networkedfl.experiments.gfl.synthetic import (
    SYNTHETIC_ID,
    TABLE_10_1,
    mlp,
    run_homologous_graphs,
    run_settings_table,
    synthetic_instance,
)
from networkedfl.graphs import knn_graph
from networkedfl.pipeline.config import load_config

REPO = Path(__file__).resolve().parents[3]
SYNTHETIC_TARGETS = ("gfl_fig10_2_homologous_graphs", "gfl_table10_1_settings", SYNTHETIC_ID)


@pytest.fixture(scope="module")
def default_config():
    return load_config(REPO / "config" / "config.yaml",
                       schema_path=REPO / "workflow" / "schemas" / "config.schema.yaml")


@pytest.mark.parametrize("profile", ["default", "test"])
def test_synthetic_targets_share_one_settings_block(profile, default_config, test_config):
    config = default_config if profile == "default" else test_config
    blocks = [config["experiments"][t]["synthetic"] for t in SYNTHETIC_TARGETS]
    assert blocks[0] == blocks[1] == blocks[2]


def test_default_synthetic_block_is_table_10_1(default_config):
    table = run_settings_table(default_config["experiments"]["gfl_table10_1_settings"], "all", 0, 1,
                               experiment_id="gfl_table10_1_settings")
    assert len(table) == len(TABLE_10_1)
    assert (table["value"] == table["paper"]).all() and (table["provenance"] == "paper").all()


def test_settings_claims_detect_a_wrong_or_missing_row(test_config):
    params = test_config["experiments"]["gfl_table10_1_settings"]
    table = run_settings_table(params, "all", 0, 1, experiment_id="gfl_table10_1_settings")
    assert all(c.passed for c in settings_table_claims(table, params))
    assert set(table.loc[table["provenance"] == "choice", "item"]) >= {"Node Number of Train Graph"}
    wrong = table.copy()
    wrong.loc[wrong["item"] == "Number of Center", "value"] = "4"
    assert [c.passed for c in settings_table_claims(wrong, params)] == [True, False, False]
    assert not settings_table_claims(table.iloc[1:], params)[0].passed


# ------------------------------------------------------------------------- generators

def test_knn_graph_gives_every_node_k_neighbours():
    pts = np.random.default_rng(0).standard_normal((30, 5))
    g = knn_graph(cdist(pts, pts), 4, rescale="unit")
    assert g.degrees.min() >= 4
    assert np.all(g.weights == 1.0)
    d = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    np.fill_diagonal(d, np.inf)
    adj = g.adjacency.toarray() > 0
    for i in range(30):
        assert adj[i, np.argsort(d[i])[:4]].all()


def test_homologous_graphs_share_the_mixture_and_propagate_the_ground_truth():
    hg = homologous_graphs(np.random.default_rng(1), n_nodes=40, n_centers=3, center_range=(-0.5, 0.5),
                           std=0.5, weight_shape=(8, 8), n_neighbours=4)
    assert hg.centers.shape == (3, 64) and np.all(np.abs(hg.centers) <= 0.5)
    assert hg.train_graph.n_nodes == hg.test_graph.n_nodes == 40
    assert not np.array_equal(hg.z_train, hg.z_test)
    # node vectors scatter with std 0.5 around their (shared) component centre in both graphs
    for z in (hg.z_train, hg.z_test):
        resid = z - hg.centers[hg.components]
        assert abs(resid.std() - 0.5) < 0.03
    a = hg.train_graph.adjacency.toarray() + np.eye(40)
    d = a.sum(1)
    prop = a / np.sqrt(np.outer(d, d))
    np.testing.assert_allclose(hg.w_train.reshape(40, 64), prop @ hg.z_train)
    x, y = node_regression_data(np.random.default_rng(2), hg.w_train, 100, (-60, 60))
    assert x.shape == (40, 100, 8) and y.shape == (40, 100, 8) and np.abs(x).max() <= 60
    np.testing.assert_allclose(y[3], x[3] @ hg.w_train[3])


def test_heterogeneous_nodes_follow_the_chapter():
    raw = heterogeneous_nodes(np.random.default_rng(0), dim=10, n_train=200, n_test=50, standardize=False)
    assert raw.x_train.shape == (5, 200, 10) and raw.y_test.shape == (5, 50)
    for (lo, hi), x in zip(CHAPTER_INPUT_RANGES, raw.x_train, strict=True):
        assert x.min() >= lo and x.max() <= hi
    z = raw.x_train @ raw.w
    np.testing.assert_allclose(raw.y_train, np.stack([np.tanh(z[0]), 1 / (1 + np.exp(-z[1])),
                                                      np.maximum(z[2], 0), np.sin(z[3]), np.cos(z[4])]),
                               rtol=1e-12, atol=1e-12)
    std = heterogeneous_nodes(np.random.default_rng(0), dim=10, n_train=200, n_test=50,
                              standardize_targets=True)
    np.testing.assert_allclose(std.x_train.mean(1), 0, atol=1e-12)
    np.testing.assert_allclose(std.x_train.std(1), 1)
    np.testing.assert_allclose(std.y_train.mean(1), 0, atol=1e-9)
    # labels are computed from the raw inputs: standardisation is an affine map per node
    for i in range(5):
        if raw.y_train[i].std() > 1e-9:
            assert abs(np.corrcoef(std.y_train[i], raw.y_train[i])[0, 1] - 1) < 1e-9


def test_mlp_matches_torch_layers():
    model = mlp([3, 5, 2], activation="sigmoid", bias=False, loss="half_squared_norm")
    theta = model.initial_params(torch.Generator().manual_seed(0), dtype=torch.float64)
    assert model.n_params == 3 * 5 + 5 * 2
    assert theta.abs().max() <= 1 / np.sqrt(3)
    x = torch.randn(7, 3, dtype=torch.float64)
    w1, w2 = theta[:15].reshape(3, 5), theta[15:].reshape(5, 2)
    torch.testing.assert_close(model.forward(theta, x), torch.sigmoid(x @ w1) @ w2)
    y = torch.randn(7, 2, dtype=torch.float64)
    torch.testing.assert_close(model.loss(theta, x, y), 0.5 * ((torch.sigmoid(x @ w1) @ w2 - y) ** 2).sum(1).mean())


# ------------------------------------------------------------------------------ diagram

def test_diagram_shows_the_instance_of_the_synthetic_figure(test_config):
    params = test_config["experiments"]["gfl_fig10_2_homologous_graphs"]
    table = run_homologous_graphs(params, "all", 0, 7, experiment_id="gfl_fig10_2_homologous_graphs")
    inst = synthetic_instance(test_config["experiments"][SYNTHETIC_ID]["synthetic"], 0, 7)
    edges = table[(table["element"] == "edge") & (table["graph"] == "train")]
    assert {(int(a), int(b)) for a, b in zip(edges["source"], edges["target"], strict=True)} == \
        {tuple(e) for e in inst.graphs.train_graph.edges.tolist()}
    claims = homologous_graphs_claims(table, params)
    assert all(c.passed for c in claims), claims
    broken = table.drop(table[table["element"] == "edge"].index[:1])
    assert not homologous_graphs_claims(broken, params)[2].passed


def test_adjusted_rand_index_matches_sklearn():
    from sklearn.metrics import adjusted_rand_score

    from networkedfl.experiments.gfl.synthetic import _adjusted_rand

    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b = rng.integers(3, size=30), rng.integers(4, size=30)
        assert abs(_adjusted_rand(a, b) - adjusted_rand_score(b, a)) < 1e-12
    assert _adjusted_rand(np.array([2, 2, 0, 0]), np.array([0, 0, 1, 1])) == 1.0


# ------------------------------------------------ references and the validation split (issue 17)

def test_predict_the_mean_reference_is_each_clients_own_training_mean(test_config):
    from networkedfl.experiments.gfl.synthetic import run_synthetic

    params = test_config["experiments"][SYNTHETIC_ID]
    table = run_synthetic(params, "mean", 0, 3, experiment_id=SYNTHETIC_ID)
    inst = synthetic_instance(params["synthetic"], 0, 3)
    expected = 0.5 * ((inst.y_test - inst.y_train.mean(axis=1, keepdims=True)) ** 2).sum(-1).mean()
    loss = table[table["metric"] == "test_loss"]
    assert list(loss["round"]) == [0, params["rounds"]]
    np.testing.assert_allclose(loss["value"], expected, rtol=1e-12)
    assert set(table["method"]) == {"Predict the mean"}


@pytest.mark.parametrize("mode", ["homologous_graph", "held_out"])
def test_validation_runs_never_read_the_test_data(test_config, monkeypatch, mode):
    """With ``validation_fraction`` the run scores its validation data (a third homologous
    graph, or held-out training samples): the value does not move when the test data are
    replaced by garbage, and no test rows appear."""
    import networkedfl.experiments.gfl.synthetic as ga

    params = {**test_config["experiments"][SYNTHETIC_ID], "validation_fraction": 0.25, "validation": mode}
    first = ga.run_synthetic(params, "fedavg", 0, 3, experiment_id=SYNTHETIC_ID)
    assert set(first["metric"]) == {"validation_loss"}
    original = ga.synthetic_instance

    def poisoned(*args, **kwargs):
        inst = original(*args, **kwargs)
        graphs = dataclasses.replace(inst.graphs, w_test=inst.graphs.w_test * np.nan)
        return dataclasses.replace(inst, graphs=graphs, x_test=inst.x_test * np.nan, y_test=inst.y_test * np.nan)

    monkeypatch.setattr(ga, "synthetic_instance", poisoned)
    again = ga.run_synthetic(params, "fedavg", 0, 3, experiment_id=SYNTHETIC_ID)
    np.testing.assert_array_equal(first["value"].to_numpy(), again["value"].to_numpy())
    assert np.isfinite(first["value"]).all()
    test = ga.run_synthetic({k: v for k, v in params.items() if k != "validation_fraction"}, "fedavg", 0, 3,
                            experiment_id=SYNTHETIC_ID)
    assert not np.isfinite(test[test["metric"] == "test_loss"]["value"].iloc[-1])  # the test path reads them


def test_the_validation_graph_is_drawn_as_the_test_graph_is(test_config):
    """Issue 34: Fig. 10.3's tuning scores a third graph of the mixture: node i from train
    node i's component, its own k-NN graph and propagated ground truth, fresh samples scaled
    like the instance's; the train data (what the tuning runs train on) are untouched."""
    from networkedfl.experiments.gfl.synthetic import validation_instance

    spec = test_config["experiments"][SYNTHETIC_ID]["synthetic"]
    inst = synthetic_instance(spec, 0, 3)
    val = validation_instance(inst, spec, 0, 3)
    hg, vg = inst.graphs, val.graphs
    np.testing.assert_array_equal(val.x_train, inst.x_train)
    np.testing.assert_array_equal(vg.components, hg.components)
    np.testing.assert_array_equal(vg.w_train, hg.w_train)
    assert not np.allclose(vg.z_test, hg.z_test) and not np.allclose(val.x_test, inst.x_test)
    assert val.x_test.shape == inst.x_test.shape and vg.test_graph.degrees.min() >= spec["n_neighbours"]
    a = vg.test_graph.adjacency.toarray() + np.eye(len(vg.components))
    d = a.sum(1)
    np.testing.assert_allclose(vg.w_test.reshape(len(d), -1), (a / np.sqrt(np.outer(d, d))) @ vg.z_test)
    raw = np.einsum("nmr,nrc->nmc", val.x_test * inst.input_scale, vg.w_test)
    np.testing.assert_allclose(val.y_test, (raw - inst.target_mean) / inst.target_std, atol=1e-10)
    again = validation_instance(inst, spec, 0, 3)
    np.testing.assert_array_equal(again.y_test, val.y_test)  # its own seeded stream
    assert not np.allclose(validation_instance(inst, spec, 1, 3).graphs.z_test, vg.z_test)


def test_homologous_graph_draws_nodes_around_their_components_centres():
    from networkedfl.datasets import homologous_graph

    centres = np.random.default_rng(0).uniform(-0.5, 0.5, (3, 64))
    components = np.arange(300) % 3
    z, graph, w = homologous_graph(1, centres, components, std=0.5, weight_shape=(8, 8), n_neighbours=4,
                                   propagate=False)
    assert abs((z - centres[components]).std() - 0.5) < 0.01 and graph.degrees.min() >= 4
    np.testing.assert_array_equal(w.reshape(300, 64), z)
    with pytest.raises(ValueError, match="centers must be"):
        homologous_graph(1, centres[:, :10], components, std=0.5, weight_shape=(8, 8), n_neighbours=4)


def test_oracle_trains_on_its_test_nodes_own_distribution(test_config):
    """The oracle knows W_i^test: its samples are the test node's noiseless linear map,
    scaled exactly like the instance's data (so its models are scored on the same scale)."""
    params = test_config["experiments"][SYNTHETIC_ID]
    inst = synthetic_instance(params["synthetic"], 0, 3)
    x, y = inst.test_distribution_sample(np.random.default_rng(5), 7)
    assert x.shape == (inst.x_test.shape[0], 7, inst.x_test.shape[2])
    raw = np.einsum("nmr,nrc->nmc", x * inst.input_scale, inst.graphs.w_test)
    np.testing.assert_allclose(y, (raw - inst.target_mean) / inst.target_std, rtol=1e-10, atol=1e-10)
    assert np.abs(x).max() <= 1.0  # inputs divided by the range bound, as the instance's
    # the instance's own test data obey the same map
    raw_test = np.einsum("nmr,nrc->nmc", inst.x_test * inst.input_scale, inst.graphs.w_test)
    np.testing.assert_allclose(inst.y_test, (raw_test - inst.target_mean) / inst.target_std, atol=1e-10)


def test_cluster_oracle_reference_trains_within_the_true_components(test_config):
    """The cluster oracle's clients of one mixture component hold one model."""
    from networkedfl.experiments.gfl.synthetic import run_synthetic

    params = test_config["experiments"][SYNTHETIC_ID]
    captured = {}
    import networkedfl.algorithms as fs

    real = fs.fedavg_steps

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        captured[kwargs.get("groups") is None] = (kwargs.get("groups"), result.client_params)
        return result

    import unittest.mock as mock

    with mock.patch.object(fs, "fedavg_steps", spy):
        run_synthetic(params, "cluster_oracle", 0, 3, experiment_id=SYNTHETIC_ID)
    groups, models = captured[False]
    comps = synthetic_instance(params["synthetic"], 0, 3).graphs.components
    np.testing.assert_array_equal(groups, comps)
    for k in np.unique(comps):
        block = models[torch.as_tensor(comps == k)]
        torch.testing.assert_close(block, block[:1].expand_as(block))
    assert len(np.unique(comps)) > 1 and not torch.allclose(models[comps == comps[0]][0],
                                                             models[comps != comps[0]][0])


def test_dfl_references_mean_and_centralised_oracle(test_config):
    from networkedfl.experiments.gfl.synthetic import run_dfl

    params = test_config["experiments"]["gfl_fig10_1_dfl"]
    mean = run_dfl(params, "mean", 0, 3, experiment_id="gfl_fig10_1_dfl")
    nodes = heterogeneous_nodes(
        __import__("networkedfl.experiments.registry", fromlist=["rng_for"]).rng_for(3, "gfl_fig10_1_dfl", 0, "data"),
        dim=params["dim"], n_train=params["n_train"], n_test=params["n_test"],
        input_ranges=params["input_ranges"], nonlinearities=params["nonlinearities"],
        standardize=params["standardize_inputs"], standardize_targets=params["standardize_targets"])
    np.testing.assert_allclose(mean["value"], ((nodes.y_test - nodes.y_train.mean()) ** 2).mean(), rtol=1e-12)
    oracle = run_dfl(params, "oracle", 0, 3, experiment_id="gfl_fig10_1_dfl")
    rounds = sorted(oracle[oracle["metric"] == "test_loss"]["round"])
    fedavg = run_dfl(params, "fedavg", 0, 3, experiment_id="gfl_fig10_1_dfl")
    assert rounds == sorted(fedavg[fedavg["metric"] == "test_loss"]["round"])  # same x axis
