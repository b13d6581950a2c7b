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

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..io import Paths, find_repo_root
from ..plotting import claims_frame, save_figure, tuning_summary
from .deviations import deviation_link
from .registry import get_experiment

__all__ = ["DEVIATIONS_ROOT", "TABLE_VIEWS", "Report", "load_target", "table_view"]

#: The deviation pages as seen from the rendered notebook ``results/reports/<id>.html``.
DEVIATIONS_ROOT = "../../docs/deviations"


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
        """One Markdown link per deviation: ``[slug](<root>/<paper>.md#slug)``."""
        return [f"[{slug}]({deviation_link(slug, root)})" for slug in self.deviations]

    def header_markdown(self) -> str:
        """The source and title in bold, and the deviations the target depends on."""
        text = f"**{self.source}**: {self.title}"
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
        """``"the paper's 5 claims: 3 hold, 1 fails, 1 inconclusive (checks: 2 hold)"``, per
        variant where the claims have variants (docs/verdicts.md)."""
        frame = self.claims
        parts = frame.groupby("variant", sort=False) if "variant" in frame else [(None, frame)]
        return [(f"{variant}: " if variant else "") + _counts_line(part) for variant, part in parts]

    def show_claims(self) -> Any:
        """Print the claim counts and return the claims table (verdict, claim, effect with its
        95 % interval, seeds, detail), the verdict coloured."""
        for line in self.claims_counts():
            print(line)
        columns = [c for c in ("variant", "verdict", "claim", "effect_label", "effect", "interval", "n_seeds", "detail")
                   if c in self.claims]
        colour = {"holds": "color: green", "fails": "color: red", "inconclusive": "color: darkorange"}
        return self.claims[columns].style.map(lambda v: colour.get(v, ""), subset=["verdict"])

    def show_figure(self, fig: Any) -> None:
        """Write ``fig`` to the target's figure PDF and PNG and show it."""
        import matplotlib.pyplot as plt

        if self.figure_pdf is None or self.figure_png is None:
            raise ValueError(f"{self.target}: no figure paths (a table target draws no figure)")
        save_figure(fig, self.figure_pdf, self.figure_png)
        plt.show()

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


def _counts_line(frame: pd.DataFrame) -> str:
    kinds = frame["kind"] if "kind" in frame else pd.Series("paper", index=frame.index)
    paper, checks = frame[kinds == "paper"], frame[kinds != "paper"]

    def tally(part: pd.DataFrame) -> str:
        counts = part["verdict"].value_counts()
        return ", ".join(f"{int(counts[v])} {v}" for v in ("holds", "fails", "inconclusive") if v in counts)

    line = f"the paper's {len(paper)} claims: {tally(paper) or 'none'}"
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
