"""Experiment registry and jobs: determinism, independence of batching, tidy output."""

import numpy as np
import pandas as pd
import pytest

from networkedfl.experiments import EXPERIMENTS, get_experiment, rng_for
from networkedfl.experiments.gtv.linear import build_instance, grid_points
from networkedfl.pipeline.runner import (
    collect_tables,
    evaluate_claims,
    job_settings,
    run_job,
    seeds,
)


def test_unknown_target_is_named():
    with pytest.raises(KeyError, match="gtv_fig99"):
        get_experiment("gtv_fig99")


def test_rng_streams_depend_on_every_key():
    draw = lambda *a: rng_for(*a).standard_normal(4)  # noqa: E731
    assert np.array_equal(draw(1, "x", 0, {"a": 1}), draw(1, "x", 0, {"a": 1}))
    for other in [(2, "x", 0, {"a": 1}), (1, "y", 0, {"a": 1}), (1, "x", 1, {"a": 1}), (1, "x", 0, {"a": 2})]:
        assert not np.array_equal(draw(1, "x", 0, {"a": 1}), draw(*other))


def test_instances_do_not_depend_on_the_penalty_job(test_config):
    """Penalties of one seed see the same graphs and data (paired comparison)."""
    target = "gtv_fig09_sbm_sampling"
    params = test_config["experiments"][target]
    point = grid_points(params)[1]
    a = build_instance(params, point, rng_for(test_config["base_seed"], target, 0, point))
    b = build_instance(params, point, rng_for(test_config["base_seed"], target, 0, point))
    assert np.array_equal(a.graph.edges, b.graph.edges)
    assert np.array_equal(a.data.labels, b.data.labels)
    assert np.array_equal(a.mask, b.mask)
    tables = [run_job(test_config, target, s, 0) for s in job_settings(test_config, target)]
    assert sorted(pd.concat(tables)["penalty"].unique()) == ["l1", "mocha", "nlasso"]


def test_grid_covers_the_product_of_values(test_config):
    params = test_config["experiments"]["gtv_fig03_chain_sampling"]
    points = grid_points(params)
    sizes = [len(v) for v in params["grid"].values()]
    assert len(points) == int(np.prod(sizes))
    assert len({tuple(sorted(p.items())) for p in points}) == len(points)


def test_claims_are_evaluated_on_a_collected_table(test_config):
    target = "gtv_fig12_star_graph"
    table = collect_tables([run_job(test_config, target, s, seed)
                            for s in job_settings(test_config, target) for seed in seeds(test_config, target)])
    claims = evaluate_claims(test_config, target, table)
    assert claims and all({"claim", "verdict", "kind", "n_seeds", "interval", "detail"} <= set(c) for c in claims)
    assert all(c["verdict"] == "holds" and c["interval_method"].startswith("exact") for c in claims)
    # A star with one edge removed breaks the claim: the claims really read the table.
    broken = table.drop(table[(table["element"] == "edge")].index[:1])
    assert [c["verdict"] for c in evaluate_claims(test_config, target, broken)][0] == "fails"


def test_an_empty_table_is_an_error_not_a_verdict(test_config):
    """Issue 45: no rows is a broken pipeline, not a claim of the paper that fails."""
    with pytest.raises(ValueError, match="gtv_fig03_chain_sampling.*no rows"):
        evaluate_claims(test_config, "gtv_fig03_chain_sampling", pd.DataFrame({"metric": [], "value": []}))


def test_an_exception_in_claim_code_propagates_and_gives_no_verdict(test_config, monkeypatch):
    """Issue 45: an error inside a claims function is raised with its traceback, never
    turned into a claim with verdict "fails"."""
    import dataclasses

    import networkedfl.pipeline.runner as runner

    target = "gtv_fig12_star_graph"
    table = collect_tables([run_job(test_config, target, s, 0) for s in job_settings(test_config, target)])

    def broken_claims(table, params):
        raise ZeroDivisionError("a bug in the claim code")

    experiment = dataclasses.replace(get_experiment(target), claims=broken_claims)
    monkeypatch.setattr(runner, "get_experiment", lambda name: experiment)
    with pytest.raises(ZeroDivisionError, match="a bug in the claim code") as caught:
        evaluate_claims(test_config, target, table)
    assert any(entry.name == "broken_claims" for entry in caught.traceback)  # the traceback is kept


# ------------------------------------------------------------- Table I / Fig. 2, lecture


def _highdim_params(**extra):
    return {"graph": "sbm", "cluster_size": 6, "p_in": 0.9, "m": 3,
            "cluster_weights": {"bernoulli": 0.5, "scale": 0.5, "dim": 7}, "n_unsampled": 2,
            "lam": {"l1": 0.01}, "n_iter": 10,
            "n_iter_overrides": [{"n_clusters": [5, 10], "n_iter": 20}],
            "grid": {"p_out": [0.0], "sigma": [0.0], "n_clusters": [2, 5]}, **extra}


