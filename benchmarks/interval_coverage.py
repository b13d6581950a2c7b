"""Coverage of the verdicts' 95 % intervals on synthetic per-seed values with a known mean
(docs/verdicts.md#intervals): Student's t at 3, 5, 10, 20 and 40 seeds and the BCa bootstrap
at 40, on normal, log-normal and two-cluster data, 2,000 replicates each.

Not a speed benchmark (``run_all.py`` does not run it): the table of docs/verdicts.md comes
from ``python benchmarks/interval_coverage.py``; ``tests/unit/experiments/test_coverage.py``
asserts its decisive cells on fewer replicates.
"""

import warnings

import numpy as np
from scipy import stats

R, SEEDS = 2000, (3, 5, 10, 20, 40)


def draw(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    if kind == "normal":
        return rng.normal(0, 1, (R, n)), 0.0
    if kind.startswith("log-normal"):
        s = float(kind.split()[-1])
        return np.exp(rng.normal(0, s, (R, n))), float(np.exp(s * s / 2))
    p = float(kind.split()[-1])  # the share of seeds in the upper cluster
    return np.where(rng.random((R, n)) < p, 3.0, 0.0) + rng.normal(0, 0.1, (R, n)), 3 * p


def coverage(kind: str, n: int) -> str:
    x, mu = draw(kind, n, np.random.default_rng(n))
    m, h = x.mean(1), stats.t.ppf(0.975, n - 1) * x.std(1, ddof=1) / np.sqrt(n)
    text = f"t {np.mean((m - h <= mu) & (mu <= m + h)):.2f}"
    if n >= 40:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ci = stats.bootstrap((x,), np.mean, axis=-1, vectorized=True, n_resamples=1999, method="BCa",
                                 rng=np.random.default_rng(0)).confidence_interval
        text += f" / BCa {np.mean((ci.low <= mu) & (mu <= ci.high)):.2f}"
    return text


if __name__ == "__main__":
    print("| data (known mean) | " + " | ".join(f"{n} seeds" for n in SEEDS) + " |")
    print("|---|" + "---|" * len(SEEDS))
    for kind in ("normal", "log-normal sigma 0.6", "log-normal sigma 1.2", "two clusters, upper share 0.3",
                 "two clusters, upper share 0.1"):
        print(f"| {kind} | " + " | ".join(coverage(kind, n) for n in SEEDS) + " |")
