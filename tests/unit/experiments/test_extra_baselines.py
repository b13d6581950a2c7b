"""Issue 42, item 7: FedProx, SCAFFOLD, FedAdam, FedYogi and Ditto as extra baselines of the
GTV MNIST comparison (Fig. 6): a configuration that lists them runs them on the target's data
beside the paper's methods; the default configuration lists none of them."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from networkedfl.experiments.gtv.mnist import EXTRA_BASELINES
from networkedfl.experiments.variants import variant_params
from networkedfl.pipeline.config import load_config, validate_config
from networkedfl.pipeline.runner import run_job

TARGET = "gtv_fig06_mnist_methods"
OWN = {"fedprox": {"mu": 0.01}, "scaffold": {"server_lr": 1.0}, "ditto": {"lam": 0.1},
       "fedadam": {"server_lr": 0.1, "tau": 1e-3}, "fedyogi": {"server_lr": 0.1, "beta1": 0.9}}


def with_extra(config, methods):
    """The test configuration with ``methods`` (name -> spec) added to Fig. 6's methods, one
    job per method."""
    out = copy.deepcopy(config)
    target = out["experiments"][TARGET]
    target["one_job"] = False
    target["methods"].update(methods)
    return out


def accuracy(table):
    acc = table[(table["metric"] == "accuracy") & table["iteration"].notna()]
    return acc.set_index("iteration")["value"]


@pytest.mark.parametrize("name", sorted(EXTRA_BASELINES))
def test_every_extra_baseline_runs_in_the_mnist_comparison(test_config, schema_path, inputs_for, name):
    spec = {"algorithm": name, "rounds": 2, "local_steps": 1, "lr": 0.1, **OWN[name]}
    config = with_extra(test_config, {name: spec})
    validate_config(config, schema_path)
    setting = f"paper.{name}"
    table = run_job(config, TARGET, setting, 0, inputs_for(TARGET, config, setting))
    acc = accuracy(table)
    assert list(acc.index) == [0, 1, 2] and set(table["method"]) == {name}
    assert ((acc >= 0) & (acc <= 1)).all() and acc.iloc[-1] != acc.iloc[0]


def test_fedprox_without_its_term_gives_fedavg_s_records(test_config, inputs_for):
    fedavg = variant_params(test_config["experiments"][TARGET], "paper")["methods"]["fedavg"]
    config = with_extra(test_config, {"fedprox": {**fedavg, "algorithm": "fedprox", "mu": 0.0}})
    tables = {m: run_job(config, TARGET, f"paper.{m}", 0, inputs_for(TARGET, config, f"paper.{m}"))
              for m in ("fedprox", "fedavg")}
    assert len(accuracy(tables["fedavg"])) == fedavg["rounds"] + 1
    pd.testing.assert_series_equal(accuracy(tables["fedprox"]), accuracy(tables["fedavg"]), check_exact=True)


def test_a_parameter_of_another_baseline_is_an_error_naming_it(test_config, inputs_for):
    config = with_extra(test_config, {"scaffold": {"algorithm": "scaffold", "rounds": 1, "local_steps": 1,
                                                   "lr": 0.1, "mu": 0.1}})
    with pytest.raises(ValueError, match=r"scaffold takes no \['mu'\]"):
        run_job(config, TARGET, "paper.scaffold", 0, inputs_for(TARGET, config, "paper.scaffold"))


def test_the_default_configuration_shows_the_papers_methods_only(repo):
    config = load_config(repo / "config" / "config.yaml")
    listed = [(target, method, spec) for target, params in config["experiments"].items()
              for variant in [params, *(params.get("variants") or {}).values()]
              if isinstance(variant.get("methods"), dict)
              for method, spec in variant["methods"].items()]
    assert any(spec.get("algorithm") == "pfedme" for _, _, spec in listed)  # the scan sees Fig. 6
    assert [(t, m) for t, m, spec in listed if spec.get("algorithm") in EXTRA_BASELINES] == []
