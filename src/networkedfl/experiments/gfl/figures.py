"""Figures and tables of the graph-aware chapter's targets (Figs. 10.1-10.4, Tables 10.1-10.2).

The notebooks call these; restyling a figure means editing a function here (smoke-tested on
the test profile's tables in ``tests/integration/test_figures.py``, the helpers also in
``tests/unit/experiments/test_graph_aware_figures.py``), not a notebook cell.  Every comparison shows the
tuned methods (issue 17) against the reference bounds: ``Local`` (each client alone),
``Oracle`` (ground-truth structure) and ``Predict the mean`` (a horizontal line).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...plotting import tuning_summary
from ..baselines import is_extra_baseline
from ..claims import CLUSTER_ORACLE, LOCAL, MEAN, ORACLE, REFERENCES
from ..report import escaped_style, load_target

__all__ = [
    "COLOURS",
    "EXTRA_STYLES",
    "client_data",
    "cluster_agreement",
    "fesem_clusters",
    "fig10_1_dfl",
    "fig10_2_homologous_graphs",
    "fig10_3_synthetic",
    "fig10_4_reviews_nlp",
    "final_losses",
    "homologous_samples",
    "load_target",
    "per_domain_losses",
    "plot_method_curves",
    "plot_upper_level_gain",
    "review_extras",
    "review_stats",
    "review_stats_table",
    "review_totals",
    "reviews_diagnostics",
    "reviews_final_losses",
    "settings_table",
    "tuning_summary",
]

#: Colour of every method and reference in the chapter's figures.
COLOURS = {"FedAvg": "tab:blue", "DFL-SGD": "tab:orange", "DFL-GT": "tab:green", "FeSEM": "tab:purple",
           "BiG-FL": "tab:red", LOCAL: "tab:brown", ORACLE: "black", CLUSTER_ORACLE: "tab:olive",
           MEAN: "tab:gray"}
_STYLES = {LOCAL: ":", ORACLE: "--", CLUSTER_ORACLE: "--"}
#: The extra baselines (not the chapter's methods; :mod:`~networkedfl.experiments.baselines`):
#: a family of greys, each with its own dash pattern, labelled "(extra baseline)".
EXTRA_STYLES = {"FedProx": ("0.15", (0, (6, 2))), "SCAFFOLD": ("0.3", (0, (3, 1, 1, 1))),
                "FedAdam": ("0.62", (0, (1, 1))), "FedYogi": ("0.72", (0, (4, 1, 1, 1, 1, 1))),
                "Ditto": ("0.4", (0, (8, 2, 2, 2)))}
COLOURS.update({name: colour for name, (colour, _) in EXTRA_STYLES.items()})
_STYLES.update({name: dashes for name, (_, dashes) in EXTRA_STYLES.items()})


def _curve(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.groupby("round")["value"].agg(["mean", "std"]).sort_index()


def plot_method_curves(ax: Any, table: pd.DataFrame, metric: str = "test_loss", *,
                       methods: Sequence[str] | None = None, band: bool = True,
                       xlabel: str = "communication round", floor: float = 0.0) -> list[str]:
    """Mean (and ± one standard deviation over seeds, clipped at ``floor``, the least value of
    the quantity: 0 for losses and distances, 1 for a perplexity) of ``metric`` against rounds, one
    line per method; ``Local`` dotted, ``Oracle`` dashed, ``Predict the mean`` a horizontal
    grey line at its mean; the extra baselines (:data:`EXTRA_STYLES`) in greys with their own
    dashes, labelled "(extra baseline)", without a band.  Rows with a ``domain`` (per-client
    rows) are ignored.

    Returns the methods drawn, in drawing order.
    """
    rows = table[table["metric"] == metric]
    if "domain" in rows:
        rows = rows[rows["domain"].isna()]
    present = list(dict.fromkeys(rows["method"]))
    order = [m for m in (methods or [*COLOURS, *present]) if m in present]
    order = list(dict.fromkeys(order))
    curves = {method: _curve(rows[rows["method"] == method]) for method in order}
    for method in order:
        curve, colour = curves[method], COLOURS.get(method)
        label = method + (" (extra baseline)" if is_extra_baseline(method) else "") + _coincides(method, curves, order)
        if method == MEAN:
            ax.axhline(float(curve["mean"].mean()), color=colour, linestyle="-.", linewidth=1.2, label=label)
            continue
        ax.plot(curve.index, curve["mean"], label=label, color=colour, linestyle=_STYLES.get(method, "-"))
        if band and method not in REFERENCES and not is_extra_baseline(method):
            std = curve["std"].fillna(0)  # every metric drawn here is at least `floor`: so is its band
            ax.fill_between(curve.index, np.maximum(curve["mean"] - std, floor), curve["mean"] + std, color=colour,
                            alpha=0.2, linewidth=0)
    ax.set_xlabel(xlabel)
    return order


def _coincides(method: str, curves: dict[str, pd.DataFrame], order: Sequence[str], rtol: float = 0.01) -> str:
    """`` (under X)`` when ``method``'s mean curve lies within ``rtol`` of the curve of a
    method drawn before it at every round after the first (drawn over it, it would hide),
    else ``""``."""
    mine = curves[method]["mean"]
    for other in order[:order.index(method)]:
        theirs = curves[other]["mean"].reindex(mine.index)
        later = mine.index[1:] if len(mine) > 2 else mine.index
        a, b = mine.loc[later].to_numpy(float), theirs.loc[later].to_numpy(float)
        if len(a) and np.isfinite(b).all() and np.all(np.abs(a - b) <= rtol * np.abs(b)):
            return f" (≈ {other}, within {rtol:.0%})"
    return ""


def _legend_outside(ax: Any, **kwargs: Any) -> Any:
    """The axes' legend to the right of the axes, so that it covers no curve."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize="small", **kwargs)


