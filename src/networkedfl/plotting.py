"""Paper-agnostic plotting of target tables (no experiment code runs here).

Every function takes a tidy table as written to ``results/tables/<id>.csv`` and returns a
matplotlib figure or a summary frame; :func:`save_figure` writes a figure as PDF and PNG
atomically.  The figures of one paper are drawn by ``experiments/<paper>/figures.py`` from
these helpers; the notebooks only call those.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._lazy import missing_extra

try:
    import matplotlib.colors
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import pandas as pd
    from matplotlib.collections import LineCollection, PathCollection
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
except ModuleNotFoundError as _error:
    raise (missing_extra(_error, "networkedfl.plotting") or _error) from _error

from .io import atomic_write

__all__ = [
    "COINCIDE",
    "PENALTY_LABELS",
    "QUANTITY_RANGES",
    "accuracy_curves",
    "coinciding_curves",
    "claims_frame",
    "check_figure",
    "figure_defects",
    "plot_accuracy_curves",
    "plot_graph",
    "plot_sweep",
    "overlap_start",
    "relative_gap",
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


#: Line style of each variant (docs/variants.md): the published curves are the main ones.
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
    if curve == "penalty":  # the paper's order: l1, nLasso, MOCHA
        curves = [p for p in PENALTY_LABELS if p in curves] + [p for p in curves if p not in PENALTY_LABELS]
    colour = {value: f"C{k % 10}" for k, value in enumerate(curves)}
    # room for the legend beside the last panel, so that it does not squeeze the panels
    fig, axes = plt.subplots(len(metrics), len(panels), figsize=(4.2 * len(panels) + 2.4, 3.4 * len(metrics)),
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
                for value in curves:
                    grp = part[part[curve] == value].sort_values(x)
                    if grp.empty:
                        continue
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


def coinciding_curves(stats: pd.DataFrame, rtol: float = 0.01) -> dict[tuple[Any, str], tuple[Any, str]]:
    """Curves of :func:`accuracy_curves` that lie on an earlier one: ``{(variant, curve):
    (variant, curve) of the earlier one}`` (variant ``None`` without variants) where the two
    mean curves stay within ``rtol`` relative at every iteration they share, or from an
    iteration on over at least half of them (:func:`overlap_start`; the published variant's
    curves come first).  A figure must say so, or the later one is hidden
    (:func:`check_figure` applies the same rule)."""
    return {key: earlier for key, (earlier, _) in _coinciding(stats, rtol).items()}


def _coinciding(stats: pd.DataFrame, rtol: float) -> dict[tuple[Any, str], tuple[tuple[Any, str], float]]:
    """:func:`coinciding_curves` with the iteration from which each pair lies together."""
    keys = ["variant", "curve"] if "variant" in stats else ["curve"]
    curves = [(key if len(keys) == 2 else (None, key[0]), grp[["iteration", "mean"]].to_numpy(float))
              for key, grp in stats.groupby(keys, sort=False)]  # a list of keys: tuple groups
    order = {v: k for k, v in enumerate(VARIANT_STYLES)}
    curves.sort(key=lambda c: order.get(c[0][0], len(order)))
    out: dict[tuple[Any, str], tuple[tuple[Any, str], float]] = {}
    for k, (key, xy) in enumerate(curves):
        for earlier, other in curves[:k]:
            start = overlap_start(xy, other, rtol)
            if start is not None:
                out[key] = (earlier, start)
                break
    return out


def _coincide_note(variant: Any, name: str, earlier: tuple[Any, str], variants: Sequence[Any],
                   labels: Mapping[str, str], since: str = "") -> str:
    """Plain words for a curve drawn on an earlier one (:func:`coinciding_curves`); ``since``
    the iteration from which it does, where not from the start."""
    mine = f"{VARIANT_SHORT.get(variant, variant)} variant " if variant is not None and len(variants) > 1 else ""
    other_variant, other = earlier
    since = f" from iteration {since}" if since else ""
    if other == name:
        return f"{mine}coincides with the {VARIANT_SHORT.get(other_variant, other_variant)} one{since}"
    where = (f" ({VARIANT_SHORT.get(other_variant, other_variant)})"
             if other_variant != variant and other_variant is not None else "")
    return f"{mine}coincides with {labels.get(other, other)}{where}{since}"


def plot_accuracy_curves(table: pd.DataFrame, *, curve: str, last: int, title: str = "",
                         legend_title: str = "", xlabel: str = "iteration / round / epoch",
                         labels: Mapping[str, str] | None = None) -> plt.Figure:
    """Validation accuracy vs iteration, one colour per curve; with variants the published
    curves solid (with a band of ± std over seeds) and the paper's dashed.  The legend sits
    right of the axes (it covers no curve) and names each curve by ``labels`` (default: its
    value); a curve that lies on an earlier one (within 1 %, :func:`coinciding_curves`), or
    whose two variants coincide, says so in plain words in its label.  The bands are clipped
    to the accuracy's range [0, 1]."""
    stats = accuracy_curves(table, curve, last)
    variants = _variants(table) or [None]
    names = list(dict.fromkeys(stats["curve"]))
    same = _coinciding(stats, 0.01)
    first = stats["iteration"].min()
    labels = dict(labels or {})
    fig, ax = plt.subplots(figsize=(8.6, 4.4))
    for k, name in enumerate(names):
        mine = stats[stats["curve"] == name]
        present = [v for v in variants if v is None or (mine["variant"] == v).any()]
        notes = []
        for v in (v for v in present if (v, name) in same):
            earlier, start = same[(v, name)]
            notes.append(_coincide_note(v, name, earlier, variants, labels, f"{start:g}" if start > first else ""))
        if len(present) < len(variants):
            notes.append(f"{VARIANT_SHORT.get(present[0], present[0])} variant only")
        # a long note on lines of its own: the legend beside the axes stays narrower than they
        label = labels.get(name, name) + ("\n(" + ";\n ".join(notes) + ")" if notes else "")
        for variant in present:
            part = mine if variant is None else mine[mine["variant"] == variant]
            main = variant == present[0]
            ax.plot(part["iteration"], part["mean"], color=f"C{k % 10}", lw=1.6 if main else 1.1,
                    ls=VARIANT_STYLES.get(variant, "-") if variant is not None else "-",
                    label=label if main else None)
            if main:  # an accuracy: the band clipped to [0, 1]
                std = part["std"].fillna(0)
                ax.fill_between(part["iteration"], np.clip(part["mean"] - std, 0, 1),
                                np.clip(part["mean"] + std, 0, 1), color=f"C{k % 10}", alpha=0.15)
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
    xy = nodes[["x", "y"]]
    radius = np.sqrt(node_size / np.pi) / _points_per_unit(ax, xy.to_numpy(float))
    paths = _edge_paths(xy, edges, radius)
    for path, w in zip(paths, edges["value"], strict=True):
        ax.plot(path[:, 0], path[:, 1], color="0.4", lw=0.5 + 3 * w / wmax, zorder=1)
    if annotate_weights and len(edges):
        _label_edges(ax, xy.to_numpy(float), paths, edges["value"].to_numpy(float), radius)
    # cluster labels are read back from a CSV as floats: index the colours by integer
    colors = plt.get_cmap("tab10")(nodes["cluster"].to_numpy().astype(int) % 10)
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


