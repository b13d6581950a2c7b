"""Figures of the FedRelax targets, drawn from their tidy tables (used by the notebooks).

Every function takes the table written to ``results/tables/<id>.csv`` and returns a
matplotlib figure: means over the repetition seeds (and, for Fig. 5, over the runs), with
a band of one standard deviation where the curves are per iteration and error bars where
they are per grid point; the other functions return the summary frames the notebooks show
beside the figures.  Restyling a figure means editing its function here (each is
smoke-tested on the test profile's tables in ``tests/integration/test_figures.py``), never a notebook
cell.  Nothing here runs an experiment.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...plotting import relative_gap
from ..report import load_target

__all__ = [
    "METHOD_LABELS",
    "convergence_summary",
    "final_per_seed",
    "load_target",
    "mean_table",
    "plot_baselines",
    "plot_convergence",
    "plot_dm_ratio",
    "plot_noniid",
    "plot_tree_ratio",
    "plot_variation",
    "variation_summary",
]

METHOD_LABELS = {
    "fedrelax": "FedRelax", "local": r"local ($\alpha$ = 0)", "oracle": "Oracle",
    "fedavg": "FedAvg", "ifca_correct": "IFCA correct", "ifca_incorrect": "IFCA incorrect",
    "mean": "predict the mean (w = 0)",
}
AXIS = {
    "d_over_m": "d / m", "sigma": r"noise $\sigma$", "alpha": r"$\alpha$", "iteration": "iteration",
    "weight_mse": r"MSE($\hat{w}$) (18)", "mse_val": r"MSE$^{(val)}$",
    "mse_val_ratio": r"normalised MSE$^{(val)}$",
}


def mean_table(table: pd.DataFrame, metric: str, index: str | Sequence[str],
               columns: str | Sequence[str]) -> pd.DataFrame:
    """Mean of ``metric`` over seeds (and runs) as an ``index`` x ``columns`` table."""
    rows = table[table["metric"] == metric]
    return rows.pivot_table(index=index, columns=columns, values="value", aggfunc="mean")


def _errorbar(ax: plt.Axes, rows: pd.DataFrame, x: str, label: str, logy: bool, **kw) -> None:
    stats = rows.groupby(x)["value"].agg(["mean", "std"]).sort_index()
    std = stats["std"].fillna(0).to_numpy()
    lower = np.minimum(std, 0.9 * stats["mean"].to_numpy()) if logy else std
    ax.errorbar(stats.index, stats["mean"], yerr=[lower, std], marker="o", ms=3, capsize=2,
                label=label, **kw)


def _band(ax: plt.Axes, rows: pd.DataFrame, label: str, **kw) -> None:
    stats = rows.groupby("iteration")["value"].agg(["mean", "std"]).sort_index()
    line, = ax.plot(stats.index, stats["mean"], label=label, **kw)
    lo = np.maximum(stats["mean"] - stats["std"].fillna(0), stats["mean"] * 0.1)
    ax.fill_between(stats.index, lo, stats["mean"] + stats["std"].fillna(0), alpha=0.15,
                    color=line.get_color(), lw=0)


def _finish(ax: plt.Axes, x: str, y: str, logy: bool = True, logx: bool = False,
            ticks: Sequence[float] | None = None) -> None:
    ax.set_xlabel(AXIS.get(x, x))
    ax.set_ylabel(AXIS.get(y, y))
    if logy:
        ax.set_yscale("log")
    if logx:
        ax.set_xscale("log")
    if ticks is not None:  # label the grid values themselves (log axes crowd otherwise)
        values = sorted({float(t) for t in ticks})
        ax.set_xticks(values, [f"{t:g}" for t in values])
        ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.grid(alpha=0.3, which="both")


def _legend_outside(ax: plt.Axes, below: bool = False, **kw) -> None:
    """The legend beside the axes (right), or under them: never over the curves."""
    if below:
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, **kw)
    else:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, **kw)


def plot_dm_ratio(table: pd.DataFrame) -> plt.Figure:
    """Fig. 1a: MSE(w_hat) vs d/m, one curve per alpha."""
    rows = table[table["metric"] == "weight_mse"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for alpha, part in rows.groupby("alpha"):
        _errorbar(ax, part, "d_over_m", rf"$\alpha$ = {alpha:g}", logy=True)
    _finish(ax, "d_over_m", "weight_mse", logx=True, ticks=rows["d_over_m"].unique())
    _legend_outside(ax)
    fig.tight_layout()
    return fig


def plot_convergence(table: pd.DataFrame) -> plt.Figure:
    """Fig. 1b: MSE(w_hat) vs iteration, a panel per sigma, a curve per alpha."""
    rows = table[table["metric"] == "weight_mse"]
    sigmas = sorted(rows["sigma"].unique())
    fig, axes = plt.subplots(1, len(sigmas), figsize=(4.2 * len(sigmas), 3.4), sharey=True,
                             squeeze=False)
    for ax, sigma in zip(axes[0], sigmas, strict=True):
        for alpha, part in rows[rows["sigma"] == sigma].groupby("alpha"):
            _band(ax, part, rf"$\alpha$ = {alpha:g}")
        ax.set_title(rf"$\sigma$ = {sigma:g}, d/m = {rows['d_over_m'].iloc[0]:g}")
        _finish(ax, "iteration", "weight_mse")
    _legend_outside(axes[0, -1])
    fig.tight_layout()
    return fig


def _geometric(rows: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per ``by``: the geometric mean over seeds (``exp`` of the mean log) and the factor
    ``exp(sd of the log)`` of the band around it."""
    logs = np.log(rows["value"].astype(float)).groupby(rows[by]).agg(["mean", "std"]).sort_index()
    return pd.DataFrame({"centre": np.exp(logs["mean"]), "factor": np.exp(logs["std"].fillna(0.0))})