def plot_upper_level_gain(ax: Any, table: pd.DataFrame) -> pd.Series:
    """BiG-FL's UL gain per round (:func:`~.synthetic.upper_level_gain`): how much the
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


# Fig. 10.1: FedAvg vs DFL-SGD vs DFL-GT


def _figure_legend(fig: Any, axes: Sequence[Any]) -> Any:
    """One legend right of the panels naming every method drawn in any of them, in drawing
    order (each colour means one method in the whole figure), with the panels where its
    curve lies on another's (:func:`_coincides`'s note, after the panel's y label)."""
    handles: dict[str, Any] = {}
    notes: dict[str, list[str]] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            name, _, note = label.partition(" (≈")
            handles.setdefault(name, handle)
            if note:
                notes.setdefault(name, []).append(f"{ax.get_ylabel()}: ≈{note.removesuffix(')')}")
    labels = [name + (f" ({'; '.join(notes[name])})" if name in notes else "") for name in handles]
    return fig.legend(list(handles.values()), labels, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize="small")


def fig10_1_dfl(table: pd.DataFrame) -> plt.Figure:
    """Chapter Fig. 10.1: test loss (left) and the DFL consensus distance (right) vs rounds;
    one legend for both panels (issue 41: the left panel's FedAvg and references had none)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, metric, label in zip(axes, ["test_loss", "consensus_distance"], ["test loss (MSE)", "consensus distance"],
                                 strict=True):
        plot_method_curves(ax, table, metric)
        ax.set_yscale("log")
        ax.set_ylabel(label)
    fig.tight_layout()
    _figure_legend(fig, axes)
    return fig


# Fig. 10.2 and Table 10.1: the homologous graphs and the synthetic settings


def fig10_2_homologous_graphs(table: pd.DataFrame) -> plt.Figure:
    """Chapter Fig. 10.2: (a) the Gaussian mixture, (b, c) the train and test k-NN graphs,
    (d) the ground-truth weights of one node per component."""
    nodes = table[table["element"] == "node"].pivot_table(index=["graph", "node", "component"], columns="metric",
                                                          values="value").reset_index()
    edges = table[table["element"] == "edge"]
    centres = table[table["element"] == "centre"].pivot_table(index="component", columns="metric", values="value")
    weights = table[table["element"] == "weight"]
    colours = plt.get_cmap("tab10")
    fig, axes = plt.subplots(1, 4, figsize=(17, 4.2), gridspec_kw={"width_ratios": [1, 1, 1, 1.1]})
    ax = axes[0]
    for g, marker in (("train", "o"), ("test", "^")):
        sub = nodes[nodes["graph"] == g]
        ax.scatter(sub["x"], sub["y"], c=[colours(int(k)) for k in sub["component"]], marker=marker, s=18, alpha=0.6,
                   label=f"{g} nodes")
    ax.scatter(centres["x"], centres["y"], c=[colours(int(k)) for k in centres.index], marker="*", s=250,
               edgecolor="k", label="centres")
    ax.set_title("(a) one Gaussian mixture")
    ax.legend(fontsize=7)
    for ax, g in zip(axes[1:3], ("train", "test"), strict=True):
        sub = nodes[nodes["graph"] == g].set_index("node")
        for e in edges[edges["graph"] == g].itertuples():
            a, b = sub.loc[int(e.source)], sub.loc[int(e.target)]
            ax.plot([a["x"], b["x"]], [a["y"], b["y"]], color="0.7", linewidth=0.6, zorder=1)
        ax.scatter(sub["x"], sub["y"], c=[colours(int(k)) for k in sub["component"]], s=22, zorder=2, edgecolor="k",
                   linewidth=0.3)
        ax.set_title(f"({'b' if g == 'train' else 'c'}) {g} graph: {len(sub)} nodes, "
                     f"{int((edges['graph'] == g).sum())} edges")
    for ax in axes[:3]:
        ax.set_xticks([])
        ax.set_yticks([])
    ax = axes[3]
    examples = sorted(weights["node"].unique())
    shape = (int(weights["row"].max()) + 1, int(weights["col"].max()) + 1)
    panel = np.full((shape[0], len(examples) * (shape[1] + 1) - 1), np.nan)
    for k, i in enumerate(examples):
        w = weights[weights["node"] == i].sort_values(["row", "col"])["value"].to_numpy().reshape(shape)
        panel[:, k * (shape[1] + 1): k * (shape[1] + 1) + shape[1]] = w
    im = ax.imshow(panel, cmap="coolwarm")
    ax.set_title("(d) ground-truth $W_i$, one node per component")
    ax.set_xticks([k * (shape[1] + 1) + shape[1] / 2 - 0.5 for k in range(len(examples))])
    ax.set_xticklabels([f"node {int(i)}" for i in examples])
    ax.set_yticks([])
    fig.colorbar(im, ax=ax, shrink=0.7)
    fig.tight_layout()
    return fig


def homologous_samples(table: pd.DataFrame) -> pd.DataFrame:
    """The first samples of Fig. 10.2's example nodes (inputs and outputs, per column)."""
    samples = table[table["element"] == "sample"]
    return samples.pivot_table(index=["node", "sample"], columns=["metric", "col"], values="value").round(3)


