"""Verdicts on the papers' claims, decided from per-seed values with their uncertainty.

The rule is written once here and documented in ``docs/verdicts.md``; every target's
claims go through it.  A claim is decided from the per-seed values of a statistic, never
from a comparison of means alone:

* **Cases.**  A :class:`Case` is one comparison: the per-seed values ``x_s`` of a
  statistic (e.g. ``log MSE_A - log MSE_B`` of seed ``s``, paired by seed), and the
  relation the claim asserts about their expectation (``E x < c``, ``E x > c``, or
  ``a <= E x <= b``).  Its 95 % interval is Student's t interval of the mean over the
  seeds (:func:`t_interval`); with one seed it is the value plus or minus 1.96 documented
  per-seed standard deviations (``noise``), and without such an estimate it is unbounded.
* **Verdicts.**  A case **holds** when its interval lies inside the claimed region, and
  **fails** when it lies outside it (a tie with zero spread fails a strict claim); it is
  **equivalent** when the interval lies within the design's margin ``delta`` (the smallest
  effect of interest, :func:`design`) on both sides of a one-sided claim's bound (two
  one-sided tests: the effect, whatever its sign, is too small to matter; this takes
  precedence over holds and fails).  Otherwise it is **inconclusive**.  A non-inferiority
  case (:func:`not_worse` for "at most" a loss, :func:`at_least` for "at least" a score,
  "at least as good") holds when its interval's bound lies inside the margin on the good
  side and fails when the whole interval lies beyond it.
* **Intervals.**  Fixed in advance by the number of seeds (:func:`interval_method`):
  Student's t below :data:`BOOTSTRAP_FROM` seeds (the only interval that exists at 3-5
  seeds; the bootstrap covers worse there), the BCa bootstrap of ``scipy.stats`` from
  :data:`BOOTSTRAP_FROM` seeds on.  Per-seed values split into two clusters are reported
  apart (:func:`split_counts`).
* **Several cases.**  "For every ..." claims (:func:`all_of`) hold when every case holds
  at 95 % (an intersection-union test needs no correction) and fail when some case fails at
  the Bonferroni level ``1 - 0.05/m``; "for some ..." claims (:func:`any_of`) hold when some
  case holds at ``1 - 0.05/m`` and fail when every case fails at 95 %.
* **Exact checks** (diagrams, tables, configuration; :func:`exact`, :func:`check_all`)
  involve no sampling noise and hold or fail outright.  Properties that the paper states for
  every realisation (a bound, a fixed point) are checked on every seed
  (:func:`every_seed`): one counterexample fails the claim.  Each claim records how it was
  decided (``Claim.test``: statistical, fixed or every_seed), so that the headline counts the
  statistical claims apart.

Pairing by seed is valid whether or not the two arms share the seed's data draw (the
per-seed differences are independent across seeds either way); where they share it, the
shared noise cancels.  Errors, losses and other positive quantities that span orders of
magnitude are compared on the log scale (the effect is a ratio, a geometric mean over seeds);
accuracies and signed quantities on the linear scale (the effect is a difference).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from .registry import CLAIM_KINDS, CLAIM_TESTS, VERDICTS, Claim

__all__ = [
    "BOOTSTRAP_FROM", "CLUSTER_ORACLE", "DIAGNOSTIC", "EQUIVALENT", "EVERY_SEED", "FAILS", "FIXED", "HOLDS",
    "INCONCLUSIVE", "KINDS", "LEVEL", "LOCAL", "MEAN", "ORACLE", "PAPER", "REFERENCE", "REFERENCES", "STATISTICAL",
    "VERDICTS", "Case", "above", "all_of", "any_of", "at_least", "below", "bootstrap_interval", "check_all", "claim",
    "design", "every_seed", "exact", "increasing_cases", "interval", "interval_method", "mean_over_seeds", "not_worse",
    "per_seed", "reference_claims", "seed_values", "split_counts", "strictly_increasing", "t_interval",
    "threshold", "within_factor",
]

HOLDS, EQUIVALENT, FAILS, INCONCLUSIVE = VERDICTS
STATISTICAL, FIXED, EVERY_SEED = CLAIM_TESTS
#: The kinds of claims: the paper's own, and checks of the comparison itself (kept apart
#: from the paper's claims in every count).
PAPER, REFERENCE, DIAGNOSTIC = KINDS = CLAIM_KINDS
#: Confidence level of every interval.
LEVEL = 0.95

Scale = Literal["log", "linear"]


def t_interval(values: Sequence[float], level: float = LEVEL, noise: float | None = None
               ) -> tuple[float, float, float]:
    """``(mean, low, high)``: Student's t interval of the mean of ``values`` at ``level``.

    One value: the value plus or minus the normal quantile times ``noise`` (a documented
    per-seed standard deviation of the statistic), unbounded without it.  Zero spread gives
    the point itself.
    """
    x = np.asarray(values, float)
    if x.size == 0:
        return math.nan, -math.inf, math.inf
    mean = float(x.mean())
    if x.size == 1:
        if noise is None:
            return mean, -math.inf, math.inf
        half = float(stats.norm.ppf(0.5 + level / 2)) * float(noise)
        return mean, mean - half, mean + half
    sem = float(x.std(ddof=1)) / math.sqrt(x.size)
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1)) * sem
    return mean, mean - half, mean + half


#: From this many seeds on, a case's interval is the BCa bootstrap (below, Student's t): the
#: rule fixed in advance (docs/verdicts.md#intervals).  Simulated at the project's seed
#: counts (``benchmarks/interval_coverage.py``), the bootstrap covers no better than t below
#: 40 seeds on normal, log-normal and two-cluster data, and a rare second cluster better
#: from 40 (``tests/unit/experiments/test_coverage.py``).
BOOTSTRAP_FROM = 40
#: Resamples of the bootstrap and the seed of its generator (fixed: a rerun is identical).
BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED = 9999, 0


def bootstrap_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """``(mean, low, high)``: the BCa bootstrap interval of the mean
    (:func:`scipy.stats.bootstrap`, :data:`BOOTSTRAP_RESAMPLES` resamples from a generator
    seeded with :data:`BOOTSTRAP_SEED`).  Zero spread gives the point itself."""
    x = np.asarray(values, float)
    mean = float(x.mean())
    if x.size < 2 or np.ptp(x) == 0:
        return mean, mean, mean
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # BCa's degenerate-distribution note
        res = stats.bootstrap((x,), np.mean, confidence_level=level, n_resamples=BOOTSTRAP_RESAMPLES,
                              method="BCa", vectorized=True, rng=np.random.default_rng(BOOTSTRAP_SEED))
    low, high = (float(v) for v in res.confidence_interval)
    if not (math.isfinite(low) and math.isfinite(high)):  # BCa undefined: percentile of the same resamples
        low, high = (float(v) for v in np.quantile(res.bootstrap_distribution, [(1 - level) / 2, (1 + level) / 2]))
    return mean, low, high


def interval_method(n: int, noise: float | None = None) -> str:
    """The interval the rule uses for ``n`` per-seed values: ``"t"``, ``"bootstrap"``,
    ``"noise"`` (one seed with a documented noise estimate) or ``"none"``."""
    if n >= BOOTSTRAP_FROM:
        return "bootstrap"
    if n >= 2:
        return "t"
    return "noise" if n == 1 and noise is not None else "none"


def interval(values: Sequence[float], level: float = LEVEL, noise: float | None = None
             ) -> tuple[float, float, float]:
    """``(mean, low, high)`` by the rule of :func:`interval_method`."""
    x = np.asarray(values, float)
    if interval_method(x.size, noise) == "bootstrap":
        return bootstrap_interval(x, level)
    return t_interval(x, level, noise)


#: The smallest effects of interest of the claims being evaluated (:func:`design`).
_DESIGN: ContextVar[Mapping[str, float] | None] = ContextVar("networkedfl_claims_design", default=None)


@contextmanager
def design(block: Mapping[str, Any] | None) -> Iterator[None]:
    """Evaluate claims under a target's design (its config's ``design`` block,
    docs/verdicts.md#design): ``ratio_margin`` (a ratio's smallest effect of interest, e.g.
    0.1 for 10 %: a log-scale case's margin is ``log(1.1)``) and ``difference_margin`` (a
    linear-scale case's, in the statistic's units; or a mapping from a word of the case's
    label, e.g. ``accuracy`` or ``area``, to the margin of the cases whose label holds it).
    Cases without their own ``margin`` take it from here; outside any design the margin is 0
    (no equivalent verdict)."""
    block = dict(block or {})
    linear = block.get("difference_margin", 0.0)
    linear = {str(k): float(v) for k, v in linear.items()} if isinstance(linear, Mapping) else {"": float(linear)}
    margins = {"log": math.log1p(float(block.get("ratio_margin", 0.0))), **{f"linear:{k}": v for k, v in linear.items()}}
    if any(not math.isfinite(m) or m < 0 for m in margins.values()):
        raise ValueError(f"design {block}: margins must be finite and >= 0")
    token = _DESIGN.set(margins)
    try:
        yield
    finally:
        _DESIGN.reset(token)


def _design_margin(scale: str, label: str) -> float:
    margins = _DESIGN.get() or {}
    if scale == "log":
        return margins.get("log", 0.0)
    for key, value in margins.items():  # the first word of the mapping found in the label
        if key.startswith("linear:") and key[7:] and key[7:] in label:
            return value
    return margins.get("linear:", 0.0)


def split_counts(values: Sequence[float], gap: float = 5.0, min_gap: float = 0.0) -> tuple[int, int] | None:
    """``(lower, upper)``: the sizes of two clusters the per-seed values fall into, or ``None``.

    The values are split at their largest gap between neighbours; they are two clusters when
    that gap is at least ``gap`` times the larger within-cluster standard deviation, at least
    half the values' range (so that a lone outlier of a tight sample counts too, but a smooth
    spread does not) and larger than ``min_gap`` and than rounding (``1e-6`` of the largest
    magnitude).  Needs 3 values.
    """
    x = np.sort(np.asarray(values, float))
    if x.size < 3 or np.ptp(x) == 0:
        return None
    gaps = np.diff(x)
    i = int(np.argmax(gaps))
    low, high = x[:i + 1], x[i + 1:]
    spread = max(float(low.std(ddof=1)) if low.size > 1 else 0.0, float(high.std(ddof=1)) if high.size > 1 else 0.0)
    floor = max(min_gap, 1e-6 * float(np.abs(x).max()))
    if gaps[i] > floor and gaps[i] >= 0.5 * np.ptp(x) and gaps[i] >= gap * spread:
        return int(low.size), int(high.size)
    return None


Test = Literal["superiority", "noninferiority"]


@dataclass(frozen=True)
class Case:
    """One comparison: per-seed values ``x_s`` and the region the claim puts ``E x`` in.

    ``region`` is ``(low, high)`` with ``-inf``/``inf`` for one-sided claims; ``strict`` sides
    exclude their bound (a strict "below" fails on an exact tie).  On the ``log`` scale the
    values are logarithms and are shown exponentiated (a ratio); ``name`` labels the case and
    ``what`` says what the effect is (e.g. ``"l1 / fedavg"``).  ``margin`` is the smallest
    effect of interest on the case's scale (a log ratio or a difference; ``None``: the
    design's, :func:`design`); ``test`` is ``superiority`` (the claim's side of the bound) or
    ``noninferiority`` (not worse than the bound by more than the margin, :func:`not_worse`).
    """

    name: str
    values: np.ndarray
    region: tuple[float, float]
    scale: Scale = "linear"
    strict: bool = True
    what: str = ""
    noise: float | None = None
    extra: str = ""
    margin: float | None = None
    test: Test = "superiority"
    #: The intervals computed so far, per level (not an argument: a ``dataclasses.replace``d case starts afresh).
    _intervals: dict[float, tuple[float, float, float]] = field(default_factory=dict, init=False, repr=False,
                                                                compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", np.asarray(self.values, float).ravel())
        if self.values.size and not np.all(np.isfinite(self.values)):
            raise ValueError(f"case {self.name!r}: non-finite per-seed values {self.values.tolist()}")
        if self.margin is not None and not (math.isfinite(self.margin) and self.margin >= 0):
            raise ValueError(f"case {self.name!r}: margin {self.margin} must be finite and >= 0")
        if self.test == "noninferiority" and self.two_sided:
            raise ValueError(f"case {self.name!r}: non-inferiority needs a one-sided region, got {self.region}")

    @property
    def n(self) -> int:
        return int(self.values.size)

    @property
    def two_sided(self) -> bool:
        """A region bounded on both sides (within a factor, between two thresholds): the claim
        carries its own tolerance and the margin does not apply."""
        return all(math.isfinite(b) for b in self.region)

    @property
    def delta(self) -> float:
        """The margin on the case's scale (its own, else the design's)."""
        return self.margin if self.margin is not None else _design_margin(self.scale, f"{self.what} {self.name}")

    def interval(self, level: float = LEVEL) -> tuple[float, float, float]:
        if level not in self._intervals:
            self._intervals[level] = interval(self.values, level, self.noise)
        return self._intervals[level]

    def tested_region(self) -> tuple[float, float]:
        """The region the verdict puts the interval in: the claim's, moved by the margin to
        the other side of its bound for a non-inferiority case ("not worse by the margin or
        more"; an error without a margin)."""
        lo_bound, hi_bound = self.region
        if self.test != "noninferiority":
            return lo_bound, hi_bound
        if self.delta <= 0:
            raise ValueError(f"case {self.name!r}: a non-inferiority test needs a margin > 0 (the target's "
                             "design, docs/verdicts.md#design, or the case's own margin)")
        return (lo_bound, hi_bound + self.delta) if math.isfinite(hi_bound) else (lo_bound - self.delta, hi_bound)

    def verdict(self, level: float = LEVEL) -> str:
        """docs/verdicts.md: equivalent if the interval lies within the margin around a
        one-sided claim's bound; else holds if it lies inside the region, fails if outside it."""
        if self.n == 0:
            return INCONCLUSIVE
        _, low, high = self.interval(level)
        lo_bound, hi_bound = self.tested_region()
        if not self.two_sided and self.test == "superiority":
            delta = self.delta
            bound = hi_bound if math.isfinite(hi_bound) else lo_bound
            if delta > 0 and bound - delta <= low and high <= bound + delta:
                return EQUIVALENT
        inside = ((low > lo_bound) if self.strict else (low >= lo_bound)) and \
                 ((high < hi_bound) if self.strict else (high <= hi_bound))
        if inside:
            return HOLDS
        outside = ((high <= lo_bound) if self.strict else (high < lo_bound)) or \
                  ((low >= hi_bound) if self.strict else (low > hi_bound))
        return FAILS if outside else INCONCLUSIVE

    def split(self) -> str:
        """``"3 of 40 seeds in the upper cluster"`` when the per-seed values are split in two
        (:func:`split_counts`; on the log scale the clusters are a factor 2 apart at least, on
        the linear scale more than the margin apart), else ``""``."""
        # on the log scale, clusters a factor 2 apart at least; on the linear scale, the margin
        counts = split_counts(self.values, min_gap=math.log(2) if self.scale == "log" else self.delta)
        if counts is None:
            return ""
        lower, upper = counts
        side = "upper" if upper <= lower else "lower"
        return f"{min(lower, upper)} of {self.n} seeds in the {side} cluster"

    def shown(self, value: float) -> float:
        return math.exp(value) if self.scale == "log" else value

    def describe(self, level: float = LEVEL) -> str:
        """``"name: 0.42 [0.30, 0.58] (5 seeds)"``, the effect on its natural scale."""
        mean, low, high = self.interval(level)
        label = f"{self.what} " if self.what else ""
        seeds = f"{self.n} seed{'s' if self.n != 1 else ''}"
        if self.n == 1 and self.noise is not None:
            seeds += f", noise sd {_fmt(self.noise)}"
        if self.delta > 0 and not self.two_sided:
            seeds += f", margin {'ratio ' + _fmt(self.shown(self.delta)) if self.scale == 'log' else _fmt(self.delta)}"
        if self.test == "noninferiority":
            seeds += ", non-inferiority"
        split = self.split()
        if split:
            seeds += f"; split: {split}"
        text = f"{self.name}: {label}{_fmt(self.shown(mean))} [{_fmt(self.shown(low))}, {_fmt(self.shown(high))}]"
        return f"{text} ({seeds}){'; ' + self.extra if self.extra else ''}"


def _fmt(x: float) -> str:
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.3g}"


