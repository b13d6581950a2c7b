"""Issue 42, item 7: FedProx, SCAFFOLD, FedAdam, FedYogi and Ditto as extra baselines of the
GTV MNIST comparison (Fig. 6) and of the chapter's Fig. 10.3 (``extra_baselines``): a
configuration that lists them runs them on the target's data beside the paper's methods,
tuned by the target's protocol, drawn as "extra baseline" and kept out of the paper's claims;
the default configuration of Fig. 6 lists none of them."""

from __future__ import annotations

import copy

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

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


# ------------------------------------------------------------ the chapter's Fig. 10.3

SYNTHETIC = "gfl_fig10_3_synthetic"


def synthetic_params(test_config, **changes):
    params = {k: v for k, v in test_config["experiments"][SYNTHETIC].items() if k != "tuning"}
    return {**params, **changes}


def test_the_test_profile_lists_extra_baselines_as_jobs_of_fig_10_3(test_config, schema_path):
    from networkedfl.experiments.gfl.synthetic import method_settings

    validate_config(test_config, schema_path)
    params = test_config["experiments"][SYNTHETIC]
    assert method_settings(params) == [*params["methods"], "fedprox", "scaffold", "fedadam", "ditto"]
    assert all(name in params["tuning"]["grid"] for name in params["extra_baselines"])  # tuned like the others


def test_an_unknown_extra_baseline_is_refused_by_the_schema_and_the_run(test_config, schema_path):
    from networkedfl.experiments.gfl.synthetic import method_settings

    config = copy.deepcopy(test_config)
    config["experiments"][SYNTHETIC]["extra_baselines"] = ["fednova"]
    with pytest.raises(Exception, match="fednova"):
        validate_config(config, schema_path)
    with pytest.raises(ValueError, match="unknown methods \\['fednova'\\]"):
        method_settings(config["experiments"][SYNTHETIC])


def test_fedprox_without_its_term_follows_fedavg_in_fig_10_3(test_config):
    """Full-batch local steps: FedProx with mu = 0 takes FedAvg's steps (``fedavg_steps``),
    so its test losses equal FedAvg's to float32 rounding."""
    from networkedfl.experiments.gfl.synthetic import run_synthetic

    params = synthetic_params(test_config, fedprox={"mu": 0.0}, dtype="float64")
    loss = {m: run_synthetic(params, m, 0, 3, experiment_id=SYNTHETIC).query("metric == 'test_loss'")
            for m in ("fedprox", "fedavg")}
    assert set(loss["fedprox"]["method"]) == {"FedProx"}
    assert list(loss["fedprox"]["round"]) == list(range(params["rounds"] + 1))
    np.testing.assert_allclose(loss["fedprox"]["value"], loss["fedavg"]["value"], rtol=1e-10)
    moved = run_synthetic(synthetic_params(test_config, fedprox={"mu": 10.0}, dtype="float64"), "fedprox", 0, 3,
                          experiment_id=SYNTHETIC).query("metric == 'test_loss'")
    assert abs(moved["value"].iloc[-1] - loss["fedavg"]["value"].iloc[-1]) > 1e-6  # the term acts


def test_local_steps_that_are_no_whole_number_of_epochs_are_refused():
    from networkedfl.experiments.gfl.synthetic import baseline_epochs

    assert baseline_epochs(5, 100, 100) == 5 and baseline_epochs(6, 10, 30) == 2
    with pytest.raises(ValueError, match="local_steps 5 is not a whole number of epochs"):
        baseline_epochs(5, 10, 30)


def test_listing_baselines_changes_no_job_of_the_papers_methods(test_config):
    """The paper's methods' jobs and tuning runs see no extra baseline (so listing them reruns
    nothing of the figure's methods); a baseline's job sees its own block only."""
    from networkedfl.experiments.tuning import for_setting, tuning_params

    params = test_config["experiments"][SYNTHETIC]
    without = {k: v for k, v in params.items() if k != "extra_baselines"}
    assert for_setting(params, "fedavg") == for_setting(without, "fedavg")
    assert tuning_params(params, "fedavg", 0) == tuning_params(without, "fedavg", 0)
    mine = for_setting({**params, "ditto": {"lam": 0.2}, "fedprox": {"mu": 0.1}}, "ditto")
    assert mine["extra_baselines"] == ["ditto"] and mine["ditto"] == {"lam": 0.2} and "fedprox" not in mine


def _synthetic_table(extra_final, *, seeds=(0, 1, 2)):
    """A Fig. 10.3 table of final losses per seed: the paper's methods fixed, BiG-FL lowest."""
    paper = {"BiG-FL": 1.0, "FeSEM": 2.0, "FedAvg": 3.0, "DFL-SGD": 3.1, "DFL-GT": 3.2}
    rows = [{"method": m, "round": r, "metric": "test_loss", "value": v * (2 if r == 0 else 1) + 0.01 * s,
             "seed": s} for m, v in {**paper, **extra_final}.items() for s in seeds for r in (0, 4)]
    return pd.DataFrame(rows)


