"""The pipeline pins its own precision (issue 35 item 6): the torch methods of the package default
to float32, and every target runs them in the precision its configuration names (``dtype``),
float64 where it names none, as before (so the tables stay byte-identical).  One small job of
each target family that uses PyTorch runs here with a probe on the options every torch method
resolves and on the problems of FedRelax's Algorithm 2."""

import pytest
import torch

import networkedfl.fedrelax as fedrelax_package
from networkedfl.algorithms.contract import TrainingOptions
from networkedfl.pipeline.runner import run_job

JOBS = [  # target, setting, config overrides (small, without tuning)
    ("lecture_table1_fedsgd_fedavg", "all", {"repetitions": 1}),
    ("lecture_fig1_fedsgd_vs_fedavg", "fedavg-E1-B10", {"samples_per_client": 20, "n_test": 50, "rounds": 2}),
    ("lecture_fig1_fedsgd_vs_fedavg", "gossip-E1-B10", {"samples_per_client": 20, "n_test": 50, "rounds": 2}),
    ("gtv_table1_highdim_sbm", "paper.baselines", {}),
    ("fedrelax_fig01a_dm_ratio", "all", {}),
    ("fedrelax_fig01c_baselines", "all", {}),
    ("gfl_fig10_1_dfl", "dfl_sgd", {}),
    ("gfl_fig10_3_synthetic", "fedavg", {}),
]


@pytest.fixture
def dtypes(monkeypatch):
    seen = []
    resolve = TrainingOptions.resolve

    def probe(self, *args, **kwargs):
        out = resolve(self, *args, **kwargs)
        seen.append(out.dtype)
        return out

    monkeypatch.setattr(TrainingOptions, "resolve", probe)
    linear_problem = fedrelax_package.linear_problem

    def probe_problem(*args, **kwargs):
        problem = linear_problem(*args, **kwargs)
        seen.append(problem.local_gram.dtype)
        return problem

    monkeypatch.setattr(fedrelax_package, "linear_problem", probe_problem)
    return seen


@pytest.mark.parametrize(("target", "setting", "overrides"), JOBS, ids=[f"{t}:{s}" for t, s, _ in JOBS])
def test_every_target_runs_torch_in_its_configured_precision(target, setting, overrides, test_config,
                                                             dtypes):
    params = {**test_config["experiments"][target], **overrides}
    if "tuning" in params:  # the configured values instead of a tuning run's choice
        params["tuning"] = {**params["tuning"], "grid": {}}
    config = {**test_config, "experiments": {**test_config["experiments"], target: params}}
    run_job(config, target, setting, 0)
    expected = getattr(torch, params.get("dtype", "float64"))
    assert dtypes and set(dtypes) == {expected}, (target, set(dtypes))