def _log(values: Any, name: str) -> np.ndarray:
    x = np.asarray(values, float)
    if np.any(x <= 0):
        raise ValueError(f"case {name!r}: a log-scale comparison needs positive values, got {x.tolist()}")
    return np.log(x)


def below(name: str, a: Any, b: Any, *, scale: Scale = "log", tolerance: float = 0.0,
          strict: bool = True, what: str = "", noise: float | None = None, margin: float | None = None) -> Case:
    """``a`` below ``b``, paired by seed: on the log scale ``E log(a/b) < log(1 + tolerance)``
    (the effect is the ratio ``a/b``), on the linear scale ``E (a - b) < tolerance``.
    ``margin``: the smallest effect of interest on the case's scale (default: the design's)."""
    if scale == "log":
        x = _log(a, name) - _log(b, name)
        bound = math.log1p(tolerance)
    else:
        x = np.asarray(a, float) - np.asarray(b, float)
        bound = tolerance
    return Case(name, x, (-math.inf, bound), scale, strict, what, noise, margin=margin)


def above(name: str, a: Any, b: Any, *, scale: Scale = "log", strict: bool = True, what: str = "",
          noise: float | None = None, margin: float | None = None) -> Case:
    """``a`` above ``b``, paired by seed (the effect is ``a/b`` or ``a - b``)."""
    case = below(name, a, b, scale=scale, strict=strict, what=what, noise=noise)
    return Case(name, case.values, (0.0, math.inf), scale, strict, what, noise, margin=margin)


