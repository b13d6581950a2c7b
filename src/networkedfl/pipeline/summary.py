"""Claims at a glance: a summary table of every target's claims and the HTML index page."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..experiments import get_experiment

__all__ = ["ablation_markdown", "gallery_markdown", "job_seconds", "render_index", "summarize_claims"]

SUMMARY_COLUMNS = ["target", "kind", "source", "title", "claims", "passed", "failed", "all_passed", "failed_claims"]
#: Variants whose counts get their own columns, in this order (see experiments.variants).
VARIANTS = ["published", "paper"]
VARIANT_COLUMNS = [f"{kind}_{v}" for v in VARIANTS for kind in ("claims", "passed")]


def _claim_name(c: Mapping[str, Any]) -> str:
    return f"[{c['variant']}] {c['claim']}" if c.get("variant") else str(c["claim"])


def variant_counts(row: Any) -> str:
    """``"published 7/9 · paper 5/9"`` for a summary row with variants, else ``""``."""
    parts = [f"{v} {int(getattr(row, f'passed_{v}'))}/{int(getattr(row, f'claims_{v}'))}"
             for v in VARIANTS if getattr(row, f"claims_{v}", 0) and getattr(row, f"claims_{v}") > 0]
    return " · ".join(parts)


def summarize_claims(claims: Mapping[str, Sequence[Mapping[str, Any]]]) -> pd.DataFrame:
    """One row per target: how many of its claims were evaluated and how many hold.

    Targets that run in variants (``published``, ``paper``) also get the counts per variant
    (``claims_<variant>``, ``passed_<variant>``; 0 claims for targets without variants);
    ``claims`` and ``passed`` count over all variants.

    Parameters
    ----------
    claims
        The evaluated claims of each target (the contents of ``results/claims/<id>.json``),
        in the order the rows should appear.
    """
    rows = []
    for target, evaluated in claims.items():
        experiment = get_experiment(target)
        failed = [_claim_name(c) for c in evaluated if not c["passed"]]
        per_variant = {}
        for v in VARIANTS:
            mine = [c for c in evaluated if c.get("variant") == v]
            per_variant[f"claims_{v}"] = len(mine)
            per_variant[f"passed_{v}"] = sum(bool(c["passed"]) for c in mine)
        rows.append({
            "target": target,
            "kind": experiment.kind,
            "source": experiment.source,
            "title": experiment.title,
            "claims": len(evaluated),
            "passed": len(evaluated) - len(failed),
            "failed": len(failed),
            "all_passed": not failed and len(evaluated) > 0,
            "failed_claims": " | ".join(failed),
            **per_variant,
        })
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS + VARIANT_COLUMNS)


_FINISHED = re.compile(r"finished \S+: \d+ rows in ([0-9.]+) s")
#: The first line of a setting's job (:func:`~networkedfl.pipeline.runner.run_setting`).
_STARTED = re.compile(r"running \S+, setting \S+, seeds ")


def job_seconds(log_files: Sequence[str | Path]) -> float | None:
    """Total compute time of a target's jobs as their logs report it (``None`` if unknown).

    A job's log is appended to when the job reruns; its latest run counts: the seeds
    finished after the log's last start line (a log without one, from one job per seed:
    its last finished seed).
    """
    total, found = 0.0, False
    for path in log_files:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        starts = list(_STARTED.finditer(text))
        runs = _FINISHED.findall(text[starts[-1].start():]) if starts else _FINISHED.findall(text)[-1:]
        if runs:
            total += sum(float(r) for r in runs)
            found = True
    return total if found else None


def _link(href: str | None, text: str) -> str:
    return f'<a href="{html.escape(href)}">{html.escape(text)}</a>' if href else ""


def render_index(
    summary: pd.DataFrame,
    links: Mapping[str, Mapping[str, str | None]],
    seconds: Mapping[str, float | None] | None = None,
    *,
    title: str = "networkedfl: reproduced figures and tables",
) -> str:
    """The index page: a summary of claims and, per target, links to all its outputs.

    Parameters
    ----------
    summary
        The table of :func:`summarize_claims`.
    links
        Per target, hrefs (relative to the page) for ``report``, ``notebook``, ``table``,
        ``claims``, ``pdf`` and ``png`` (``None`` where a target has no such output).
    seconds
        Per target, the compute time of its jobs (shown if known).
    """
    seconds = seconds or {}
    total, passed = int(summary["claims"].sum()), int(summary["passed"].sum())
    rows = []
    for row in summary.itertuples(index=False):
        out = links[row.target]
        status = "all hold" if row.all_passed else f"{row.failed} fail"
        by_variant = variant_counts(row)
        if by_variant:
            status += f"; {by_variant}"
        time_cell = f"{seconds[row.target]:.0f} s" if seconds.get(row.target) is not None else ""
        thumb = (f'<a href="{html.escape(out["png"])}"><img src="{html.escape(out["png"])}" alt="{row.target}" '
                 'width="220"></a>') if out.get("png") else ""
        failed = f"<br><small>failed: {html.escape(row.failed_claims)}</small>" if row.failed else ""
        rows.append(
            f'<tr class="{"ok" if row.all_passed else "fail"}">'
            f"<td><b>{html.escape(row.target)}</b><br>{html.escape(row.source)}<br><small>{html.escape(row.title)}</small></td>"
            f"<td>{thumb}</td>"
            f"<td>{row.passed}/{row.claims} ({status}){failed}</td>"
            f"<td>{time_cell}</td>"
            "<td>" + " · ".join(filter(None, [
                _link(out.get("report"), "report"), _link(out.get("notebook"), "notebook"),
                _link(out.get("table"), "table"), _link(out.get("claims"), "claims"),
                _link(out.get("pdf"), "PDF"), _link(out.get("png"), "PNG"),
            ])) + "</td></tr>"
        )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 6px; vertical-align: top; }}
tr.ok td:nth-child(3) {{ background: #e6f4e6; }}
tr.fail td:nth-child(3) {{ background: #fbe9e7; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{len(summary)} targets; {passed} of {total} claims hold
(<a href="claims/summary.csv">claims/summary.csv</a>).</p>
<table>
<tr><th>target</th><th>figure</th><th>claims</th><th>compute</th><th>outputs</th></tr>
{chr(10).join(rows)}
</table></body></html>
"""


