"""Coverage of the verdicts' intervals (docs/verdicts.md#intervals) on synthetic per-seed
values with a known mean, at the project's seed counts (3, 5, 10, 40).

The rule fixed in advance (:func:`networkedfl.experiments.claims.interval_method`): Student's t
below ``BOOTSTRAP_FROM`` seeds, the BCa bootstrap from there.  Each cell draws ``R``
independent samples from a fixed generator and counts how often the nominal 95 % interval
covers the true mean; the cells the rule is claimed for must cover at least 90 %.  The cells
where no interval of the mean can be valid (two clusters at 3-10 seeds: a sample of 3 often
holds no seed of the smaller cluster) are asserted to fall short, so the limitation stays
stated (the design's seed counts, docs/verdicts.md#design, answer it).
"""

import numpy as np
import pytest

from networkedfl.experiments import claims as core
from networkedfl.experiments.claims import interval, t_interval

R = 400
SIGMA = 0.6  # log-normal: skewness 2.3, the skew of FedRelax Fig. 1c's per-seed log ratios


def _draw(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """``R`` samples of ``n`` values and their distribution's mean."""
    if kind == "normal":
        return rng.normal(0.0, 1.0, (R, n)), 0.0
    if kind == "lognormal":
        return np.exp(rng.normal(0.0, SIGMA, (R, n))), float(np.exp(SIGMA**2 / 2))
    p = {"two-cluster": 0.3, "rare-cluster": 0.1}[kind]  # a seed lands in the upper cluster with p
    return np.where(rng.random((R, n)) < p, 3.0, 0.0) + rng.normal(0.0, 0.1, (R, n)), 3.0 * p


def _coverage(kind: str, n: int, method=interval) -> float:
    samples, mean = _draw(kind, n, np.random.default_rng(1000 * n + len(kind)))
    hits = 0
    for x in samples:
        _, low, high = method(x)
        hits += low <= mean <= high
    return hits / R


@pytest.fixture(autouse=True)
def _fewer_resamples(monkeypatch):
    # 1999 resamples instead of 9999: the coverage hardly changes, the test is 5x faster
    monkeypatch.setattr(core, "BOOTSTRAP_RESAMPLES", 1999)


@pytest.mark.parametrize(("kind", "n"), [
    ("normal", 3), ("normal", 5), ("normal", 10), ("normal", 40),
    ("lognormal", 3), ("lognormal", 10), ("lognormal", 40),
    ("two-cluster", 10), ("two-cluster", 40),
    ("rare-cluster", 40),
])
def test_the_rules_interval_covers_at_least_90_percent(kind, n):
    assert _coverage(kind, n) >= 0.90


@pytest.mark.parametrize(("kind", "n"), [("two-cluster", 3), ("two-cluster", 5), ("rare-cluster", 10)])
def test_no_interval_of_the_mean_is_valid_on_split_values_at_few_seeds(kind, n):
    """The stated limitation: here the t interval (the rule's) falls short of 90 %."""
    assert _coverage(kind, n) < 0.90


def test_from_40_seeds_the_bootstrap_covers_a_rare_cluster_better_than_t():
    """40 seeds, a rare second cluster (IFCA stuck in some seeds): the rule's BCa bootstrap
    covers more often than the t interval (docs/verdicts.md#intervals: 0.97 against 0.92 at
    R = 2000)."""
    assert _coverage("rare-cluster", 40) > _coverage("rare-cluster", 40, t_interval)
