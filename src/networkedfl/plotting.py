"""Paper-agnostic plotting of target tables (no experiment code runs here).

Every function takes a tidy table as written to ``results/tables/<id>.csv`` and returns a
matplotlib figure or a summary frame; :func:`save_figure` writes a figure as PDF and PNG
atomically.  The figures of one paper are drawn by ``experiments/<paper>/figures.py`` from
these helpers; the notebooks only call those.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from .io import atomic_write

__all__ = [
    "PENALTY_LABELS",
    "ablation_summary",
    "accuracy_curves",
    "coinciding_curves",
    "claims_frame",
    "plot_accuracy_curves",
    "plot_graph",
    "plot_sweep",
    "save_figure",
    "summary_table",
    "sweep_summary",
    "tuning_summary",
]

PENALTY_LABELS = {"l1": r"$\ell_1$", "nlasso": r"nLasso ($\ell_2$)", "mocha": r"MOCHA ($\ell_2^2$)"}
PARAM_LABELS = {
    "eps": r"bridge weight $\varepsilon$",
    "p_out": r"$p_{\mathrm{out}}$",
    "M": r"sampling fraction $M$",
    "sigma": r"noise $\sigma$",
    "size_c2": r"$|\mathcal{C}_2|$",
    "parameter_mse": "parameter MSE (39)",
    "label_mse": "label MSE",
}


def _label(name: str, value: object) -> str:
    if name == "penalty":
        return PENALTY_LABELS.get(str(value), str(value))
    shown = f"{value:g}" if isinstance(value, int | float | np.number) else str(value)
    return f"{name} = {shown}"


#: Line style of each variant (EXPERIMENTS.md §8): the published curves are the main ones.
VARIANT_STYLES = {"published": "-", "paper": "--"}
VARIANT_LABELS = {"published": "published (authors' notebooks)", "paper": "paper (its equations)"}
VARIANT_SHORT = {"published": "published", "paper": "paper"}


def _variants(table: pd.DataFrame) -> list[str]:
    if "variant" not in table:
        return []
    present = list(table["variant"].dropna().unique())
    return [v for v in VARIANT_STYLES if v in present] + [v for v in present if v not in VARIANT_STYLES]


def sweep_summary(
    table: pd.DataFrame, x: str, curve: str, panel: str = "penalty", metric: str = "parameter_mse"
) -> pd.DataFrame:
    """Mean, standard deviation and count over seeds per (variant,) panel, curve and x."""
    rows = table[table["metric"] == metric]
    keys = (["variant"] if _variants(table) else []) + [panel, curve, x]
    return rows.groupby(keys)["value"].agg(mean="mean", std="std", n="count").reset_index()


def plot_sweep(
    table: pd.DataFrame,
    *,
    x: str,
    curve: str,
    panel: str = "penalty",
    metric: str | Sequence[str] = "parameter_mse",
    logy: bool = True,
    panel_order: Sequence[str] | None = None,
    title: str | None = None,
) -> plt.Figure:
    """One panel per ``panel`` value, one curve per ``curve`` value: mean ± std over seeds.

    A table with a ``variant`` column (``published``, ``paper``) gets both variants on the
    same axes: the published curves solid with error bars, the paper's dashed in the same
    colour.  Several ``metric`` names give one row of panels each.  On a log axis the lower
    error bar is clipped at 10 % of the mean.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    variants = _variants(table) or [None]
    names = sorted(set(table[panel].dropna()), key=str)
    panels = [p for p in (panel_order or PENALTY_LABELS) if p in names]
    panels += [p for p in names if p not in panels]
    curves = sorted(set(table[curve].dropna()), key=lambda v: (isinstance(v, str), v))
    colour = {value: f"C{k % 10}" for k, value in enumerate(curves)}
    fig, axes = plt.subplots(len(metrics), len(panels), figsize=(4.2 * len(panels), 3.4 * len(metrics)),
                             sharey="row", squeeze=False)
    for row, name_metric in enumerate(metrics):
        summary = sweep_summary(table, x, curve, panel, name_metric)
        for ax, name in zip(axes[row], panels, strict=True):
            for variant in variants:
                part = summary[summary[panel] == name]
                if variant is not None:
                    part = part[part["variant"] == variant]
                style = VARIANT_STYLES.get(variant, ":") if variant is not None else "-"
                main = variant in (None, variants[0])
                for value, grp in part.groupby(curve):
                    grp = grp.sort_values(x)
                    label = _label(curve, value) if main else None
                    if main:
                        std = grp["std"].fillna(0).to_numpy()
                        # On a log axis a bar below zero cannot be drawn: clip it at 10 % of the mean.
                        lower = np.minimum(std, 0.9 * grp["mean"].to_numpy()) if logy else std
                        ax.errorbar(grp[x], grp["mean"], yerr=[lower, std], marker="o", ms=3, capsize=2,
                                    ls=style, color=colour[value], label=label)
                    else:
                        ax.plot(grp[x], grp["mean"], ls=style, marker=".", ms=3, lw=1.1,
                                color=colour[value], alpha=0.85)
            ax.set_title(_label(panel, name) if row == 0 else "")
            ax.set_xlabel(PARAM_LABELS.get(x, x))
            if logy:
                ax.set_yscale("log")
            ax.grid(alpha=0.3, which="both")
        axes[row, 0].set_ylabel(PARAM_LABELS.get(name_metric, name_metric))
    handles, labels = axes[0, -1].get_legend_handles_labels()
    if variants[0] is not None and len(variants) > 1:
        handles += [plt.Line2D([], [], color="0.2", ls=VARIANT_STYLES.get(v, ":")) for v in variants]
        labels += [VARIANT_LABELS.get(v, v) for v in variants]
    # outside the axes: with two variants the curves fill the panels
    axes[0, -1].legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


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
    lin["panel"], lin["item"], lin["quantity"] = lin["case"], method, PARAM_LABELS.get(metric, metric)
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