def settings_table(table: pd.DataFrame) -> pd.DataFrame:
    """Chapter Table 10.1 as a tidy table in the paper's row order: every setting (group,
    item), the value used, the published value and its provenance (``paper``/``choice``)."""
    from .synthetic import TABLE_10_1

    order = {(g, i): k for k, (g, i, _) in enumerate(TABLE_10_1)}
    out = table[["group", "item", "value", "paper", "provenance"]].drop_duplicates(["group", "item"])
    rank = [order.get((g, i), len(order)) for g, i in zip(out["group"], out["item"], strict=True)]
    return out.assign(_rank=rank).sort_values("_rank", kind="stable").drop(columns="_rank").reset_index(drop=True)


# Fig. 10.3: BiG-FL vs FeSEM, FedAvg and DFL on the homologous-graph data


def fig10_3_synthetic(table: pd.DataFrame) -> plt.Figure:
    """Chapter Fig. 10.3: local test loss (every method and reference, log scale; the
    compared methods alone, linear scale: the oracles stretch the log axis and squeeze them
    into one band), BiG-FL's UL loss at the LL models, and the UL loss lowered by the learnt
    phi, against rounds."""
    fig, axes = plt.subplots(1, 4, figsize=(22, 3.8))
    order = plot_method_curves(axes[0], table, "test_loss")
    axes[0].set_ylabel("local test loss")
    axes[0].set_yscale("log")  # the oracle ends near 0.1, the methods near 3
    axes[0].set_title("every method, log scale", fontsize="medium")
    compared = [m for m in order if m not in (ORACLE, CLUSTER_ORACLE)]
    plot_method_curves(axes[1], table, "test_loss", methods=compared)
    axes[1].set_ylabel("local test loss")
    axes[1].set_title("the compared methods, linear scale", fontsize="medium")
    plot_method_curves(axes[2], table, "upper_loss_full")
    axes[2].set_ylabel("BiG-FL UL loss (10.14) at the LL models")
    plot_upper_level_gain(axes[3], table)
    axes[3].set_title("UL loss lowered by the learnt phi", fontsize="medium")
    fig.tight_layout()
    _figure_legend(fig, axes)
    return fig


