"""Figures and tables of the GTV targets, drawn from their tidy tables (used by the notebooks).

Every ``fig*`` function takes the table written to ``results/tables/<id>.csv`` (and the
target's parameters where the figure depends on them) and returns a matplotlib figure; the
other functions return the summary frames the notebooks show beside the figures.  Restyling
a figure means editing its function here (each is smoke-tested on the test profile's tables
in ``tests/integration/test_figures.py``), never a notebook cell.  Nothing here runs an experiment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from ...plotting import (
    VARIANT_LABELS,
    accuracy_curves,
    plot_accuracy_curves,
    plot_graph,
    plot_sweep,
    sweep_summary,
)
from ..baselines import EXTRA_BASELINES
from ..report import load_target
from .ablation_summary import ablation_summary
from .linear import METHOD_NAMES

__all__ = [
    "GRAPH_METRICS",
    "ablation_means",
    "accuracy_summary",
    "covariance_errors",
    "covariances",
    "fig01_empirical_graph",
    "fig02_means",
    "fig02_num_clusters",
    "fig03_chain_sampling",
    "fig04_chain_noise",
    "fig05_mnist_lambda",
    "fig06_mnist_methods",
    "fig07_mnist_five_clusters",
    "fig08_cluster_graph",
    "fig09_sbm_sampling",
    "fig10_sbm_noise",
    "fig11_unbalanced",
    "fig12_star_graph",
    "fig13_star_lambda",
    "highdim_sbm",
    "learnt_graph",
    "load_target",
    "mnist_clusters",
    "plot_ablation",
    "plot_cluster_graph",
    "plot_star_lambda",
    "quirk_ablation",
    "quirk_ablation_mnist",
    "step_scan",
    "sweep_means",
    "weight_spread",
]

#: The learnt MNIST graph's statistics in the tables of Figs. 5-7 (rows without an iteration).
GRAPH_METRICS = ("nodes", "edges", "cross_cluster_edges", "mean_edge_weight")


# Diagrams (Figs. 1, 8, 12) and the star's lambda path (Fig. 13)


def fig01_empirical_graph(table: pd.DataFrame) -> plt.Figure:
    """GTV Fig. 1: the empirical graph with every node's local dataset as an inset."""
    fig, ax = plt.subplots(figsize=(8, 5))
    plot_graph(table, "empirical", ax, show_data=True)
    ax.set_title("empirical graph; insets: local datasets (feature vs label)")
    return fig


