"""The design's power analysis (networkedfl.experiments.design, docs/verdicts.md#design)
against textbook values, and the claims evaluated under a target's design."""

import math

import numpy as np
import pytest
from scipy import stats

from networkedfl.experiments.design import (
    design_rows,
    detectable_effect,
    pilot_claims,
    power,
    sd_from_interval,
    seeds_for_power,
)


def test_power_is_the_noncentral_t_power_of_the_one_sample_test():
    # Cohen's d = 1, two-sided alpha = 0.05: 10 seeds give 80.3 % (G*Power: 0.8031)
    assert power(10, 1.0, 1.0) == pytest.approx(0.8031, abs=5e-4)
    assert seeds_for_power(1.0, 1.0) == 10
    assert seeds_for_power(0.5, 1.0) == 34  # d = 0.5: 34 (G*Power: 34, power 0.808)
    assert power(seeds_for_power(0.2, 1.0) - 1, 0.2, 1.0) < 0.8 <= power(seeds_for_power(0.2, 1.0), 0.2, 1.0)
    assert seeds_for_power(1e-4, 1.0, max_n=1000) is None


def test_power_agrees_with_a_simulation_of_the_t_interval():
    rng = np.random.default_rng(0)
    n, effect, sd = 6, 0.8, 1.0
    x = rng.normal(-effect, sd, (4000, n))  # "E x < 0" with a true effect of 0.8 sd
    high = x.mean(1) + stats.t.ppf(0.975, n - 1) * x.std(1, ddof=1) / math.sqrt(n)
    assert np.mean(high < 0) == pytest.approx(power(n, effect, sd), abs=0.02)


def test_detectable_effect_inverts_the_power():
    e = detectable_effect(5, 0.3)
    assert power(5, e, 0.3) == pytest.approx(0.8)
    assert detectable_effect(1, 0.3) == math.inf


def test_the_pilot_spread_is_backed_out_of_the_interval():
    x = np.array([0.1, 0.3, 0.2, 0.5, 0.4])
    half = stats.t.ppf(0.975, 4) * x.std(ddof=1) / math.sqrt(5)
    assert sd_from_interval(x.mean() - half, x.mean() + half, 5, log=False) == pytest.approx(x.std(ddof=1))
    assert sd_from_interval(math.exp(-half), math.exp(half), 5, log=True) == pytest.approx(x.std(ddof=1))


def test_the_pilot_reads_the_galleries_statistical_paper_claims():
    page = "\n".join([
        "### `gtv_fig02_num_clusters`: GTV Fig. 2", "",
        "| verdict | claim | effect [95 % interval] | seeds | measured |", "|---|---|---|---|---|",
        "| holds | a claim | FedAvg k=10 / k=2: 1.56 [1.43, 1.71] | 5 | ... |",
        "| holds | a check | exact (no sampling noise) |  | ... |",
        "| holds | \\[reference\\] r | A / B: 0.5 [0.4, 0.6] | 5 | ... |",
        "| **fails** | accuracy | accuracy at 49: A - B: -0.2 [-0.25, -0.15] | 3 | ... |",
    ])
    rows = list(pilot_claims(page))
    assert [(r["claim"], r["scale"], r["n"], r["verdict"]) for r in rows] == [
        ("a claim", "log", 5, "holds"), ("accuracy", "linear", 3, "fails")]
    design = design_rows(page, {"gtv_fig02_num_clusters": {"ratio_margin": 0.1,
                                                           "difference_margin": {"accuracy": 0.01}}})
    assert design[0]["margin"] == pytest.approx(math.log(1.1)) and design[1]["margin"] == 0.01
    assert design[0]["seeds_80"] == seeds_for_power(math.log(1.1), design[0]["sd"])


def test_the_runner_evaluates_claims_under_the_targets_design(monkeypatch):
    from types import SimpleNamespace

    import pandas as pd

    from networkedfl.experiments.claims import below, claim
    from networkedfl.pipeline import runner

    tie = SimpleNamespace(claims=lambda table, params: [claim("a below b", below("x", [1.0, 1.0], [1.0, 1.0]))])
    monkeypatch.setattr(runner, "get_experiment", lambda target: tie)
    table = pd.DataFrame({"seed": [0], "metric": ["x"], "value": [1.0]})
    config = {"experiments": {"t": {"repetitions": 2}}}
    assert [c["verdict"] for c in runner.evaluate_claims(config, "t", table)] == ["fails"]  # no design: a tie fails
    config["experiments"]["t"]["design"] = {"ratio_margin": 0.1}
    assert [c["verdict"] for c in runner.evaluate_claims(config, "t", table)] == ["equivalent"]
