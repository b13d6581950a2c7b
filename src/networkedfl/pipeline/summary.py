"""Claims at a glance: a summary table of every target's claims and the HTML index page."""

from __future__ import annotations

import fnmatch
import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..experiments import get_experiment
from ..experiments.papers import PAPERS, paper_of
from ..experiments.report import claim_text, escape_markdown

__all__ = ["ablation_markdown", "chosen_points", "claims_markdown", "gallery_markdown", "headline", "job_seconds",
           "markdown_table", "paper_summary", "render_index", "scale_line", "summarize_claims", "test_of",
           "tuning_markdown"]

#: The verdicts in the order they are shown (:data:`networkedfl.experiments.registry.VERDICTS`).
VERDICTS = ("holds", "equivalent", "fails", "inconclusive")
#: Their names in a count (``3 hold``).
_COUNTED = {"holds": "hold", "equivalent": "equivalent", "fails": "fail", "inconclusive": "inconclusive"}
SUMMARY_COLUMNS = [
    "paper", "target", "variant", "kind", "source", "title",
    "claims", "holds", "equivalent", "fails", "inconclusive", "decided",
    "fixed", "fixed_fail", "every_seed", "every_seed_fail",
    "checks", "checks_hold", "checks_equivalent", "checks_fail", "checks_inconclusive",
    "min_seeds", "max_seeds", "failed_claims", "inconclusive_claims",
]
#: The counts summed per paper (:func:`paper_summary`).
_COUNTS = [c for c in SUMMARY_COLUMNS[6:-4]]


def _claim_name(c: Mapping[str, Any]) -> str:
    """The claim's text, after its variant and with its [inferred] tag (:func:`claim_text`)."""
    return f"[{c['variant']}] {claim_text(c)}" if c.get("variant") else claim_text(c)


def _is_paper(c: Mapping[str, Any]) -> bool:
    return c.get("kind", "paper") == "paper"


def test_of(c: Mapping[str, Any]) -> str:
    """How a claim was decided: its ``test`` (``statistical``, ``fixed``, ``every_seed``), or,
    for a claims file written before the field existed, read from its ``interval_method``."""
    if c.get("test"):
        return str(c["test"])
    method = str(c.get("interval_method", ""))
    return "fixed" if method.startswith("exact") else ("every_seed" if method.startswith("every seed") else "statistical")


def summarize_claims(claims: Mapping[str, Sequence[Mapping[str, Any]]]) -> pd.DataFrame:
    """One row per target and variant (``variant`` empty for targets without variants): how
    many of the paper's **statistical** claims hold, are equivalent, fail and are inconclusive
    (``claims`` counts them; ``decided`` = hold + equivalent + fail), the paper's fixed checks
    and every-seed properties apart (``fixed``, ``every_seed``, with how many fail), and the
    ``[reference]`` and ``[diagnostic]`` checks apart (docs/verdicts.md#counts).

    Parameters
    ----------
    claims
        The evaluated claims of each target (the contents of ``results/claims/<id>.json``),
        in the order the rows should appear (:func:`~networkedfl.experiments.papers.ordered_targets`).
    """
    rows = []
    for target, evaluated in claims.items():
        experiment = get_experiment(target)
        variants = list(dict.fromkeys(c.get("variant", "") for c in evaluated)) or [""]
        for variant in variants:
            mine = [c for c in evaluated if c.get("variant", "") == variant]
            every = [c for c in mine if _is_paper(c)]
            paper = [c for c in every if test_of(c) == "statistical"]
            fixed = [c for c in every if test_of(c) == "fixed"]
            each_seed = [c for c in every if test_of(c) == "every_seed"]
            checks = [c for c in mine if not _is_paper(c)]
            seeds = [int(c["n_seeds"]) for c in mine if c.get("n_seeds") is not None]
            count = {v: sum(c["verdict"] == v for c in paper) for v in VERDICTS}
            rows.append({
                "paper": paper_of(target).key, "target": target, "variant": variant, "kind": experiment.kind,
                "source": experiment.source, "title": experiment.title,
                "claims": len(paper), **count, "decided": len(paper) - count["inconclusive"],
                "fixed": len(fixed), "fixed_fail": sum(c["verdict"] != "holds" for c in fixed),
                "every_seed": len(each_seed), "every_seed_fail": sum(c["verdict"] != "holds" for c in each_seed),
                "checks": len(checks),
                **{f"checks_{_COUNTED[v]}": sum(c["verdict"] == v for c in checks) for v in VERDICTS},
                "min_seeds": min(seeds, default=0), "max_seeds": max(seeds, default=0),
                "failed_claims": " | ".join(c["claim"] for c in every if c["verdict"] == "fails"),
                "inconclusive_claims": " | ".join(c["claim"] for c in paper if c["verdict"] == "inconclusive"),
            })
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def paper_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """Per paper and variant (in the papers' order): the paper's statistical claims that hold,
    are equivalent, fail and are inconclusive, the share decided, and the fixed checks,
    every-seed properties and reference checks apart.  A target without variants counts under
    variant ``""``; the GTV targets count under ``published`` and ``paper``."""
    order = {p.key: i for i, p in enumerate(PAPERS)}
    out = summary.groupby(["paper", "variant"], sort=False)[_COUNTS].sum().reset_index()
    out = out.sort_values("paper", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)
    out.insert(0, "name", out["paper"].map({p.key: p.name for p in PAPERS}))
    return out