def threshold(name: str, values: Any, *, lt: float | None = None, gt: float | None = None,
              scale: Scale = "linear", strict: bool = True, what: str = "", noise: float | None = None,
              margin: float | None = None) -> Case:
    """A per-seed statistic's expectation below ``lt`` and/or above ``gt`` (given on the
    natural scale; on the log scale the values must be positive)."""
    if lt is None and gt is None:
        raise ValueError(f"case {name!r}: give lt, gt or both")
    x = _log(values, name) if scale == "log" else np.asarray(values, float)
    to = (lambda v: math.log(v)) if scale == "log" else float
    region = (-math.inf if gt is None else to(gt), math.inf if lt is None else to(lt))
    return Case(name, x, region, scale, strict, what, noise, margin=margin)


def not_worse(name: str, a: Any, b: Any, *, scale: Scale = "log", what: str = "", margin: float | None = None,
              noise: float | None = None) -> Case:
    """``a`` at least as good as (not worse than) ``b``, for losses (lower is better), paired by
    seed: a non-inferiority test, ``E log(a/b) < delta`` (or ``E (a - b) < delta``) with the
    design's margin ``delta`` (or ``margin`` on the case's scale).  Holds when the interval's
    upper end lies inside the margin, fails when its lower end lies beyond it.  For a score
    (higher is better) use :func:`at_least`, which keeps the effect ``a - b`` on the claim's
    side."""
    case = below(name, a, b, scale=scale, what=what, noise=noise)
    return Case(name, case.values, case.region, scale, True, what, noise, margin=margin, test="noninferiority")


