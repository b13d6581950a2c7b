"""The tuning protocol (issue 17): grid, selection, validation splits, config checks, and
the reference bounds it is read against (grouped FedAvg: local and cluster oracle)."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from networkedfl.experiments.tuning import (
    apply_overrides,
    evaluate_point,
    grid_points,
    point_label,
    select_point,
    split_clients,
    split_ragged,
    tuned_params,
    tuning_params,
    tuning_rows,
)

PARAMS = {
    "repetitions": 5,
    "methods": ["fedavg", "bigfl", "mean"],
    "lr": 0.5,
    "rounds": 30,
    "bigfl": {"lam": 0.1, "kappa": 0.01},
    "tuning": {"validation_fraction": 0.25, "seeds": [0, 1], "overrides": {"rounds": 5},
               "grid": {"fedavg": {"lr": [0.1, 1.0]},
                        "bigfl": {"lr": [0.1, 1.0, 10.0], "bigfl.lam": [0.01, 1.0]}}},
}


def _scores(setting, values):
    """Tuning tables of ``setting`` whose point ``k`` scores ``values[k]`` (two seeds)."""
    return [pd.DataFrame({"method": setting, "tuning_point": k, "tuning_values": "x", "seed": [0, 1],
                          "metric": "tuning_validation_loss", "value": [v, v]})
            for k, v in enumerate(values)]


def test_grid_is_the_cartesian_product_in_config_order():
    points = grid_points(PARAMS, "bigfl")
    assert points == [{"lr": a, "bigfl.lam": b} for a in (0.1, 1.0, 10.0) for b in (0.01, 1.0)]
    assert grid_points(PARAMS, "mean") == []  # untuned: no points
    assert point_label(points[1]) == "lr=0.1, bigfl.lam=1"


def test_tuning_run_params_apply_overrides_point_and_validation_and_leave_the_target_alone():
    run = tuning_params(PARAMS, "bigfl", 3)
    assert run["lr"] == 1.0 and run["bigfl"] == {"lam": 1.0, "kappa": 0.01}
    assert run["rounds"] == 5 and run["validation_fraction"] == 0.25 and "tuning" not in run
    assert run["methods"] == ["bigfl"] and "repetitions" not in run  # adding either reruns no tuning
    assert PARAMS["bigfl"]["lam"] == 0.1 and PARAMS["rounds"] == 30
    with pytest.raises(ValueError, match="6 tuning points"):
        tuning_params(PARAMS, "bigfl", 6)


def test_an_override_of_a_missing_block_names_the_path():
    with pytest.raises(KeyError, match="'fesem.lam' does not exist"):
        apply_overrides(PARAMS, {"fesem.lam": 1.0}, where="tuning.grid.fesem")


def test_selection_takes_the_lowest_finite_score_and_the_first_on_ties():
    assert select_point(PARAMS, "fedavg", _scores("fedavg", [2.0, 1.0])) == 1
    assert select_point(PARAMS, "fedavg", _scores("fedavg", [math.inf, 3.0])) == 1
    assert select_point(PARAMS, "fedavg", _scores("fedavg", [1.0, 1.0])) == 0
    assert select_point(PARAMS, "bigfl", _scores("bigfl", [5, 4, math.nan, 4, 6, 7])) == 1


def test_a_fully_diverged_grid_or_missing_points_stop_with_the_method_named():
    with pytest.raises(ValueError, match="fedavg: every point of its tuning grid diverged"):
        select_point(PARAMS, "fedavg", _scores("fedavg", [math.inf, math.inf]))
    with pytest.raises(ValueError, match="grid has 2"):
        select_point(PARAMS, "fedavg", _scores("fedavg", [1.0]))
    with pytest.raises(ValueError, match="no tuning results"):
        tuned_params(PARAMS, "fedavg", None)


def test_tuned_params_and_table_rows_carry_the_chosen_point():
    tables = _scores("bigfl", [5, 4, 3, 9, 9, 9])
    tuned = tuned_params(PARAMS, "bigfl", tables)
    assert tuned["lr"] == 1.0 and tuned["bigfl"]["lam"] == 0.01
    assert tuned_params(PARAMS, "mean", None) == dict(PARAMS)
    rows = tuning_rows(PARAMS, "bigfl", tables)
    assert rows["metric"].str.startswith("tuning_").all()
    losses = rows[rows["metric"] == "tuning_validation_loss"]
    assert list(losses["value"]) == [5, 4, 3, 9, 9, 9] and losses["tuning_values"].nunique() == 6
    chosen = rows[rows["metric"] == "tuning_chosen"].set_index("tuning_param")["value"]
    assert chosen.to_dict() == {"lr": 1.0, "bigfl.lam": 0.01}


def test_evaluate_point_scores_the_final_validation_round_and_divergence_as_inf():
    seen = []

    def run(params, setting, seed, base_seed):
        seen.append((params["lr"], params["validation_fraction"], seed))
        value = math.nan if params["lr"] > 5 else params["lr"] + seed
        return pd.DataFrame({"method": "FedAvg", "round": [0, 5, 5], "metric":
                             ["validation_loss", "validation_loss", "test_loss"], "value": [99.0, value, -1.0]})

    spec = {"params": tuning_params(PARAMS, "bigfl", 2), "seeds": [0, 1], "point": 2, "label": "p"}
    table = evaluate_point(run, spec, "bigfl", 7)
    assert list(table["value"]) == [1.0, 2.0] and seen == [(1.0, 0.25, 0), (1.0, 0.25, 1)]
    spec = {"params": tuning_params(PARAMS, "bigfl", 4), "seeds": [0], "point": 4, "label": "p"}
    assert evaluate_point(run, spec, "bigfl", 7)["value"].tolist() == [math.inf]


def test_validation_splits_are_disjoint_per_client_and_seeded():
    x = np.arange(3 * 10 * 2).reshape(3, 10, 2).astype(float)
    y = x[..., 0] * 10
    (xt, yt), (xv, yv) = split_clients(np.random.default_rng(0), 0.3, x, y)
    assert xt.shape == (3, 7, 2) and xv.shape == (3, 3, 2)
    for i in range(3):
        rows = {tuple(r) for r in np.concatenate([xt[i], xv[i]])}
        assert rows == {tuple(r) for r in x[i]}           # a partition of the client's own rows
        np.testing.assert_array_equal(yv[i], xv[i][:, 0] * 10)  # inputs and targets stay paired
    again = split_clients(np.random.default_rng(0), 0.3, x, y)
    np.testing.assert_array_equal(again[1][0], xv)
    blocks = [np.arange(n)[:, None] for n in (5, 10, 20)]
    train, valid = split_ragged(np.random.default_rng(1), 0.2, blocks)
    assert [len(v) for v in valid] == [1, 2, 4] and [len(t) for t in train] == [4, 8, 16]
    assert all(np.all(np.diff(t[:, 0]) > 0) for t in train)  # original order kept
    with pytest.raises(ValueError, match="holds out 0 of 3"):
        split_ragged(np.random.default_rng(1), 0.1, [np.arange(3)])


def test_config_checks_name_the_grid_method_and_the_bad_point(test_config, schema_path):
    from networkedfl.pipeline.config import ConfigError, validate_config

    config = {**test_config, "experiments": dict(test_config["experiments"])}
    target = dict(config["experiments"]["gfl_fig10_3_synthetic"])
    config["experiments"]["gfl_fig10_3_synthetic"] = target
    target["tuning"] = {"validation_fraction": 0.2, "grid": {"ifca": {"lr": [0.1]}}}
    with pytest.raises(ConfigError, match=r"methods \['ifca'\] are not in the target's methods"):
        validate_config(config, schema_path)
    target["tuning"] = {"validation_fraction": 0.2, "grid": {"fedavg": {"lr": [0.1, -1.0]}}}
    with pytest.raises(ConfigError, match=r"\['grid'\]\['fedavg'\], point 1 .*\['lr'\]"):
        validate_config(config, schema_path)
    target["tuning"] = {"validation_fraction": 0.2, "grid": {"bigfl": {"bigfl.lamm": [0.1]}}}
    with pytest.raises(ConfigError, match="lamm"):
        validate_config(config, schema_path)
    target["tuning"] = {"validation_fraction": 1.5, "grid": {}}
    with pytest.raises(ConfigError, match="validation_fraction"):
        validate_config(config, schema_path)


# ------------------------------------------------------------ grouped FedAvg (references)

def _least_squares_clients(n=6, m=12, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, m, d))
    y = x @ rng.standard_normal((n, d)).T[:, :, None].reshape(n, d, 1)
    return x, y[..., 0]


def _linear():
    from networkedfl.experiments.gfl.synthetic import mlp

    return mlp([3, 1], activation="relu", bias=False, loss="squared")


def test_grouped_fedavg_equals_fedavg_run_on_every_group_alone():
    """groups = true clusters is FedAvg on each cluster's data (the cluster oracle);
    groups = arange(n) is local training.  Full batch: no sampling, exact comparison."""
    from networkedfl.algorithms import fedavg_steps
    from networkedfl.nn import ClientBatches

    x, y = _least_squares_clients()
    model, init = _linear(), torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64)
    kw = {"n_rounds": 4, "local_steps": 3, "lr": 0.05, "batch_size": None, "init": init,
          "seed": 0, "dtype": torch.float64}
    groups = np.array([2, 0, 2, 1, 0, 2])
    out = fedavg_steps(model, ClientBatches.from_arrays(x, y, dtype=torch.float64), groups=groups, **kw)
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        alone = fedavg_steps(model, ClientBatches.from_arrays(x[members], y[members], dtype=torch.float64), **kw)
        torch.testing.assert_close(out.client_params[members], alone.client_params, rtol=1e-12, atol=1e-12)
    local = fedavg_steps(model, ClientBatches.from_arrays(x, y, dtype=torch.float64), groups=np.arange(6), **kw)
    first = fedavg_steps(model, ClientBatches.from_arrays(x[:1], y[:1], dtype=torch.float64), **kw)
    torch.testing.assert_close(local.client_params[0], first.client_params[0], rtol=1e-12, atol=1e-12)
    assert not torch.allclose(local.client_params[0], local.client_params[1])
    assert out.global_params.shape == (3, 3)


def test_grouped_fedavg_rejects_a_wrong_group_vector():
    from networkedfl.algorithms import fedavg_steps
    from networkedfl.nn import ClientBatches

    x, y = _least_squares_clients()
    with pytest.raises(ValueError, match="groups must be 6 non-negative integers"):
        fedavg_steps(_linear(), ClientBatches.from_arrays(x, y), n_rounds=1, local_steps=1, lr=0.1,
                     batch_size=None, seed=0, groups=np.array([0, 1]))


# ------------------------------------------------------------------ successive halving

HALVED = {**PARAMS, "tuning": {**PARAMS["tuning"], "overrides": {"rounds": 27},
                               "halving": {"eta": 3, "horizon": "rounds"}}}


def _spec(params, setting="bigfl", point=0):
    from networkedfl.experiments.tuning import point_spec

    return point_spec(params, setting, point)


def test_halving_rungs_divide_the_horizon_by_eta_per_halving():
    from networkedfl.experiments.tuning import halving_rungs

    assert halving_rungs(_spec(PARAMS), 6) == [None]  # no halving: the runs' own horizon
    assert halving_rungs(_spec(HALVED), 1) == [27]
    assert halving_rungs(_spec(HALVED), 2) == [27]  # fewer than eta points: nothing to halve
    assert halving_rungs(_spec(HALVED), 3) == [27]  # 3 at 9 + 2 at 27 cost the 3 runs of the grid
    assert halving_rungs(_spec(HALVED), 4) == [9, 27]
    assert halving_rungs(_spec(HALVED), 9) == [3, 9, 27]
    assert halving_rungs(_spec(HALVED), 18) == [3, 9, 27]
    assert halving_rungs(_spec(HALVED), 27) == [1, 3, 9, 27]
    short = {**HALVED, "tuning": {**HALVED["tuning"], "overrides": {"rounds": 4},
                                  "halving": {"eta": 3, "horizon": "rounds", "min_horizon": 2}}}
    assert halving_rungs(_spec(short), 27) == [2, 4]  # rungs below min_horizon merge


def test_a_method_listed_in_whole_grid_runs_the_whole_grid():
    """``halving.whole_grid``: the methods whose halving chose another point than their whole
    grid (bench_tuning) run every point to the full horizon; the others still halve."""
    from networkedfl.experiments.tuning import halving_rungs

    listed = {**HALVED, "tuning": {**HALVED["tuning"],
                                   "halving": {**HALVED["tuning"]["halving"], "whole_grid": ["bigfl"]}}}
    assert halving_rungs({**_spec(listed), "setting": "bigfl"}, 27) == [27]
    assert halving_rungs({**_spec(listed), "setting": "fesem"}, 27) == [1, 3, 9, 27]
    assert halving_rungs({**_spec(HALVED), "setting": "bigfl"}, 27) == [1, 3, 9, 27]


def test_whole_grid_names_methods_of_the_grid(test_config, schema_path):
    from networkedfl.pipeline.config import ConfigError, validate_config

    config = {**test_config, "experiments": dict(test_config["experiments"])}
    target = dict(config["experiments"]["gfl_fig10_3_synthetic"])
    config["experiments"]["gfl_fig10_3_synthetic"] = target
    target["tuning"] = {"validation_fraction": 0.2, "grid": {"fedavg": {"lr": [0.1, 0.3]}},
                        "halving": {"horizon": "rounds", "whole_grid": ["bigfl"]}}
    with pytest.raises(ConfigError, match=r"\['halving'\]\['whole_grid'\]: \['bigfl'\] have no tuning grid"):
        validate_config(config, schema_path)

def test_halving_cost_counts_every_rung_and_falls_back_to_the_grid_when_not_cheaper():
    from networkedfl.experiments.tuning import grid_cost, halving_cost, halving_rungs, rung_sizes

    assert rung_sizes(3, 27, 3) == [27, 9, 3] and rung_sizes(2, 3, 3) == [3, 2] and rung_sizes(2, 7, 3) == [7, 3]
    # 9 points at 3, 3 at 9, 2 at 27 rounds: 1 + 1 + 2 full runs; with a fixed cost o per run
    # (a fraction of a full run) every run adds o and its rounds cost (1 - o) as much
    assert halving_cost([3, 9, 27], 9, 3) == pytest.approx(4.0)
    assert halving_cost([3, 9, 27], 9, 3, 0.5) == pytest.approx(14 * 0.5 + 0.5 * 4.0)
    assert halving_cost([9, 27], 3, 3) == pytest.approx(3.0) == grid_cost(3)
    assert halving_cost([9, 27], 7, 3, 0.3) == pytest.approx(10 * 0.3 + 0.7 * (7 / 3 + 3))
    overhead = {**HALVED, "tuning": {**HALVED["tuning"], "halving": {**HALVED["tuning"]["halving"], "overhead": 0.5}}}
    assert halving_rungs(_spec(overhead), 9) == [27]  # 14 runs: 7 + 0.5 * 4 = 9, the grid's 9
    assert halving_rungs(_spec(overhead), 7) == [27]  # 5 + 0.5 * 16/3 = 7.67 >= 7: the whole grid
    assert halving_rungs(_spec(overhead), 27) == [1, 3, 9, 27]
    for n in range(1, 60):  # never dearer than the grid, whatever the overhead
        for o in (0.0, 0.2, 0.5, 0.9):
            spec = {**HALVED, "tuning": {**HALVED["tuning"], "halving": {**HALVED["tuning"]["halving"], "overhead": o}}}
            rungs = halving_rungs(_spec(spec), n)
            assert rungs[-1] == 27 and halving_cost(rungs, n, 3, o) <= grid_cost(n) + 1e-12
    bad = {**HALVED, "tuning": {**HALVED["tuning"], "halving": {**HALVED["tuning"]["halving"], "overhead": 1.0}}}
    with pytest.raises(ValueError, match="overhead must lie in"):
        halving_rungs(_spec(bad), 9)


def test_halving_names_a_bad_horizon():
    from networkedfl.experiments.tuning import halving_rungs

    bad = {**HALVED, "tuning": {**HALVED["tuning"], "halving": {"horizon": "epochs"}}}
    with pytest.raises(KeyError, match="no parameter 'epochs'"):
        halving_rungs(_spec(bad), 9)
    bad = {**HALVED, "tuning": {**HALVED["tuning"], "halving": {"horizon": "bigfl"}}}
    with pytest.raises(ValueError, match="not a positive number of rounds"):
        halving_rungs(_spec(bad), 9)


def test_survivors_are_the_best_third_in_grid_order_diverged_last():
    from networkedfl.experiments.tuning import survivors

    assert survivors({0: 3.0, 1: 1.0, 2: 2.0, 3: 0.5, 4: math.inf, 5: 9.0}, 3) == [1, 3]
    assert survivors({k: float(k) for k in range(9)}, 3) == [0, 1, 2]
    assert survivors({0: 3.0, 1: 1.0, 2: 2.0}, 3) == [1, 2]  # at least two reach the full horizon
    assert survivors({0: 3.0, 1: 1.0, 2: 2.0}, 3, least=1) == [1]
    assert survivors({0: math.inf, 1: math.inf, 2: math.inf}, 3) == [0, 1]
    assert survivors({0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0}, 3) == [0, 1]  # ties: grid order


def test_at_horizon_keeps_the_full_horizon_run_identical_to_the_unhalved_one():
    from networkedfl.experiments.tuning import at_horizon

    spec = _spec(HALVED, point=3)
    assert at_horizon(spec, 9)["params"]["rounds"] == 9 and "halving" not in at_horizon(spec, 9)
    plain = _spec({**HALVED, "tuning": {k: v for k, v in HALVED["tuning"].items() if k != "halving"}}, point=3)
    assert at_horizon(spec, 27) == plain  # the full rung is the grid's own run (same cache key)


def test_selection_reads_the_last_rung_only():
    tables = [pd.DataFrame({"method": "fedavg", "tuning_point": k, "tuning_values": "x", "seed": [0],
                            "tuning_rung": rung, "tuning_horizon": horizon,
                            "metric": "tuning_validation_loss", "value": value})
              for k, rung, horizon, value in [(0, 0, 3, 0.1), (1, 0, 3, 0.5), (1, 1, 9, 0.4)]]
    # point 0 was best on the first rung but never ran the full horizon (a constructed case)
    assert select_point(PARAMS, "fedavg", tables) == 1
    rows = tuning_rows(PARAMS, "fedavg", tables)
    losses = rows[rows["metric"] == "tuning_validation_loss"]
    assert losses[["tuning_point", "tuning_rung", "tuning_horizon", "value"]].values.tolist() == [
        [0, 0, 3, 0.1], [1, 0, 3, 0.5], [1, 1, 9, 0.4]]
