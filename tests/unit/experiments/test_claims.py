"""The verdict rule (networkedfl.experiments.claims, docs/verdicts.md) against closed forms."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from networkedfl.experiments.claims import (
    BOOTSTRAP_FROM,
    EQUIVALENT,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    above,
    all_of,
    any_of,
    at_least,
    below,
    check_all,
    claim,
    design,
    every_seed,
    exact,
    interval,
    interval_method,
    not_worse,
    per_seed,
    seed_values,
    split_counts,
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


# ------------------------------------------------------------ margins, equivalence, non-inferiority


def _case(values, *, margin, lt=0.0):
    return threshold("x", values, lt=lt, margin=margin)  # "E x < 0" on the linear scale


def test_equivalent_when_the_interval_lies_within_the_margin_on_both_sides_of_the_bound():
    x = np.array([0.01, -0.02, 0.015, -0.005, 0.0])
    _, low, high = t_interval(x)
    assert claim("c", _case(x, margin=max(-low, high))).verdict == EQUIVALENT  # the boundary counts as inside
    assert claim("c", _case(x, margin=0.99 * max(-low, high))).verdict == INCONCLUSIVE
    assert claim("c", _case(x, margin=0.0)).verdict == INCONCLUSIVE  # no margin: no equivalence


def test_an_exact_tie_is_equivalent_with_a_margin_and_fails_without_one():
    assert claim("c", below("x", [1.0, 1.0], [1.0, 1.0], margin=0.1)).verdict == EQUIVALENT
    assert claim("c", below("x", [1.0, 1.0], [1.0, 1.0])).verdict == FAILS


def test_a_significant_effect_inside_the_margin_is_equivalent_never_holds_or_fails():
    # significant on the claimed side (the interval excludes 0) but inside a margin of 0.05
    holds_side = np.array([-0.02, -0.025, -0.018, -0.022])
    assert claim("c", _case(holds_side, margin=0.0)).verdict == HOLDS
    assert claim("c", _case(holds_side, margin=0.05)).verdict == EQUIVALENT
    assert claim("c", _case(-holds_side, margin=0.0)).verdict == FAILS
    assert claim("c", _case(-holds_side, margin=0.05)).verdict == EQUIVALENT


def test_a_significant_effect_whose_interval_reaches_beyond_the_margin_still_decides():
    x = np.array([-0.02, -0.09, -0.05, -0.12])  # 95 % interval about [-0.13, -0.01]
    _, low, high = t_interval(x)
    assert high < 0 and low < -0.05
    assert claim("c", _case(x, margin=0.05)).verdict == HOLDS
    assert claim("c", _case(-x, margin=0.05)).verdict == FAILS


def test_the_design_gives_the_cases_their_margin_on_their_scale():
    # the Fig. 10.4 situation: a 0.5 % ratio, decided without a margin, is no difference at 1 %
    a = np.array([0.994, 0.996, 0.995]) * np.array([4.3, 4.4, 4.2])
    b = np.array([4.3, 4.4, 4.2])
    assert claim("c", below("x", a, b)).verdict == HOLDS
    with design({"ratio_margin": 0.01, "difference_margin": 0.5}):
        assert claim("c", below("x", a, b)).verdict == EQUIVALENT
        assert below("x", a, b).delta == pytest.approx(math.log(1.01))
        assert below("x", a, b, scale="linear").delta == 0.5
        assert claim("c", below("x", a, b, margin=0.0)).verdict == HOLDS  # a case's own margin wins
    assert below("x", a, b).delta == 0.0  # outside the design, no margin
    with design({"difference_margin": {"accuracy": 0.01, "area": 0.5}}):
        assert below("x", a, b, scale="linear", what="area 0-49: A - B").delta == 0.5
        assert below("accuracy at 49", a, b, scale="linear").delta == 0.01
        assert below("loss", a, b, scale="linear").delta == 0.0  # no word of the mapping: no margin
    with pytest.raises(ValueError, match="margins"), design({"ratio_margin": -0.1}):
        pass


def test_region_claims_keep_their_own_tolerance():
    b = np.array([1.0, 2.0, 3.0, 4.0])
    with design({"ratio_margin": 0.5}):
        assert claim("c", within_factor("r", 1.2 * b, b, 2)).verdict == HOLDS
        assert claim("c", within_factor("r", 5 * b, b, 2)).verdict == FAILS


def test_non_inferiority_holds_inside_the_margin_and_fails_beyond_it():
    b = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    same = b * np.array([1.01, 0.99, 1.02, 0.98, 1.0])  # two equal methods
    assert claim("c", not_worse("x", same, b, margin=math.log(1.1))).verdict == HOLDS
    assert claim("c", below("x", same, b, margin=math.log(1.1))).verdict == EQUIVALENT  # superiority cannot hold
    worse = b * np.array([1.5, 1.52, 1.48, 1.51, 1.49])
    assert claim("c", not_worse("x", worse, b, margin=math.log(1.1))).verdict == FAILS
    noisy = b * np.array([0.8, 1.4, 1.0, 1.3, 0.9])
    assert claim("c", not_worse("x", noisy, b, margin=math.log(1.1))).verdict == INCONCLUSIVE
    with pytest.raises(ValueError, match="margin"):
        claim("c", not_worse("x", same, b))  # no margin: non-inferiority is undefined
    held = claim("c", not_worse("x", same, b, margin=math.log(1.1)))
    assert "non-inferiority" in held.interval


def test_at_least_is_non_inferiority_for_scores_against_closed_forms():
    b = np.array([0.80, 0.82, 0.78, 0.81, 0.79])
    d = np.array([0.004, -0.003, 0.002, -0.004, 0.001])  # two equal methods: a - b = d, mean 0
    same = b + d
    half = stats.t.ppf(0.975, 4) * d.std(ddof=1) / math.sqrt(5)
    held = claim("c", at_least("x", same, b, scale="linear", margin=0.01))
    assert held.verdict == HOLDS and held.low == pytest.approx(d.mean() - half)  # effect a - b, lower end > -0.01
    assert claim("c", above("x", same, b, scale="linear", margin=0.01)).verdict == EQUIVALENT  # superiority cannot
    worse = b - 0.05 + d  # worse by 5 points, the margin 1
    assert claim("c", at_least("x", worse, b, scale="linear", margin=0.01)).verdict == FAILS
    assert claim("c", at_least("x", b - 0.008 + d, b, scale="linear", margin=0.01)).verdict == INCONCLUSIVE
    # the margin is the design's (here a word of the label): 1 point of accuracy
    with design({"difference_margin": {"accuracy": 0.01}}):
        assert claim("c", at_least("accuracy", same, b, scale="linear")).verdict == HOLDS
        with pytest.raises(ValueError, match="non-inferiority test needs a margin"):
            claim("c", at_least("area", same, b, scale="linear"))
    # log scale: at least as many (a ratio not below 1 / 1.1)
    with design({"ratio_margin": 0.1}):
        assert claim("c", at_least("x", 0.99 * np.exp(d), np.ones(5))).verdict == HOLDS
        assert claim("c", at_least("x", 0.8 * np.exp(d), np.ones(5))).verdict == FAILS
        assert "non-inferiority" in claim("c", at_least("x", np.exp(d), np.ones(5))).interval


def test_the_deciding_case_of_a_non_inferiority_claim_is_read_against_the_moved_bound():
    # both hold; the non-inferiority case's interval [0.005, 0.013] lies 0.015 inside its tested
    # bound (-0.01), the superiority case's [0.010, 0.018] 0.010 inside its bound (0): the latter decides
    b = np.ones(5)
    d = np.array([0.004, -0.003, 0.002, -0.004, 0.001])
    non_inferior = at_least("non-inferior", b + 0.0092 + d, b, scale="linear", margin=0.01)
    superior = above("superior", b + 0.0142 + d, b, scale="linear", margin=0.0)
    shown = all_of("c", [non_inferior, superior])
    assert shown.verdict == HOLDS and "deciding: superior" in shown.detail


def test_all_of_and_any_of_know_the_equivalent_verdict():
    good = below("good", [1, 1.1, 0.9], [2, 2.1, 1.9], margin=0.05)
    tie = below("tie", [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], margin=0.05)
    bad = above("bad", [1, 1.1, 0.9], [2, 2.1, 1.9], margin=0.05)
    assert all_of("c", [good, tie]).verdict == EQUIVALENT  # one case shows no difference
    assert all_of("c", [good, tie, bad]).verdict == FAILS
    assert any_of("c", [tie, bad]).verdict == EQUIVALENT
    assert any_of("c", [tie, good]).verdict == HOLDS
    assert "1 equivalent" in all_of("c", [good, tie]).detail


# ------------------------------------------------------------ intervals: the rule fixed in advance


def test_the_interval_is_t_below_the_bootstrap_count_and_bca_from_it():
    rng = np.random.default_rng(3)
    few, many = rng.lognormal(0, 0.6, BOOTSTRAP_FROM - 1), rng.lognormal(0, 0.6, BOOTSTRAP_FROM)
    assert interval_method(len(few)) == "t" and interval(few) == t_interval(few)
    assert interval_method(len(many)) == "bootstrap"
    ref = stats.bootstrap((many,), np.mean, n_resamples=9999, method="BCa",
                          rng=np.random.default_rng(0)).confidence_interval
    assert interval(many)[1:] == pytest.approx((ref.low, ref.high))
    assert interval(many) == interval(many)  # a fixed generator: the same interval every time
    skewed = claim("c", threshold("x", many, gt=0.5))
    assert skewed.interval.startswith("BCa bootstrap") and skewed.verdict == HOLDS
    assert claim("c", threshold("x", few, gt=0.5)).interval.startswith("t,")
    assert interval_method(1) == "none" and interval_method(1, noise=0.1) == "noise"


def test_a_split_outcome_is_counted_apart():
    stuck = np.r_[np.full(37, 6e-6), np.full(3, 5.0)] * np.exp(np.linspace(-0.1, 0.1, 40))
    assert split_counts(np.log(stuck)) == (37, 3)
    result = claim("c", threshold("IFCA", stuck, lt=1.0, scale="log"))
    assert result.split == "3 of 40 seeds in the upper cluster"
    assert "split: 3 of 40 seeds in the upper cluster" in result.detail
    assert split_counts(np.random.default_rng(0).normal(0, 1, 40)) is None  # one smooth cluster
    assert split_counts([3.0, 3.0, 3.0 + 1e-15]) is None  # rounding is no split
    assert claim("c", threshold("x", np.exp([0.0, 0.1, 0.2]), lt=2.0, scale="log")).split == ""


def test_every_claim_records_how_it_was_decided():
    assert claim("c", below("x", [1, 2, 3], [2, 3, 4])).test == "statistical"
    assert exact("c", True, "").test == "fixed" and check_all("c", {"a": True}).test == "fixed"
    assert every_seed("c", {0: True}).test == "every_seed"
    assert exact("c", True, "").as_dict()["test"] == "fixed"
    with pytest.raises(ValueError, match="test"):
        Claim("c", HOLDS, "", test="sometimes")


def test_old_claims_files_are_counted_by_their_interval_method():
    from networkedfl.pipeline.summary import test_of

    assert test_of({"interval_method": "exact (no sampling noise)"}) == "fixed"
    assert test_of({"interval_method": "every seed (a property of each realisation)"}) == "every_seed"
    assert test_of({"interval_method": "t, 95 %, paired by seed"}) == "statistical"
    assert test_of({"test": "fixed", "interval_method": ""}) == "fixed"


def test_a_replaced_case_computes_its_interval_afresh():
    import dataclasses

    case = threshold("x", [1.0, 2.0, 3.0], lt=10.0)
    assert case.interval()[0] == 2.0
    assert dataclasses.replace(case, values=np.array([5.0, 6.0, 7.0])).interval()[0] == 6.0
