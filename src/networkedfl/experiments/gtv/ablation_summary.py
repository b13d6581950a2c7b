"""The quirk ablation's headline numbers (issue 16), computed from its table.

Kept apart from :mod:`.ablation` (the ablation's jobs) and from :mod:`networkedfl.plotting`
(the figures): a job's code hash covers every module its functions import, so a change of
the plotting reruns the figures and reports only, and a change here the claims, figures and
summaries, never a run (``tests/unit/pipeline/test_provenance.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["QUANTITIES", "ablation_summary", "headline_per_seed"]

#: What a linear case's headline metric is, as the summary's ``quantity`` names it (the
#: sweep figures' axis labels of :data:`networkedfl.plotting.PARAM_LABELS` say the same).
QUANTITIES = {"label_mse": "label MSE", "parameter_mse": "parameter MSE (39)"}


def ablation_summary(table: pd.DataFrame, metric: str = "label_mse") -> pd.DataFrame:
    """Mean over seeds of every headline number of the quirk ablation, per (case, switch).

    Linear cases report ``metric`` (rows without an iteration): one panel per penalty of
    Alg. 1 for sweep cases (items: the grid points), one per case for method comparisons
    (items: the methods).  MNIST cases report the validation accuracy at their last
    iteration, one item per method.  Column ``quantity`` names what the value is.
    """
    has_it = "iteration" in table
    lin = table[(table["metric"] == metric) & (table["iteration"].isna() if has_it else True)].copy()
    penalty = lin["penalty"].astype(str) if "penalty" in lin else pd.Series("", index=lin.index)
    method = pd.Series(np.where(lin["method"] == "primal_dual", "Alg. 1 " + penalty, lin["method"]),
                       index=lin.index, dtype=object)
    lin["panel"], lin["item"], lin["quantity"] = lin["case"], method, QUANTITIES.get(metric, metric)
    for case, part in lin.groupby("case"):
        grid = [c for c in ("p_out", "M", "eps", "sigma", "n_clusters") if c in part and part[c].nunique() > 1]
        if grid:  # a sweep: a panel per method, an item per grid point
            lin.loc[part.index, "panel"] = case + ": " + method[part.index]
            lin.loc[part.index, "item"] = part[grid].apply(
                lambda r, g=grid: ", ".join(f"{k}={r[k]:g}" for k in g), axis=1)
    parts = [lin]
    if has_it:
        acc = table[(table["metric"] == "accuracy") & table["iteration"].notna()]
        for case, part in acc.groupby("case"):
            last = part["iteration"].max()
            rows = part[part["iteration"] == last].copy()
            rows["panel"], rows["item"] = case, rows["method"]
            rows["quantity"] = f"validation accuracy at iteration {last:g}"
            parts.append(rows)
    rows = pd.concat(parts)
    switches = list(dict.fromkeys(rows["switch"]))
    out = rows.groupby(["case", "switch", "panel", "item", "quantity"], sort=False)["value"].mean().reset_index()
    rank = {s: k for k, s in enumerate(switches)}
    out["order"] = out["switch"].map(lambda s: -1 if s == "published" else (len(rank) if s == "paper" else rank[s]))
    return out.sort_values(["case", "order"], kind="stable").drop(columns="order").reset_index(drop=True)


def headline_per_seed(table: pd.DataFrame) -> pd.DataFrame:
    """Each seed's headline number of every (case, switch): the mean over the case's items of
    :func:`ablation_summary`, geometric for MSEs (the items span orders
    of magnitude: an arithmetic mean would be the largest item's) and arithmetic for MNIST's
    final accuracies.  Columns ``case, switch, seed, value, quantity``."""
    parts = []
    for seed, rows in table.groupby("seed"):
        summary = ablation_summary(rows)
        mse = summary["quantity"].str.contains("MSE")
        summary["value"] = summary["value"].where(~mse, np.log(summary["value"].where(mse, 1.0)))
        means = summary.groupby(["case", "switch"], sort=False).agg(value=("value", "mean"),
                                                                     quantity=("quantity", "first"))
        means["value"] = means["value"].where(~means["quantity"].str.contains("MSE"), np.exp(means["value"]))
        parts.append(means.reset_index().assign(seed=seed))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["case", "switch", "seed", "value", "quantity"])