def at_least(name: str, a: Any, b: Any, *, scale: Scale = "log", what: str = "", margin: float | None = None,
             noise: float | None = None) -> Case:
    """``a`` at least ``b`` (not below it by the margin or more), paired by seed: the mirror of
    :func:`not_worse`, for scores (higher is better: accuracies) and for claims that a
    quantity is "at least" another's; ``E log(a/b) > -delta`` (or ``E (a - b) > -delta``).
    Holds when the interval's lower end lies above ``-delta``, fails when its upper end lies
    at or below it.  The effect is ``a/b`` (or ``a - b``)."""
    case = above(name, a, b, scale=scale, what=what, noise=noise)
    return Case(name, case.values, case.region, scale, True, what, noise, margin=margin, test="noninferiority")


def within_factor(name: str, a: Any, b: Any, factor: float, *, what: str = "") -> Case:
    """``a`` on par with ``b``: the geometric-mean ratio ``a/b`` within ``[1/factor, factor]``."""
    x = _log(a, name) - _log(b, name)
    return Case(name, x, (-math.log(factor), math.log(factor)), "log", False, what)


# ------------------------------------------------------------------------ claims


def _result(text: str, verdict: str, case: Case | None, level: float, detail: str, *,
            kind: str | None, n_seeds: int | None = None, split: str = "") -> Claim:
    if case is None:
        return Claim(text, verdict, detail, kind=kind, n_seeds=n_seeds, split=split)
    mean, low, high = case.interval(level)
    return Claim(text, verdict, detail, kind=kind, n_seeds=case.n if n_seeds is None else n_seeds,
                 effect=case.shown(mean), low=case.shown(low), high=case.shown(high),
                 interval=_interval_name(case, level), effect_label=case.what or case.name,
                 split=split or case.split())


