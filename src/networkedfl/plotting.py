"""Plotting of target tables (used by the notebooks; no experiment code runs here).

Every function takes a tidy table as written to ``results/tables/<id>.csv`` and returns a
matplotlib figure; :func:`save_figure` writes it as PDF and PNG atomically.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .pipeline.io import atomic_write

__all__ = [
    "PENALTY_LABELS",
    "claims_frame",
    "plot_cluster_graph",
    "plot_graph",
    "plot_star_lambda",
    "plot_sweep",
    "save_figure",
    "summary_table",
    "sweep_summary",
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


def sweep_summary(
    table: pd.DataFrame, x: str, curve: str, panel: str = "penalty", metric: str = "parameter_mse"
) -> pd.DataFrame:
    """Mean, standard deviation and count over seeds per (panel, curve, x)."""
    rows = table[table["metric"] == metric]
    return (
        rows.groupby([panel, curve, x])["value"]
        .agg(mean="mean", std="std", n="count")
        .reset_index()
    )


def plot_sweep(
    table: pd.DataFrame,
    *,
    x: str,
    curve: str,
    panel: str = "penalty",
    metric: str = "parameter_mse",
    logy: bool = True,
    panel_order: Sequence[str] | None = None,
    title: str | None = None,
) -> plt.Figure:
    """One panel per ``panel`` value, one curve per ``curve`` value: mean ± std over seeds.

    On a log axis the lower error bar is clipped at 10 % of the mean.
    """
    summary = sweep_summary(table, x, curve, panel, metric)
    panels = list(panel_order or [p for p in PENALTY_LABELS if p in set(summary[panel])])
    panels += [p for p in summary[panel].unique() if p not in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], panels, strict=True):
        part = summary[summary[panel] == name]
        for value, grp in part.groupby(curve):
            grp = grp.sort_values(x)
            std = grp["std"].fillna(0).to_numpy()
            # On a log axis a bar below zero cannot be drawn: clip it at 10 % of the mean.
            lower = np.minimum(std, 0.9 * grp["mean"].to_numpy()) if logy else std
            ax.errorbar(grp[x], grp["mean"], yerr=[lower, std], marker="o", ms=3,
                        capsize=2, label=_label(curve, value))
        ax.set_title(_label(panel, name))
        ax.set_xlabel(PARAM_LABELS.get(x, x))
        if logy:
            ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
    axes[0, 0].set_ylabel(PARAM_LABELS.get(metric, metric))
    axes[0, -1].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_star_lambda(table: pd.DataFrame, *, seed: int | None = None, fusion_level: float = 1e-3) -> plt.Figure:
    """GTV Fig. 13: first component of every node's parameters and the spread vs lambda."""
    seed = int(table["seed"].min()) if seed is None else seed
    t = table[table["seed"] == seed]
    w = t[(t["metric"] == "weight") & (t["method"] == "primal_dual") & (t["component"] == 0)]
    local = t[(t["metric"] == "weight") & (t["method"] == "local_least_squares") & (t["component"] == 0)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    for node, grp in w.groupby("node"):
        grp = grp.sort_values("lam")
        line, = ax1.plot(grp["lam"], grp["value"], lw=1.2, label="centre" if node == 0 else None)
        ax1.scatter([grp["lam"].min() * 0.6], local.loc[local["node"] == node, "value"], s=12,
                    color=line.get_color(), marker="<")
    ax1.set_xscale("log")
    ax1.set_xlabel(r"$\lambda$")
    ax1.set_ylabel(r"$\hat{w}_{i,1}$ (triangles: local least squares)")
    s = t[t["metric"] == "spread"].sort_values("lam")
    ax2.plot(s["lam"], s["value"], marker="o", ms=3)
    threshold = fusion_level * s["value"].iloc[0]
    ax2.axhline(threshold, color="grey", ls="--", lw=1, label=f"{fusion_level:g} s($\\lambda_{{min}}$)")
    fused = s[s["value"] <= threshold]
    if len(fused):
        ax2.axvline(fused["lam"].iloc[0], color="C3", ls=":", label=rf"$\lambda$ = {fused['lam'].iloc[0]:.3g}")
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel(r"$\lambda$")
    ax2.set_ylabel(r"spread $s(\lambda)=\max_i\|\hat w_i-\bar{\hat w}\|$")
    ax2.legend(fontsize=8)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3, which="both")
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


def plot_cluster_graph(table: pd.DataFrame) -> plt.Figure:
    """GTV Fig. 8: the empirical graph and its cluster graph side by side."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 4))
    plot_graph(table, "empirical", ax1, annotate_weights=True)
    ax1.set_title("empirical graph")
    plot_graph(table, "cluster", ax2, node_size=900, annotate_weights=True)
    ax2.set_title("cluster graph (summed weights)")
    fig.tight_layout()
    return fig


def summary_table(table: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Mean ± std over seeds per method (and penalty), one column per metric."""
    t = table[table["metric"].isin(metrics)].copy()
    t["row"] = np.where(t["method"] == "primal_dual", "Alg. 1 " + t["penalty"].astype(str), t["method"])
    agg = t.groupby(["row", "metric"])["value"].agg(["mean", "std"])
    text = agg.apply(lambda r: f"{r['mean']:.3g} ± {r['std']:.2g}", axis=1).unstack("metric")
    return text[[m for m in metrics if m in text.columns]]


def save_figure(fig: plt.Figure, pdf: str | os.PathLike, png: str | os.PathLike, dpi: int = 150) -> None:
    """Save ``fig`` as PDF and PNG, each written atomically."""
    atomic_write(pdf, lambda tmp: fig.savefig(tmp, format="pdf", bbox_inches="tight"))
    atomic_write(png, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight"))


def claims_frame(path: str | os.PathLike) -> pd.DataFrame:
    """The claims file as a table (claim, passed, detail)."""
    with open(path, encoding="utf-8") as fh:
        return pd.DataFrame(json.load(fh))


def _run_label(method: str, e: float, b: float) -> str:
    if method == "fedsgd":
        return "FedSGD"
    name = "FedAvg" if method == "fedavg" else "gossip FedAvg"
    return f"{name} E={int(e)} B={int(b)}"


def plot_communication(table: pd.DataFrame) -> plt.Figure:
    """Lecture demo: test loss vs round and vs messages sent; gossip consensus distance."""
    t = table[table["metric"] != "uploaded"].copy()
    t["value"] = t["value"].astype(float)
    t["run"] = [_run_label(m, e, b) for m, e, b in zip(t["method"], t["E"], t["B"], strict=True)]
    mean = t.groupby(["run", "metric", "round"])["value"].mean().unstack("metric").reset_index()
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.6))
    for run, part in mean.groupby("run"):
        style = "--" if run.startswith("gossip") else "-"
        axes[0].plot(part["round"], part["test_loss"], style, label=run)
        axes[1].plot(part["messages_total"], part["test_loss"], style, label=run)
        if "consensus_distance" in part and part["consensus_distance"].notna().any():
            axes[2].plot(part["round"], part["consensus_distance"], style, label=run)
    axes[0].set(xlabel="communication round", ylabel="test loss", yscale="log")
    axes[1].set(xlabel="messages sent", ylabel="test loss", yscale="log")
    axes[2].set(xlabel="communication round", ylabel="consensus distance", yscale="log",
                title="peer-to-peer: (1/N) Σ ||w_k - w̄||²")
    axes[0].legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
