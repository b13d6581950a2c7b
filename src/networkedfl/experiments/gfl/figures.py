"""Figure and table helpers of the graph-aware chapter's comparisons (Figs. 10.1, 10.3, 10.4).

The notebooks call these; restyling a figure means editing a function here (tested in
``tests/test_graph_aware_figures.py``), not a notebook cell.  Every comparison shows the
tuned methods (issue 17) against the reference bounds: ``Local`` (each client alone),
``Oracle`` (ground-truth structure) and ``Predict the mean`` (a horizontal line).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..claims import CLUSTER_ORACLE, LOCAL, MEAN, ORACLE, REFERENCES

__all__ = ["COLOURS", "final_losses", "plot_method_curves", "plot_upper_level_gain", "tuning_summary"]

#: Colour of every method and reference in the chapter's figures.
COLOURS = {"FedAvg": "tab:blue", "DFL-SGD": "tab:orange", "DFL-GT": "tab:green", "FeSEM": "tab:purple",
           "BiG-FL": "tab:red", LOCAL: "tab:brown", ORACLE: "black", CLUSTER_ORACLE: "tab:olive",
           MEAN: "tab:gray"}
_STYLES = {LOCAL: ":", ORACLE: "--", CLUSTER_ORACLE: "--"}


def _curve(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.groupby("round")["value"].agg(["mean", "std"]).sort_index()


def plot_method_curves(ax: Any, table: pd.DataFrame, metric: str = "test_loss", *,
                       methods: Sequence[str] | None = None, band: bool = True,
                       xlabel: str = "communication round") -> list[str]:
    """Mean (and ± one standard deviation over seeds) of ``metric`` against rounds, one
    line per method; ``Local`` dotted, ``Oracle`` dashed, ``Predict the mean`` a horizontal
    grey line at its mean.  Rows with a ``domain`` (per-client rows) are ignored.

    Returns the methods drawn, in drawing order.
    """
    rows = table[table["metric"] == metric]
    if "domain" in rows:
        rows = rows[rows["domain"].isna()]
    present = list(dict.fromkeys(rows["method"]))
    order = [m for m in (methods or [*COLOURS, *present]) if m in present]
    order = list(dict.fromkeys(order))
    for method in order:
        curve = _curve(rows[rows["method"] == method])
        colour = COLOURS.get(method)
        if method == MEAN:
            ax.axhline(float(curve["mean"].mean()), color=colour, linestyle="-.", linewidth=1.2, label=method)
            continue
        ax.plot(curve.index, curve["mean"], label=method, color=colour, linestyle=_STYLES.get(method, "-"))
        if band and method not in REFERENCES:
            std = curve["std"].fillna(0)
            ax.fill_between(curve.index, curve["mean"] - std, curve["mean"] + std, color=colour, alpha=0.2,
                            linewidth=0)
    ax.set_xlabel(xlabel)
    return order


def plot_upper_level_gain(ax: Any, table: pd.DataFrame) -> pd.Series:
    """BiG-FL's UL gain per round (:func:`~.graph_aware.upper_level_gain`): how much the
    learnt GNN layer lowers the UL loss (10.14) at the round's LL models; a zero line."""
    from .synthetic import upper_level_gain

    gain = upper_level_gain(table)
    ax.plot(gain.index, gain.to_numpy(), color=COLOURS["BiG-FL"], label="BiG-FL")
    ax.axhline(0.0, color="tab:gray", linewidth=0.8)
    ax.set_xlabel("communication round")
    ax.set_ylabel(r"$f(\varphi^t, \Theta^t) - f(I, \Theta^t)$")
    return gain


def final_losses(table: pd.DataFrame, metric: str = "test_loss") -> pd.DataFrame:
    """Per method: the round-0 and final-round mean of ``metric`` over seeds, its standard
    deviation at the final round and the number of seeds, sorted by the final mean."""
    rows = table[table["metric"] == metric]
    if "domain" in rows:
        rows = rows[rows["domain"].isna()]
    out = {}
    for method, block in rows.groupby("method"):
        curve = _curve(block)
        last = block[block["round"] == block["round"].max()]["value"]
        out[method] = {"round 0": float(curve["mean"].iloc[0]), "final": float(curve["mean"].iloc[-1]),
                       "final std": float(last.std()) if len(last) > 1 else 0.0, "seeds": int(last.size)}
    return pd.DataFrame.from_dict(out, orient="index").sort_values("final")


def tuning_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The tuning protocol's rows as one table: per method and grid point its validation
    loss (mean over the tuning seeds) and whether it was chosen.  Empty if untuned."""
    rows = table[table["metric"] == "tuning_validation_loss"]
    if rows.empty:
        return pd.DataFrame(columns=["method", "grid point", "validation loss", "chosen"])
    chosen = table[table["metric"] == "tuning_chosen"].groupby("method")["tuning_point"].first()
    out = rows[["method", "tuning_point", "tuning_values", "value"]].copy()
    out["chosen"] = [chosen.get(m) == p for m, p in zip(out["method"], out["tuning_point"], strict=True)]
    out = out.rename(columns={"tuning_values": "grid point", "value": "validation loss"})
    return out.drop(columns="tuning_point").reset_index(drop=True)