def accuracy_curves(table: pd.DataFrame, curve: str, last: int) -> pd.DataFrame:
    """Mean and std over seeds of the pooled validation accuracy per (variant,) curve and
    iteration, for iterations ``0 .. last`` (GTV Figs. 5-7).

    ``curve`` is a column (``method``) or ``"lam"`` (one curve per lambda of Alg. 1).
    """
    acc = table[(table["metric"] == "accuracy") & table["iteration"].notna()].copy()
    acc["curve"] = ("lambda = " + acc["lam"].map("{:g}".format)) if curve == "lam" else acc[curve]
    acc = acc[acc["iteration"] <= last]
    keys = (["variant"] if _variants(table) else []) + ["curve", "iteration"]
    return acc.groupby(keys, sort=False)["value"].agg(["mean", "std"]).reset_index()


def coinciding_curves(stats: pd.DataFrame, atol: float = 1e-12) -> dict[tuple[Any, str], str]:
    """Curves of :func:`accuracy_curves` that lie on an earlier one: ``{(variant, curve):
    the earlier curve}`` (variant ``None`` without variants) where the two mean curves agree
    at every iteration within ``atol``; a figure must say so, or the later one is hidden."""
    out: dict[tuple[Any, str], str] = {}
    groups = stats.groupby("variant", sort=False) if "variant" in stats else [(None, stats)]
    for variant, part in groups:
        means = {name: grp.set_index("iteration")["mean"] for name, grp in part.groupby("curve", sort=False)}
        names = list(means)
        for k, name in enumerate(names):
            for earlier in names[:k]:
                a, b = means[name], means[earlier]
                if a.index.equals(b.index) and np.allclose(a.to_numpy(), b.to_numpy(), rtol=0, atol=atol):
                    out[(variant, name)] = earlier
                    break
    return out


