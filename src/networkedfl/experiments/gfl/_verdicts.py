"""Per-seed statistics of the chapter's comparisons and the cases built from them
(:mod:`networkedfl.experiments.claims`): each method's value at its first or last recorded
round, one row per seed, and "A ends below each of B, C, ..." as paired cases."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..claims import INCONCLUSIVE, Case, below
from ..registry import Claim

__all__ = ["below_each", "decided", "round_values", "seed_curves"]


def _rows(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    rows = table[table["metric"] == metric]
    if "domain" in rows:  # per-client rows carry a domain; the averages have none
        rows = rows[rows["domain"].isna()]
    return rows.assign(value=rows["value"].astype(float), round=rows["round"].astype(float))


def seed_curves(table: pd.DataFrame, metric: str = "test_loss") -> pd.DataFrame:
    """``metric`` against rounds: index ``(seed, round)``, one column per method."""
    return _rows(table, metric).pivot_table(index=["seed", "round"], columns="method", values="value",
                                            aggfunc="mean").sort_index()


def round_values(table: pd.DataFrame, metric: str = "test_loss", at: str = "last") -> pd.DataFrame:
    """Each method's ``metric`` at its own ``last`` (or ``first``) recorded round: one row per
    seed, one column per method (a :func:`~networkedfl.experiments.claims.per_seed` table)."""
    rows = _rows(table, metric)
    if rows.empty:
        return pd.DataFrame()
    rounds = rows.groupby("method")["round"].transform("max" if at == "last" else "min")
    return rows[rows["round"] == rounds].pivot_table(index="seed", columns="method", values="value",
                                                     aggfunc="mean").sort_index()


def below_each(wide: pd.DataFrame, a: str, others: Iterable[str], *, scale: str = "log") -> list[Case]:
    """One paired case ``a`` below ``b`` for every ``b`` of ``others`` present in ``wide``
    (the effect: the ratio ``a/b`` on the log scale, the difference on the linear one)."""
    return [below(b, wide[a].to_numpy(float), wide[b].to_numpy(float), scale=scale,  # type: ignore[arg-type]
                  what=f"{a} / {b}" if scale == "log" else f"{a} - {b}")
            for b in others if b in wide.columns and b != a] if a in wide.columns else []


def decided(text: str, build: Callable[[], Claim], frames: Sequence[pd.DataFrame | Any] = ()) -> Claim:
    """``build()``, or an inconclusive claim naming the cause when its per-seed values are
    missing or not finite (a method absent from the table, or a run that diverged)."""
    for frame in frames:
        if isinstance(frame, pd.DataFrame) and not np.isfinite(frame.to_numpy(float)).all():
            bad = [str(c) for c in frame.columns if not np.isfinite(frame[c].to_numpy(float)).all()]
            return Claim(text, INCONCLUSIVE, f"non-finite per-seed values of {', '.join(bad)} (a run diverged "
                         "or a method is missing on some seed): no interval")
    return build()