def test_equal_clusters_random_weights_and_last_nodes_unsampled():
    from networkedfl.experiments.gtv.linear import n_iter_for

    params = _highdim_params()
    inst = build_instance(params, {"p_out": 0.0, "sigma": 0.0, "n_clusters": 3}, np.random.default_rng(4))
    assert inst.graph.n_nodes == 18 and np.bincount(inst.graph.clusters).tolist() == [6, 6, 6]
    assert inst.mask.tolist() == [True] * 16 + [False] * 2
    # Bernoulli(0.5) x 0.5 entries, constant within a cluster, d from the spec
    assert inst.true_weights.shape == (18, 7)
    assert set(np.unique(inst.true_weights)) <= {0.0, 0.5}
    for c in range(3):
        block = inst.true_weights[inst.graph.clusters == c]
        assert np.all(block == block[0])
    assert [n_iter_for(params, {"n_clusters": k}) for k in (2, 4, 5, 10)] == [10, 10, 20, 20]


def test_baseline_registry_runs_every_method_on_a_small_instance():
    from networkedfl.experiments.gtv.linear import BASELINES

    params = _highdim_params(ifca={"rounds": 30, "lr": 0.1})
    inst = build_instance(params, {"p_out": 0.0, "sigma": 0.0, "n_clusters": 2}, np.random.default_rng(5))
    for name, baseline in BASELINES.items():
        predictions, weights = baseline(inst, params, np.random.default_rng(0))
        assert predictions.shape == inst.data.labels.shape, name
        assert weights is None or weights.shape == inst.true_weights.shape, name
    # the cluster oracle fits each cluster's pooled data of M exactly when it is noiseless
    # and has more samples than dimensions (6 nodes x 3 samples >= 7 features)
    _, oracle = BASELINES["oracle"](inst, params, np.random.default_rng(0))
    np.testing.assert_allclose(oracle, inst.true_weights, atol=1e-8)


def test_ring_graph():
    from networkedfl.graphs import GraphError, ring

    g = ring(6)
    assert g.n_edges == 6 and np.all(g.degrees == 2) and g.is_connected
    with pytest.raises(GraphError, match="at least 3"):
        ring(2)


def test_lecture_table_claims_detect_a_changed_cell():
    from networkedfl.experiments.lecture.claims import lecture_table_claims

    table = run_job({"base_seed": 1, "experiments": {"lecture_table1_fedsgd_fedavg": {"repetitions": 1}}},
                    "lecture_table1_fedsgd_fedavg", "all", 0)
    claims = lecture_table_claims(table, {})
    assert [c.passed for c in claims] == [True] and "verbatim" not in claims[0].claim  # issue 40
    broken = table.copy()
    broken.loc[(broken["method"] == "FedSGD") & (broken["metric"] == "run_log_upload"), "value"] = "models"
    assert not any(c.passed for c in lecture_table_claims(broken, {}))


def test_a_job_whose_input_files_are_missing_names_them(test_config, tmp_path, monkeypatch):
    readers = [t for t in EXPERIMENTS if get_experiment(t).inputs is not None]
    assert readers, "no registered target reads data"
    target = readers[0]
    monkeypatch.chdir(tmp_path)  # no data/raw here
    with pytest.raises(FileNotFoundError, match=f"{target} reads files that do not exist: data/raw/"):
        run_job(test_config, target, job_settings(test_config, target)[0], 0)


def test_gallery_is_a_report_in_the_papers_order_with_tables_and_a_summary():
    """The gallery: a summary of verdicts per paper and variant, then every target of a paper
    in the paper's order (a figure linked at full size, a table as a table), its verdicts and
    scale; a "|" in a title (|C2|) must not open a new table cell."""
    from networkedfl.experiments.claims import below, claim, exact
    from networkedfl.pipeline.summary import gallery_markdown, summarize_claims

    noisy = claim("c", below("x", [1.0, 2.0, 1.5], [1.1, 1.9, 1.6])).as_dict()
    claims = {
        "gtv_table1_highdim_sbm": [exact("t", True, "").as_dict()],
        "gtv_fig03_chain_sampling": [{**noisy, "variant": "published"}, {**noisy, "variant": "paper"}],
        "gtv_fig11_unbalanced": [exact("u", False, "").as_dict(), exact("[reference] r", True, "").as_dict()],
    }
    params = {t: {"repetitions": 5} for t in claims}
    table = pd.DataFrame({"method": ["Alg. 1", "FedAvg"], "label MSE": [0.1234567, 2.0]})
    page = gallery_markdown(summarize_claims(claims), params, {"gtv_table1_highdim_sbm": table},
                            notebooks={t: f"notebooks/{t}.ipynb" for t in claims})
    assert "|C2|" in get_experiment("gtv_fig11_unbalanced").title
    summary = page.split("## Summary", 1)[1].split("## ", 1)[0]
    # the headline counts the statistical claims; the two exact checks count apart (one fails)
    assert "| GTV paper | published | 1 | 0 | 0 | 0 | 1 | 0 % | 0 | 0 |" in summary
    assert "| **all** | | **2** | **0** | **0** | **0** | **2** | **0 %** | **2** | **0** | |" in summary
    assert ("2 statistical paper claims: 0 hold, 0 equivalent, 0 fail, 2 inconclusive (0 % decided); plus "
            "2 fixed checks (1 fail), 0 every-seed properties and 1 reference and diagnostic checks") in summary
    order = [page.index(f"`{t}` ·") for t in ("gtv_table1_highdim_sbm", "gtv_fig03_chain_sampling",
                                              "gtv_fig11_unbalanced")]
    assert order == sorted(order)  # Table I, Fig. 3, Fig. 11: the paper's order
    assert "| Alg. 1 | 0.1235 |" in page  # the table, as a table
    assert "[![gtv_fig03_chain_sampling](gtv_fig03_chain_sampling.png)](gtv_fig03_chain_sampling.png)" in page
    assert "[notebook](notebooks/gtv_fig11_unbalanced.ipynb)" in page
    assert "**Scale of this run**: 5 seeds" in page
    heading = next(line for line in page.splitlines() if line.startswith("### ") and "C2" in line)
    assert "\\|C2\\|" in heading
    rows = [line for line in page.splitlines() if line.startswith("| `published`") or line.startswith("| claims")]
    assert all(line.replace("\\|", "").count("|") == 4 for line in rows), rows


