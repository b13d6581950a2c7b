"""Figures of the lecture demo's targets, drawn from their tidy tables (used by the notebooks).

Restyling a figure means editing its function here (smoke-tested on the test profile's
tables in ``tests/integration/test_figures.py``), never a notebook cell.  Nothing here runs an experiment.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from ..report import load_target

__all__ = ["final_round", "fig1_fedsgd_vs_fedavg", "load_target", "plot_communication", "upload_table"]


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


def fig1_fedsgd_vs_fedavg(table: pd.DataFrame) -> plt.Figure:
    """The lecture demo's figure: :func:`plot_communication`."""
    return plot_communication(table)


def final_round(table: pd.DataFrame) -> pd.DataFrame:
    """Test loss and accuracy, messages and bytes at the final round per run, means over repetitions."""
    final = table[(table["round"] == table["round"].max())
                  & table["metric"].isin(["test_loss", "test_accuracy", "messages_total", "bytes_total"])]
    return final.assign(value=final["value"].astype(float)).pivot_table(index=["method", "E", "B"], columns="metric",
                                                                         values="value", dropna=False)


def upload_table(table: pd.DataFrame) -> pd.DataFrame:
    """The lecture's table: per method its rows (one column per metric)."""
    return table.pivot_table(index="method", columns="metric", values="value", aggfunc="first")