def test_extra_baselines_stay_out_of_the_papers_claims():
    """A baseline that beats BiG-FL (or diverges) changes none of the chapter's claims; one
    [reference] claim compares BiG-FL with the baselines."""
    from networkedfl.experiments.gfl.claims import synthetic_claims

    alone = {c.claim: c.verdict for c in synthetic_claims(_synthetic_table({}), {})}
    beaten = {c.claim: c.verdict for c in synthetic_claims(_synthetic_table({"FedProx": 0.5, "Ditto": np.inf}), {})}
    reference = [t for t in beaten if t not in alone]
    assert {t: v for t, v in beaten.items() if t in alone} == alone
    assert alone["BiG-FL ends (round 4) with the lowest test loss"] == "holds"
    assert len(reference) == 1 and reference[0].startswith("[reference] BiG-FL ends below each extra baseline")
    assert [c.kind for c in synthetic_claims(_synthetic_table({"FedProx": 2.0}), {}) if c.claim == reference[0]
            ] in ([], ["reference"])
    assert beaten[reference[0]] != "holds"
    fine = {c.claim: c.verdict for c in synthetic_claims(_synthetic_table({"FedProx": 2.0}), {})}
    assert [v for t, v in fine.items() if t.startswith("[reference] BiG-FL ends below each")] == ["holds"]


def test_the_figure_labels_extra_baselines_apart_from_the_papers_methods():
    from networkedfl.experiments.gfl.figures import EXTRA_STYLES, fig10_3_synthetic

    fig = fig10_3_synthetic(_synthetic_table({"FedProx": 2.4, "SCAFFOLD": 2.7}))
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "FedProx (extra baseline)" in labels and "SCAFFOLD (extra baseline)" in labels
    assert {"BiG-FL", "FeSEM", "FedAvg", "DFL-SGD", "DFL-GT"} <= set(labels)  # the paper's, unmarked
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    assert lines["FedProx (extra baseline)"].get_color() == EXTRA_STYLES["FedProx"][0]
    assert lines["FedProx (extra baseline)"].get_linestyle() != "-"


def test_the_overlay_lists_the_baselines_and_the_default_run_does_not(repo, schema_path):
    """The default run lists no extra baseline (they would add about 40 % to Fig. 10.3's CPU
    time); the overlay lists four, with grids and parameters from the default configuration."""
    default = load_config(repo / "config" / "config.yaml")
    assert "extra_baselines" not in default["experiments"][SYNTHETIC]
    merged = load_config(repo / "config" / "config.yaml", repo / "config" / "overlays" / "extra_baselines.yaml",
                         schema_path=schema_path)
    params = merged["experiments"][SYNTHETIC]
    assert params["extra_baselines"] == ["fedprox", "scaffold", "fedadam", "ditto"]
    grid = params["tuning"]["grid"]
    assert all(grid[name]["lr"] == grid["fedavg"]["lr"] for name in params["extra_baselines"])  # one step grid


# ------------------------------------------------- the shared key in the GTV MNIST comparisons

@pytest.mark.parametrize(("target", "template"), [(TARGET, "fedavg"), ("gtv_fig07_mnist_five_clusters", "ifca")])
def test_the_shared_key_adds_baselines_to_the_mnist_comparisons(test_config, schema_path, inputs_for, target,
                                                                   template):
    """``extra_baselines`` (the key Fig. 10.3 takes) adds a job per baseline to Figs. 6 and 7
    with the rounds, local steps and step of FedAvg (Fig. 7 has none: IFCA's), and its own
    parameters from the block of its name; the paper's jobs are unchanged."""
    from networkedfl.pipeline.runner import job_settings

    config = copy.deepcopy(test_config)
    block = config["experiments"][target]
    block.update(one_job=False)
    block.pop("extra_baselines", None)  # the test profile lists them for Fig. 7
    papers = job_settings(config, target)
    block.update(extra_baselines=["ditto"], ditto={"lam": 0.5})
    validate_config(config, schema_path)
    settings = job_settings(config, target)
    added = [s for s in settings if s.endswith(".ditto")]
    assert len(added) == len(block["variants"]) and [s for s in settings if s not in added] == papers
    setting = added[-1]
    table = run_job(config, target, setting, 0, inputs_for(target, config, setting))
    rounds = variant_params(config["experiments"][target], setting.split(".")[0])["methods"][template]["rounds"]
    acc = accuracy(table)
    assert set(table["method"]) == {"ditto"} and list(acc.index) == list(range(rounds + 1))
    assert ((acc >= 0) & (acc <= 1)).all()
    from networkedfl.experiments.gtv import figures

    draw = figures.fig06_mnist_methods if target == TARGET else figures.fig07_mnist_five_clusters
    fig = draw(table.assign(variant=setting.split(".")[0]), config["experiments"][target])
    texts = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    texts += [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "Ditto (extra baseline)" in texts


def test_mnist_extra_baselines_need_a_method_to_take_their_rounds_from():
    from networkedfl.experiments.baselines import with_extra_methods

    params = {"methods": {"primal_dual": {}, "local_sgd": {}}, "extra_baselines": ["fedprox"]}
    with pytest.raises(ValueError, match="need a job of fedavg or ifca"):
        with_extra_methods(params)
    spec = with_extra_methods({**params, "methods": {"ifca": {"rounds": 3, "local_steps": 2, "lr": 0.1,
                                                              "n_clusters": 2}},
                               "fedprox": {"mu": 0.2}})["methods"]["fedprox"]
    assert spec == {"algorithm": "fedprox", "rounds": 3, "local_steps": 2, "lr": 0.1, "mu": 0.2}


def test_a_baseline_grid_waits_for_the_overlay_only_with_its_block(repo, schema_path):
    """The default configuration tunes nothing it does not run, except the grids of extra
    baselines whose blocks it holds (for the overlay); without the block such a grid is refused."""
    from networkedfl.pipeline.config import ConfigError

    config = load_config(repo / "config" / "config.yaml")
    validate_config(config, schema_path)
    del config["experiments"][SYNTHETIC]["ditto"]
    with pytest.raises(ConfigError, match=r"methods \['ditto'\] are not in the target's methods"):
        validate_config(config, schema_path)
