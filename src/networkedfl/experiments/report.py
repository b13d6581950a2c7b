"""The notebooks' helper: one target's table, claims and parameters in one object.

A target's notebook keeps its parameters cell (papermill fills it in from the pipeline's
``results/reports/<id>.params.yaml``), its narrative and a few calls::

    from networkedfl.experiments.gtv import figures

    report = figures.load_target(target, table, claims, figure_pdf, figure_png, title, source, params)
    report.show_figure(figures.fig02_num_clusters(report.table))
    report.show_claims()

Every paper's ``figures`` module re-exports :func:`load_target`, so a notebook imports one
module and the pipeline's code hash of the notebook (``pipeline.provenance``) covers the
figure functions it calls.  The figures and tables themselves are drawn by the tested
functions of ``experiments/<paper>/figures.py``: restyling a figure means editing one of
them, never a notebook cell.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..io import Paths, find_repo_root
from ..plotting import check_figure, claims_frame, save_figure, tuning_summary
from .deviations import deviation_link
from .registry import VERDICTS, get_experiment

__all__ = ["DEVIATIONS_ROOT", "FIGURE_CHECK", "TABLE_VIEWS", "Report", "claim_text", "escape_markdown", "escaped_style",
           "figure_check_lines", "load_target", "table_view"]

#: The deviation pages as seen from the rendered notebook ``results/reports/<id>.html``.
DEVIATIONS_ROOT = "../../docs/deviations"


#: Characters that are Markdown syntax (code, emphasis, links and images, table cells) and
#: the backslash that escapes them.
_MARKDOWN_SYNTAX = re.compile(r"([\\`*_\[\]|])")


def escape_markdown(text: Any) -> str:
    """``text`` as literal Markdown: its syntax characters backslash-escaped and ``&``, ``<``
    and ``>`` as HTML entities, so that text from a results file (a claim, a variant, a
    table's values) renders as itself and never as a link, an image or raw HTML (a
    ``<script>``; IPython's ``Markdown`` and GitHub render raw HTML; issue 45)."""
    return html.escape(_MARKDOWN_SYNTAX.sub(r"\\\1", str(text)), quote=False)


def _display(*objects: Any) -> None:
    from IPython.display import display

    display(*objects)


def _markdown(text: str) -> None:
    from IPython.display import Markdown

    _display(Markdown(text))


@dataclass
class Report:
    """What a target's notebook shows: its table, claims, registered title and source, the
    parameters it ran with, where its figure goes and the deviations it depends on."""

    target: str
    table: pd.DataFrame
    claims: pd.DataFrame
    title: str = ""
    source: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    table_path: str | None = None
    claims_path: str | None = None
    figure_pdf: str | None = None
    figure_png: str | None = None
    deviations: tuple[str, ...] = ()

    def deviation_links(self, root: str = DEVIATIONS_ROOT) -> list[str]:
        """One Markdown link per deviation: ``[slug](<root>/<paper>.md#slug)`` (the slug
        escaped, :func:`escape_markdown`; a slug unknown to the deviation pages is refused)."""
        return [f"[{escape_markdown(slug)}]({deviation_link(slug, root)})" for slug in self.deviations]

    def header_markdown(self) -> str:
        """The source and title in bold, and the deviations the target depends on (every
        text escaped: :func:`escape_markdown`)."""
        text = f"**{escape_markdown(self.source)}**: {escape_markdown(self.title)}"
        links = self.deviation_links()
        if links:
            text += "\n\nDeviations from the paper this target depends on: " + ", ".join(links) + "."
        return text

    def show_header(self) -> Report:
        """Display the header and the table's size; returns the report."""
        _markdown(self.header_markdown())
        print(f"{len(self.table)} rows from {self.table_path}")
        return self

    def claims_counts(self) -> list[str]:
        """``"the paper's 5 statistical claims: 3 holds, 1 fails, 1 inconclusive (checks: 2 holds)"``, per
        variant where the claims have variants (docs/verdicts.md)."""
        frame = self.claims
        parts = frame.groupby("variant", sort=False) if "variant" in frame else [(None, frame)]
        return [(f"{variant}: " if variant else "") + _counts_line(part) for variant, part in parts]

    def show_claims(self) -> Any:
        """Print the claim counts and return the claims table (verdict, claim, effect with its
        95 % interval, seeds, detail), the verdict coloured and every value and label
        HTML-escaped (the claims file's text is shown as text, never run as markup)."""
        for line in self.claims_counts():
            print(line)
        columns = [c for c in ("variant", "verdict", "claim", "effect_label", "effect", "interval", "n_seeds", "detail")
                   if c in self.claims]
        colour = {"holds": "color: green", "equivalent": "color: steelblue", "fails": "color: red",
                  "inconclusive": "color: darkorange"}
        shown = self.claims.assign(claim=[claim_text(c) for c in self.claims.to_dict("records")])
        return escaped_style(shown[columns]).map(lambda v: colour.get(v, ""), subset=["verdict"])

    def show_figure(self, fig: Any) -> None:
        """Write ``fig`` to the target's figure PDF and PNG and show it, with the reader's
        check of a result figure (:func:`figure_check_lines`) printed under it: every build,
        the default scale's included, checks the figures it draws (issue 41)."""
        import matplotlib.pyplot as plt

        if self.figure_pdf is None or self.figure_png is None:
            raise ValueError(f"{self.target}: no figure paths (a table target draws no figure)")
        save_figure(fig, self.figure_pdf, self.figure_png)
        lines = figure_check_lines(fig, get_experiment(self.target).kind)
        plt.show()
        for line in lines:
            print(line)

    def show(self, *objects: Any) -> None:
        """Display ``objects`` one after the other (strings printed as text)."""
        for obj in objects:
            if isinstance(obj, str):
                print(obj)
            else:
                _display(obj)

    def show_tuning(self) -> pd.DataFrame:
        """Display the tuning protocol's chosen point of every method and return the
        validation loss of every grid point (rows) per method (columns)."""
        summary = tuning_summary(self.table)
        _display(summary[summary["chosen"]].set_index("method"))
        return summary.pivot_table(index="grid point", columns="method", values="validation loss", sort=False)


#: The first line :func:`figure_check_lines` prints; a build's reports are searched for it.
FIGURE_CHECK = "Reader's check of this figure (networkedfl.plotting.check_figure):"


def figure_check_lines(fig: Any, kind: str) -> list[str]:
    """The reader's check of a result figure (``kind`` "figure"; a diagram is not one) as
    lines to print: :data:`FIGURE_CHECK` followed by "no problems" or one line per problem."""
    if kind != "figure":
        return []
    problems = check_figure(fig)
    return [f"{FIGURE_CHECK} {'no problems' if not problems else f'{len(problems)} problem(s)'}",
            *(f"  - {p}" for p in problems)]


def claim_text(claim: Mapping[str, Any]) -> str:
    """A claim's text with its [inferred] tag (the experiment specification: expected, not stated by the
    paper) beside it; unescaped, for the caller's escaping."""
    flag = claim.get("inferred")
    tagged = isinstance(flag, (bool, np.bool_)) and bool(flag)  # absent (NaN) in older claims files
    return f"{claim['claim']} [inferred]" if tagged else str(claim["claim"])


def _html_cell(value: Any) -> str:
    """A value as pandas' Styler shows it (floats to its precision), HTML-escaped, whatever
    its type (a list of strings too: the Styler's own ``escape`` reaches strings only)."""
    if isinstance(value, float | np.floating):
        return f"{value:.{pd.get_option('styler.format.precision')}f}"
    return html.escape(str(value))


def escaped_style(frame: pd.DataFrame) -> Any:
    """``frame.style`` with every value and label HTML-escaped when it is rendered (pandas'
    ``Styler`` escapes nothing by default, unlike ``DataFrame.to_html``).  A later
    ``.format(formatter, escape="html")`` for numeric columns keeps the others escaped."""
    return frame.style.format(_html_cell).format_index(_html_cell, axis=0).format_index(_html_cell, axis=1)


def _counts_line(frame: pd.DataFrame) -> str:
    kinds = frame["kind"] if "kind" in frame else pd.Series("paper", index=frame.index)
    tests = frame["test"] if "test" in frame else pd.Series("statistical", index=frame.index)
    paper, checks = frame[kinds == "paper"], frame[kinds != "paper"]
    statistical, apart = paper[tests[kinds == "paper"] == "statistical"], paper[tests[kinds == "paper"] != "statistical"]

    def tally(part: pd.DataFrame) -> str:
        counts = part["verdict"].value_counts()
        return ", ".join(f"{int(counts[v])} {v}" for v in VERDICTS if v in counts)

    line = f"the paper's {len(statistical)} statistical claims: {tally(statistical) or 'none'}"
    if len(apart):
        line += f"; {len(apart)} fixed or every-seed checks: {tally(apart)}"
    return line + (f" (checks: {tally(checks)})" if len(checks) else "")


#: The function of each table target's figures module that shows its table (the notebook
#: and the gallery): target -> (module, function).
TABLE_VIEWS = {
    "gtv_table1_highdim_sbm": ("networkedfl.experiments.gtv.figures", "highdim_sbm"),
    "gtv_table2_mnist_clusters": ("networkedfl.experiments.gtv.figures", "mnist_clusters"),
    "gtv_table3_covariance": ("networkedfl.experiments.gtv.figures", "covariance_errors"),
    "gfl_table10_1_settings": ("networkedfl.experiments.gfl.figures", "settings_table"),
    "gfl_table10_2_review_stats": ("networkedfl.experiments.gfl.figures", "review_stats_table"),
    "lecture_table1_fedsgd_fedavg": ("networkedfl.experiments.lecture.figures", "upload_table"),
}


def table_view(target: str, table: pd.DataFrame) -> pd.DataFrame:
    """The table target ``target``'s table as its notebook shows it (a DataFrame; a styled
    table gives its data)."""
    import importlib

    if target not in TABLE_VIEWS:
        raise KeyError(f"{target!r} has no table view (networkedfl.experiments.report.TABLE_VIEWS)")
    module, name = TABLE_VIEWS[target]
    view = getattr(importlib.import_module(module), name)(table)
    return getattr(view, "data", view)


def _pipeline_params(path: str) -> dict[str, Any]:
    import yaml

    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh) or {}


