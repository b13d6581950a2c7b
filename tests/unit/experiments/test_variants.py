"""The published and paper variants of the GTV targets (EXPERIMENTS.md §8, issue 16).

Each notebook behaviour that the ``published`` variant switches on is pinned here against
its definition, and the variant machinery against its contract: paired random streams, one
``variant`` column, claims per variant, summary counts per variant.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch

from networkedfl.algorithms import ifca
from networkedfl.experiments.gtv.linear import OPTIONS, build_instance, option
from networkedfl.experiments.variants import split_setting, variant_params
from networkedfl.graphs import EmpiricalGraph, GraphError, stochastic_block_model
from networkedfl.gtv import (
    DEFAULT_SIGMA,
    IterationState,
    SquaredErrorLoss,
    cluster_index_step_sizes,
    default_step_sizes,
    gtv_primal_dual,
    linear_model_data,
    mocha_lambda_factor,
    perturb_cluster_weights,
)
from networkedfl.nn import ClientData, linear_regression
from networkedfl.pipeline.config import ConfigError, validate_config
from networkedfl.pipeline.runner import (
    collect_tables,
    evaluate_claims,
    job_settings,
    run_job,
    seeds,
)
from networkedfl.pipeline.summary import summarize_claims


def _problem(seed: int = 0, m: int = 7):
    rng = np.random.default_rng(seed)
    graph = stochastic_block_model([6, 6], 0.7, 0.1, rng)
    assert graph.isolated_nodes.size == 0
    w_true = np.where(graph.clusters[:, None] == 0, [1.0, -2.0, 0.5], [-1.0, 1.0, 2.0])
    data = linear_model_data(w_true, m, 0.3, rng)
    mask = rng.random(graph.n_nodes) < 0.7
    return graph, data, mask


# ---------------------------------------------------------------- loss scale (§8.3)

@pytest.mark.parametrize("penalty", ["l1", "nlasso", "mocha"])
def test_sum_loss_iterates_equal_the_mean_loss_with_scaled_steps(penalty):
    """Sum loss with (tau, sigma, lam) == mean loss with (m tau, sigma/m, lam/m), per iterate."""
    graph, data, mask = _problem(m=7)
    m = data.max_samples
    tau, sigma = default_step_sizes(graph)
    lam = 0.3
    seen = {"sum": [], "mean": []}

    def recorder(name):
        return lambda s: seen[name].append((s.weights.copy(), s.duals.copy()))

    gtv_primal_dual(graph, SquaredErrorLoss(data, mask, reduction="sum"), penalty, lam, 40,
                    tau=tau, sigma=sigma, callback=recorder("sum"), progress=False)
    gtv_primal_dual(graph, SquaredErrorLoss(data, mask), penalty, lam / m, 40,
                    tau=m * tau, sigma=sigma / m, callback=recorder("mean"), progress=False)
    for (w_sum, u_sum), (w_mean, u_mean) in zip(seen["sum"], seen["mean"], strict=True):
        np.testing.assert_allclose(w_mean, w_sum, rtol=0, atol=1e-12)
        np.testing.assert_allclose(u_mean, u_sum / m, rtol=0, atol=1e-12)
    # and the run moves: the iterates are not trivially equal
    assert np.abs(seen["sum"][-1][0]).max() > 0.1


def test_sum_loss_prox_is_the_explicit_sum_of_squares_formula():
    graph, data, mask = _problem()
    tau = np.linspace(0.2, 1.0, graph.n_nodes)
    w_hat = np.random.default_rng(3).standard_normal((graph.n_nodes, data.dim))
    got = SquaredErrorLoss(data, mask, reduction="sum").prox_operator(tau)(w_hat)
    for i in range(graph.n_nodes):
        x, y = data.features[i], data.labels[i]
        if not mask[i]:
            np.testing.assert_allclose(got[i], w_hat[i], atol=1e-14)
            continue
        # argmin_v ||y - X v||^2 + ||v - w_hat||^2 / (2 tau)  (the notebooks' LinearModel)
        expected = np.linalg.solve(2 * tau[i] * x.T @ x + np.eye(data.dim), w_hat[i] + 2 * tau[i] * x.T @ y)
        np.testing.assert_allclose(got[i], expected, rtol=1e-12, atol=1e-12)
    value = SquaredErrorLoss(data, mask, reduction="sum").value(w_hat)
    np.testing.assert_allclose(value, data.max_samples * SquaredErrorLoss(data, mask).value(w_hat), rtol=1e-12)


def test_unknown_reduction_is_named():
    graph, data, mask = _problem()
    with pytest.raises(ValueError, match="reduction"):
        SquaredErrorLoss(data, mask, reduction="total")


# ---------------------------------------------------------------- label noise (§8.2)

def test_per_node_noise_is_one_draw_per_node_on_the_same_features():
    w = np.array([[1.0, 2.0], [-1.0, 0.5], [0.0, 3.0]])
    per_sample = linear_model_data(w, 50, 0.5, np.random.default_rng(1))
    per_node = linear_model_data(w, 50, 0.5, np.random.default_rng(1), noise="per_node")
    np.testing.assert_array_equal(per_node.features, per_sample.features)
    resid = per_node.labels - np.einsum("nmd,nd->nm", per_node.features, w)
    np.testing.assert_allclose(resid, resid[:, :1] * np.ones((1, 50)), atol=1e-12)  # constant per node
    assert np.unique(np.round(resid[:, 0], 12)).size == 3
    resid_sample = per_sample.labels - np.einsum("nmd,nd->nm", per_sample.features, w)
    assert np.all(resid_sample.std(axis=1) > 0.2)
    with pytest.raises(ValueError, match="noise"):
        linear_model_data(w, 5, 0.5, np.random.default_rng(1), noise="per_cluster")


# ---------------------------------------------------------------- MOCHA dual step (§8.8)

@pytest.mark.parametrize("step,c", [("exact", 0.5), ("notebook_sbm", 2.0), ("notebook_chain", 1.0)])
def test_mocha_notebook_steps_are_the_exact_step_with_a_smaller_lambda(step, c):
    graph, data, mask = _problem()
    lam = 0.2
    u0 = np.random.default_rng(4).standard_normal((graph.n_edges, data.dim))
    w0 = np.random.default_rng(5).standard_normal((graph.n_nodes, data.dim))
    tau, sigma = default_step_sizes(graph)
    states: list[IterationState] = []
    gtv_primal_dual(graph, SquaredErrorLoss(data, mask), "mocha", lam * mocha_lambda_factor(step), 1,
                    w0=w0, u0=u0, callback=lambda s: states.append(s), progress=False)
    # one iteration by hand with the notebooks' formula u / (1 + c sigma / (lam A))
    w_hat = w0 - tau[:, None] * (graph.incidence.T @ u0)
    w_new = SquaredErrorLoss(data, mask).prox_operator(tau)(w_hat)
    z = u0 + sigma[:, None] * (graph.incidence @ (2 * w_new - w0))
    expected = z / (1 + c * DEFAULT_SIGMA / (lam * graph.weights))[:, None]
    np.testing.assert_allclose(states[0].duals, expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="MOCHA dual step"):
        mocha_lambda_factor("notebook")


# ---------------------------------------------------------------- step sizes (§8.1)

def test_cluster_index_steps_use_the_degree_of_node_c():
    # path 0-1-2-3 plus 1-3: degrees 1, 3, 1, 2; clusters [0, 0, 1, 1]
    graph = EmpiricalGraph(4, np.array([[0, 1], [1, 2], [2, 3], [1, 3]]), np.ones(4), np.array([0, 0, 1, 1]))
    tau, sigma = cluster_index_step_sizes(graph)
    np.testing.assert_array_equal(tau, [1.0, 1.0, 1 / 3, 1 / 3])
    np.testing.assert_array_equal(sigma, np.full(4, DEFAULT_SIGMA))
    assert not np.array_equal(tau, default_step_sizes(graph)[0])
    with pytest.raises(GraphError, match="clusters"):
        cluster_index_step_sizes(EmpiricalGraph(4, graph.edges, graph.weights))
    lonely = EmpiricalGraph(3, np.array([[1, 2]]), np.ones(1), np.array([0, 0, 1]))
    with pytest.raises(GraphError, match=r"node\(s\) \[0\]"):
        cluster_index_step_sizes(lonely)


def test_prox_tau_changes_only_the_proximal_step():
    graph, data, mask = _problem()
    tau, sigma = default_step_sizes(graph)
    prox_tau = cluster_index_step_sizes(graph)[0]
    assert not np.allclose(prox_tau, tau)
    loss = SquaredErrorLoss(data, mask, reduction="sum")
    u0 = np.random.default_rng(8).standard_normal((graph.n_edges, data.dim))
    w0 = np.random.default_rng(9).standard_normal((graph.n_nodes, data.dim))
    got = gtv_primal_dual(graph, loss, "l1", 0.05, 1, w0=w0, u0=u0, prox_tau=prox_tau, progress=False)
    # the notebooks' iteration: w_hat with the true T, the closed-form prox with 1/deg_{c_i}
    w_hat = w0 - tau[:, None] * (graph.incidence.T @ u0)
    w_new = loss.prox_operator(prox_tau)(w_hat)
    u = np.clip(u0 + sigma[:, None] * (graph.incidence @ (2 * w_new - w0)), -0.05, 0.05)
    np.testing.assert_allclose(got.weights, w_new, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.duals, u, rtol=1e-12, atol=1e-12)
    same = gtv_primal_dual(graph, loss, "l1", 0.05, 5, prox_tau=tau, progress=False)
    np.testing.assert_array_equal(same.weights, gtv_primal_dual(graph, loss, "l1", 0.05, 5, progress=False).weights)
    with pytest.raises(ValueError, match="prox_tau"):
        gtv_primal_dual(graph, loss, "l1", 0.05, 1, prox_tau=-tau, progress=False)


# ---------------------------------------------------------------- perturbation (§8.9)

def test_cluster_perturbation_is_one_scalar_per_cluster_over_abs_weights():
    w = np.array([[2.0, 2.0], [-2.0, 4.0]])
    got = perturb_cluster_weights(w, 1e-3, np.random.default_rng(7))
    z = np.random.default_rng(7).standard_normal(2)
    np.testing.assert_allclose(got, w + 1e-3 * z[:, None] / np.abs(w), rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="zero entry"):
        perturb_cluster_weights(np.array([[0.0, 1.0]]), 1e-3, np.random.default_rng(0))


def test_published_fig11_instance_keeps_the_weights_constant_over_each_cluster(test_config):
    params = variant_params(test_config["experiments"]["gtv_fig11_unbalanced"], "published")
    point = {"size_c2": 20, "p_out": 0.01, "M": 0.4, "sigma": 0.0}
    inst = build_instance(params, point, np.random.default_rng(0))
    for c in (0, 1):
        rows = inst.true_weights[inst.graph.clusters == c]
        assert np.all(rows == rows[0])
    paper = build_instance(variant_params(test_config["experiments"]["gtv_fig11_unbalanced"], "paper"),
                           point, np.random.default_rng(0))
    rows = paper.true_weights[paper.graph.clusters == 0]
    assert np.unique(rows, axis=0).shape[0] == rows.shape[0]  # per node


# ---------------------------------------------------------------- IFCA server step (§8.10)

def test_ifca_all_clients_step_divides_cluster_gradients_by_all_clients():
    rng = np.random.default_rng(2)
    n, m, d, lr = 9, 6, 3, 0.1
    x = rng.standard_normal((n, m, d))
    y = rng.standard_normal((n, m))
    init = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    res = ifca(linear_regression(d), ClientData.from_arrays(x, y, dtype=torch.float64), n_clusters=2, n_rounds=1, lr=lr,
               init=torch.as_tensor(init), aggregation="all_clients", seed=0)
    losses = np.mean((np.einsum("nmd,kd->nkm", x, init) - y[:, None, :]) ** 2, axis=2)
    chosen = losses.argmin(axis=1)
    assert len(set(chosen)) == 2  # both clusters are used, so the test can tell the two rules apart
    expected = init.copy()
    for j in range(2):
        members = np.flatnonzero(chosen == j)
        grads = [2 / m * x[i].T @ (x[i] @ init[j] - y[i]) for i in members]
        expected[j] = init[j] - lr * np.sum(grads, axis=0) / n  # the notebook: / all clients
    np.testing.assert_allclose(res.global_params.numpy(), expected, rtol=1e-12, atol=1e-12)
    mean = ifca(linear_regression(d), ClientData.from_arrays(x, y, dtype=torch.float64), n_clusters=2, n_rounds=1, lr=lr,
                init=torch.as_tensor(init), seed=0)
    assert not np.allclose(mean.global_params.numpy(), expected)
    with pytest.raises(ValueError, match="aggregation"):
        ifca(linear_regression(d), ClientData.from_arrays(x, y), n_clusters=2, n_rounds=1, lr=lr,
             init=torch.as_tensor(init), aggregation="global")


# ---------------------------------------------------------------- shared draws (§8.12)

def test_shared_graph_and_data_across_repetitions(test_config):
    target = "gtv_table3_covariance"
    config = copy.deepcopy(test_config)
    tables = {}
    for variant in ("published", "paper"):
        for seed in (0, 1):
            setting = f"{variant}.baselines"
            tables[variant, seed] = run_job(config, target, setting, seed)
    pub = [t[t["metric"] == "label_mse"].set_index("method")["value"] for t in
           (tables["published", 0], tables["published", 1])]
    # the same graph and data with a new M: pooled models on other nodes differ, but the data are shared
    params = variant_params(config["experiments"][target], "published")
    from networkedfl.seeding import rng_for
    point = {"p_out": 0.01, "M": 0.4, "sigma": 0.0}
    shared = [build_instance(params, point, rng_for(1, target, s, point),
                             graph_rng=rng_for(1, target, 0, "shared", "graph", point),
                             data_rng=rng_for(1, target, 0, "shared", "data", point)) for s in (0, 1)]
    np.testing.assert_array_equal(shared[0].graph.edges, shared[1].graph.edges)
    np.testing.assert_array_equal(shared[0].data.features, shared[1].data.features)
    assert not np.array_equal(shared[0].mask, shared[1].mask)
    assert not pub[0].equals(pub[1])


# ---------------------------------------------------------------- the variant machinery

def _quirks_off(config: dict, target: str) -> dict:
    config = copy.deepcopy(config)
    config["experiments"][target]["variants"] = {"published": {}, "paper": {}}
    return config


def test_with_every_quirk_off_published_and_paper_tables_are_identical(test_config):
    target = "gtv_fig03_chain_sampling"
    config = _quirks_off(test_config, target)
    table = collect_tables([run_job(config, target, s, seed)
                            for s in job_settings(config, target) for seed in seeds(config, target)])
    pub = table[table["variant"] == "published"].drop(columns="variant").reset_index(drop=True)
    pap = table[table["variant"] == "paper"].drop(columns="variant").reset_index(drop=True)
    assert len(pub) > 0
    pd.testing.assert_frame_equal(pub, pap, check_exact=True)
    # and with the quirks on, the published numbers differ
    on = collect_tables([run_job(test_config, target, s, 0) for s in job_settings(test_config, target)])
    assert not np.allclose(on.loc[on["variant"] == "published", "value"].to_numpy(),
                           on.loc[on["variant"] == "paper", "value"].to_numpy())


def test_settings_name_the_variant_and_tables_lead_with_it(test_config):
    target = "gtv_fig09_sbm_sampling"
    settings = job_settings(test_config, target)
    assert settings == [f"{v}.penalty-{p}" for v in ("published", "paper") for p in ("l1", "nlasso", "mocha")]
    table = run_job(test_config, target, settings[0], 0)
    assert list(table.columns[:1]) == ["variant"] and set(table["variant"]) == {"published"}
    params = test_config["experiments"][target]
    assert split_setting(params, "paper.penalty-l1") == ("paper", "penalty-l1")
    with pytest.raises(ValueError, match="names no variant"):
        split_setting(params, "penalty-l1")
    with pytest.raises(ValueError, match="no setting"):
        run_job(test_config, target, "penalty-l1", 0)
    merged = variant_params(params, "published")
    assert merged["loss_scale"] == "sum" and "variants" not in merged
    assert variant_params(params, "paper") == {k: v for k, v in params.items() if k != "variants"}
    with pytest.raises(ValueError, match="unknown variant"):
        variant_params(params, "notebook")


def test_claims_are_evaluated_per_variant_and_counted_per_variant(test_config):
    target = "gtv_fig03_chain_sampling"
    table = collect_tables([run_job(test_config, target, s, seed) for s in job_settings(test_config, target)
                            for seed in seeds(test_config, target)])
    claims = evaluate_claims(test_config, target, table)
    variants = [c["variant"] for c in claims]
    assert variants.count("published") == variants.count("paper") == 3
    # a table whose published rows are broken fails only the published claims
    broken = table.copy()
    broken.loc[(broken["variant"] == "published") & (broken["penalty"] == "l1"), "value"] = 1e9
    again = evaluate_claims(test_config, target, broken)
    assert any(c["verdict"] != "holds" for c in again if c["variant"] == "published")
    assert [c["verdict"] for c in again if c["variant"] == "paper"] == [c["verdict"] for c in claims
                                                                       if c["variant"] == "paper"]
    summary = summarize_claims({target: claims, "gtv_fig13_star_lambda": [
        {"claim": "x", "verdict": "holds", "kind": "paper", "detail": ""}]})
    rows = summary.set_index(["target", "variant"])
    for v in ("published", "paper"):
        mine = [c for c in claims if c["variant"] == v and c["kind"] == "paper"]
        assert rows.loc[(target, v), "claims"] == len(mine) == 3
        assert rows.loc[(target, v), "holds"] == sum(c["verdict"] == "holds" for c in mine)
    assert rows.loc[("gtv_fig13_star_lambda", ""), "claims"] == 1


def test_options_are_validated_in_the_schema_and_in_code(test_config, schema_path):
    bad = copy.deepcopy(test_config)
    bad["experiments"]["gtv_fig09_sbm_sampling"]["variants"]["published"]["loss_scale"] = "total"
    with pytest.raises(ConfigError, match="gtv_fig09_sbm_sampling"):
        validate_config(bad, schema_path)
    bad = copy.deepcopy(test_config)
    bad["experiments"]["gtv_fig09_sbm_sampling"]["variants"]["published"]["loss_scal"] = "sum"
    with pytest.raises(ConfigError, match="loss_scal"):
        validate_config(bad, schema_path)
    for name, values in OPTIONS.items():
        assert option({}, name) == values[0]
        with pytest.raises(ValueError, match=name):
            option({name: "nonsense"}, name)


def test_every_gtv_linear_target_runs_both_variants_by_default(repo):
    from networkedfl.pipeline.config import load_config

    config = load_config(repo / "config" / "config.yaml")
    for target in ("gtv_table1_highdim_sbm", "gtv_fig02_num_clusters", "gtv_fig03_chain_sampling",
                   "gtv_fig04_chain_noise", "gtv_fig09_sbm_sampling", "gtv_fig10_sbm_noise",
                   "gtv_table3_covariance", "gtv_fig11_unbalanced"):
        variants = config["experiments"][target]["variants"]
        assert list(variants) == ["published", "paper"], target
        assert variants["paper"] == {}, target
        assert variants["published"], target


# ---------------------------------------------------------------- MNIST notebook options (§8.4-8.6, 8.10)

def test_doubled_difference_dual_update_is_the_notebooks():
    graph, data, mask = _problem()
    loss = SquaredErrorLoss(data, mask)
    tau, sigma = default_step_sizes(graph)
    u0 = np.random.default_rng(10).standard_normal((graph.n_edges, data.dim))
    w0 = np.random.default_rng(11).standard_normal((graph.n_nodes, data.dim))
    got = gtv_primal_dual(graph, loss, "nlasso", 10.0, 1, w0=w0, u0=u0, dual_update="doubled_difference",
                          progress=False)
    w_new = loss.prox_operator(tau)(w0 - tau[:, None] * (graph.incidence.T @ u0))
    z = u0 + sigma[:, None] * (graph.incidence @ (2 * (w_new - w0)))  # 2 (w_new - w_old)
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    expected = z * np.minimum(1.0, 10.0 * graph.weights[:, None] / norms)
    np.testing.assert_allclose(got.duals, expected, rtol=1e-12, atol=1e-12)
    paper = gtv_primal_dual(graph, loss, "nlasso", 10.0, 1, w0=w0, u0=u0, progress=False)
    assert not np.allclose(paper.duals, got.duals)
    with pytest.raises(ValueError, match="dual_update"):
        gtv_primal_dual(graph, loss, "nlasso", 1.0, 1, dual_update="notebook", progress=False)


def test_unprojected_edges_pass_their_duals_through_and_keep_free_coordinates_zero():
    from networkedfl.gtv import BlockNLassoPenalty, UnprojectedEdges

    z = np.random.default_rng(12).standard_normal((4, 5)) * 10
    radius = np.array([0.0, 0.0, 1.0, 2.0])
    base = BlockNLassoPenalty(((0, 2), (2, 4)))  # coordinate 4 is free (a bias)
    keep = np.array([True, False, True, False])
    got = UnprojectedEdges(base, keep).dual_prox(z, 0.45, radius)
    np.testing.assert_array_equal(got[keep, :4], z[keep, :4])
    np.testing.assert_array_equal(got[:, 4], 0.0)
    np.testing.assert_array_equal(got[~keep], base.dual_prox(z, 0.45, radius)[~keep])
    with pytest.raises(ValueError, match="mask over the 4 edges"):
        UnprojectedEdges(base, np.ones(3, bool)).dual_prox(z, 0.45, radius)


def test_ifca_initial_assignment_puts_every_client_in_cluster_zero_for_round_one():
    rng = np.random.default_rng(13)
    n, m, d, lr = 6, 5, 2, 0.1
    x = rng.standard_normal((n, m, d))
    y = rng.standard_normal((n, m))
    init = np.array([[1.0, -1.0], [5.0, 5.0]])
    res = ifca(linear_regression(d), ClientData.from_arrays(x, y, dtype=torch.float64), n_clusters=2, n_rounds=1, lr=lr,
               init=torch.as_tensor(init), initial_assignment=np.zeros(n, int), seed=0)
    grads = [2 / m * x[i].T @ (x[i] @ init[0] - y[i]) for i in range(n)]
    np.testing.assert_allclose(res.global_params.numpy()[0], init[0] - lr * np.mean(grads, axis=0), atol=1e-12)
    np.testing.assert_array_equal(res.global_params.numpy()[1], init[1])  # nobody trained it
    assert res.history[0]["cluster_sizes"] == [n, 0]
    with pytest.raises(ValueError, match="initial_assignment"):
        ifca(linear_regression(d), ClientData.from_arrays(x, y), n_clusters=2, n_rounds=1, lr=lr,
             init=torch.as_tensor(init), initial_assignment=np.full(n, 2), seed=0)


def test_mnist_targets_run_the_notebooks_algorithm_in_the_published_variant(repo):
    from networkedfl.pipeline.config import load_config

    config = load_config(repo / "config" / "config.yaml")
    for target in ("gtv_fig05_mnist_lambda", "gtv_fig06_mnist_methods", "gtv_fig07_mnist_five_clusters"):
        params = config["experiments"][target]
        pub = variant_params(params, "published")["methods"]["primal_dual"]
        assert pub["prox_scale"] == 0.0 and pub["dual_init"] == "weights", target
        assert pub["dual_update"] == "doubled_difference" and pub["dual_blocks"] == "per_layer", target
        paper = variant_params(params, "paper")["methods"]["primal_dual"]
        assert "dual_init" not in paper and paper.get("prox_scale", 1.0) == 1.0, target


def test_the_published_variants_skip_the_dual_projection_at_lambda_zero(repo):
    """Both MNIST notebooks at the named commit (6c3033e) project the duals only
    ``if lambda_lasso != 0`` (EXPERIMENTS.md §8 item 5): the published variants of Figs 5 and 7
    skip the projection at lambda = 0 (unbounded duals); the paper variants project (onto the
    ball of radius 0).  The two-cluster notebook projected at lambda = 0 before commit
    eb301c1, whose run printed the numbers of docs/printed.md."""
    from networkedfl.pipeline.config import load_config

    config = load_config(repo / "config" / "config.yaml")
    for target in ("gtv_fig05_mnist_lambda", "gtv_fig07_mnist_five_clusters"):
        pub = variant_params(config["experiments"][target], "published")["methods"]["primal_dual"]
        assert pub["project_at_zero_lambda"] is False, target
        paper = variant_params(config["experiments"][target], "paper")["methods"]["primal_dual"]
        assert paper.get("project_at_zero_lambda", True) is True, target
    # Fig. 6 runs lambda = 1 only, where the option cannot act: left out (the MNIST ablation,
    # which switches every option of Fig. 6's published variant, would run it for nothing)
    fig6 = variant_params(config["experiments"]["gtv_fig06_mnist_methods"], "published")["methods"]["primal_dual"]
    assert fig6["lam"] == [1.0] and "project_at_zero_lambda" not in fig6


def test_the_notebook_graphs_link_each_node_to_its_four_nearest(repo):
    """Both notebooks at 6c3033e build their graph with num_neig=4 (the two-cluster one in
    cell 23, whose run printed Fig. 5's and Fig. 6's Alg. 1 numbers, and in cell 31; its
    num_neig=3 is the code before commit eb301c1)."""
    from networkedfl.pipeline.config import load_config

    graphs = load_config(repo / "config" / "config.yaml")["mnist_graphs"]
    assert graphs["two_clusters_notebook"]["neighbours"] == graphs["five_clusters_notebook"]["neighbours"] == 4


def test_zero_hat_restart_draws_fresh_weights_where_w1_is_zero_and_keeps_the_rest():
    """The notebooks' optimiser: ``if np.sum(old_weight[0]) == 0`` the node's W1 and W2 are
    fresh U[0, 1) draws (biases kept); other rows reach the prox unchanged."""
    from networkedfl.experiments.gtv.mnist import ZeroHatRestart
    from networkedfl.nn import TwoLayerNetwork

    net = TwoLayerNetwork(4, 1, 2)   # W1: 4, W2: 2, b1: 1, b2: 2
    seen = []

    class Identity:
        dim = net.n_params

        def prox_operator(self, tau):
            return lambda w: seen.append(w) or w

    w_hat = np.full((4, net.n_params), 0.5)          # 2 replicas of 2 nodes
    w_hat[1, :4] = [0.0, 1.0, -1.0, 0.0]              # W1 sums to 0: restarted (the notebooks' test)
    w_hat[2, :4] = 0.0                                # all-zero W1 in replica 1
    loss = ZeroHatRestart(Identity(), 2, net.blocks["W1"], net.n_weights,
                          [np.random.default_rng(0), np.random.default_rng(1)])
    out = loss.prox_operator(np.ones(4))(w_hat)
    np.testing.assert_array_equal(out[[0, 3]], w_hat[[0, 3]])
    np.testing.assert_array_equal(out[1, :6], np.random.default_rng(0).random(6))
    np.testing.assert_array_equal(out[2, :6], np.random.default_rng(1).random(6))
    np.testing.assert_array_equal(out[[1, 2], 6:], w_hat[[1, 2], 6:])   # biases kept
    assert w_hat[2, 0] == 0.0 and loss.dim == net.n_params                 # input untouched; delegation


def test_published_variants_restart_an_all_zero_w_hat(repo):
    from networkedfl.pipeline.config import load_config

    config = load_config(repo / "config" / "config.yaml")
    for target in ("gtv_fig05_mnist_lambda", "gtv_fig06_mnist_methods", "gtv_fig07_mnist_five_clusters"):
        assert variant_params(config["experiments"][target], "published")["methods"]["primal_dual"][
            "restart_zero_hat"] is True, target
        assert not variant_params(config["experiments"][target], "paper")["methods"]["primal_dual"].get(
            "restart_zero_hat", False), target


def test_published_lambda_zero_couples_the_nodes_through_unbounded_duals(test_config, inputs_for):
    """The projection at lambda = 0 acts on the lambda = 0 replica alone: skipping it (the
    notebooks, the published variant) changes that curve and no other.  With the projection
    the largest |u| of lambda = 0 is that of the start (u = the initial weights, iteration 0):
    no dual step moves u off 0 afterwards; without it the duals grow past the start."""
    import copy

    setting = "published.primal_dual"
    inputs = inputs_for("gtv_fig05_mnist_lambda", setting=setting)
    projected_config = copy.deepcopy(test_config)
    projected_config["experiments"]["gtv_fig05_mnist_lambda"]["variants"]["published"]["methods"]["primal_dual"][
        "project_at_zero_lambda"] = True

    def curves(config):
        table = run_job(config, "gtv_fig05_mnist_lambda", setting, 0, inputs)
        acc = table[(table["metric"] == "accuracy") & table["iteration"].notna()]
        duals = table[table["metric"] == "max_abs_dual"].set_index("lam")["value"]
        return acc.pivot_table(index="iteration", columns="lam", values="value"), duals

    (projected, duals), (free, free_duals) = curves(projected_config), curves(test_config)
    assert not projected[0.0].equals(free[0.0])
    pd.testing.assert_frame_equal(projected.drop(columns=0.0), free.drop(columns=0.0))
    assert 0.5 < duals[0.0] <= 1.0 < free_duals[0.0]


def test_notebook_ifca_models_start_from_pytorch_default_draws_and_leave_cluster_zero(test_config, inputs_for):
    """The notebooks build every IFCA cluster model as a fresh nn.Linear network (small
    weights): after round 1 (everyone in cluster 0) an untrained model can win a node's
    least-loss choice.  From the shared U[0, 1) start an untrained model never does."""
    from networkedfl.nn import TwoLayerNetwork

    net = TwoLayerNetwork(784, 1, 2)
    draws = np.stack([net.linear_default_params(s) for s in range(400)])
    for name, (start, stop) in net.blocks.items():
        bound = 1 / np.sqrt(784 if name in ("W1", "b1") else 1)
        block = draws[:, start:stop]
        assert np.abs(block).max() <= bound and np.abs(block).max() > 0.95 * bound, name
        assert abs(block.mean()) < 0.05 * bound, name
    pub = variant_params(test_config["experiments"]["gtv_fig07_mnist_five_clusters"], "published")
    assert pub["methods"]["ifca"]["model_init"] == "torch_default"
    assert pub["methods"]["ifca"]["n_clusters"] == 2  # the notebook's (§8.10)
    paper = variant_params(test_config["experiments"]["gtv_fig07_mnist_five_clusters"], "paper")
    assert "model_init" not in paper["methods"]["ifca"] and paper["methods"]["ifca"]["n_clusters"] == 5


# ---------------------------------------------------------------- the quirk ablation

def test_ablation_switches_one_option_and_reuses_the_source_targets_streams(test_config):
    from networkedfl.experiments.gtv.ablation import ablation_switches, switched_params

    params = test_config["experiments"]["gtv_quirk_ablation"]
    case = params["cases"]["fig09"]
    switches = ablation_switches(case)
    assert switches[0] == "published" and switches[-1] == "paper"
    # every notebook option the published variant sets; not `solver`, which it pins (issue 36)
    assert "solver" in case["variants"]["published"] and "solver" not in switches
    assert set(switches[1:-1]) == set(case["variants"]["published"]) - {"solver"}
    published = variant_params(case, "published")
    moved = set()
    for switch in switches[1:-1]:
        p = switched_params(case, switch)
        changed = {k for k in set(p) | set(published) if p.get(k) != published.get(k)}
        assert changed <= {switch}, switch  # (the test profile sets n_iter alike in both)
        moved |= changed
    assert {"loss_scale", "label_noise", "step_degrees", "mocha_step", "graph_draw"} <= moved
    with pytest.raises(ValueError, match="no option"):
        switched_params(case, "loss_scal")
    # the ablation's published and paper rows, run again, are the source target's rows at the
    # same points (so the pipeline reads them from the source: test_gtv_ablation.py)
    source = "gtv_fig09_sbm_sampling"
    config = copy.deepcopy(test_config)
    config["experiments"]["gtv_quirk_ablation"]["ends_from_source"] = False
    abl = run_job(config, "gtv_quirk_ablation", "fig09.paper", 0)
    src = run_job(test_config, source, "paper.penalty-l1", 0)
    key = ["p_out", "M", "penalty", "metric"]
    a = abl[abl["penalty"] == "l1"].set_index(key)["value"]
    b = src.set_index(key)["value"].reindex(a.index)
    assert b.notna().all()
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())


def test_ablation_markdown_has_a_row_per_headline_number_and_a_column_per_switch(test_config):
    from networkedfl.pipeline.summary import ablation_markdown

    config = copy.deepcopy(test_config)
    config["experiments"]["gtv_quirk_ablation"]["ends_from_source"] = False  # run every switch here
    table = collect_tables([run_job(config, "gtv_quirk_ablation", s, 0)
                            for s in job_settings(config, "gtv_quirk_ablation")])
    text = ablation_markdown(table)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    header, body = rows[0], rows[1:]
    assert "| result | quantity | published" in header and "loss\\_scale → paper" in header
    assert header.rstrip(" |").endswith("paper")
    assert len(body) == 3 * 4 + 2  # fig09: 3 penalties x 4 grid points; table1: Alg. 1 and IFCA
    assert all(body_row.count("|") == header.count("|") for body_row in body)


def test_step_scan_with_c_1_repeats_fig6_paper_variant_and_c_scales_the_steps(test_config, inputs_for):
    scan = run_job(test_config, "gtv_mnist_step_scan", "all", 0, inputs_for("gtv_mnist_step_scan"))
    fig6 = run_job(test_config, "gtv_fig06_mnist_methods", "paper.all", 0,
                   inputs_for("gtv_fig06_mnist_methods", setting="paper.all"))
    key = ["iteration", "metric"]

    def curve(table, method):
        rows = table[(table["method"] == method) & table["iteration"].notna()]
        return rows.set_index(key)["value"].sort_index()

    pd.testing.assert_series_equal(curve(scan, "c_1"), curve(fig6, "primal_dual"), check_exact=True)
    assert not curve(scan, "c_100").equals(curve(scan, "c_1"))


def test_mnist_ablation_switches_nested_options_and_reuses_fig6_streams(test_config, inputs_for):
    from networkedfl.experiments.gtv.ablation import switched_params

    target = "gtv_quirk_ablation_mnist"
    case = test_config["experiments"][target]["cases"]["fig06"]
    p = switched_params(case, "methods.primal_dual.prox_scale")
    assert "prox_scale" not in p["methods"]["primal_dual"]  # the paper's default
    assert p["methods"]["primal_dual"]["dual_init"] == "weights"  # the other options stay
    inputs = inputs_for(target)
    assert set(inputs) == {"fig06_mnist", "fig06_graph_two_clusters_notebook", "fig06_graph_two_clusters"}
    abl = run_job(test_config, target, "fig06.published", 0, inputs)
    fig6 = run_job(test_config, "gtv_fig06_mnist_methods", "published.all", 0,
                   inputs_for("gtv_fig06_mnist_methods", setting="published.all"))
    key = ["method", "iteration", "metric"]

    def acc(table):
        rows = table[table["method"].isin(["primal_dual", "ifca"]) & table["iteration"].notna()]
        return rows.set_index(key)["value"].sort_index()

    pd.testing.assert_series_equal(acc(abl), acc(fig6), check_exact=True)


def test_mnist_seeds_solved_together_give_each_seed_its_records_alone(test_config, inputs_for):
    """A job's seeds are one solve (every seed, lambda and step scale a replica); a seed's
    records are those of the seed solved alone (bit for bit where every node holds a
    multiple of 32 images, as the default config's 400: tests/unit/nn; here 50, where
    torch's vector kernels leave a scalar tail whose exp/log may differ in the last bit),
    and the pipeline's one call per seed reads them from the job's first call."""
    import copy

    from networkedfl.experiments.gtv.mnist import job_seeds, load_problem, mnist_records, run_mnist
    from networkedfl.pipeline.runner import job_inputs

    target, setting = "gtv_fig05_mnist_lambda", "published.primal_dual"
    params = variant_params(test_config["experiments"][target], "published")
    problem = load_problem(params, inputs_for(target, setting=setting))
    together = mnist_records(problem, params, ["primal_dual"], [0, 1, 2], 7, target)
    alone = mnist_records(problem, params, ["primal_dual"], [2], 7, target)
    pd.testing.assert_frame_equal(pd.DataFrame(together[2]), pd.DataFrame(alone[2]), rtol=1e-9)
    assert not pd.DataFrame(together[0])["value"].equals(pd.DataFrame(together[2])["value"])
    many = {**copy.deepcopy(params), "repetitions": 3}
    assert job_seeds(many, 2) == [0, 1, 2] and job_seeds(many, 5) == [5]
    inputs = inputs_for(target, setting=setting)
    table = run_mnist(many, "primal_dual", 2, 7, inputs=inputs, experiment_id=target)
    pd.testing.assert_frame_equal(table, pd.DataFrame(alone[2]), rtol=1e-9)
    assert set(job_inputs(test_config, target, setting)) == {"mnist", "graph"}


@pytest.mark.parametrize("variant", ["published", "paper"])
def test_mnist_records_neither_draw_from_nor_depend_on_torchs_global_generator(test_config, inputs_for, variant):
    """Issue 43 item 3: every method of Fig. 6 (Alg. 1, IFCA with the notebooks' nn.Linear
    starts, pFedMe, local SGD, FedAvg) draws from its own stream. The records after
    ``torch.manual_seed(0)`` (what mnist_records did itself before) are those after any other
    global state, bit for bit, and the run leaves the global state as it found it: dropping
    the global seed changes no number."""
    import torch

    from networkedfl.experiments.gtv.mnist import load_problem, mnist_records

    target = "gtv_fig06_mnist_methods"
    params = variant_params(test_config["experiments"][target], variant)
    problem = load_problem(params, inputs_for(target, setting=f"{variant}.all"))
    methods = list(params["methods"])
    runs = []
    for global_seed in (0, 12345):
        torch.manual_seed(global_seed)
        state = torch.random.get_rng_state()
        runs.append(pd.DataFrame(mnist_records(problem, params, methods, [0, 1], 7, target)[1]))
        assert torch.equal(torch.random.get_rng_state(), state), "a method drew from torch's global generator"
    pd.testing.assert_frame_equal(runs[0], runs[1], check_exact=True)
    assert set(runs[0]["method"]) == set(methods) and "ifca" in methods