def plot_cluster_graph(table: pd.DataFrame) -> plt.Figure:
    """GTV Fig. 8: the empirical graph and its cluster graph side by side (nodes coloured by
    cluster, edge width and label: the weight)."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11.5, 5.2), gridspec_kw={"width_ratios": [1.4, 1]})
    plot_graph(table, "empirical", ax1, annotate_weights=True)
    ax1.set_title("empirical graph")
    plot_graph(table, "cluster", ax2, node_size=900, annotate_weights=True)
    ax2.set_title("cluster graph (summed weights)")
    fig.tight_layout()
    return fig

def fig08_cluster_graph(table: pd.DataFrame) -> plt.Figure:
    """GTV Fig. 8: the empirical graph and its cluster graph."""
    return plot_cluster_graph(table)


def fig12_star_graph(table: pd.DataFrame) -> plt.Figure:
    """GTV Fig. 12: the star graph."""
    fig, ax = plt.subplots(figsize=(4, 4))
    plot_graph(table, "star", ax)
    ax.set_title("star graph (centre: node 0)")
    return fig


def plot_star_lambda(table: pd.DataFrame, *, seed: int | None = None, fusion_level: float = 1e-3) -> plt.Figure:
    """GTV Fig. 13: first component of every node's parameters and the spread vs lambda, with
    the observed fusion point and Theorem 2's critical lambda of the same draw (metric
    ``critical_lambda``, :func:`~.star.critical_lambda`) where the table has it.  Every node
    is named in the legend (the centre black, each leaf a colour of its own); the spread
    panel's lines are in colours no node has."""
    seed = int(table["seed"].min()) if seed is None else seed
    t = table[table["seed"] == seed]
    w = t[(t["metric"] == "weight") & (t["method"] == "primal_dual") & (t["component"] == 0)]
    local = t[(t["metric"] == "weight") & (t["method"] == "local_least_squares") & (t["component"] == 0)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10.5, 3.8))
    for node, grp in w.groupby("node"):
        grp = grp.sort_values("lam")
        colour = "k" if node == 0 else f"C{(int(node) - 1) % 10}"
        ax1.plot(grp["lam"], grp["value"], lw=2.0 if node == 0 else 1.2, color=colour,
                 label="centre (node 0)" if node == 0 else f"node {int(node)}", zorder=3 if node == 0 else 2)
        ax1.scatter([grp["lam"].min() * 0.6], local.loc[local["node"] == node, "value"], s=12,
                    color=colour, marker="<")
    ax1.set_xscale("log")
    ax1.set_xlabel(r"$\lambda$")
    ax1.set_ylabel(r"$\hat{w}_{i,1}$ (triangles: local least squares)")
    s = t[t["metric"] == "spread"].sort_values("lam")
    ax2.plot(s["lam"], s["value"], marker="o", ms=3, color="0.2", label=r"spread $s(\lambda)$")
    threshold = fusion_level * s["value"].iloc[0]
    ax2.axhline(threshold, color="0.6", ls="--", lw=1, label=f"{fusion_level:g} s($\\lambda_{{min}}$)")
    fused = s[s["value"] <= threshold]
    # past the fusion point the nodes' curves lie on each other: the legend's title says so
    ax1.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, title_fontsize=6,
               title=f"all nodes coincide once fused\n(lambda >= {fused['lam'].iloc[0]:.3g})" if len(fused) else None)
    if len(fused):
        ax2.axvline(fused["lam"].iloc[0], color="0.35", ls=":",
                    label=rf"observed fusion: $\lambda$ = {fused['lam'].iloc[0]:.3g}")
    critical = t.loc[t["metric"] == "critical_lambda", "value"]
    if len(critical):
        ax2.axvline(float(critical.iloc[0]), color="m", ls="-.", lw=1,
                    label=rf"Theorem 2: $\lambda^*$ = {float(critical.iloc[0]):.3g}")
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel(r"$\lambda$")
    ax2.set_ylabel(r"spread $s(\lambda)=\max_i\|\hat w_i-\bar{\hat w}\|$")
    ax2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig

def fig13_star_lambda(table: pd.DataFrame, params: Mapping[str, Any] | None = None) -> plt.Figure:
    """GTV Fig. 13 at the target's ``fusion_level`` (default 1e-3)."""
    return plot_star_lambda(table, fusion_level=(params or {}).get("fusion_level", 1e-3))


# Sweeps (Figs. 2-4, 9-11): mean ± std over repetitions, both variants


def sweep_means(table: pd.DataFrame, x: str, curve: str, panel: str = "penalty",
                index: Sequence[str] | None = None) -> pd.DataFrame:
    """Means over repetitions of a sweep: rows (variant, ``index``; default panel and curve),
    one column per value of ``x``."""
    summary = sweep_summary(table, x=x, curve=curve, panel=panel)
    keys = (["variant"] if "variant" in summary else []) + list(index or [panel, curve])
    return summary.pivot_table(index=keys, columns=x, values="mean")