def _points_per_unit(ax: plt.Axes, xy: np.ndarray) -> float:
    """Typographic points per data unit of a graph drawn with equal aspect on ``ax`` (an
    estimate before the figure is laid out: the axes' box, the nodes' extent and margins)."""
    span = np.maximum(xy.max(axis=0) - xy.min(axis=0), 1e-9) * 1.2
    bbox = ax.get_position()
    width_in, height_in = ax.figure.get_size_inches() * (bbox.width, bbox.height)
    return 0.85 * 72 * min(width_in / span[0], height_in / span[1])


def _edge_paths(pos: pd.DataFrame, edges: pd.DataFrame, radius: float, n: int = 21) -> list[np.ndarray]:
    """Each edge as ``n`` points: a straight segment, or an arc where the segment would pass
    through a third node (collinear nodes), so that no edge hides behind a node (successive
    arcs bend to alternate sides)."""
    xy = pos.to_numpy(float)
    index = {node: k for k, node in enumerate(pos.index)}
    t = np.linspace(0, 1, n)[:, None]
    paths, side = [], 1.0
    for s, e in zip(edges["source"], edges["target"], strict=True):
        a, b = xy[index[s]], xy[index[e]]
        d = b - a
        length = float(np.hypot(*d)) or 1.0
        along = np.clip((xy - a) @ d / length**2, 0, 1)
        gap = np.hypot(*(a + along[:, None] * d - xy).T)
        gap[[index[s], index[e]]] = np.inf
        bend = 0.0
        if np.any((gap < 0.8 * radius) & (along > 0) & (along < 1)):
            bend, side = side * 0.15 * length, -side  # alternate sides: two bent edges of a row part
        control = (a + b) / 2 + bend * np.array([-d[1], d[0]]) / length
        paths.append((1 - t) ** 2 * a + 2 * (1 - t) * t * control + t**2 * b)
    return paths


