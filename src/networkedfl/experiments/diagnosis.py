"""Each failing ``paper``-variant claim beside the measurement that diagnoses it (issue 41
item 3).

A GTV claim can fail in the ``paper`` variant (the paper's equations as written) while the
``published`` variant (the authors' notebooks) holds it: the difference is then one of the
notebook behaviours, and the project's ablations measure which.  :data:`DIAGNOSES` maps a
claim to those measurements: the quirk ablations (``gtv_quirk_ablation``,
``gtv_quirk_ablation_mnist``: from ``published``, one notebook option switched back to the
paper's definition at a time), the step-size scan of the paper variant
(``gtv_mnist_step_scan``: tau = c/deg, sigma = 0.45/c) and, for a claim that fails in every
variant, the target's own measurements of its graph (GTV Fig. 5: the learnt graph's edges
between the clusters).  A claim of a target without variants can carry one too: GTV Fig. 13 at
A = 10, a [choice] variant of the paper's figure, checks A = 1's claims unchanged, and its
own critical lambdas show why one of them cannot hold there.  :func:`diagnosis_text` reads the
numbers from those targets' tables (means over seeds), so the diagnosis shown beside a
verdict is the measured one, never typed by hand.

:func:`failure_kind` separates a claim that "fails under the paper's equations as written"
(fails in ``paper``, not in ``published``) from one that "fails in every variant".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["DIAGNOSES", "DIAGNOSTIC_TARGETS", "Diagnosis", "claim_diagnoses", "diagnosis_text", "failure_kind",
           "failures_markdown"]

#: The targets whose tables diagnose claims (other targets', or, for Fig. 5, its own).
DIAGNOSTIC_TARGETS = ("gtv_quirk_ablation", "gtv_quirk_ablation_mnist", "gtv_mnist_step_scan", "gtv_fig05_mnist_lambda",
                      "gtv_fig13_star_weight10")


@dataclass(frozen=True)
class Diagnosis:
    """The measurement behind one failing claim.

    ``target`` and ``claim`` (the start of the claim's text, without its ``[variant]``)
    name the claim; ``source`` the diagnosing target; ``items`` the rows of its table
    (``(panel, item)`` of :func:`~networkedfl.experiments.gtv.ablation_summary.ablation_summary` for the
    ablations, the scan's methods ``c_<c>`` for the step scan, the metrics of a target's own
    measurements); ``switches`` the ablation's columns to show between ``published`` and
    ``paper``; ``at`` the grid point of a target's own measurements (a row without a value
    in that column, such as the graph's, is read wherever it is); ``why`` what the numbers say.
    """

    target: str
    claim: str
    source: str
    items: tuple[tuple[str, str], ...] | tuple[str, ...]
    why: str
    switches: tuple[str, ...] = ()
    at: Mapping[str, float] = field(default_factory=dict)

    def matches(self, target: str, claim: str) -> bool:
        return target == self.target and claim.startswith(self.claim)


_TABLE1 = (("table1", "Alg. 1 l1"), ("table1", "ifca"))
_TABLE1_WHY = ("the paper variant's IFCA divides a cluster's gradient by the cluster's size and finds the planted "
               "clusters (the cluster oracle); with the notebook's division by all clients it sits with FedAvg. "
               "The loss scale alone moves Alg. 1 by the factor m of the coupling")
_PROX = ("fig06", "primal_dual"), ("fig06", "ifca")
_PROX_WHY = ("the notebooks' proximal term has no gradient (40 free RMSprop steps per iteration); with the paper's "
             "term Alg. 1 moves by about tau_i grad L_i per iteration and plateaus lower")
_SCAN = ("c_1", "c_10", "c_100")
_SCAN_WHY = "the paper variant with larger steps tau = c/deg, sigma = 0.45/c: the step size, not the method, limits it"
_MNIST_SWITCHES = ("methods.primal_dual.prox_scale", "methods.ifca.model_init")
_GRAPH = ("edges", "cross_cluster_edges")
_FUSION_WHY = ("the learnt graph has no edge between the two clusters (its nodes split into components within the "
               "clusters; at the default data one per cluster), and the GTV penalty couples the nodes of a "
               "component only: at any lambda Alg. 1 can fuse each cluster to its own model, never the two, so "
               "w_bar, the mean over both clusters, is no node's model. The paper's 'one pooled model at huge "
               "lambda' needs a connected graph; the notebooks' t-SNE graphs may have had edges between the "
               "clusters (docs/printed.md#mnist-strong-coupling)")
_DUALS_WHY = ("the notebooks project the duals only if lambda != 0 (`project_at_zero_lambda`, docs/variants.md): "
              "at lambda = 0 the published variant's duals are never projected, as the notebooks', and grow; the "
              "paper's projection onto |u_e| <= lambda A_e = 0 keeps them at 0 (the paper variant holds)")

_STAR_WHY = ("GTV's objective depends on lambda and the edge weights only through lambda A_e: at A = 10 every lambda "
             "of the grid, the smallest (A = 1's) included, couples the nodes as ten times that lambda does at "
             "A = 1, and Theorem 2's critical lambda (above, per seed) is ten times smaller for the same data. The "
             "grid's smallest lambda is then no longer far below fusion, and the nodes' models are already pulled "
             "toward each other there. The claim is A = 1's (gtv_fig13_star_lambda), checked unchanged at A = 10")

#: Failing ``paper``-variant claims and the measurements that diagnose them.  Fig. 2's and
#: Fig. 7's are measured on Table I's and Fig. 6's settings (the same algorithms).
DIAGNOSES: tuple[Diagnosis, ...] = (
    Diagnosis("gtv_table1_highdim_sbm", "Alg. 1 (l1) has the lowest label MSE", "gtv_quirk_ablation", _TABLE1,
              _TABLE1_WHY, ("loss_scale", "ifca.aggregation")),
    Diagnosis("gtv_fig02_num_clusters", "Alg. 1 is below FedAvg and IFCA", "gtv_quirk_ablation", _TABLE1,
              "measured on Table I (Fig. 2 at k = 2 with 100 nodes per cluster): " + _TABLE1_WHY,
              ("loss_scale", "ifca.aggregation")),
    *(Diagnosis(target, claim, "gtv_quirk_ablation_mnist", _PROX, why + _PROX_WHY, _MNIST_SWITCHES)
      for target, why in (("gtv_fig05_mnist_lambda", "measured on Fig. 6 (lambda = 1): "),
                          ("gtv_fig06_mnist_methods", ""), ("gtv_fig07_mnist_five_clusters", "measured on Fig. 6: "))
      for claim in ("final accuracy", "Alg. 1's accuracy at iteration", "Alg. 1 has the largest area")),
    *(Diagnosis(target, claim, "gtv_mnist_step_scan", _SCAN, _SCAN_WHY)
      for target in ("gtv_fig05_mnist_lambda", "gtv_fig06_mnist_methods", "gtv_fig07_mnist_five_clusters")
      for claim in ("final accuracy", "Alg. 1's accuracy at iteration", "Alg. 1 has the largest area")),
    Diagnosis("gtv_fig05_mnist_lambda", "at lambda = 10000, max_i ||w_i - w_bar||", "gtv_fig05_mnist_lambda",
              _GRAPH, _FUSION_WHY),
    Diagnosis("gtv_fig05_mnist_lambda", "at lambda = 0 the dual variables stay 0", "gtv_fig05_mnist_lambda",
              ("max_abs_dual",), _DUALS_WHY, at={"lam": 0.0}),
    Diagnosis("gtv_fig13_star_weight10", "at lambda_min every w_i is within", "gtv_fig13_star_weight10",
              ("critical_lambda",), _STAR_WHY),
)


def _ablation_numbers(table: pd.DataFrame, d: Diagnosis) -> list[str]:
    from .gtv.ablation_summary import ablation_summary

    summary = ablation_summary(table)
    out = []
    for panel, item in d.items:
        part = summary[(summary["panel"] == panel) & (summary["item"] == item)]
        if part.empty:
            continue
        value = dict(zip(part["switch"], part["value"], strict=True))
        shown = [f"published {value['published']:.3g}"] if "published" in value else []
        shown += [f"{s} → paper {value[s]:.3g}" for s in d.switches if s in value]
        shown += [f"paper {value['paper']:.3g}"] if "paper" in value else []
        out.append(f"{panel}, {item} ({part['quantity'].iloc[0]}): " + "; ".join(shown))
    return out


def _scan_numbers(table: pd.DataFrame, d: Diagnosis, iteration: int = 49) -> list[str]:
    rows = table[(table["metric"] == "accuracy") & (table["iteration"] == iteration)]
    means = rows.groupby("method")["value"].mean()
    shown = [f"{m.replace('c_', 'c = ')} {means[m]:.3g}" for m in d.items if m in means]
    return [f"accuracy at iteration {iteration}: " + "; ".join(shown)] if shown else []


def _measured_numbers(table: pd.DataFrame, d: Diagnosis) -> list[str]:
    """A target's own per-seed measurements ``d.items`` (metrics without an iteration) at
    ``d.at``, per variant: their range over seeds."""
    rows = table[table["metric"].isin(d.items)]
    if "iteration" in rows:
        rows = rows[rows["iteration"].isna()]
    for column, value in d.at.items():
        rows = rows[rows[column].isna() | np.isclose(rows[column], value)]
    out = []
    for variant, part in rows.groupby("variant", sort=False) if "variant" in rows else [("", rows)]:
        values = part.groupby("metric", sort=False)["value"].agg(["min", "max"])
        shown = [f"{m} {lo:.3g}" if lo == hi else f"{m} {lo:.3g}-{hi:.3g}" for m, (lo, hi) in values.iterrows()]
        out.append(f"{variant}: " + ", ".join(shown) if variant else ", ".join(shown))
    return out


def diagnosis_text(d: Diagnosis, tables: Mapping[str, pd.DataFrame]) -> str:
    """The diagnosis with its numbers from ``tables[d.source]`` (means over seeds; a target's
    own measurements as their range over seeds); without the source's table, the measurement
    it would show and where."""
    table = tables.get(d.source)
    reader = (_scan_numbers if d.source == "gtv_mnist_step_scan" else
              _measured_numbers if d.source == d.target else _ablation_numbers)
    numbers = [] if table is None else reader(table, d)
    measured = " | ".join(numbers) if numbers else "not run in this build"
    return f"{d.source}: {measured}. {d.why}"


def claim_diagnoses(target: str, claim: str, tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Every diagnosis of ``target``'s claim ``claim`` (its text without ``[variant]``)."""
    return [diagnosis_text(d, tables) for d in DIAGNOSES if d.matches(target, claim)]


def failure_kind(entries: Sequence[Mapping[str, Any]], claim: str) -> str:
    """How ``claim`` of one target (``entries``: its evaluated claims) fails: ``"paper
    equations"`` (fails in ``paper``, not in ``published``), ``"every variant"`` (fails in
    each variant it was evaluated in, or the target has no variants), ``"published only"``,
    or ``""`` (it fails nowhere)."""
    verdicts = {c.get("variant", ""): c["verdict"] for c in entries if c["claim"] == claim}
    failing = {v for v, verdict in verdicts.items() if verdict == "fails"}
    if not failing:
        return ""
    if failing == set(verdicts):
        return "every variant"
    return "paper equations" if "paper" in failing else "published only"


def failures_markdown(claims: Mapping[str, Sequence[Mapping[str, Any]]],
                      tables: Mapping[str, pd.DataFrame] | None = None) -> list[str]:
    """The failing claims of the targets with variants, split into those that fail under the
    paper's equations as written (the published variant holds them or is inconclusive) and
    those that fail in every variant, each with its diagnosis (Markdown lines)."""
    tables = tables or {}
    kinds: dict[str, list[str]] = {"paper equations": [], "every variant": []}
    for target, entries in claims.items():
        if not any(c.get("variant") for c in entries):
            continue
        for claim in dict.fromkeys(c["claim"] for c in entries if c.get("kind", "paper") == "paper"):
            kind = failure_kind(entries, claim)
            if kind in kinds:
                why = claim_diagnoses(target, claim, tables)
                text = f"- `{target}`: {_escape(claim)}" + (" — diagnosis: " + " / ".join(map(_escape, why))
                                                            if why else " — no diagnosing ablation recorded")
                kinds[kind].append(text)
    lines = ["### Failing claims of the variants", ""]
    for kind, title in (("paper equations", "Fail under the paper's equations as written (`paper` fails, "
                                            "`published` holds or is inconclusive)"),
                        ("every variant", "Fail in every variant")):
        lines += [f"**{title}**: {len(kinds[kind])}.", ""] + ([*kinds[kind], ""] if kinds[kind] else [])
    return lines


def _escape(text: str) -> str:
    from .report import escape_markdown

    return escape_markdown(text)