def _interval_name(case: Case, level: float) -> str:
    pct = f"{100 * level:.4g} %"
    method = interval_method(case.n, case.noise)
    if method in ("t", "bootstrap"):
        name = "t" if method == "t" else "BCa bootstrap"
        text = f"{name}, {pct}, paired by seed" + (" (log scale)" if case.scale == "log" else "")
        if case.test == "noninferiority":
            text += f"; non-inferiority, margin {_fmt(case.delta)}"
        elif case.delta > 0 and not case.two_sided:
            text += f"; margin {_fmt(case.delta)}" + (" (log ratio)" if case.scale == "log" else "")
        return text
    if method == "noise":
        return f"one seed: value ± {stats.norm.ppf(0.5 + level / 2):.2f} documented noise sd"
    return "none (one seed, no noise estimate)"


def claim(text: str, case: Case, *, kind: str | None = None) -> Claim:
    """A claim decided by one case."""
    verdict = case.verdict()
    return _result(text, verdict, case, LEVEL, case.describe(), kind=kind)


def all_of(text: str, cases: Iterable[Case], *, kind: str | None = None) -> Claim:
    """"For every ...": holds if every case holds (95 %), fails if some case fails at the
    Bonferroni level ``1 - 0.05/m``, equivalent if none fails and some case is equivalent at
    that level (the claimed difference is absent, to within the margin, for that case),
    inconclusive otherwise.  The effect shown is the deciding case's: a failing one, else an
    equivalent one, else the weakest (an inconclusive one, else the one whose interval comes
    closest to the region's bound)."""
    cases = list(cases)
    if not cases:
        return Claim(text, INCONCLUSIVE, "no rows in the table to evaluate this claim", kind=kind)
    strict_level = 1 - (1 - LEVEL) / len(cases)
    verdicts = [c.verdict() for c in cases]
    strict = [c.verdict(strict_level) for c in cases]
    failing = [c for c, v in zip(cases, strict, strict=True) if v == FAILS]
    equivalent = [c for c, v in zip(cases, strict, strict=True) if v == EQUIVALENT]
    if failing:
        verdict, deciding, level = FAILS, failing[0], strict_level
    elif equivalent:
        verdict, deciding, level = EQUIVALENT, equivalent[0], strict_level
    elif all(v == HOLDS for v in verdicts):
        verdict, deciding, level = HOLDS, min(cases, key=_margin), LEVEL
    else:
        verdict, level = INCONCLUSIVE, LEVEL
        deciding = next(c for c, v in zip(cases, verdicts, strict=True) if v != HOLDS)
    return _summary(text, verdict, cases, deciding, level, strict_level, kind, "every")