def _rows_by_method(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a linear target named by method, Alg. 1 by its penalty (``l1``, ...)."""
    rows = table[table["method"] != "data"]
    return rows.assign(method=rows["method"].where(rows["method"] != "primal_dual", rows["penalty"]))


def _variant_order(table: pd.DataFrame) -> list[str | None]:
    present = set(table["variant"].dropna()) if "variant" in table else set()
    return [v for v in VARIANT_LABELS if v in present] + sorted(present - set(VARIANT_LABELS)) or [None]


#: Colour and marker of every method of Fig. 2 (the oracle benchmark FedAvgC hollow).
FIG02_STYLES = {"l1": ("C0", "o"), "ifca": ("C3", "s"), "fedavg": ("C1", "^"), "fedavg_clusters": ("C2", "D")}


def _close_pairs(part: pd.DataFrame, x: str, symbol: str, factor: float = 1.5) -> list[str]:
    """Pairs of curves whose means lie within ``factor`` of each other (drawn on top of each
    other on a log axis), with the values of ``x`` (shown as ``symbol``) where they do."""
    wide = part.pivot_table(index=x, columns="method", values="mean")
    notes = []
    for i, a in enumerate(wide.columns):
        for b in wide.columns[i + 1:]:
            ratio = (wide[a] / wide[b]).dropna()
            at = ratio.index[(ratio < factor) & (ratio > 1 / factor)]
            if len(at):
                notes.append(f"{METHOD_NAMES.get(a, a)} and {METHOD_NAMES.get(b, b)} overlap at {symbol} = "
                             + ", ".join(f"{v:g}" for v in at))
    return notes


#: The rows of Fig. 2: the paper's parameter MSE (39), and the label MSE over all nodes that
#: the authors' notebook (``SBM_experiment_ifca``, "mean total MSE") prints and plots.
FIG02_METRICS = {"parameter_mse": "parameter MSE (39)", "label_mse": "label MSE (all nodes; the notebook's)"}


def fig02_num_clusters(table: pd.DataFrame) -> plt.Figure:
    """GTV Fig. 2: parameter MSE (top) and label MSE (bottom, as the authors' notebook plots
    it) vs the number of clusters k, Alg. 1 and the baselines (mean ± std over repetitions);
    one column per variant, so that no curve hides another's."""
    rows = _rows_by_method(table).assign(panel="")
    metrics = [m for m in FIG02_METRICS if m in set(rows["metric"])]
    variants = _variant_order(table)
    fig, axes = plt.subplots(len(metrics), len(variants), figsize=(4.8 * len(variants), 4.0 * len(metrics)),
                             sharey="row", squeeze=False)
    for row, metric in enumerate(metrics):
        stats = sweep_summary(rows, x="n_clusters", curve="method", panel="panel", metric=metric)
        methods = [m for m in FIG02_STYLES if m in set(stats["method"])]
        methods += sorted(set(stats["method"]) - set(methods))
        for ax, variant in zip(axes[row], variants, strict=True):
            part = stats if variant is None else stats[stats["variant"] == variant]
            _fig02_panel(ax, part, methods)
            ax.set_title(VARIANT_LABELS.get(variant, "") if variant and row == 0 else "", fontsize=10)
        axes[row, 0].set_ylabel(FIG02_METRICS[metric])
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.suptitle("GTV Fig. 2: MSE vs k, mean ± std over repetitions", fontsize=11)
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(labels), fontsize=9)
    return fig


def _fig02_panel(ax: Any, part: pd.DataFrame, methods: Sequence[str]) -> None:
    """One panel of Fig. 2: every method's mean ± std vs k (log y), the close pairs named
    under the x axis."""
    for k, method in enumerate(methods):
        grp = part[part["method"] == method].sort_values("n_clusters")
        colour, marker = FIG02_STYLES.get(method, (f"C{(4 + k) % 10}", "v"))
        std = grp["std"].fillna(0).to_numpy()
        hollow = method == "fedavg_clusters"
        ax.errorbar(grp["n_clusters"], grp["mean"], yerr=[np.minimum(std, 0.9 * grp["mean"]), std],
                    color=colour, marker=marker, ms=8 if hollow else 4, mfc="none" if hollow else colour,
                    capsize=2, lw=1.4, label=METHOD_NAMES.get(method, method))
    ax.set_yscale("log")
    ax.set_xticks(sorted(part["n_clusters"].unique()))
    notes = _close_pairs(part, "n_clusters", "k")
    ax.set_xlabel("number of clusters k" + "".join(f"\n({n})" for n in notes))
    ax.grid(alpha=0.3, which="both")