def test_scale_line_shows_the_values_plotted():
    """Issue 41: the step scan's ``methods.c_*.n_iter`` read every method (was "n/a"); a
    tuned parameter shows the chosen values per method, not the config's untuned default."""
    from networkedfl.pipeline.summary import chosen_points, scale_line

    params = {"repetitions": 3, "methods": {f"c_{c}": {"n_iter": 50} for c in (1, 3, 10)}}
    line = scale_line("gtv_mnist_step_scan", params)
    assert "methods.c_*.n_iter = 50 (paper: 70" in line and "n/a" not in line
    mixed = {"repetitions": 3, "methods": {"c_1": {"n_iter": 50}, "c_3": {"n_iter": 70}}}
    assert "{'c_1': 50, 'c_3': 70}" in scale_line("gtv_mnist_step_scan", mixed)
    tuning = pd.DataFrame([
        {"method": m, "tuning_point": k, "tuning_values": f"lr_scale={v}", "metric": "tuning_validation_loss",
         "value": 1.0 + k} for m in ("FedAvg", "DFL-SGD") for k, v in enumerate([0.05, 0.5])]
        + [{"method": "FedAvg", "tuning_point": 1, "metric": "tuning_chosen", "value": 1.0},
           {"method": "DFL-SGD", "tuning_point": 0, "metric": "tuning_chosen", "value": 1.0}])
    chosen = chosen_points(tuning)
    assert chosen == {"FedAvg": "lr_scale=0.5", "DFL-SGD": "lr_scale=0.05"}
    line = scale_line("gfl_fig10_1_dfl", {"repetitions": 5, "lr_scale": 0.15}, chosen)
    assert "lr_scale = tuned per method: FedAvg lr_scale=0.5, DFL-SGD lr_scale=0.05 (paper: 15" in line
    assert "0.15" not in line


@pytest.mark.parametrize("target", ["fedrelax_fig02a_trees_dm", "fedrelax_fig04_noniid_trees"])
def test_tree_runs_in_worker_processes_give_the_table_of_one_process(test_config, monkeypatch, target):
    """``threads: 2`` sends a repetition's runs (grid point x alpha) to two worker processes:
    the same table, value for value (both normalisations: by the Oracle and by alpha = 0),
    as one process; the workers were asked for."""
    from sklearn.utils import parallel

    config = {**test_config, "experiments": dict(test_config["experiments"])}
    one = run_job(config, target, "all", 0)
    calls = []
    original = parallel.Parallel.__init__

    def spy(self, *args, **kwargs):
        calls.append(kwargs.get("n_jobs"))
        original(self, *args, **kwargs)

    monkeypatch.setattr(parallel.Parallel, "__init__", spy)
    config["experiments"][target] = {**config["experiments"][target], "threads": 2}
    two = run_job(config, target, "all", 0)
    assert calls == [2]
    assert set(one["metric"]) >= {"mse_val", "mse_val_ratio"}
    pd.testing.assert_frame_equal(one, two, check_exact=True)


def test_a_targets_checks_apart_are_counted_in_english():
    """The gallery's per-target line: "2 every-seed properties", not "propertys"; one of each
    in the singular."""
    from types import SimpleNamespace

    from networkedfl.pipeline.summary import _apart

    two = SimpleNamespace(fixed=2, fixed_fail=1, every_seed=2, every_seed_fail=2)
    assert _apart(two) == ["2 fixed checks (1 fail)", "2 every-seed properties (2 fail)"]
    one = SimpleNamespace(fixed=1, fixed_fail=0, every_seed=1, every_seed_fail=0)
    assert _apart(one) == ["1 fixed check", "1 every-seed property"]
    assert _apart(SimpleNamespace(fixed=0, fixed_fail=0, every_seed=0, every_seed_fail=0)) == ["", ""]
