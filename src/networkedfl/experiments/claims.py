"""Helpers to evaluate claims on tidy tables (means over repetitions, strict comparisons)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .registry import Claim

__all__ = ["check_all", "mean_over_seeds", "strictly_increasing"]


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