def _verdict_counts(row: Any) -> str:
    """``"3 hold · 1 fail · 2 inconclusive; 2 fixed checks"`` (the paper's statistical claims
    of one summary row, then its fixed checks and every-seed properties)."""
    parts = " · ".join(f"{getattr(row, v)} {_COUNTED[v]}" for v in VERDICTS if getattr(row, v)) or "no statistical claims"
    return parts + "".join(f"; {text}" for text in _apart(row) if text)


def _apart(row: Any) -> list[str]:
    """The paper's fixed checks and every-seed properties of a summary row (with the failing ones)."""
    def part(n: int, bad: int, one: str, many: str) -> str:
        return f"{n} {one if n == 1 else many}" + (f" ({bad} fail)" if bad else "") if n else ""

    return [part(row.fixed, row.fixed_fail, "fixed check", "fixed checks"),
            part(row.every_seed, row.every_seed_fail, "every-seed property", "every-seed properties")]


def _checks_counts(row: Any) -> str:
    if not row.checks:
        return ""
    parts = [f"{getattr(row, f'checks_{_COUNTED[v]}')} {_COUNTED[v]}" for v in VERDICTS if getattr(row, f"checks_{_COUNTED[v]}")]
    return f"checks: {' · '.join(parts)}"


def headline(summary: pd.DataFrame) -> str:
    """``"N statistical paper claims: h hold, e equivalent, f fail, i inconclusive (d % decided);
    plus k fixed checks, p every-seed properties and r reference and diagnostic checks"``
    (counted per variant; docs/verdicts.md#counts)."""
    total = int(summary["claims"].sum())
    tally = ", ".join(f"{int(summary[v].sum())} {_COUNTED[v]}" for v in VERDICTS)
    decided = int(summary["decided"].sum())

    def bad(column: str) -> str:
        n = int(summary[column].sum())
        return f" ({n} fail)" if n else ""

    return (f"{total} statistical paper claims: {tally} ({_percent(decided, total)} decided); plus "
            f"{int(summary['fixed'].sum())} fixed checks{bad('fixed_fail')}, "
            f"{int(summary['every_seed'].sum())} every-seed properties{bad('every_seed_fail')} and "
            f"{int(summary['checks'].sum())} reference and diagnostic checks")


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
    """The index page: the verdicts per paper and variant, then per target (in the papers'
    order) its verdicts and links to all its outputs.

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
    papers = paper_summary(summary)
    head = "".join(
        "<tr>" + "".join(f"<td>{_text(v)}</td>" for v in (
            r.name, r.variant, r.claims, r.holds, r.equivalent, r.fails, r.inconclusive, _percent(r.decided, r.claims),
            f"{r.fixed} ({r.fixed_fail} fail)", f"{r.every_seed} ({r.every_seed_fail} fail)",
            f"{r.checks_hold}/{r.checks_equivalent}/{r.checks_fail}/{r.checks_inconclusive}")) + "</tr>"
        for r in papers.itertuples(index=False))
    rows = []
    for target, part in summary.groupby("target", sort=False):
        out = links[target]
        first = part.iloc[0]
        verdicts = "<br>".join(
            (f"<b>{html.escape(r.variant)}</b>: " if r.variant else "") + html.escape(_verdict_counts(r))
            + (f"<br><small>{html.escape(_checks_counts(r))}</small>" if r.checks else "")
            + (f"<br><small>fail: {html.escape(r.failed_claims)}</small>" if r.failed_claims else "")
            + (f"<br><small>inconclusive: {html.escape(r.inconclusive_claims)}</small>" if r.inconclusive else "")
            for r in part.itertuples(index=False))
        failed = part[["fails", "fixed_fail", "every_seed_fail"]].to_numpy().sum()
        state = "fail" if failed else ("open" if part["inconclusive"].sum() else "ok")
        time_cell = f"{seconds[target]:.0f} s" if seconds.get(target) is not None else ""
        thumb = (f'<a href="{html.escape(out["png"])}"><img src="{html.escape(out["png"])}" alt="{html.escape(target)}" '
                 'width="260"></a>') if out.get("png") else ""
        rows.append(
            f'<tr class="{state}">'
            f"<td><b>{html.escape(target)}</b><br>{html.escape(first.source)}<br>"
            f"<small>{html.escape(first.title)}</small></td>"
            f"<td>{thumb}</td><td>{verdicts}</td><td>{time_cell}</td>"
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
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
td, th {{ border: 1px solid #ccc; padding: 6px; vertical-align: top; }}
tr.ok td:nth-child(3) {{ background: #e6f4e6; }}
tr.open td:nth-child(3) {{ background: #fff6d5; }}
tr.fail td:nth-child(3) {{ background: #fbe9e7; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{summary["target"].nunique()} targets; {html.escape(headline(summary))} (counted per variant).
Every statistical verdict is decided from per-seed values with a 95 % interval and the design's margin
(docs/verdicts.md); fixed checks, every-seed properties and the <code>[reference]</code> and
<code>[diagnostic]</code> checks are counted apart (<a href="claims/summary.csv">claims/summary.csv</a>).</p>
<table>
<tr><th>paper</th><th>variant</th><th>statistical claims</th><th>hold</th><th>equivalent</th><th>fail</th>
<th>inconclusive</th><th>decided</th><th>fixed checks</th><th>every-seed properties</th>
<th>checks hold/equivalent/fail/inconclusive</th></tr>
{head}
</table>
<table>
<tr><th>target</th><th>figure</th><th>verdicts</th><th>compute</th><th>outputs</th></tr>
{chr(10).join(rows)}
</table></body></html>
"""


