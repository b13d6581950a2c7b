"""Figures of the lecture demo's targets, drawn from their tidy tables (used by the notebooks).

Restyling a figure means editing its function here (smoke-tested on the test profile's
tables in ``tests/integration/test_figures.py``), never a notebook cell.  Nothing here runs an experiment.
"""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..report import load_target
from .runs import LECTURE_TABLE

__all__ = ["coinciding_runs", "final_round", "fig1_fedsgd_vs_fedavg", "load_target", "plot_communication",
           "upload_table"]

#: Relative distance below which two runs' mean test-loss curves count as one curve (every round).
COINCIDE = 0.02
_MARKERS = "osD^vPX*"


def _run_label(method: str, e: float, b: float) -> str:
    if method == "fedsgd":
        return "FedSGD"
    name = {"fedavg": "FedAvg", "gossip": "gossip FedAvg (peer-to-peer)",
            "local": "local training, no exchange"}[method]
    return f"{name} E={int(e)} B={int(b)}"


def _means(table: pd.DataFrame) -> pd.DataFrame:
    """Means over seeds: a row per run and round, a column per metric, in run order
    (client-server first, then peer-to-peer and local training)."""
    t = table[table["metric"] != "uploaded"]
    t = t.assign(value=t["value"].astype(float),
                 run=[_run_label(m, e, b) for m, e, b in zip(t["method"], t["E"], t["B"], strict=True)],
                 order=t["method"].map({"fedsgd": 0, "fedavg": 1, "gossip": 2, "local": 3}))
    mean = t.groupby(["order", "E", "B", "run", "metric", "round"], dropna=False)["value"].mean()
    return mean.unstack("metric").reset_index()


def coinciding_runs(table: pd.DataFrame, rel: float = COINCIDE) -> dict[str, list[str]]:
    """Runs whose mean test-loss curves lie within ``rel`` (relative) of each other at every
    round after the first tenth of the rounds: each run's list of the runs it coincides with
    (e.g. FedAvg E=1 B=10 and E=5 B=50, which take the same 60 local steps per round and
    differ by 3.5 % at round 1, by at most 0.9 % from round 6 on)."""
    curves = {run: part.set_index("round")["test_loss"] for run, part in _means(table).groupby("run", sort=False)}
    out: dict[str, list[str]] = {run: [] for run in curves}
    for a, b in itertools.combinations(curves, 2):
        x, y = curves[a].align(curves[b], join="inner")
        late = x.index > x.index.max() / 10
        if late.any() and bool(np.all(np.abs(x - y)[late] <= rel * np.minimum(x, y)[late])):
            out[a].append(b)
            out[b].append(a)
    return out


def plot_communication(table: pd.DataFrame) -> plt.Figure:
    """Lecture demo, four panels: test loss vs round; the same for the runs that end within
    20 % of the best, from the first tenth of the rounds on, on a linear scale; test loss vs
    the messages of the busiest participant (the server, or a ring client); the consensus
    distance of gossip and of local training without exchange.

    Both architectures send 2N messages per round in all, so a panel of test loss against
    all messages sent would repeat the first panel on another scale: the third panel shows
    where they differ, the load on the busiest participant (2N per round at the server, 4 at
    a ring client).  Every run has its own colour and marker; runs whose curves coincide
    (:func:`coinciding_runs`) say so in the legend.
    """
    mean = _means(table)
    together = coinciding_runs(table)
    fig, grid = plt.subplots(2, 2, figsize=(12, 8))
    axes = grid.ravel()
    runs = list(dict.fromkeys(mean["run"]))
    final = mean[mean["round"] == mean["round"].max()].set_index("run")["test_loss"]
    best = final[final <= 1.2 * final.min()].index
    start = mean["round"].max() / 10
    colours = plt.get_cmap("tab10").colors
    for i, run in enumerate(runs):
        part = mean[mean["run"] == run].sort_values("round")
        label = run + (f" (coincides with {', '.join(together[run])})" if together.get(run) else "")
        every = max(1, len(part) // 6)
        style = {"color": colours[i % len(colours)], "marker": _MARKERS[i % len(_MARKERS)], "ms": 5,
                 "markevery": (i % every, every), "ls": "--" if run.startswith("gossip") else
                 (":" if run.startswith("local") else "-"), "label": label}
        axes[0].plot(part["round"], part["test_loss"], **style)
        if run in best:
            late = part[part["round"] >= start]
            axes[1].plot(late["round"], late["test_loss"], **style)
        busiest = part.get("messages_busiest_node")
        if busiest is not None and (busiest > 0).any():
            axes[2].plot(busiest, part["test_loss"], **style)
        if "consensus_distance" in part and part["consensus_distance"].notna().any():
            axes[3].plot(part["round"], part["consensus_distance"], **style)
    axes[0].set(xlabel="communication round (2N messages per round in all, either architecture)",
                ylabel="test loss", yscale="log", title="test loss per round")
    axes[1].set(xlabel="communication round", ylabel="test loss",
                title="the runs ending within 20 % of the best, linear scale")
    axes[2].set(xlabel="messages sent or received by the busiest participant", ylabel="test loss",
                xscale="log", yscale="log", title="load: server (2N per round) vs ring client (4)")
    axes[3].set(xlabel="communication round (clients start from one model)",
                ylabel="consensus distance (1/N) Σ ||w_k - w̄||²", yscale="log", title="serverless clients' spread")
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
    handles, labels = axes[0].get_legend_handles_labels()
    columns = 3
    fig.legend(handles, labels, loc="lower center", ncol=columns, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.025 * -(-len(runs) // columns), 1, 1))
    return fig


def fig1_fedsgd_vs_fedavg(table: pd.DataFrame) -> plt.Figure:
    """The lecture demo's figure: :func:`plot_communication`."""
    return plot_communication(table)


def final_round(table: pd.DataFrame) -> pd.DataFrame:
    """Test loss and accuracy, messages and bytes at the final round per run, means over repetitions."""
    final = table[(table["round"] == table["round"].max())
                  & table["metric"].isin(["test_loss", "test_accuracy", "messages_total", "bytes_total",
                                          "messages_busiest_node"])]
    means = final.assign(value=final["value"].astype(float)).groupby(["method", "E", "B", "metric"], dropna=False)
    return means["value"].mean().unstack("metric")


def upload_table(table: pd.DataFrame) -> pd.DataFrame:
    """The lecture's table as the lecture prints it: a row per method (FedSGD, FedAvg), the
    columns Local, Upload, Global and Download, and what one round of the method uploaded in
    its run log (the claims check both)."""
    wide = table.pivot_table(index="method", columns="metric", values="value", aggfunc="first")
    columns = [c for c in next(iter(LECTURE_TABLE.values())) if c in wide.columns]
    out = wide.reindex(index=[m for m in LECTURE_TABLE if m in wide.index], columns=columns)
    if "run_log_upload" in wide.columns:
        out["uploaded in a one-round run"] = wide["run_log_upload"].reindex(out.index)
    out.index.name, out.columns.name = "Method", None
    return out
