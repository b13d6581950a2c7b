"""The verdict rule (networkedfl.experiments.claims, docs/verdicts.md) against closed forms."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from networkedfl.experiments.claims import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    above,
    all_of,
    any_of,
    below,
    check_all,
    claim,
    every_seed,
    exact,
    per_seed,
    seed_values,
    t_interval,
    threshold,
    within_factor,
)
from networkedfl.experiments.registry import Claim


def test_t_interval_is_students_t_interval_of_the_mean():
    x = np.array([0.3, -0.1, 0.4, 0.2, 0.05])
    mean, low, high = t_interval(x)
    ref = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert mean == pytest.approx(x.mean())
    assert (low, high) == pytest.approx(ref)


def test_one_seed_needs_a_noise_estimate():
    assert t_interval([0.7])[1:] == (-math.inf, math.inf)
    mean, low, high = t_interval([0.7], noise=0.1)
    assert (low, high) == pytest.approx((0.7 - 1.959964 * 0.1, 0.7 + 1.959964 * 0.1))
    assert claim("c", below("one", [1.0], [2.0])).verdict == INCONCLUSIVE
    assert claim("c", below("one", [1.0], [2.0], noise=0.1)).verdict == HOLDS  # log 2 = 0.69 > 1.96 * 0.1


def test_a_clear_paired_difference_holds_and_its_reverse_fails():
    rng = np.random.default_rng(0)
    b = np.exp(rng.normal(0, 1, 5))  # large spread between seeds, shared by both arms
    a = b * 0.5 * np.exp(rng.normal(0, 0.05, 5))
    held = claim("a below b", below("x", a, b))
    assert held.verdict == HOLDS and held.n_seeds == 5
    assert held.low < held.effect < held.high < 1  # a ratio, below 1
    assert held.effect == pytest.approx(np.exp(np.mean(np.log(a / b))))
    assert claim("b below a", below("x", b, a)).verdict == FAILS
    assert claim("a above b", above("x", a, b)).verdict == FAILS


def test_a_difference_inside_the_noise_is_inconclusive():
    # the Fig. 10.4 situation: a 0.004 margin between two noisy runs
    a = np.array([4.310, 4.350, 4.290])
    b = np.array([4.314, 4.330, 4.320])
    assert claim("a below b", below("x", a, b, scale="linear")).verdict == INCONCLUSIVE


def test_an_exact_tie_fails_a_strict_claim():
    assert claim("c", below("x", [1.0, 1.0], [1.0, 1.0])).verdict == FAILS
    assert claim("c", below("x", [1.0, 1.0], [1.0, 1.0], strict=False)).verdict == HOLDS


def test_tolerance_and_threshold_are_on_the_natural_scale():
    a, b = np.array([1.03, 1.031, 1.029]), np.ones(3)
    assert claim("c", below("x", a, b, tolerance=0.05)).verdict == HOLDS  # 3 % < 5 %
    assert claim("c", below("x", a, b)).verdict == FAILS
    assert claim("c", threshold("r", [0.5, 0.6, 0.55], lt=1.0, scale="log")).verdict == HOLDS
    assert claim("c", threshold("r", [0.5, 0.6, 0.55], gt=1.0, scale="log")).verdict == FAILS


def test_within_factor_is_an_equivalence_claim():
    b = np.array([1.0, 2.0, 3.0, 4.0])
    assert claim("c", within_factor("r", 1.2 * b, b, 2)).verdict == HOLDS
    assert claim("c", within_factor("r", 5 * b, b, 2)).verdict == FAILS
    # the Fig. 1c situation: per-seed ratios 1.09 .. 34.1 are neither inside nor outside
    ratios = np.array([1.09, 34.1, 2.29, 1.56, 7.23])
    assert claim("c", within_factor("r", ratios, np.ones(5), 2)).verdict == INCONCLUSIVE


def test_all_of_holds_only_when_every_case_holds():
    good = below("good", [1, 1.1, 0.9], [2, 2.1, 1.9])
    unsure = below("unsure", [1, 2, 1.0], [1.1, 1.5, 1.2])
    assert all_of("c", [good]).verdict == HOLDS
    result = all_of("c", [good, unsure])
    assert result.verdict == INCONCLUSIVE and result.effect_label == "unsure"


def test_all_of_fails_at_the_bonferroni_level():
    # a case whose 95 % interval excludes the claim, but not at 1 - 0.05/m for m = 20
    x = np.array([0.1, 0.5, 0.3, 0.4])  # log ratio > 0: "below" fails at 95 %
    bad = below("bad", np.exp(x), np.ones(4))
    assert claim("c", bad).verdict == FAILS
    mean, low, _ = bad.interval(1 - 0.05 / 20)
    assert low < 0  # not decided at the corrected level
    good = [below(f"g{i}", [1, 1.1, 0.9, 1], [2, 2.1, 1.9, 2]) for i in range(19)]
    assert all_of("c", [bad, *good]).verdict == INCONCLUSIVE
    assert all_of("c", [bad]).verdict == FAILS


def test_any_of_holds_at_the_bonferroni_level_and_fails_when_every_case_fails():
    good = below("good", [1, 1.1, 0.9], [2, 2.1, 1.9])
    bad = above("bad", [1, 1.1, 0.9], [2, 2.1, 1.9])
    assert any_of("c", [bad, good]).verdict == HOLDS
    assert any_of("c", [bad, bad]).verdict == FAILS
    unsure = below("unsure", [1, 2, 1.0], [1.1, 1.5, 1.2])
    assert any_of("c", [bad, unsure]).verdict == INCONCLUSIVE


def test_exact_checks_and_every_seed():
    assert exact("c", True, "").verdict == HOLDS and exact("c", False, "").verdict == FAILS
    assert check_all("c", {"a": True, "b": False}).verdict == FAILS
    assert every_seed("c", {0: True, 1: True}).verdict == HOLDS
    failed = every_seed("c", {0: True, 1: False})
    assert failed.verdict == FAILS and "1" in failed.detail


def test_claim_kind_comes_from_the_prefix_and_the_record_is_json_ready():
    assert Claim("[reference] x", HOLDS, "").kind == "reference"
    assert Claim("[diagnostic] x", HOLDS, "").kind == "diagnostic"
    assert Claim("x", HOLDS, "").kind == "paper"
    with pytest.raises(ValueError, match="verdict"):
        Claim("x", True, "")  # a bool is not a verdict
    record = claim("c", below("one", [1.0], [2.0])).as_dict()
    assert record["interval"] == [0.0, "inf"] and record["verdict"] == INCONCLUSIVE


def test_per_seed_pairs_by_seed():
    table = pd.DataFrame({
        "seed": [0, 0, 1, 1, 2],
        "method": ["a", "b", "a", "b", "a"],
        "metric": "m", "value": [1.0, 2.0, 3.0, 4.0, 5.0],
    })
    wide = per_seed(table, ["method"], "m")
    a, b = seed_values(wide, "a", "b")
    assert a.tolist() == [1.0, 3.0] and b.tolist() == [2.0, 4.0]  # seed 2 has no "b"


def test_non_finite_values_are_refused_naming_the_case():
    with pytest.raises(ValueError, match="case 'x'"):
        below("x", [1.0, np.nan], [1.0, 2.0], scale="linear")
    with pytest.raises(ValueError, match="positive"):
        below("x", [0.0, 1.0], [1.0, 2.0])