def _label_edges(ax: plt.Axes, xy: np.ndarray, paths: list[np.ndarray], weights: np.ndarray, radius: float,
                 fontsize: float = 7) -> None:
    """Write each edge's weight on the edge, at the first point along it (from the middle
    outwards) where the label's box clears the nodes and the labels placed before it: edges
    that cross at their midpoints (a square's diagonals) get their labels apart."""
    points_per_unit = _points_per_unit(ax, xy)
    placed: list[tuple[float, float, float, float]] = []
    for path, w in zip(paths, weights, strict=True):
        text = f"{w:.2f}"
        half = np.array([0.62 * fontsize * len(text) / 2 + 2, 0.75 * fontsize + 1]) / points_per_unit

        def clash(c: np.ndarray, half=half) -> float:
            boxes = sum(max(0.0, min(c[0] + half[0], x1) - max(c[0] - half[0], x0))
                        * max(0.0, min(c[1] + half[1], y1) - max(c[1] - half[1], y0)) for x0, y0, x1, y1 in placed)
            gap = np.abs(xy - c) - half
            return boxes + float(np.sum(np.hypot(*np.maximum(gap, 0).T) < radius))

        n = len(path) - 1
        candidates = [path[round(f * n)] for f in (0.5, 0.4, 0.6, 0.3, 0.7, 0.25, 0.75)]
        best = min(candidates, key=clash)  # the first of the least clashing points
        placed.append((best[0] - half[0], best[1] - half[1], best[0] + half[0], best[1] + half[1]))
        ax.annotate(text, best, fontsize=fontsize, ha="center", va="center", color="0.15", zorder=3,
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85})


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
    loss (mean over the tuning seeds) and whether it was chosen.  With successive halving,
    the loss at the last rung the point reached and that rung's horizon (``rounds``: a point
    stopped early has fewer).  Empty if untuned."""
    rows = table[table["metric"] == "tuning_validation_loss"]
    columns = ["method", "grid point", "validation loss", "chosen"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    halved = "tuning_rung" in rows and rows["tuning_rung"].notna().any()
    if halved:
        last = rows.groupby(["method", "tuning_point"])["tuning_rung"].transform("max")
        rows = rows[rows["tuning_rung"] == last]
    chosen = table[table["metric"] == "tuning_chosen"].groupby("method")["tuning_point"].first()
    out = rows[["method", "tuning_point", "tuning_values", "value", *(["tuning_horizon"] if halved else [])]].copy()
    out["chosen"] = [chosen.get(m) == p for m, p in zip(out["method"], out["tuning_point"], strict=True)]
    out = out.rename(columns={"tuning_values": "grid point", "value": "validation loss", "tuning_horizon": "rounds"})
    if halved:
        out["rounds"] = out["rounds"].astype(int)
        out = out[["method", "grid point", "rounds", "validation loss", "chosen"]]
    return out.drop(columns="tuning_point", errors="ignore").reset_index(drop=True)


# --- figures that show their results (issue 34)


def _display_points(ax, renderer, step=3.0):
    """The display coordinates of ``ax``'s plotted data inside its box: every line's points
    and its segments sampled every ``step`` pixels, scatter markers and error bars (lines in
    axes coordinates, e.g. ``axhline``, and shaded bands are decorations, left out)."""
    chunks = []

    def add(xy, joined):
        xy = np.asarray(xy, float)
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        if len(xy) > 1 and joined:
            seg = np.diff(xy, axis=0)
            n = np.maximum(1, (np.hypot(*seg.T) / step).astype(int))
            xy = np.vstack([xy[:1], *[a + np.linspace(0, 1, k + 1)[1:, None] * d
                                      for a, d, k in zip(xy[:-1], seg, n, strict=True)]])
        chunks.append(xy)

    for line in ax.get_lines():
        if line.get_visible() and line.get_transform() == ax.transData and len(line.get_xydata()):
            add(ax.transData.transform(line.get_xydata()), line.get_linestyle() not in ("None", "", " "))
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        if isinstance(coll, PathCollection) and len(coll.get_offsets()):
            add(coll.get_offset_transform().transform(coll.get_offsets()), False)
        elif isinstance(coll, LineCollection):
            for seg in coll.get_segments():
                if len(seg):
                    add(coll.get_transform().transform(seg), True)
    if not chunks:
        return np.empty((0, 2))
    pts = np.vstack(chunks)
    box = ax.get_window_extent(renderer)
    keep = (pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)
    return pts[keep]


def _legend_overlaps(fig):
    renderer = fig.canvas.get_renderer()
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend() is not None]
    legends += [(None, legend) for legend in fig.legends]
    problems = []
    for owner, legend in legends:
        box = legend.get_window_extent(renderer).expanded(0.98, 0.95)  # a pixel or two of frame
        for ax in fig.axes:
            if not ax.get_visible() or not ax.get_window_extent(renderer).overlaps(box):
                continue
            pts = _display_points(ax, renderer)
            inside = (pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1)
            if inside.any():
                problems.append(f"legend of {_name(owner)} covers {int(inside.sum())} plotted points of {_name(ax)}")
    return problems


def _name(ax: plt.Axes | None) -> str:
    return "the figure" if ax is None else f"axes {ax.get_title()!r}" if ax.get_title() else "an untitled axes"


def _style(handle):
    """What tells a legend entry apart: colour, line style, marker (or fill and hatch)."""
    if isinstance(handle, Line2D):
        return ("line", to_rgba(handle.get_color()), handle.get_linestyle(), handle.get_marker())
    if isinstance(handle, Patch):
        return ("patch", to_rgba(handle.get_facecolor()), handle.get_hatch(), to_rgba(handle.get_edgecolor()))
    if isinstance(handle, PathCollection):  # a scatter: its first face colour and marker shape
        faces, paths = handle.get_facecolors(), handle.get_paths()
        return ("markers", tuple(np.round(faces[0], 3)) if len(faces) else None,
                tuple(np.round(paths[0].vertices, 3).ravel()) if len(paths) else None)
    return ("other", id(handle))


def _alike_entries(fig):
    problems = []
    for legend in [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends):
        seen = {}
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            key = _style(handle)
            if key in seen and seen[key] != text.get_text():
                problems.append(f"legend entries {seen[key]!r} and {text.get_text()!r} look the same")
            seen.setdefault(key, text.get_text())
    for ax in fig.axes:  # labelled series of one panel drawn alike
        seen = {}
        for line in ax.get_lines():
            label = line.get_label()
            if label.startswith("_") or not line.get_visible():
                continue
            key = _style(line)
            if key in seen and seen[key] != label:
                problems.append(f"{_name(ax)}: series {seen[key]!r} and {label!r} look the same")
            seen.setdefault(key, label)
    return problems


def _overprinted_texts(fig, share=0.2):
    renderer = fig.canvas.get_renderer()
    problems = []
    for ax in fig.axes:
        texts = [t for t in ax.texts if t.get_visible() and t.get_text().strip()]
        boxes = [t.get_window_extent(renderer) for t in texts]
        for i in range(len(texts)):
            for j in range(i + 1, len(texts)):
                a, b = boxes[i], boxes[j]
                w = min(a.x1, b.x1) - max(a.x0, b.x0)
                h = min(a.y1, b.y1) - max(a.y0, b.y0)
                if w > 0 and h > 0 and w * h > share * min(a.width * a.height, b.width * b.height):
                    problems.append(f"{_name(ax)}: labels {texts[i].get_text()!r} and {texts[j].get_text()!r} "
                                    "overprint")
    return problems


#: Words a legend label (or a text of the panel) uses to say that its curve lies on another.
COINCIDE = ("coincide", "same as", "identical", "hidden", "overlap", "lies on", "lie on", "alike", "≈",
            "on top of")


def _hidden_curves(fig):
    problems = []
    for ax in fig.axes:
        lines = [ln for ln in ax.get_lines() if ln.get_visible() and not ln.get_label().startswith("_")
                 and len(ln.get_xydata()) > 1]
        for i in range(len(lines)):
            for j in range(i + 1, len(lines)):
                a, b = lines[i].get_xydata(), lines[j].get_xydata()
                if a.shape == b.shape and np.allclose(a, b, rtol=1e-9, atol=0, equal_nan=True):
                    labels = (lines[i].get_label(), lines[j].get_label())
                    if not any(word in label.lower() for label in labels for word in COINCIDE):
                        problems.append(f"{_name(ax)}: {labels[1]!r} lies hidden under {labels[0]!r} and no label "
                                        "says so")
    return problems


def figure_defects(fig: plt.Figure) -> list[str]:
    """What keeps a reader from seeing a figure's results, one line each (empty if nothing).

    * a legend over plotted data: its box against every line's points and segments (sampled
      every 3 pixels), scatter markers and error bars, in display coordinates (lines in axes
      coordinates such as ``axhline`` and shaded bands are decorations, not data);
    * two legend entries, or two labelled series of one panel, drawn alike (colour, line
      style and marker; fill and hatch for patches);
    * labels of one panel that overprint (their boxes overlap by a fifth of the smaller);
    * a labelled curve that lies exactly under another while neither label says so (with one
      of the words in :data:`COINCIDE`).

    ``tests/integration/test_figures.py`` runs it on every figure function.
    """
    fig.canvas.draw()
    return [*_legend_overlaps(fig), *_alike_entries(fig), *_overprinted_texts(fig), *_hidden_curves(fig)]


# --- the figure a reader checks (issue 41): every series named, none alike, overlaps said,
# one meaning per colour, bands inside the quantity's range

#: The range of a quantity, by a word of its axis label: accuracies lie in [0, 1]; errors,
#: losses and distances are non-negative (a log axis cannot show a band below zero anyway).
QUANTITY_RANGES = {"accuracy": (0.0, 1.0), "mse": (0.0, np.inf), "loss": (0.0, np.inf),
                   "distance": (0.0, np.inf), "variation": (0.0, np.inf), "perplexity": (1.0, np.inf)}


def _rgb(colour) -> tuple[float, ...]:
    return tuple(np.round(to_rgba(colour)[:3], 3))


def _colours_of(artist) -> set[tuple[float, ...]]:
    """The RGB colours an artist is drawn in (a line's colour, a collection's faces, else its
    edges; a patch's face)."""
    if isinstance(artist, Line2D):
        return {_rgb(artist.get_color())}
    for getter in ("get_facecolor", "get_edgecolor", "get_color"):
        colours = np.atleast_2d(getattr(artist, getter, lambda: np.empty((0, 4)))())
        colours = [c for c in colours if len(c) >= 3 and (len(c) < 4 or c[3] > 0)]
        if colours:
            return {_rgb(c) for c in colours}
    return set()


def _series(ax) -> list[tuple[Any, str, str]]:
    """The drawn series of a panel, as (artist, kind, label): lines with data (the data line of an
    error bar, labelled by its container; a line in axes coordinates, as ``axhline``, only
    when labelled), bands (``fill_between``), scatters and bar groups.  Caps, error bars and
    unlabelled reference lines are decorations."""
    from matplotlib.collections import PolyCollection
    from matplotlib.container import BarContainer, ErrorbarContainer

    skip: set[int] = set()
    labels: dict[int, str] = {}
    out: list[tuple[Any, str, str]] = []
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            data, caps, bars = container.lines
            skip.update(id(a) for a in (*caps, *bars))
            if data is not None:
                labels[id(data)] = container.get_label() or "_"
        elif isinstance(container, BarContainer) and len(container.patches):
            skip.update(id(p) for p in container.patches)
            out.append((container.patches[0], "bars", container.get_label() or "_"))
    for line in ax.get_lines():
        xy = line.get_xydata()
        drawn = line.get_linestyle() not in ("None", "", " ") or line.get_marker() not in ("None", "", " ", None)
        if id(line) in skip or not line.get_visible() or not drawn or not np.isfinite(xy).all(axis=1).any():
            continue
        label = labels.get(id(line), line.get_label())
        if line.get_transform() == ax.transData or not label.startswith("_"):
            out.append((line, "line", label))
    for coll in ax.collections:
        if id(coll) in skip or not coll.get_visible():
            continue
        if isinstance(coll, PolyCollection) and len(coll.get_paths()):
            out.append((coll, "band", coll.get_label()))
        elif isinstance(coll, PathCollection) and len(coll.get_offsets()):
            out.append((coll, "scatter", coll.get_label()))
    return out


def _legend_styles(fig) -> tuple[set, set]:
    """The colours and line styles that the figure's legends (of every panel and of the
    figure) explain."""
    colours, styles = set(), set()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    for legend in legends:
        for handle in legend.legend_handles:
            if handle is None:
                continue
            colours |= _colours_of(handle)
            if isinstance(handle, Line2D):
                styles.add(handle.get_linestyle())
    # an entry drawn by a container (an error bar's handle is its bars): the labelled line itself
    texts = {t.get_text() for legend in legends for t in legend.get_texts()}
    for ax in fig.axes:
        for artist, kind, label in _series(ax):
            if kind == "line" and label in texts:
                colours |= _colours_of(artist)
                styles.add(artist.get_linestyle())
    return colours, styles


def _direct_labels(ax) -> set[tuple[float, ...]]:
    """Colours of the texts written on a panel (a series labelled where it is drawn)."""
    return {_rgb(t.get_color()) for t in ax.texts if t.get_visible() and t.get_text().strip()}


def _describe(artist, kind: str, label: str) -> str:
    shown = label if label and not label.startswith("_") else "an unlabelled " + kind
    colour = "/".join(matplotlib.colors.to_hex(c) for c in sorted(_colours_of(artist))[:2])
    return f"{shown} ({colour})"


def _unlabelled_series(fig) -> list[str]:
    colours, styles = _legend_styles(fig)
    problems = []
    for ax in fig.axes:
        series = _series(ax)
        lines = [a for a, kind, _ in series if kind == "line"]
        direct = _direct_labels(ax)
        named_lines = {c for a in lines if _colours_of(a) <= colours | direct for c in _colours_of(a)}
        for artist, kind, label in series:
            mine = _colours_of(artist)
            if kind == "line" and len(lines) == 1 and ax.get_ylabel() and label.startswith("_"):
                continue  # the panel's only curve: its axis label names it
            if mine <= direct:
                continue
            explained = mine <= colours and (kind != "line" or artist.get_linestyle() in styles)
            if kind == "band":  # the band of a named curve of its colour
                explained = explained or mine <= named_lines
            if not explained:
                problems.append(f"{_name(ax)}: {_describe(artist, kind, label)} has no legend entry nor direct label")
    return problems


def _line_key(line) -> tuple:
    return (_rgb(line.get_color()), str(line.get_linestyle()), str(line.get_marker()))


def _same_looking_series(fig) -> list[str]:
    problems = []
    for ax in fig.axes:
        seen: dict[tuple, str] = {}
        for artist, kind, label in _series(ax):
            if kind == "line":
                key = _line_key(artist)
            elif kind == "scatter":
                paths = artist.get_paths()
                key = (tuple(sorted(_colours_of(artist))), tuple(np.round(paths[0].vertices, 3).ravel())
                       if len(paths) else None)
            else:
                continue
            if key in seen and (label.startswith("_") or seen[key] != label):
                problems.append(f"{_name(ax)}: {seen[key]!r} and {_describe(artist, kind, label)} share colour and "
                                "style")
            seen.setdefault(key, label)
    return problems


def _short(label: str) -> str:
    """A series' name without its notes in brackets (``FedAvg (≈ Oracle)`` -> ``FedAvg``)."""
    return "" if label.startswith("_") else re.split(r"\s\(", label)[0].strip()


def _pointwise_gaps(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The x values curves ``a`` and ``b`` (rows ``(x, y)``, non-finite rows dropped, the
    first y of a repeated x) share, and their relative difference at each."""
    a, b = a[np.isfinite(a).all(axis=1)], b[np.isfinite(b).all(axis=1)]
    xa, first_a = np.unique(a[:, 0], return_index=True)
    xb, first_b = np.unique(b[:, 0], return_index=True)
    x, ia, ib = np.intersect1d(xa, xb, assume_unique=True, return_indices=True)
    ya, yb = a[first_a[ia], 1], b[first_b[ib], 1]
    return x, np.abs(ya - yb) / np.maximum(np.maximum(np.abs(ya), np.abs(yb)), 1e-300)


def relative_gap(a: np.ndarray, b: np.ndarray) -> float:
    """Largest relative difference of two curves over the x values they share (``inf`` when
    they share fewer than two)."""
    x, gaps = _pointwise_gaps(a, b)
    return float(gaps.max()) if len(x) >= 2 else np.inf


#: A curve counts as lying on another from the x at which the two stay within the tolerance to
#: their last shared x, where that stretch holds at least this share of their shared x values
#: (and :data:`OVERLAP_MIN_POINTS` of them): two curves that part early and run together for
#: the rest of the figure read as one curve there.
OVERLAP_SHARE = 0.5
OVERLAP_MIN_POINTS = 5


def overlap_start(a: np.ndarray, b: np.ndarray, tol: float = 0.01) -> float | None:
    """The first shared x from which curves ``a`` and ``b`` (rows ``(x, y)``) stay within
    ``tol`` relative of each other up to their last shared x, when that stretch holds at least
    :data:`OVERLAP_SHARE` of the shared x values and :data:`OVERLAP_MIN_POINTS` of them; the
    first shared x when they lie together throughout (:func:`relative_gap` at most ``tol``,
    at any number of points); else ``None``."""
    x, gaps = _pointwise_gaps(a, b)
    if len(x) < 2:
        return None
    apart = np.flatnonzero(gaps > tol)
    if not len(apart):
        return float(x[0])
    start = int(apart[-1]) + 1  # the stretch after the last x where they part
    if len(x) - start >= max(OVERLAP_MIN_POINTS, OVERLAP_SHARE * len(x)):
        return float(x[start])
    return None


def _panel_texts(ax) -> str:
    """The texts a reader sees on the panel, one statement a line (a legend entry, whose
    notes may wrap, on one line)."""
    legend = ax.get_legend()
    parts = [t.get_text() for t in ax.texts] + [ax.get_xlabel(), ax.get_ylabel(), ax.get_title()]
    if legend is not None:
        parts += [t.get_text().replace("\n", " ") for t in legend.get_texts()] + [legend.get_title().get_text()]
    parts += [t.get_text().replace("\n", " ") for legend in ax.figure.legends for t in legend.get_texts()]
    parts += [t.get_text() for t in ax.figure.texts]
    return "\n".join(parts).lower()


def _unmarked_overlaps(fig, tol: float) -> list[str]:
    problems = []
    for ax in fig.axes:
        series = _series(ax)
        # an unlabelled line (a variant's twin) goes by the name of the labelled one of its colour
        by_colour = {_rgb(a.get_color()): label for a, kind, label in series if kind == "line"
                     and not label.startswith("_")}
        lines = [(a, label if not label.startswith("_") else by_colour.get(_rgb(a.get_color()), label))
                 for a, kind, label in series if kind == "line" and a.get_transform() == ax.transData
                 and len(a.get_xydata()) > 1]
        texts = _panel_texts(ax)
        for i, (a, label_a) in enumerate(lines):
            for b, label_b in lines[i + 1:]:
                start = overlap_start(np.asarray(a.get_xydata(), float), np.asarray(b.get_xydata(), float), tol)
                if start is None:
                    continue
                names = [_short(label).lower() for label in (label_a, label_b) if _short(label)]
                # a line naming one of the two, or saying that all of the panel's curves coincide
                if any(w in line and (any(n in line for n in names) or re.search(r"\ball\b", line))
                       for line in texts.splitlines() for w in COINCIDE):
                    continue
                problems.append(f"{_name(ax)}: {_describe(b, 'line', label_b)} lies on {_describe(a, 'line', label_a)} (within "
                                f"{tol:.0%}, from x = {start:g}) and nothing says so")
    return problems


def _colour_meanings(fig) -> list[str]:
    meanings: dict[tuple, set[str]] = {}
    for ax in fig.axes:
        for artist, _, label in _series(ax):
            name = _short(label)
            if name:
                for colour in _colours_of(artist):
                    meanings.setdefault(colour, set()).add(name)
    return [f"colour {matplotlib.colors.to_hex(c)} means {sorted(names)} in one figure"
            for c, names in meanings.items() if len(names) > 1]


def _quantity_range(ax, ranges: Mapping[str, tuple[float, float]]) -> tuple[float, float] | None:
    label = ax.get_ylabel().lower()
    for word, bounds in ranges.items():
        if word in label:
            return bounds
    return None


def _bands_out_of_range(fig, ranges: Mapping[str, tuple[float, float]]) -> list[str]:
    problems = []
    for ax in fig.axes:
        bounds = _quantity_range(ax, ranges)
        if bounds is None:
            continue
        lo, hi = bounds
        if ax.get_yscale() == "log":
            lo = -np.inf  # a log axis shows nothing below zero
        for artist, kind, label in _series(ax):
            if kind != "band":
                continue
            y = np.concatenate([p.vertices[:, 1] for p in artist.get_paths()])
            y = y[np.isfinite(y)]
            if len(y) and (y.min() < lo - 1e-12 or y.max() > hi + 1e-12):
                problems.append(f"{_name(ax)}: a band {_describe(artist, kind, label)} spans [{y.min():.3g}, "
                                f"{y.max():.3g}], outside the range [{lo:g}, {hi:g}] of {ax.get_ylabel()!r}")
    return problems


def check_figure(fig: plt.Figure, *, tol: float = 0.01,
                 ranges: Mapping[str, tuple[float, float]] | None = None) -> list[str]:
    """What a reader of a result figure would object to, one line each (empty if nothing).

    * a drawn series (a line with data, a band, a scatter, bars) with neither a legend entry
      (a legend of the figure in its colour and, for a line, its line style) nor a text of
      its colour on its panel; a panel's only unlabelled curve is named by its axis label,
      and a band by the named curve of its colour;
    * two series of one panel with the same colour and style (line style and marker; a
      scatter's colours and marker);
    * a curve lying on another (within ``tol`` relative over the x values they share, or over
      the last half or more of them: :func:`overlap_start`) while no text the reader sees (a
      legend entry of the panel or the figure, an axis label, a title, an annotation) says so
      with a word of :data:`COINCIDE` and the name of one of the two curves, or the word "all"
      (a label that no legend shows does not count);
    * one colour with two meanings: labelled series of the figure's panels that share a
      colour but not a name (notes in brackets aside);
    * a band (``fill_between``) outside its quantity's range, found from a word of the y
      label in ``ranges`` (default :data:`QUANTITY_RANGES`: accuracy in [0, 1], MSE, losses
      and distances at least 0 unless the axis is logarithmic).

    Diagrams (graphs, data clouds) are not result figures: nodes coloured by cluster need no
    legend.  :func:`figure_defects` checks the layout (legends over data, overprinting).
    """
    fig.canvas.draw()
    ranges = QUANTITY_RANGES if ranges is None else ranges
    return [*_unlabelled_series(fig), *_same_looking_series(fig), *_unmarked_overlaps(fig, tol),
            *_colour_meanings(fig), *_bands_out_of_range(fig, ranges)]