def _text(value: Any) -> str:
    """Any value as HTML text (escaped: a summary read back from its CSV may hold anything)."""
    return html.escape(str(value))


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "n/a"


def _lookup(params: Mapping[str, Any], dotted: str) -> Any:
    """The value at a dotted key; a ``*`` part matches every key at its level (one value if
    they all agree, else ``{key: value}``); ``None`` where nothing is set."""
    head, _, rest = dotted.partition(".")
    if not isinstance(params, Mapping):
        return None
    if "*" in head:
        found = {k: _lookup(v, rest) if rest else v for k, v in params.items() if fnmatch.fnmatchcase(str(k), head)}
        found = {k: v for k, v in found.items() if v is not None}
        values = list(dict.fromkeys(map(str, found.values())))
        return None if not found else next(iter(found.values())) if len(values) == 1 else found
    if head not in params:
        return None
    return _lookup(params[head], rest) if rest else params[head]


def chosen_points(table: pd.DataFrame) -> dict[str, str]:
    """Per tuned method of a target's table, the grid point the tuning chose (``lr_scale=0.5``)."""
    from ..plotting import tuning_summary

    summary = tuning_summary(table)
    if summary.empty:
        return {}
    chosen = summary[summary["chosen"]]
    return dict(zip(chosen["method"].astype(str), chosen["grid point"].astype(str), strict=True))