def any_of(text: str, cases: Iterable[Case], *, kind: str | None = None) -> Claim:
    """"For some ...": holds if some case holds at the Bonferroni level ``1 - 0.05/m``, fails
    if every case fails (95 %), equivalent if every case fails or is equivalent (95 %) and some
    is equivalent (no case shows the claimed difference beyond the margin), inconclusive
    otherwise."""
    cases = list(cases)
    if not cases:
        return Claim(text, INCONCLUSIVE, "no rows in the table to evaluate this claim", kind=kind)
    strict_level = 1 - (1 - LEVEL) / len(cases)
    holding = [c for c in cases if c.verdict(strict_level) == HOLDS]
    verdicts = [c.verdict() for c in cases]
    if holding:
        verdict, deciding, level = HOLDS, max(holding, key=_margin), strict_level
    elif all(v == FAILS for v in verdicts):
        verdict, deciding, level = FAILS, max(cases, key=_margin), LEVEL
    elif all(v in (FAILS, EQUIVALENT) for v in verdicts):
        deciding = next(c for c, v in zip(cases, verdicts, strict=True) if v == EQUIVALENT)
        verdict, level = EQUIVALENT, LEVEL
    else:
        verdict, deciding, level = INCONCLUSIVE, max(cases, key=_margin), LEVEL
    return _summary(text, verdict, cases, deciding, level, strict_level, kind, "some")