def load_target(
    target: str,
    table: str | os.PathLike | None = None,
    claims: str | os.PathLike | None = None,
    figure_pdf: str | os.PathLike | None = None,
    figure_png: str | os.PathLike | None = None,
    title: str = "",
    source: str = "",
    params: Mapping[str, Any] | None = None,
    *,
    results: str | os.PathLike | None = None,
    show: bool = True,
) -> Report:
    """Read ``target``'s table and claims (papermill's parameters, in the order of the
    notebooks' parameters cell) and, with ``show``, display the report's header.

    ``table`` None (a notebook run by hand): the pipeline's outputs below ``results``
    (default: ``results/`` of the repository), figure paths included, and the parameters the
    pipeline passed to the notebook (``reports/<id>.params.yaml``) unless ``params`` are
    given.  An empty ``title`` or ``source`` is the registered one.
    """
    if table is None:
        paths = Paths(results=Path(results) if results is not None else find_repo_root() / "results")
        table, claims = paths.table(target), paths.claims(target)
        figure_pdf, figure_png = paths.figure(target, "pdf"), paths.figure(target, "png")
        if not params and Path(paths.notebook_params(target)).is_file():  # what the pipeline passed
            params = _pipeline_params(paths.notebook_params(target)).get("params")
    if claims is None:
        raise ValueError(f"{target}: a table was given without its claims file")
    experiment = get_experiment(target)
    report = Report(
        target=target,
        table=pd.read_csv(table),
        claims=claims_frame(claims),
        title=title or experiment.title,
        source=source or experiment.source,
        params=dict(params or {}),
        table_path=str(table),
        claims_path=str(claims),
        figure_pdf=str(figure_pdf) if figure_pdf is not None else None,
        figure_png=str(figure_png) if figure_png is not None else None,
        deviations=tuple(getattr(experiment, "deviations", ())),
    )
    return report.show_header() if show else report