def scale_line(target: str, params: Mapping[str, Any], chosen: Mapping[str, str] | None = None) -> str:
    """The default run's scale against the paper's: the seeds, then every parameter the
    target registers in ``paper_scale`` (``key: value (paper: ...)``).  A parameter the
    tuning chose per method (``chosen``: :func:`chosen_points`) shows the chosen values, the
    ones plotted, not the config's untuned default (issue 41)."""
    reps = params.get("repetitions")
    parts = [f"{reps} seed{'s' if reps != 1 else ''}" if reps is not None else "seeds: n/a"]
    for key, paper in get_experiment(target).paper_scale.items():
        name = key.rsplit(".", 1)[-1]
        tuned = {m: p for m, p in (chosen or {}).items() if name in p}
        if tuned:
            shown = "tuned per method: " + ", ".join(f"{m} {p}" for m, p in tuned.items())
        else:
            value = _lookup(params, key)
            shown = "all" if value is None and key in params else value
        if shown is not None:  # a key this run does not set is left out
            parts.append(f"{key} = {shown} (paper: {paper})")
    return "; ".join(parts)


def markdown_table(frame: pd.DataFrame, *, index: bool = True, digits: int = 4) -> str:
    """A DataFrame as a Markdown table (numbers to ``digits`` significant digits)."""
    frame = frame.reset_index() if index and (frame.index.name or any(frame.index.names)) else frame

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "" if pd.isna(v) else f"{v:.{digits}g}"
        return _cell(v)

    head = [str(c) if not isinstance(c, tuple) else " ".join(map(str, c)) for c in frame.columns]
    lines = ["| " + " | ".join(_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _summary_markdown(summary: pd.DataFrame) -> list[str]:
    papers = paper_summary(summary)
    lines = ["| paper | variant | statistical claims | hold | equivalent | fail | inconclusive | decided | fixed checks | "
             "every-seed properties | checks (hold · equivalent · fail · inconclusive) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in papers.itertuples(index=False):
        lines.append(f"| {_cell(r.name)} | {_cell(r.variant) or '–'} | {r.claims} | {r.holds} | {r.equivalent} | {r.fails} | "
                     f"{r.inconclusive} | {_percent(r.decided, r.claims)} | {r.fixed} | {r.every_seed} | "
                     f"{r.checks_hold} · {r.checks_equivalent} · {r.checks_fail} · {r.checks_inconclusive} |")
    total, decided = int(papers["claims"].sum()), int(papers["decided"].sum())
    lines.append(f"| **all** | | **{total}** | **{int(papers['holds'].sum())}** | **{int(papers['equivalent'].sum())}** | "
                 f"**{int(papers['fails'].sum())}** | **{int(papers['inconclusive'].sum())}** | **{_percent(decided, total)}** | "
                 f"**{int(papers['fixed'].sum())}** | **{int(papers['every_seed'].sum())}** | |")
    return ["**" + headline(summary) + "** (counted per variant).", "", *lines]


def gallery_markdown(
    summary: pd.DataFrame,
    params: Mapping[str, Mapping[str, Any]],
    tables: Mapping[str, pd.DataFrame] | None = None,
    *,
    notebooks: Mapping[str, str] | None = None,
    image_prefix: str = "",
    deviations_root: str = "../deviations",
    printed: Mapping[str, pd.DataFrame] | None = None,
    failures: Sequence[str] | None = None,
    chosen: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """The gallery as a report: a summary of verdicts per paper and variant, then per paper,
    in the paper's order, every figure and table with its verdicts, its scale against the
    paper's, links to its claims (with their intervals), deviations and notebook, and the
    figure (at full width, linked to the full-size image) or the table.

    Parameters
    ----------
    summary
        The table of :func:`summarize_claims`, rows in the papers' order.
    params
        Per target, the parameters it ran with (the config block).
    tables
        Per table target, the table to show (a DataFrame; a target missing here shows a link
        to its notebook only).
    notebooks
        Per target, the href of its rendered notebook.
    printed
        Per GTV target with a ``published`` variant, its comparison with the authors'
        printed numbers (:func:`~networkedfl.experiments.gtv.printed.compare_printed`),
        shown after its figure or table.
    failures
        Markdown lines shown after the summary: the variants' failing claims by kind, with
        their diagnoses (:func:`~networkedfl.experiments.diagnosis.failures_markdown`).
    chosen
        Per tuned target, the grid point chosen per method (:func:`chosen_points`): its
        scale line shows them instead of the config's untuned value.
    """
    from ..experiments.deviations import deviation_link
    from ..experiments.gtv.printed import printed_markdown

    tables, notebooks, printed = tables or {}, notebooks or {}, printed or {}
    lines = [
        "# Gallery: the papers' results as the default configuration reproduces them", "",
        "Generated by `snakemake --cores 1 gallery` from a default-configuration run; do not edit. Every claim "
        "is decided from per-seed values with a 95 % interval and the design's margin ([the rule](../verdicts.md)): "
        "it **holds**, is **equivalent** (the effect lies inside the margin: no difference that matters), "
        "**fails**, or is **inconclusive** (the difference is inside the noise at this number of seeds). The "
        "headline counts the papers' statistical claims; fixed checks (diagrams, copied tables), every-seed "
        "properties and the `[reference]` and `[diagnostic]` checks of the comparisons themselves are counted "
        "apart (\"checks\"). The GTV targets run two variants: `published` (the authors' notebooks) and `paper` "
        "(the paper's equations; [docs/variants.md](../variants.md)). [claims.md](claims.md) lists every "
        "claim with its effect, interval and seeds; [tuning.md](tuning.md) the chapter's tuning.", "",
        "## Summary", "", *_summary_markdown(summary), "", *(failures or ()),
    ]
    for paper in PAPERS:
        part = summary[summary["paper"] == paper.key]
        if part.empty:
            continue
        lines += [f"## {paper.name}", "", f"{paper.citation} (`../shared/papers/{paper.file}`).", ""]
        for target, rows in part.groupby("target", sort=False):
            experiment = get_experiment(target)
            first = rows.iloc[0]
            links = [f"[claims](claims.md#{target})"]
            if target in notebooks:
                links.append(f"[notebook]({notebooks[target]})")
            devs = ", ".join(f"[{d}]({deviation_link(d, deviations_root)})" for d in experiment.deviations)
            lines += [f"### {_cell(first.source)}: {_cell(first.title)}", "",
                      f"`{target}` · " + " · ".join(links) + (f" · deviations: {devs}" if devs else ""), ""]
            verdicts = [f"| {_code(r.variant) if r.variant else 'claims'} | {_verdict_counts(r)} | "
                        f"{_checks_counts(r).removeprefix('checks: ') or '–'} |" for r in rows.itertuples(index=False)]
            lines += ["| | the paper's claims (statistical; fixed and every-seed apart) | checks |", "|---|---|---|",
                      *verdicts, "",
                      f"**Scale of this run**: {scale_line(target, params.get(target, {}), (chosen or {}).get(target))}.",
                      ""]
            if experiment.has_figure:
                image = f"{image_prefix}{target}.png"
                lines += [f"[![{target}]({image})]({image})", ""]
            elif target in tables:
                lines += [markdown_table(tables[target]), ""]
            if target in printed:
                lines += printed_markdown(printed[target], root=str(Path(deviations_root).parent))
    return "\n".join(lines) + "\n"


def ablation_markdown(table: pd.DataFrame, metric: str = "label_mse") -> str:
    """The quirk ablation (``gtv_quirk_ablation``) as a Markdown page: per headline number
    (rows), its mean over seeds with each switch (columns: ``published``, one notebook
    option switched back to the paper's definition, ``paper``)."""
    from ..experiments.gtv.ablation_summary import ablation_summary

    summary = ablation_summary(table, metric)
    switches = list(dict.fromkeys(summary.sort_values("switch", key=lambda s: s.map(
        lambda v: 0 if v == "published" else (2 if v == "paper" else 1)), kind="stable")["switch"]))
    wide = summary.pivot_table(index=["panel", "item", "quantity"], columns="switch", values="value", sort=False)
    head = ["result", "quantity", *[_cell(s) if s in ("published", "paper") else f"{_cell(s)} → paper"
                                    for s in switches]]
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
        lines.append(f"| {_cell(name)} | {_cell(quantity)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(text: Any) -> str:
    """Text from a results file as one Markdown table cell or line: every Markdown syntax
    character escaped and ``&``, ``<``, ``>`` as entities (:func:`escape_markdown`; no tag,
    link or image survives, issue 45), line breaks as spaces."""
    return escape_markdown(str(text).replace("\r", " ").replace("\n", " "))


def _code(text: Any) -> str:
    """A name from a results file (a variant) as inline code, or escaped text where it holds
    anything but letters, digits, ``_``, ``.`` and ``-`` (a backtick would end the code)."""
    return f"`{text}`" if re.fullmatch(r"[\w.\-]+", str(text)) else _cell(text)


def _number(x: Any) -> str:
    if x is None:
        return ""
    if isinstance(x, str):
        return _cell(x)
    return f"{x:.3g}"


def claims_markdown(claims: Mapping[str, Sequence[Mapping[str, Any]]],
                    diagnostics: Mapping[str, pd.DataFrame] | None = None) -> str:
    """Every target's claims as a Markdown page, per paper in the papers' order: per claim its
    verdict, the effect of the case that decided it with its 95 % interval, the number of
    seeds and what was measured (per variant where the target has variants).  With
    ``diagnostics`` (the tables of :data:`~networkedfl.experiments.diagnosis.DIAGNOSTIC_TARGETS`
    that ran), a column ``diagnosis`` gives each failing claim of a variant how it fails and the
    ablation or step-scan result that moves it, and any other failing claim with a recorded
    diagnosis that diagnosis (:mod:`networkedfl.experiments.diagnosis`)."""
    lines = ["# Claims, as measured", "",
             "Every claim of every target, evaluated on the default configuration's tables (written by "
             "`snakemake --cores 1 gallery` from `results/claims/`; do not edit). Verdicts, effects and intervals "
             "follow [docs/verdicts.md](../verdicts.md): the effect is that of the case that decided the claim "
             "(a ratio on the log scale, a difference on the linear scale), with its 95 % interval. `[reference]` "
             "and `[diagnostic]` lines are checks of the comparison itself, not the paper's claims "
             "([docs/tuning.md](../tuning.md)).", ""]
    for paper in PAPERS:
        mine = [t for t in paper.targets if t in claims]
        if not mine:
            continue
        lines += [f"## {paper.name}", ""]
        for target in mine:
            entries = claims[target]
            experiment = get_experiment(target)
            paper_claims = [c for c in entries if _is_paper(c)]
            statistical = [c for c in paper_claims if test_of(c) == "statistical"]
            tally = ", ".join(f"{sum(c['verdict'] == v for c in statistical)} {v}" for v in VERDICTS)
            apart = len(paper_claims) - len(statistical)
            tally += f"; {apart} fixed or every-seed check{'s' if apart != 1 else ''} apart" if apart else ""
            lines += [f'<a id="{target}"></a>', "", f"### `{target}`: {experiment.source}", "",
                      f"The paper's statistical claims: {tally}.", "",
                      *_claims_head(diagnostics is not None)]
            for c in entries:
                verdict = c["verdict"]
                shown = f"**{_cell(verdict)}**" if verdict != "holds" else verdict
                if test_of(c) != "statistical":
                    shown += f" ({'fixed' if test_of(c) == 'fixed' else 'every seed'})"
                interval = c.get("interval")
                effect = ""
                if c.get("effect") is not None:
                    effect = f"{_cell(c.get('effect_label', ''))}: {_number(c['effect'])}"
                    if interval:
                        effect += f" [{_number(interval[0])}, {_number(interval[1])}]"
                elif c.get("interval_method"):
                    effect = _cell(c["interval_method"])
                seeds = "" if c.get("n_seeds") is None else _cell(c["n_seeds"])
                row = f"| {shown} | {_cell(_claim_name(c))} | {effect} | {seeds} | {_cell(c['detail'])} |"
                if diagnostics is not None:
                    row += f" {_diagnosis_cell(target, entries, c, diagnostics)} |"
                lines.append(row)
            lines.append("")
    return "\n".join(lines)


def _claims_head(diagnosis: bool) -> list[str]:
    head = "| verdict | claim | effect [95 % interval] | seeds | measured |"
    return [head + " diagnosis |", "|---|---|---|---|---|---|"] if diagnosis else [head, "|---|---|---|---|---|"]


def _diagnosis_cell(target: str, entries: Sequence[Mapping[str, Any]], c: Mapping[str, Any],
                    diagnostics: Mapping[str, pd.DataFrame]) -> str:
    """A failing claim's kind (under the paper's equations / in every variant) and the
    measurements that diagnose it; empty for the others."""
    from ..experiments.diagnosis import claim_diagnoses, failure_kind

    if c["verdict"] != "fails":
        return ""
    kind = {"paper equations": "fails under the paper's equations as written",
            "every variant": "fails in every variant", "published only": "fails in the published variant only"}
    text = kind.get(failure_kind(entries, c["claim"]), "") if c.get("variant") else ""
    found = claim_diagnoses(target, c["claim"], diagnostics)
    return _cell("; ".join(x for x in [text, *found] if x))


def tuning_markdown(tables: Mapping[str, pd.DataFrame]) -> str:
    """The tuning protocol's outcome per tuned target: every method's chosen values and
    the validation loss of every grid point (``tuning_`` rows of the targets' tables)."""
    lines = ["# Tuning, as run", "",
             "Every grid point's final validation loss and the chosen point per method (mean over the "
             "tuning seeds; `inf`: diverged; with successive halving, at the last rung the point reached, "
             "whose rounds are shown), from the tuned targets' tables (written by "
             "`snakemake --cores 1 gallery`; do not edit). The protocol: docs/tuning.md.", ""]
    from ..plotting import tuning_summary

    for target, table in tables.items():
        summary = tuning_summary(table)
        rounds = "rounds" in summary
        lines += [f"## `{target}`", "", f"| method | grid point |{' rounds (last rung) |' if rounds else ''} "
                  "validation loss | chosen |", "|---|---|---|---|" + ("---|" if rounds else "")]
        for row in summary.to_dict("records"):
            shown_rounds = f" {row['rounds']} |" if rounds else ""
            lines.append(f"| {_cell(row['method'])} | {_cell(row['grid point'])} |{shown_rounds} "
                         f"{row['validation loss']:.5g} | {'**chosen**' if row['chosen'] else ''} |")
        lines.append("")
    return "\n".join(lines)