def _margin(case: Case) -> float:
    """How far the 95 % interval lies inside the region (negative: it crosses a bound)."""
    _, low, high = case.interval()
    lo_bound, hi_bound = case.tested_region()
    return min(low - lo_bound, hi_bound - high)


def _summary(text: str, verdict: str, cases: list[Case], deciding: Case, level: float, strict_level: float,
             kind: str | None, quantifier: str) -> Claim:
    counts = {v: 0 for v in VERDICTS}
    for c in cases:
        counts[c.verdict()] += 1
    tally = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
    head = f"{len(cases)} case{'s' if len(cases) != 1 else ''} ({tally} at 95 %"
    if len(cases) > 1:
        head += f"; {'fails and equivalents' if quantifier == 'every' else 'holds'} need {100 * strict_level:.3g} %"
    head += f"); deciding: {deciding.describe(level)}"
    others = [c.describe() for c in cases if c is not deciding]
    detail = head + ("; others: " + "; ".join(others[:7]) + (" ..." if len(others) > 7 else "") if others else "")
    n_seeds = min(c.n for c in cases)
    splits = [f"{c.name}: {c.split()}" for c in cases if c.split()]
    return _result(text, verdict, deciding, level, detail, kind=kind, n_seeds=n_seeds, split="; ".join(splits))


def exact(text: str, ok: bool, detail: str, *, kind: str | None = None, n_seeds: int | None = None) -> Claim:
    """A check without sampling noise (a diagram's structure, a table's values, the
    configuration): it holds or fails outright."""
    return Claim(text, HOLDS if ok else FAILS, detail, kind=kind, n_seeds=n_seeds, interval="exact (no sampling noise)",
                 test=FIXED)


def check_all(text: str, cases: Mapping[str, bool], details: Mapping[str, str] | None = None, *,
              kind: str | None = None) -> Claim:
    """An exact check that holds iff every case holds; the detail lists the failing cases.

    Only for checks without sampling noise: a comparison of noisy values is a :class:`Case`
    and is decided by :func:`all_of`."""
    if not cases:
        return Claim(text, INCONCLUSIVE, "no rows in the table to evaluate this claim", kind=kind, test=FIXED)
    failed = [name for name, ok in cases.items() if not ok]
    shown = details or {}
    if failed:
        detail = f"fails for {len(failed)}/{len(cases)}: " + "; ".join(
            f"{name}{' (' + shown[name] + ')' if name in shown else ''}" for name in failed[:8])
    else:
        detail = f"holds in all {len(cases)} cases"
        if shown:
            detail += ": " + "; ".join(f"{k}: {v}" for k, v in list(shown.items())[:8])
    return exact(text, not failed, detail, kind=kind)


def every_seed(text: str, per_seed_ok: Mapping[Any, bool] | pd.Series, detail: str = "", *,
               kind: str | None = None) -> Claim:
    """A property the paper states for every realisation, checked on every seed: it holds
    if it holds on each, and one counterexample fails it."""
    ok = {k: bool(v) for k, v in dict(per_seed_ok).items()}
    if not ok:
        return Claim(text, INCONCLUSIVE, "no rows in the table to evaluate this claim", kind=kind, test=EVERY_SEED)
    bad = [k for k, v in ok.items() if not v]
    head = (f"holds on all {len(ok)} seeds" if not bad
            else f"fails on {len(bad)} of {len(ok)} seeds ({', '.join(map(str, bad[:8]))})")
    return Claim(text, FAILS if bad else HOLDS, head + (f"; {detail}" if detail else ""), kind=kind,
                 n_seeds=len(ok), interval="every seed (a property of each realisation)", test=EVERY_SEED)


