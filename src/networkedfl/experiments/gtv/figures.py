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
import pandas as pd

from ...plotting import (
    ablation_summary,
    accuracy_curves,
    plot_accuracy_curves,
    plot_graph,
    plot_sweep,
    summary_table,
    sweep_summary,
)
from ..report import load_target

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
    """GTV Fig. 8: the empirical graph and its cluster graph side by side."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 4))
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


def _alg1_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2's rows with Alg. 1 named by its penalty, in one panel."""
    return table.assign(method=table["method"].where(table["method"] != "primal_dual", "Alg. 1 " + table["penalty"]),
                        panel="parameter MSE (39)")


def fig02_num_clusters(table: pd.DataFrame) -> plt.Figure:
    """GTV Fig. 2: parameter MSE vs the number of clusters, Alg. 1 per penalty and the baselines."""
    fig = plot_sweep(_alg1_rows(table), x="n_clusters", curve="method", panel="panel", metric="parameter_mse")
    fig.axes[0].set_xlabel("number of clusters k")
    fig.axes[0].set_title("parameter MSE (39), mean ± std over repetitions")
    return fig


def fig02_means(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2's means over repetitions: rows (variant, method), columns k."""
    return sweep_means(_alg1_rows(table), "n_clusters", "method", panel="panel", index=["method"])


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


def plot_ablation(table: pd.DataFrame, metric: str = "label_mse") -> plt.Figure:
    """Quirk ablation: per panel, the headline values (x; MSEs on a log axis) for every
    switch (rows).

    Row ``published`` is the authors' notebooks, each row below it switches one option back
    to the paper's definition, row ``paper`` switches all of them.
    """
    summary = ablation_summary(table, metric)
    panels = list(dict.fromkeys(summary["panel"]))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.9 * len(panels), 3.8), squeeze=False)
    for ax, name in zip(axes[0], panels, strict=True):
        part = summary[summary["panel"] == name]
        switches = list(dict.fromkeys(part["switch"]))
        ypos = {s: -k for k, s in enumerate(switches)}
        for k, (item, grp) in enumerate(part.groupby("item", sort=False)):
            ax.plot(grp["value"], grp["switch"].map(ypos), marker="os^Dv<>"[k % 7], ls="none",
                    color=f"C{k % 10}", label=item or None)
        ax.set_yticks(list(ypos.values()), [s if s in ("published", "paper") else f"{s} -> paper"
                                             for s in ypos], fontsize=7)
        ax.axhline(-0.5, color="0.6", lw=0.8)
        ax.axhline(-(len(switches) - 1.5), color="0.6", lw=0.8)
        quantity = str(part["quantity"].iloc[0])
        if "MSE" in quantity:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(name, fontsize=10)
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
                      "local_sgd": "local SGD", "fedavg": "FedAvg"}


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


def highdim_sbm(table: pd.DataFrame) -> pd.DataFrame:
    """GTV Table I: label MSE (all, in M, the others) and parameter MSE, mean ± std."""
    return summary_table(table, ["label_mse", "label_mse_sampled", "label_mse_unsampled", "parameter_mse"])


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
    """GTV Sec. IX-B1: label MSE on M and off it, and the parameter MSE, mean ± std."""
    return summary_table(table, ["label_mse_sampled", "label_mse_unsampled", "parameter_mse"])


def covariances(table: pd.DataFrame) -> pd.DataFrame:
    """The feature covariance used per cluster."""
    return table[table["method"] == "data"].drop_duplicates("metric")[["metric", "value"]]
