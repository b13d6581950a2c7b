"""Helpers to evaluate claims on tidy tables (means over repetitions, strict comparisons)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .registry import Claim

__all__ = ["CLUSTER_ORACLE", "LOCAL", "MEAN", "ORACLE", "REFERENCES", "check_all", "mean_over_seeds", "reference_claims",
           "strictly_increasing"]


def mean_over_seeds(
    table: pd.DataFrame, by: Sequence[str], metric: str = "parameter_mse"
) -> pd.Series:
    """Mean of ``metric`` over seeds, indexed by the columns ``by``."""
    rows = table[table["metric"] == metric]
    return rows.groupby(list(by), dropna=False)["value"].mean()


def strictly_increasing(values: Sequence[float]) -> bool:
    arr = np.asarray(values, float)
    return bool(arr.size >= 2 and np.all(np.diff(arr) > 0))


def check_all(text: str, cases: dict[str, bool], details: dict[str, str] | None = None) -> Claim:
    """A claim that holds iff every case holds; the detail lists the failing cases."""
    if not cases:
        return Claim(text, False, "no rows in the table to evaluate this claim")
    failed = [name for name, ok in cases.items() if not ok]
    shown = details or {}
    if failed:
        detail = f"fails for {len(failed)}/{len(cases)}: " + "; ".join(
            f"{name}{' (' + shown[name] + ')' if name in shown else ''}" for name in failed[:8]
        )
    else:
        detail = f"holds in all {len(cases)} cases"
        if shown:
            detail += ": " + "; ".join(f"{k}: {v}" for k, v in list(shown.items())[:8])
    return Claim(text, not failed, detail)


#: Display names of the reference bounds in every comparison of the chapter (issue 17).
LOCAL, ORACLE, MEAN, CLUSTER_ORACLE = "Local", "Oracle", "Predict the mean", "Cluster oracle"
REFERENCES = (LOCAL, ORACLE, MEAN, CLUSTER_ORACLE)


def reference_claims(final: pd.Series, *, oracle: str | None = ORACLE) -> list[Claim]:
    """The reference checks of a comparison on the methods' final losses (by method).

    ``[reference] every method ends below predict-the-mean`` and, when ``oracle`` is
    given, ``[reference] the oracle ends below every method``.  These are not the paper's
    claims: they say whether a method learnt anything and whether the reference bounds
    bound (a failure is a defect of a reference or of a method).
    """
    methods = [m for m in final.index if m not in REFERENCES]
    claims = []
    if MEAN in final.index:
        claims.append(check_all(
            "[reference] every method ends below the predict-the-mean loss",
            {m: bool(final[m] < final[MEAN]) for m in [*methods, *(r for r in (LOCAL, oracle, CLUSTER_ORACLE)
                                                                      if r in final.index)]},
            {m: f"{final[m]:.4g} vs {final[MEAN]:.4g}" for m in final.index if m != MEAN}))
    if oracle is not None and oracle in final.index:
        claims.append(check_all(
            f"[reference] the {oracle.lower()} reference ends below every method",
            {m: bool(final[oracle] < final[m]) for m in methods},
            {m: f"{oracle} {final[oracle]:.4g} vs {final[m]:.4g}" for m in methods}))
    return claims