def plot_accuracy_curves(table: pd.DataFrame, *, curve: str, last: int, title: str = "",
                         legend_title: str = "", xlabel: str = "iteration / round / epoch",
                         labels: Mapping[str, str] | None = None) -> plt.Figure:
    """Validation accuracy vs iteration, one colour per curve; with variants the published
    curves solid (with a band of ± std over seeds) and the paper's dashed.  The legend sits
    right of the axes (it covers no curve) and names each curve by ``labels`` (default: its
    value); a curve that lies on an earlier one of its variant (:func:`coinciding_curves`),
    or whose two variants coincide, says so in its label."""
    stats = accuracy_curves(table, curve, last)
    variants = _variants(table) or [None]
    names = list(dict.fromkeys(stats["curve"]))
    same = coinciding_curves(stats)
    alike = set()
    if len(variants) == 2:  # both variants of a curve on one line: the dashed one is hidden
        by_variant = stats.assign(curve=stats["curve"].astype(str) + " || " + stats["variant"].astype(str),
                                  variant=0)
        twins = coinciding_curves(by_variant.drop(columns="variant"))
        pairs = {(a.rsplit(" || ", 1)[0], b.rsplit(" || ", 1)[0]) for (_, a), b in twins.items()}
        alike = {name for name in names if (name, name) in pairs}
    fig, ax = plt.subplots(figsize=(8.6, 4.4))
    for k, name in enumerate(names):
        mine = stats[stats["curve"] == name]
        present = [v for v in variants if v is None or (mine["variant"] == v).any()]
        for variant in present:
            part = mine if variant is None else mine[mine["variant"] == variant]
            main = variant == present[0]
            notes = [f"{VARIANT_SHORT.get(v, v) + ': ' if v is not None and len(variants) > 1 else ''}"
                     f"on {(labels or {}).get(same[(v, name)], same[(v, name)])}" for v in variants if (v, name) in same]
            if name in alike:
                notes.append("both variants alike")
            if len(present) < len(variants):
                notes.append(f"{VARIANT_SHORT.get(variant, variant)} variant only")
            label = (labels or {}).get(name, name) + (f" ({'; '.join(notes)})" if notes else "")
            ax.plot(part["iteration"], part["mean"], color=f"C{k % 10}", lw=1.6 if main else 1.1,
                    ls=VARIANT_STYLES.get(variant, "-") if variant is not None else "-",
                    label=label if main else None)
            if main:
                std = part["std"].fillna(0)
                ax.fill_between(part["iteration"], part["mean"] - std, part["mean"] + std,
                                color=f"C{k % 10}", alpha=0.15)
    handles, shown = ax.get_legend_handles_labels()
    if variants[0] is not None and len(variants) > 1:
        handles += [plt.Line2D([], [], color="0.2", ls=VARIANT_STYLES.get(v, ":")) for v in variants]
        shown += [VARIANT_LABELS.get(v, v) for v in variants]
    ax.legend(handles, shown, title=legend_title or None, fontsize=7, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax.set_xlabel(xlabel)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_ylabel("validation accuracy (pooled over nodes)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _graph_frames(table: pd.DataFrame, graph: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    t = table[table["graph"] == graph]
    nodes = t[t["element"] == "node"].pivot_table(index=["node", "cluster"], columns="metric", values="value")
    nodes = nodes.reset_index().set_index("node")
    edges = t[t["element"] == "edge"][["source", "target", "value"]].astype({"source": int, "target": int})
    return nodes, edges


def plot_graph(
    table: pd.DataFrame,
    graph: str,
    ax: plt.Axes | None = None,
    *,
    show_data: bool = False,
    node_size: float = 300,
    annotate_weights: bool = False,
) -> plt.Axes:
    """Draw one graph of a diagram table: nodes coloured by cluster, edge width ∝ weight."""
    nodes, edges = _graph_frames(table, graph)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4))
    wmax = max(float(edges["value"].max()), 1e-12) if len(edges) else 1.0
    for s, t_, w in edges.itertuples(index=False):
        xs, ys = nodes.loc[[s, t_], "x"], nodes.loc[[s, t_], "y"]
        ax.plot(xs, ys, color="0.4", lw=0.5 + 3 * w / wmax, zorder=1)
        if annotate_weights:
            ax.annotate(f"{w:.2f}", (xs.mean(), ys.mean()), fontsize=7, ha="center", color="0.2")
    colors = plt.get_cmap("tab10")(nodes["cluster"].to_numpy() % 10)
    ax.scatter(nodes["x"], nodes["y"], s=node_size, c=colors, edgecolors="k", zorder=2)
    for node, row in nodes.iterrows():
        ax.annotate(str(int(node)), (row["x"], row["y"]), ha="center", va="center", fontsize=8, zorder=3)
    if show_data:
        samples = table[(table["graph"] == graph) & (table["element"] == "sample")]
        pts = samples.pivot_table(index=["node", "sample"], columns="metric", values="value").reset_index()
        centres = nodes.groupby("cluster")[["x", "y"]].transform("mean")
        for node, grp in pts.groupby("node"):
            cx, cy = nodes.loc[node, ["x", "y"]]
            out = np.array([cx, cy]) - centres.loc[node].to_numpy()
            ox, oy = np.array([cx, cy]) + 0.9 * out / max(np.linalg.norm(out), 1e-9)
            inset = ax.inset_axes([ox - 0.3, oy - 0.22, 0.6, 0.44], transform=ax.transData, zorder=4)
            inset.scatter(grp["feature"], grp["label"], s=4, color=colors[nodes.index.get_loc(node)])
            inset.set_xticks([])
            inset.set_yticks([])
    ax.set_aspect("equal")
    ax.margins(0.25 if show_data else 0.1)
    ax.axis("off")
    return ax


def summary_table(table: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Mean ± std over seeds per method (and penalty), one column per metric.

    With a ``variant`` column the rows are indexed by (variant, method)."""
    t = table[table["metric"].isin(metrics)].copy()
    t["row"] = np.where(t["method"] == "primal_dual", "Alg. 1 " + t["penalty"].astype(str), t["method"])
    keys = (["variant"] if _variants(table) else []) + ["row"]
    agg = t.groupby([*keys, "metric"])["value"].agg(["mean", "std"])
    text = agg.apply(lambda r: f"{r['mean']:.3g} ± {r['std']:.2g}", axis=1).unstack("metric")
    if "variant" in keys:
        order = {v: k for k, v in enumerate(_variants(table))}
        text = text.sort_index(level=0, key=lambda idx: idx.map(order), sort_remaining=False)
    return text[[m for m in metrics if m in text.columns]]


def save_figure(fig: plt.Figure, pdf: str | os.PathLike, png: str | os.PathLike, dpi: int = 150) -> None:
    """Save ``fig`` as PDF and PNG, each written atomically."""
    atomic_write(pdf, lambda tmp: fig.savefig(tmp, format="pdf", bbox_inches="tight"))
    atomic_write(png, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight"))


def claims_frame(path: str | os.PathLike) -> pd.DataFrame:
    """The claims file as a table (claim, passed, detail; first the variant, if any)."""
    with open(path, encoding="utf-8") as fh:
        return pd.DataFrame(json.load(fh))


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