# ------------------------------------------------------------------ per-seed tables


def per_seed(table: pd.DataFrame, by: Sequence[str], metric: str | None = "parameter_mse",
             value: str = "value") -> pd.DataFrame:
    """The values of ``metric`` as a table with one row per seed and one column per
    combination of ``by`` (a :class:`pandas.MultiIndex` for several columns).  Several rows of
    one seed and column (e.g. nodes) are averaged."""
    rows = table if metric is None else table[table["metric"] == metric]
    wide = rows.pivot_table(index="seed", columns=list(by), values=value, aggfunc="mean", dropna=False)
    return wide.sort_index()


def seed_values(wide: pd.DataFrame, *keys: Any) -> tuple[np.ndarray, ...]:
    """The per-seed columns ``keys`` of a :func:`per_seed` table, on the seeds where all of
    them are present (paired by seed)."""
    columns = [wide[k] for k in keys]
    frame = pd.concat(columns, axis=1, keys=range(len(columns))).dropna()
    return tuple(frame[i].to_numpy(float) for i in range(len(columns)))


def mean_over_seeds(table: pd.DataFrame, by: Sequence[str], metric: str = "parameter_mse") -> pd.Series:
    """Mean of ``metric`` over seeds, indexed by the columns ``by`` (for figures and details,
    never to decide a claim)."""
    rows = table[table["metric"] == metric]
    return rows.groupby(list(by), dropna=False)["value"].mean()


def strictly_increasing(values: Sequence[float]) -> bool:
    """Exact monotonicity of noiseless values (e.g. a graph's eigenvalues); noisy values are
    compared with :func:`below` cases."""
    arr = np.asarray(values, float)
    return bool(arr.size >= 2 and np.all(np.diff(arr) > 0))


def increasing_cases(wide: pd.DataFrame, keys: Sequence[Any], name: Callable[[Any, Any], str], *,
                     scale: Scale = "log", what: str = "") -> list[Case]:
    """"Increases along ``keys``": one :func:`below` case per adjacent pair of columns."""
    return [below(name(lo, hi), *seed_values(wide, lo, hi), scale=scale, what=what)
            for lo, hi in zip(keys[:-1], keys[1:], strict=True)]


#: Display names of the reference bounds in every comparison of the chapter (issue 17).
LOCAL, ORACLE, MEAN, CLUSTER_ORACLE = "Local", "Oracle", "Predict the mean", "Cluster oracle"
REFERENCES = (LOCAL, ORACLE, MEAN, CLUSTER_ORACLE)


def reference_claims(final: pd.DataFrame, *, oracle: str | None = ORACLE, scale: Scale = "log") -> list[Claim]:
    """The reference checks of a comparison on the methods' final losses (a per-seed table:
    one row per seed, one column per method).

    ``[reference] every method ends below predict-the-mean`` and, when ``oracle`` is
    given, ``[reference] the oracle ends below every method``.  These are not the paper's
    claims: they say whether a method learnt anything and whether the reference bounds
    bound (a failure is a defect of a reference or of a method).
    """
    methods = [m for m in final.columns if m not in REFERENCES]
    claims = []
    if MEAN in final.columns:
        others = [*methods, *(r for r in (LOCAL, oracle, CLUSTER_ORACLE) if r in final.columns)]
        claims.append(all_of("[reference] every method ends below the predict-the-mean loss",
                             [below(m, *seed_values(final, m, MEAN), scale=scale, what=f"{m} / {MEAN}")
                              for m in others], kind=REFERENCE))
    if oracle is not None and oracle in final.columns:
        claims.append(all_of(f"[reference] the {oracle.lower()} reference ends below every method",
                             [below(m, *seed_values(final, oracle, m), scale=scale, what=f"{oracle} / {m}")
                              for m in methods], kind=REFERENCE))
    return claims
