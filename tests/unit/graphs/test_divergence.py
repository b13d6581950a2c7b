"""Non-finite parameters stop a run with an error naming the round and the clients (issue 19
item 4); the tuning protocol scores such a run ``inf`` instead of failing."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from networkedfl.algorithms import NonFiniteError, dfl_sgd, fedavg, local_training
from networkedfl.experiments.tuning import evaluate_point
from networkedfl.graphs import ring
from networkedfl.nn import ClientData, linear_regression


def _data(n=4, m=6, d=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, m, d))
    return x, x @ np.ones(d)


def test_diverging_fedavg_stops_naming_the_round_and_the_clients():
    x, y = _data()
    history = []
    with pytest.raises(NonFiniteError, match=r"round \d+: non-finite parameters .* at clients \[0, 1, 2, 3\] \(4 of 4\)") as info:
        fedavg(linear_regression(2), ClientData.from_arrays(x, y), n_rounds=200, local_epochs=1,
               batch_size=None, lr=1e3, seed=0, callback=lambda s: history.append(s.round))
    err = info.value
    assert err.clients == [0, 1, 2, 3] and err.models == [0]
    assert 1 < err.round < 200  # it ran finite rounds first, then stopped at once
    assert [row["round"] for row in err.history] == list(range(1, err.round))
    assert history == list(range(1, err.round))  # the callback never saw the corrupt round


def test_only_the_diverging_client_is_named():
    x, y = _data()
    x[2] *= 1e3  # client 2's curvature is 1e6 times the others': lr 0.1 diverges there only
    y[2] *= 1e3
    with pytest.raises(NonFiniteError, match=r"round \d+: .* clients \[2\] \(1 of 4\)"):
        local_training(linear_regression(2), ClientData.from_arrays(x, y), n_rounds=200, local_epochs=1,
                       batch_size=None, lr=0.1, seed=0)
    # the same data without the outlier runs: the check is not a false alarm
    x, y = _data()
    res = local_training(linear_regression(2), ClientData.from_arrays(x, y), n_rounds=2, local_epochs=1,
                         batch_size=None, lr=0.1, seed=0)
    assert torch.isfinite(res.client_params).all()


def test_dfl_names_the_diverged_clients():
    x, y = _data()
    with pytest.raises(NonFiniteError, match="non-finite parameters"):
        dfl_sgd(linear_regression(2), ClientData.from_arrays(x, y), ring(4), n_rounds=300,
                local_steps=1, lr=1e3, batch_size=None, seed=0)


def test_tuning_scores_a_diverged_point_inf_with_the_method_label():
    def run(params, setting, seed, base_seed):
        if params["lr"] > 1:
            raise NonFiniteError(3, [1], 4)
        return pd.DataFrame({"method": ["FedAvg"], "round": [1], "metric": ["validation_loss"],
                             "value": [0.5]})

    spec = {"params": {"lr": 10.0}, "seeds": [0, 1], "point": 2, "label": "lr=10"}
    rows = evaluate_point(run, spec, "fedavg", 0, method_name="FedAvg")
    assert list(rows["method"]) == ["FedAvg", "FedAvg"]
    assert all(math.isinf(v) for v in rows["value"])
    assert list(rows["tuning_values"]) == ["lr=10", "lr=10"] and list(rows["seed"]) == [0, 1]
    assert list(evaluate_point(run, spec, "fedavg", 0)["method"]) == ["fedavg", "fedavg"]
    ok = evaluate_point(run, {**spec, "params": {"lr": 0.1}}, "fedavg", 0)
    assert list(ok["method"]) == ["FedAvg", "FedAvg"]


def _fake_target(monkeypatch, run):
    from networkedfl.experiments import registry

    experiment = registry.Experiment(id="fake_target", kind="table", source="test", title="fake",
                                     run=run, claims=lambda table, params: [],
                                     settings=lambda params: ["a", "b"])
    monkeypatch.setitem(registry.EXPERIMENTS, "fake_target", experiment)
    return {"base_seed": 0, "experiments": {"fake_target": {}}}


def test_a_job_with_non_finite_metrics_fails_naming_target_setting_seed_and_metric(monkeypatch):
    from networkedfl.pipeline.runner import run_job

    def run(params, setting, seed, base_seed):
        value = float("nan") if setting == "b" else 1.0
        return pd.DataFrame({"metric": ["test_loss", "upload", "test_loss"], "round": [1, 1, 2],
                             "value": [0.5, "models", value]})

    config = _fake_target(monkeypatch, run)
    assert len(run_job(config, "fake_target", "a", 3, inputs={})) == 3  # text values are fine
    with pytest.raises(ValueError, match=r"fake_target, setting 'b', seed 3: 1 non-finite values .* metric test_loss"):
        run_job(config, "fake_target", "b", 3, inputs={})


def test_a_diverged_job_fails_naming_target_setting_and_seed(monkeypatch):
    from networkedfl.pipeline.runner import run_job

    def run(params, setting, seed, base_seed):
        raise NonFiniteError(7, [2, 5], 8)

    config = _fake_target(monkeypatch, run)
    with pytest.raises(RuntimeError, match=r"fake_target, setting 'a', seed 1 diverged: round 7: .* clients \[2, 5\]"):
        run_job(config, "fake_target", "a", 1, inputs={})