def cluster_agreement(table: pd.DataFrame) -> pd.DataFrame:
    """FeSEM's adjusted Rand index with the mixture components, described over repetitions."""
    return table[table["metric"] == "cluster_agreement"].groupby("method")["value"].describe()


# Fig. 10.4 and Table 10.2: the review corpus


def fig10_4_reviews_nlp(table: pd.DataFrame) -> plt.Figure:
    """Chapter Fig. 10.4: test loss and perplexity vs rounds on the 16 review domains; the
    perplexity on a log axis (a method that diverges, FedAvg in 2 of 4 seeds at the default
    scale, reaches 10^6 and would flatten every other curve on a linear one), its bands
    clipped at 1, the least perplexity."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    plot_method_curves(axes[0], table, "test_loss")
    plot_method_curves(axes[1], table, "test_perplexity", floor=1.0)
    axes[1].set_yscale("log")
    for ax, label in zip(axes, ["test loss (nats per token)", "test perplexity"], strict=True):
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    fig.suptitle("Next-word prediction on 16 review domains (chapter Fig 10.4)")
    fig.tight_layout()
    _figure_legend(fig, axes)  # with both panels' notes of curves lying on others
    return fig


def reviews_final_losses(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`final_losses` of the test loss with the final perplexity."""
    summary = final_losses(table, "test_loss")
    summary["final perplexity"] = np.exp(summary["final"])
    return summary


def per_domain_losses(table: pd.DataFrame) -> pd.DataFrame:
    """Final test loss per domain (rows) and method (columns, ordered by the final mean loss)."""
    per = table[table["metric"] == "test_loss_client"].copy()
    per["value"] = per["value"].astype(float)
    last = per[per["round"] == per.groupby("method")["round"].transform("max")]
    order = list(final_losses(table, "test_loss").index)
    return last.pivot_table(index="domain", columns="method", values="value", sort=False)[order].round(3)


def client_data(table: pd.DataFrame) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """The vocabulary's size (a line of text), every domain's windows and trainable rows, and
    the client graph's edges (cosine similarity)."""
    info = table[table["metric"].isin(["train_windows", "test_windows", "trainable_rows"])]
    vocab = table.loc[table["metric"] == "vocabulary_size", "value"]
    line = f"vocabulary: {int(float(vocab.iloc[0]))} entries" if len(vocab) else ""
    edges = table[table["metric"] == "edge_weight"][["domain", "neighbour", "value"]].rename(columns={"value": "cosine"})
    return (line, info.pivot_table(index="domain", columns="metric", values="value", aggfunc="first", sort=False),
            edges.reset_index(drop=True))


def reviews_diagnostics(table: pd.DataFrame) -> pd.DataFrame | str:
    """First and last value of BiG-FL's UL loss, its layer's distance from the identity and
    the DFL consensus distance, per method."""
    diag = table[table["metric"].isin(["upper_loss", "phi_distance", "consensus_distance"])].copy()
    diag["value"] = diag["value"].astype(float)
    return diag.groupby(["method", "metric"])["value"].agg(["first", "last"]) if len(diag) else "no diagnostics"