def gallery_markdown(summary: pd.DataFrame, image_prefix: str = "") -> str:
    """A Markdown gallery: per target with a figure, its PNG, the paper figure it
    reproduces and how many of its claims hold.

    Parameters
    ----------
    summary
        The table of :func:`summarize_claims` (rows in gallery order).
    image_prefix
        Prefix of the image paths, ``<prefix><target>.png`` (e.g. ``"docs/gallery/"`` for a
        page at the repository root).
    """
    lines = ["| reproduces | figure | claims that hold |", "|---|---|---|"]
    for row in summary.itertuples(index=False):
        if not get_experiment(row.target).has_figure:
            continue
        image = f"{image_prefix}{row.target}.png"
        caption = f"{row.source}: {row.title}".replace("|", "\\|")  # a "|" would end the cell
        lines.append(
            f"| {caption}<br>`{row.target}` "
            f'| <img src="{image}" alt="{row.target}" width="420"> '
            f"| {row.passed}/{row.claims}{'<br>' + variant_counts(row) if variant_counts(row) else ''} |"
        )
    return "\n".join(lines) + "\n"


def ablation_markdown(table: pd.DataFrame, metric: str = "label_mse") -> str:
    """The quirk ablation (``gtv_quirk_ablation``) as a Markdown page: per headline number
    (rows), its mean over seeds with each switch (columns: ``published``, one notebook
    option switched back to the paper's definition, ``paper``)."""
    from ..plotting import ablation_summary

    summary = ablation_summary(table, metric)
    switches = list(dict.fromkeys(summary.sort_values("switch", key=lambda s: s.map(
        lambda v: 0 if v == "published" else (2 if v == "paper" else 1)), kind="stable")["switch"]))
    wide = summary.pivot_table(index=["panel", "item", "quantity"], columns="switch", values="value", sort=False)
    head = ["result", "quantity", *[s if s in ("published", "paper") else f"{s} → paper" for s in switches]]
    lines = [
        "# Notebook behaviours switched one at a time",
        "",
        f"Means over {table['seed'].nunique()} repetition(s), from the target's table in `results/tables/` "
        "(written by `snakemake --cores 1 gallery`; do not edit). Column `published`: the authors' notebooks; "
        "each middle column switches one option back to the paper's definition; `paper`: all of them "
        "(docs/variants.md explains the options). Empty: the option is not part of that case.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for (panel, item, quantity), row in wide.iterrows():
        name = f"{panel}, {item}" if item and panel != item else str(panel if not item else item)
        cells = [f"{row[s]:.3g}" if s in row and pd.notna(row[s]) else "" for s in switches]
        lines.append(f"| {name} | {quantity} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def claims_markdown(claims: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """Every target's claims as a Markdown page: per claim whether it holds and what was
    measured (the claim's detail), per variant where the target has variants."""
    lines = ["# Claims, as measured", "",
             "Every claim of every figure in the gallery, evaluated on the default configuration's "
             "tables (written by `snakemake --cores 1 gallery` from `results/claims/`; do not edit). "
             "`[reference]` and `[diagnostic]` lines are checks of the comparison itself, not the "
             "paper's claims (docs/tuning.md).", ""]
    for target, entries in claims.items():
        experiment = get_experiment(target)
        held = sum(bool(c["passed"]) for c in entries)
        lines += [f"## `{target}`: {experiment.source}", "", f"{held} of {len(entries)} hold.", "",
                  "| holds | claim | measured |", "|---|---|---|"]
        lines += [f"| {'yes' if c['passed'] else '**no**'} | {_cell(_claim_name(c))} | {_cell(c['detail'])} |"
                  for c in entries]
        lines.append("")
    return "\n".join(lines)


def tuning_markdown(tables: Mapping[str, pd.DataFrame]) -> str:
    """The tuning protocol's outcome per tuned target: every method's chosen values and
    the validation loss of every grid point (``tuning_`` rows of the targets' tables)."""
    lines = ["# Tuning, as run", "",
             "Every grid point's final validation loss and the chosen point per method (mean over the "
             "tuning seeds; `inf`: diverged), from the tuned targets' tables (written by "
             "`snakemake --cores 1 gallery`; do not edit). The protocol: docs/tuning.md.", ""]
    from ..plotting import tuning_summary

    for target, table in tables.items():
        lines += [f"## `{target}`", "", "| method | grid point | validation loss | chosen |", "|---|---|---|---|"]
        for method, point, loss, chosen in tuning_summary(table).itertuples(index=False):
            lines.append(f"| {method} | {_cell(point)} | {loss:.5g} | {'**chosen**' if chosen else ''} |")
        lines.append("")
    return "\n".join(lines)