def _geometric_band(ax: plt.Axes, rows: pd.DataFrame, label: str, **kw) -> None:
    stats = _geometric(rows, "iteration")
    line, = ax.plot(stats.index, stats["centre"], label=label, **kw)
    ax.fill_between(stats.index, stats["centre"] / stats["factor"], stats["centre"] * stats["factor"],
                    alpha=0.15, color=line.get_color(), lw=0)


def plot_baselines(table: pd.DataFrame) -> plt.Figure:
    """Fig. 1c: MSE(w_hat) vs iteration / round for FedRelax and the baselines, each curve the
    geometric mean over seeds (the statistic its claims compare: ratios on the log scale,
    docs/verdicts.md), its band a factor ``exp(sd of log MSE)`` either side.

    Left: every method, log y.  Right: the same curves on a linear y limited to the methods
    that stay near the predict-the-mean level (final MSE above a tenth of it), which the
    log axis crowds into one band: local training, FedAvg, IFCA-incorrect and FedRelax,
    whose order the claims compare.
    """
    rows = table[table["metric"] == "weight_mse"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    styles = {"oracle": "--", "ifca_correct": "-.", "ifca_incorrect": ":", "fedavg": "--"}
    methods = [m for m in METHOD_LABELS if m in set(rows["method"])]
    final = rows[rows["iteration"] == rows["iteration"].max()]
    last = _geometric(final, "method")["centre"]
    for ax, logy in zip(axes, (True, False), strict=True):
        for method in methods:
            mine = rows[rows["method"] == method]
            if method == "mean":  # a reference: a horizontal line
                ax.axhline(float(np.exp(np.log(mine["value"].astype(float)).mean())), color="tab:gray",
                           ls="-.", lw=1.2, label=METHOD_LABELS[method])
                continue
            _geometric_band(ax, mine, METHOD_LABELS[method], ls=styles.get(method, "-"))
        _finish(ax, "iteration", "weight_mse", logy=logy)
        ax.set_xlabel("iteration / round")
        ax.set_ylabel(f"{AXIS.get('weight_mse', 'weight_mse')}, geometric mean over seeds")
    high = last[last > 0.1 * last.max()]
    if len(high):
        axes[1].set_ylim(0.9 * float(high.min()), 1.05 * float(rows["value"].max()))
    axes[1].set_title("the upper curves, linear scale")
    axes[0].set_title("every method, log scale")
    _legend_outside(axes[1])
    fig.tight_layout()
    return fig


#: Curves whose means differ by at most this (relative) lie on each other: the legend says so.
COINCIDE_RTOL = 0.01


def _coinciding(rows: pd.DataFrame, x: str, key: str, rtol: float = COINCIDE_RTOL) -> dict[float, float]:
    """``{value: earlier value}`` of ``key`` whose mean curve over ``x`` lies within ``rtol``
    (relative, at every shared ``x``) of the curve of an earlier value."""
    means = rows.groupby([key, x])["value"].mean()
    values = list(means.index.get_level_values(key).unique())
    curves = {v: np.column_stack([means.loc[v].index.to_numpy(float), means.loc[v].to_numpy(float)])
              for v in values}
    out = {}
    for k, value in enumerate(values):
        for earlier in values[:k]:
            if relative_gap(curves[value], curves[earlier]) <= rtol:
                out[value] = earlier
                break
    return out


def _alpha_label(alpha: float, same: dict[float, float]) -> str:
    label = rf"$\alpha$ = {alpha:g}"
    if alpha in same:
        label += rf" (coincides with $\alpha$ = {same[alpha]:g}, within {COINCIDE_RTOL:.0%})"
    return label


def _alpha_colours(table: pd.DataFrame) -> dict[float, str]:
    """One colour per alpha in every panel of a figure (issue 41: Fig. 3 gave one colour to
    alpha = 0.01 in two panels and to alpha = 0 in the third)."""
    return {a: f"C{k % 10}" for k, a in enumerate(sorted(table["alpha"].dropna().unique()))}


def plot_tree_ratio(table: pd.DataFrame, x: str) -> plt.Figure:
    """Figs. 2a / 2b: MSE_val / MSE_val(Oracle) vs ``x`` (d/m or sigma), a curve per alpha;
    a curve on an earlier one (within 1 %) says so in the legend."""
    rows = table[(table["metric"] == "mse_val_ratio") & (table["method"] == "fedrelax")]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    same = _coinciding(rows, x, "alpha")
    for alpha, part in rows.groupby("alpha"):
        _errorbar(ax, part, x, _alpha_label(alpha, same), logy=True)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--", label="Oracle")
    _finish(ax, x, "mse_val_ratio", logx=(x == "d_over_m"), ticks=rows[x].unique())
    ax.set_ylabel(r"MSE$^{(val)}$ / MSE$^{(val)}$(Oracle)")
    _legend_outside(ax)
    fig.tight_layout()
    return fig


def _sweeps(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows of the d/m sweep (lowest sigma) and of the sigma sweep (its d/m)."""
    flat = table[table["sigma"] == table["sigma"].min()]
    counts = table.groupby("d_over_m")["sigma"].nunique()
    noisy = table[table["d_over_m"] == counts.idxmax()]
    return flat, noisy


def plot_noniid(table: pd.DataFrame, trees: bool) -> plt.Figure:
    """Figs. 3 (linear) and 4 (trees): three panels of MSE_val relative to alpha = 0.

    Linear (Fig. 3): ratio vs d/m per alpha > 0; MSE_val vs d/m per alpha; ratio vs sigma
    at the smallest alpha > 0.  Each alpha has one colour in all three panels.  Trees (Fig. 4): ratio vs d/m per alpha > 0; ratio vs alpha
    per d/m; ratio vs sigma per alpha > 0.
    """
    ratio = table[(table["metric"] == "mse_val_ratio") & (table["method"] == "fedrelax")]
    flat_r, noisy_r = _sweeps(ratio)
    colour = _alpha_colours(table)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    for alpha, part in flat_r.groupby("alpha"):
        _errorbar(axes[0], part, "d_over_m", rf"$\alpha$ = {alpha:g}", logy=trees, color=colour[alpha])
    _finish(axes[0], "d_over_m", "mse_val_ratio", logy=trees, logx=True,
            ticks=flat_r["d_over_m"].unique())
    axes[0].set_title(rf"$\sigma$ = {flat_r['sigma'].min():g}")
    if trees:
        for k, (dm, part) in enumerate(flat_r.groupby("d_over_m")):  # colours no alpha has
            _errorbar(axes[1], part, "alpha", f"d/m = {dm:g}", logy=True, color=f"C{(len(colour) + k) % 10}")
        _finish(axes[1], "alpha", "mse_val_ratio", logx=True, ticks=flat_r["alpha"].unique())
        axes[1].set_title(rf"$\sigma$ = {flat_r['sigma'].min():g}")
        for alpha, part in noisy_r.groupby("alpha"):
            _errorbar(axes[2], part, "sigma", rf"$\alpha$ = {alpha:g}", logy=True, color=colour[alpha])
    else:
        val = table[(table["metric"] == "mse_val") & (table["sigma"] == table["sigma"].min())]
        for alpha, part in val.groupby("alpha"):
            _errorbar(axes[1], part, "d_over_m", rf"$\alpha$ = {alpha:g}", logy=True, color=colour[alpha])
        _finish(axes[1], "d_over_m", "mse_val", logx=True, ticks=val["d_over_m"].unique())
        axes[1].set_title(rf"$\sigma$ = {val['sigma'].min():g}")
        a_small = noisy_r["alpha"].min()
        _errorbar(axes[2], noisy_r[noisy_r["alpha"] == a_small], "sigma",
                  rf"$\alpha$ = {a_small:g}", logy=False, color=colour[a_small])
    _finish(axes[2], "sigma", "mse_val_ratio", logy=trees, ticks=noisy_r["sigma"].unique())
    axes[2].set_title(f"d/m = {noisy_r['d_over_m'].iloc[0]:g}")
    for ax in (axes[0], axes[2]):
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    for ax in axes:
        _legend_outside(ax, below=True)
    fig.tight_layout()
    return fig


def plot_variation(table: pd.DataFrame, curve: Sequence[str]) -> plt.Figure:
    """Fig. 5: variation (22) (solid) and its bound (25) (dashed) vs iteration, log y.

    One colour per combination of the ``curve`` columns (e.g. ``["sigma", "alpha"]`` or
    ``["p_in"]``); means over all runs and seeds.  Bounds that coincide (within 2 %: the
    bound scales as sigma^2 / alpha, so sigma = 0.1, alpha = 1e-4 and sigma = 1, alpha = 0.01
    share one) are drawn with interleaved dashes, and the legend says so.
    """
    curve = list(curve)
    var = table[table["metric"] == "variation"]
    bound = table[table["metric"] == "bound"].groupby(curve)["value"].mean()
    lam2 = table[table["metric"] == "lambda2"].groupby(curve)["value"].mean()
    names = {"sigma": r"$\sigma$", "alpha": r"$\alpha$", "p_in": r"$p_{in}$"}

    def label_of(key: tuple) -> str:
        return ", ".join(f"{names.get(c, c)} = {v:g}" for c, v in zip(curve, key, strict=True))

    keys = [k if isinstance(k, tuple) else (k,) for k, _ in var.groupby(curve)]
    bounds = {k: float(bound[k if len(k) > 1 else k[0]]) for k in keys}
    same = {k: [o for o in keys if o != k and np.isfinite(bounds[k])
                and abs(bounds[o] - bounds[k]) <= 0.02 * min(bounds[o], bounds[k])] for k in keys}
    fig, ax = plt.subplots(figsize=(8, 4))
    for key, part in zip(keys, (p for _, p in var.groupby(curve)), strict=True):
        label = label_of(key)
        if curve == ["p_in"]:
            label += rf" ($\lambda_2$ = {lam2[key[0]]:.3g})"
        if same[key]:
            label += " (bound = " + "; ".join(label_of(o) for o in same[key]) + ")"
        stats = part.groupby("iteration")["value"].mean()
        line, = ax.plot(stats.index, stats.to_numpy(), label=label)
        if np.isfinite(bounds[key]):
            shift = 4 * sorted([key, *same[key]]).index(key)  # coinciding bounds: interleaved dashes
            ax.axhline(bounds[key], color=line.get_color(), lw=1,
                       ls=(shift, (4, 4 * len(same[key]) + 4)))
    _finish(ax, "iteration", "variation")
    ax.set_ylabel(r"$\sum_i \|\tilde{w}^{(i)}\|^2$ (solid), bound (25) (dashed)")
    _legend_outside(ax)
    fig.tight_layout()
    return fig


def convergence_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 1b: final and minimal MSE(w) per (sigma, alpha), means over repetitions, and the
    iteration of the minimum."""
    curves = table[table["metric"] == "weight_mse"].groupby(["sigma", "alpha", "iteration"])["value"].mean()
    by = curves.groupby(level=[0, 1])
    return pd.DataFrame({"final": by.last(), "minimum": by.min(), "argmin": by.idxmin().map(lambda k: k[-1])})


def final_per_seed(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 1c: the final MSE(w) of every method (columns) per repetition (rows)."""
    final = table[(table["metric"] == "weight_mse") & (table["iteration"] == table["iteration"].max())]
    return final.pivot_table(index="seed", columns="method", values="value")


def variation_summary(table: pd.DataFrame, keys: str | Sequence[str]) -> pd.DataFrame:
    """Fig. 5: the final variation (22) and the mean bound (25) per ``keys``; with ``keys``
    ``"p_in"`` also lambda_2 of the cluster's Laplacian, first."""
    last = table[(table["metric"] == "variation") & (table["iteration"] == table["iteration"].max())]
    out = {"final variation": last.groupby(keys)["value"].mean(),
           "bound (25)": table[table["metric"] == "bound"].groupby(keys)["value"].mean()}
    if "lambda2" in set(table["metric"]) and keys == "p_in":
        out = {"lambda_2": table[table["metric"] == "lambda2"].groupby(keys)["value"].mean(), **out}
    return pd.DataFrame(out)