def fesem_clusters(table: pd.DataFrame) -> pd.Series | str:
    """FeSEM's clusters after the last E-step: the domains following each centre."""
    clusters = table[table["metric"] == "cluster"]
    return clusters.groupby("value")["domain"].apply(lambda d: ", ".join(d)) if len(clusters) else "FeSEM not run"


#: Table 10.2's columns under the paper's names ("Sentences", "Avg Length", "Unique/Total
#: words"; of :func:`~.reviews.stats_frame`'s columns), published and recomputed side by side.
TABLE_10_2_COLUMNS = {
    "dataset": "Dataset",
    "documents (published)": "Sentences (published)",
    "documents": "Sentences (recomputed: lines)",
    "avg length (published)": "Avg Length (published)",
    "avg length, whitespace tokens": "Avg Length (recomputed: whitespace tokens)",
    "avg length, without punctuation": "Avg Length (recomputed: without punctuation)",
    "unique words (published)": "Unique words (published, of 63,144 total)",
    "unique words, whitespace tokens": "Unique words (recomputed: whitespace tokens)",
    "unique words, lowercased, without punctuation": "Unique words (recomputed: lowercased, without punctuation)",
}


def review_stats_table(table: pd.DataFrame) -> pd.DataFrame:
    """Chapter Table 10.2 as a tidy table, one row per domain in the paper's order, under the
    paper's column names (``Sentences``, ``Avg Length``, ``Unique words``): the published
    columns and the recomputed ones beside them, with the relative difference of the average
    length and the ratio of the recomputed vocabularies to the published one (both
    tokenisations; :func:`review_stats` styles it)."""
    from .reviews import stats_frame

    frame = stats_frame(table)
    published = frame["unique words (published)"]
    frame["Avg Length: difference"] = frame["avg length, whitespace tokens"] / frame["avg length (published)"] - 1
    frame["Unique words: recomputed / published (whitespace tokens)"] = (
        frame["unique words, whitespace tokens"] / published)
    frame["Unique words: recomputed / published (lowercased, without punctuation)"] = (
        frame["unique words, lowercased, without punctuation"] / published)
    return frame.rename(columns=TABLE_10_2_COLUMNS).rename_axis("domain").reset_index()


def review_stats(table: pd.DataFrame) -> Any:
    """Chapter Table 10.2 recomputed beside the published values, with the relative
    difference of the average lengths and the ratios of the vocabularies (a pandas Styler)."""
    frame = review_stats_table(table).set_index("domain")
    formats = {c: "{:+.1%}" for c in frame.columns if "difference" in c}
    formats |= {c: "{:.2f}x" for c in frame.columns if "/ published" in c}
    formats |= {c: "{:,.1f}" for c in frame.columns if c.startswith("Avg Length (")}
    formats |= {c: "{:,.0f}" for c in frame.columns if c.startswith(("Sentences (", "Unique words ("))}
    return escaped_style(frame).format(formats, escape="html")


def review_totals(table: pd.DataFrame) -> str:
    """The corpus's total words, published and recomputed, as a line of text."""
    totals = table[table["metric"] == "total_words"].groupby("source")["value"].first()
    return (f"total words: published {totals['published']:,.0f}, recomputed (union of the domains' whitespace "
            f"tokens) {totals['recomputed']:,.0f}")


def review_extras(table: pd.DataFrame) -> pd.DataFrame:
    """Labels, splits and encodings of every domain (recomputed)."""
    extra = ["train_documents", "test_documents", "positive", "fallback_lines", "unlabelled_documents",
             "unlabelled_avg_length", "unlabelled_fallback_lines"]
    rec = table[(table["source"] == "recomputed") & table["metric"].isin(extra)]
    return rec.pivot_table(index="domain", columns="metric", values="value", sort=False)[
        [m for m in extra if m in set(rec["metric"])]].round(1)