def fig02_means(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2's means over repetitions: rows (variant, method), columns k."""
    rows = _rows_by_method(table)
    rows = rows.assign(method=rows["method"].map(lambda m: METHOD_NAMES.get(m, m)), panel="")
    return sweep_means(rows, "n_clusters", "method", panel="panel", index=["method"])


def fig03_chain_sampling(table: pd.DataFrame) -> plt.Figure:
    """GTV Fig. 3: chain, parameter MSE vs bridge weight per sampling fraction M."""
    return plot_sweep(table, x="eps", curve="M", metric="parameter_mse")


def fig04_chain_noise(table: pd.DataFrame) -> plt.Figure:
    """GTV Fig. 4: chain, parameter MSE vs bridge weight per noise level."""
    return plot_sweep(table, x="eps", curve="sigma", metric="parameter_mse")


def fig09_sbm_sampling(table: pd.DataFrame) -> plt.Figure:
    """GTV Fig. 9: SBM, label MSE (top) and parameter MSE (bottom) vs p_out per M."""
    return plot_sweep(table, x="p_out", curve="M", metric=["label_mse", "parameter_mse"])


def fig10_sbm_noise(table: pd.DataFrame) -> plt.Figure:
    """GTV Fig. 10: SBM, label MSE (top) and parameter MSE (bottom) vs p_out per noise level."""
    return plot_sweep(table, x="p_out", curve="sigma", metric=["label_mse", "parameter_mse"])


def fig11_unbalanced(table: pd.DataFrame) -> plt.Figure:
    """GTV Sec. IX-B2: parameter MSE vs |C2|, one curve per penalty, one panel per M."""
    return plot_sweep(table, x="size_c2", curve="penalty", panel="M", metric="parameter_mse")


# MNIST (Figs. 5-7 and the step scan): validation accuracy vs iteration


def _last(params: Mapping[str, Any] | None) -> int:
    return int((params or {}).get("plot_iterations", 50)) - 1


def _accuracy_figure(table, params, title, curve, legend_title, xlabel, labels=None):
    return plot_accuracy_curves(table, curve=curve, last=_last(params), title=title,
                                legend_title=legend_title, xlabel=xlabel, labels=labels)


def fig05_mnist_lambda(table: pd.DataFrame, params: Mapping[str, Any] | None = None, title: str = "") -> plt.Figure:
    """GTV Fig. 5: accuracy of Alg. 1 vs iteration, one curve per lambda."""
    return _accuracy_figure(table, params, title, "lam", "Alg. 1 (nLasso)", "iteration")


def _method_labels(params: Mapping[str, Any] | None) -> dict[str, str]:
    """Display names of the methods; IFCA with its number of cluster models (per variant
    where the variants differ), Alg. 1 of the step scan with its step scale."""
    from ..variants import variant_names, variant_params

    labels = dict(MNIST_METHOD_NAMES)
    params = params or {}
    variants = variant_names(params) or [None]
    for method, spec in (params.get("methods") or {}).items():
        if spec.get("algorithm") == "primal_dual" and "step_scale" in spec:
            labels[method] = f"c = {float(spec['step_scale']):g}"
    clusters: dict[str, dict[Any, int]] = {}
    for variant in variants:
        for method, spec in (variant_params(params, variant).get("methods") or {}).items():
            if spec.get("algorithm") == "ifca" and "n_clusters" in spec:
                clusters.setdefault(method, {})[variant] = int(spec["n_clusters"])
    for method, ks in clusters.items():
        counts = list(dict.fromkeys(ks.values()))
        labels[method] = ("IFCA (" + ("; ".join(f"{v}: {k}" for v, k in ks.items()) if len(counts) > 1
                                      else str(counts[0])) + " models)")
    return labels


def fig06_mnist_methods(table: pd.DataFrame, params: Mapping[str, Any] | None = None, title: str = "") -> plt.Figure:
    """GTV Fig. 6: Alg. 1 vs IFCA, pFedMe and local SGD (and FedAvg)."""
    return _accuracy_figure(table, params, title, "method", "method", "iteration / round / epoch",
                            _method_labels(params))


def fig07_mnist_five_clusters(table: pd.DataFrame, params: Mapping[str, Any] | None = None,
                              title: str = "") -> plt.Figure:
    """GTV Fig. 7: five clusters, Alg. 1 vs IFCA (5 and 2 models) and local SGD."""
    return _accuracy_figure(table, params, title, "method", "method", "iteration / round / epoch",
                            _method_labels(params))


def step_scan(table: pd.DataFrame, params: Mapping[str, Any] | None = None, title: str = "") -> plt.Figure:
    """Fig. 6's paper variant of Alg. 1 with scaled steps: one curve per step scale."""
    return _accuracy_figure(table, params, title, "method", "step scale", "iteration", _method_labels(params))


def accuracy_summary(table: pd.DataFrame, curve: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Mean and std of the accuracy at the last plotted iteration, and at the last iteration."""
    last = _last(params)
    stats = accuracy_curves(table, curve, 10**9)
    keys = [k for k in ("variant", "curve") if k in stats]
    at = stats[stats["iteration"] == last].set_index(keys)[["mean", "std"]].add_prefix(f"accuracy at {last}: ")
    end = stats.loc[stats.groupby(keys, sort=False)["iteration"].idxmax()].set_index(keys)
    return at.join(end.rename(columns={"iteration": "last iteration", "mean": "final accuracy", "std": "final std"}))


def weight_spread(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5: final relative spread of the weights and largest |dual|, mean and max over seeds."""
    final = table[table["iteration"].isna() & table["metric"].isin(["relative_spread", "max_abs_dual"])].copy()
    final["value"] = final["value"].astype(float)
    return final.pivot_table(index=[k for k in ("variant", "lam") if k in final], columns="metric", values="value",
                             aggfunc=["mean", "max"])


def learnt_graph(table: pd.DataFrame) -> pd.DataFrame:
    """The learnt graph's statistics (nodes, edges, cross-cluster edges, mean weight)."""
    g = table[table["iteration"].isna() & table["metric"].isin(GRAPH_METRICS)]
    return g.groupby("metric")["value"].first().to_frame("learnt graph")


# The quirk ablations (issue 16)


def _shown(label: str) -> str:
    """A panel or item label of the ablation with the linear methods' display names
    (``fig09: Alg. 1 l1`` -> ``fig09: Alg. 1 (l1)``, ``ifca`` -> ``IFCA``)."""
    head, sep, name = label.rpartition(": ")
    code = name.removeprefix("Alg. 1 ")
    return f"{head}{sep}{METHOD_NAMES.get(code, name)}"


def plot_ablation(table: pd.DataFrame, metric: str = "label_mse") -> plt.Figure:
    """Quirk ablation: per panel, the headline values (x; MSEs on a log axis) for every
    switch (rows).

    Row ``published`` is the authors' notebooks, each row below it switches one option back
    to the paper's definition, row ``paper`` switches all of them.
    """
    summary = ablation_summary(table, metric)
    panels = list(dict.fromkeys(summary["panel"]))
    # one colour and marker per item in every panel (issue 41: one meaning per colour)
    items = {item: k for k, item in enumerate(dict.fromkeys(summary["item"]))}
    fig, axes = plt.subplots(1, len(panels), figsize=(3.9 * len(panels), 3.8), squeeze=False)
    for ax, name in zip(axes[0], panels, strict=True):
        part = summary[summary["panel"] == name]
        switches = list(dict.fromkeys(part["switch"]))
        ypos = {s: -k for k, s in enumerate(switches)}
        for item, grp in part.groupby("item", sort=False):
            k = items[item]
            ax.plot(grp["value"], grp["switch"].map(ypos), marker="os^Dv<>"[k % 7], ls="none",
                    color=f"C{k % 10}", label=_shown(item) if item else None)
        ax.set_yticks(list(ypos.values()), [s if s in ("published", "paper") else f"{s} -> paper"
                                             for s in ypos], fontsize=7)
        ax.axhline(-0.5, color="0.6", lw=0.8)
        ax.axhline(-(len(switches) - 1.5), color="0.6", lw=0.8)
        quantity = str(part["quantity"].iloc[0])
        if "MSE" in quantity:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(_shown(name), fontsize=10)
        ax.set_xlabel(quantity)
        ax.grid(alpha=0.3, which="both", axis="x")
        if part["item"].str.len().gt(0).any():
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    fig.tight_layout()
    return fig

def quirk_ablation(table: pd.DataFrame) -> plt.Figure:
    """The quirk ablation's figure (linear cases: label MSE; MNIST: final accuracy)."""
    return plot_ablation(table)


#: Display names of the MNIST methods in the figures.
MNIST_METHOD_NAMES = {"primal_dual": "Alg. 1", "ifca": "IFCA", "pfedme": "pFedMe",
                      "local_sgd": "local SGD", "fedavg": "FedAvg",
                      **{k: f"{v} (extra baseline)" for k, v in EXTRA_BASELINES.items()}}


def quirk_ablation_mnist(table: pd.DataFrame) -> plt.Figure:
    """The MNIST ablation: per method (marker), the final validation accuracy, mean over
    seeds with the seeds' range, for every switch (rows: ``published``, each notebook option
    switched back to the paper's alone, ``paper``).  A switch of one method's options runs
    that method alone (the others would repeat their published rows)."""
    summary = ablation_summary(table)
    acc = table[(table["metric"] == "accuracy") & table["iteration"].notna()]
    fig, axes = plt.subplots(1, summary["case"].nunique(), figsize=(8.2, 4.2), squeeze=False)
    for ax, (case, part) in zip(axes[0], summary.groupby("case", sort=False), strict=True):
        switches = list(dict.fromkeys(part["switch"]))
        ypos = {sw: -k for k, sw in enumerate(switches)}
        rows = acc[acc["case"] == case]
        final = rows[rows["iteration"] == rows["iteration"].max()]
        spread = final.groupby(["switch", "method"])["value"].agg(["min", "max"])
        for k, (item, grp) in enumerate(part.groupby("item", sort=False)):
            y = grp["switch"].map(ypos).to_numpy() + (0.12 if k % 2 else -0.12)
            lo = [spread.loc[(sw, item), "min"] for sw in grp["switch"]]
            hi = [spread.loc[(sw, item), "max"] for sw in grp["switch"]]
            ax.errorbar(grp["value"], y, xerr=[grp["value"].to_numpy() - lo, hi - grp["value"].to_numpy()],
                        fmt="os^Dv"[k % 5], color=f"C{k % 10}", ls="none", capsize=2,
                        label=MNIST_METHOD_NAMES.get(item, item))
        labels = [sw if sw in ("published", "paper") else f"{sw.removeprefix('methods.')} → paper" for sw in switches]
        ax.set_yticks(list(ypos.values()), labels, fontsize=8)
        ax.axhline(-0.5, color="0.6", lw=0.8)
        ax.axhline(-(len(switches) - 1.5), color="0.6", lw=0.8)
        ax.set_title(f"{case}: final accuracy per switch (mean, range over seeds)", fontsize=9)
        ax.set_xlabel(str(part["quantity"].iloc[0]))
        ax.grid(alpha=0.3, axis="x")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return fig


def ablation_means(table: pd.DataFrame) -> pd.DataFrame:
    """Means over repetitions: rows (panel, item), one column per switch in the figure's order."""
    return ablation_summary(table).pivot_table(index=["panel", "item"], columns="switch", values="value", sort=False)


# Tables (I-III)


#: The rows of GTV Table I and of the covariance table (Sec. IX-B1), in the paper's order.
TABLE1_ROWS = ("l1", "ifca", "fedavg", "pooled_linear", "pooled_tree")
COVARIANCE_ROWS = ("l1", "nlasso", "mocha", "fedavg", "pooled_linear", "pooled_tree")
#: The columns of both tables: metric -> heading.
TABLE_COLUMNS = {
    "label_mse": "label MSE (all nodes)",
    "label_mse_sampled": "label MSE (nodes in M)",
    "label_mse_unsampled": "label MSE (nodes outside M)",
    "parameter_mse": "parameter MSE (39)",
}


def _round(x: float, digits: int = 3) -> float:
    return float(f"{x:.{digits}g}") if np.isfinite(x) else x


def _method_table(table: pd.DataFrame, rows: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """A linear target's methods as a table: one row per (variant,) method in the order
    ``rows`` (display names), for each metric its mean and standard deviation over the seeds
    (3 significant digits; empty where a method has no such metric, e.g. a tree's parameters)
    and the number of seeds."""
    data = _rows_by_method(table)
    data = data[data["metric"].isin(metrics) & data["method"].isin(rows)]
    keys = (["variant"] if "variant" in data else []) + ["method"]
    stats = data.groupby([*keys, "metric"])["value"].agg(["mean", "std"]).unstack("metric")
    stats = stats.swaplevel(axis=1).reindex(columns=pd.MultiIndex.from_product([list(metrics), ["mean", "std"]]))
    stats.columns = pd.MultiIndex.from_tuples([(TABLE_COLUMNS.get(m, m), "sd" if k == "std" else k)
                                               for m, k in stats.columns])
    stats = stats.map(_round)
    stats[("seeds", "")] = data.groupby(keys)["seed"].nunique()
    order = {m: k for k, m in enumerate(rows)}
    variants = {v: k for k, v in enumerate(_variant_order(table))}
    stats = stats.sort_index(key=lambda idx: idx.map(order if idx.name == "method" else variants))
    return stats.rename(index=lambda m: METHOD_NAMES.get(m, m), level="method")


def highdim_sbm(table: pd.DataFrame) -> pd.DataFrame:
    """GTV Table I: label MSE (all nodes, in M, the others) and parameter MSE (39), mean and sd
    over the seeds, rows in the paper's order, per variant."""
    return _method_table(table, TABLE1_ROWS, ["label_mse", "parameter_mse", "label_mse_sampled",
                                             "label_mse_unsampled"])


def mnist_clusters(table: pd.DataFrame) -> pd.DataFrame:
    """GTV Table II as a tidy table in the paper's row order (C1 ... C5): one row per cluster
    with its digits in the paper and in the learnt graph that gtv_fig07 uses, and the
    graph's nodes in the cluster (columns ``cluster``, ``digits (paper)``, ``digits
    (graph)``, ``nodes (graph)``)."""
    digits = table[table["metric"] == "digits"].pivot_table(index="cluster", columns="source", values="value",
                                                            aggfunc="first")
    nodes = table[table["metric"] == "nodes"].groupby("cluster")["value"].first()
    order = sorted(digits.index, key=lambda c: int(str(c).lstrip("C")))
    return pd.DataFrame({
        "cluster": order,
        "digits (paper)": [digits.at[c, "paper"] if "paper" in digits else None for c in order],
        "digits (graph)": [digits.at[c, "graph"] if "graph" in digits else None for c in order],
        "nodes (graph)": [int(nodes[c]) if c in nodes.index else None for c in order],
    })


def covariance_errors(table: pd.DataFrame) -> pd.DataFrame:
    """GTV Sec. IX-B1 (the covariance table): label MSE on M and off it, and the parameter MSE
    (39), mean and sd over the seeds, rows in the paper's order, per variant."""
    return _method_table(table, COVARIANCE_ROWS, ["label_mse_sampled", "label_mse_unsampled", "parameter_mse"])


def covariances(table: pd.DataFrame) -> pd.DataFrame:
    """The feature covariance used per cluster."""
    return table[table["method"] == "data"].drop_duplicates("metric")[["metric", "value"]]
