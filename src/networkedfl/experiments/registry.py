"""Registry of experiments: each figure or table of the papers is one entry.

An :class:`Experiment` bundles what the pipeline needs to build one target:

* ``settings(params)``: the names of the independent jobs of one repetition (e.g. one per
  GTV penalty); each job is run once per seed;
* ``run(params, setting, seed, base_seed)``: a pure function returning the job's tidy
  records (a :class:`pandas.DataFrame` in long format with ``metric`` and ``value``);
* ``claims(table, params)``: the paper's claims evaluated on the collected table;
* ``inputs(params)`` (optional): the files a job reads, by name (dataset files, cached
  artefacts such as a graph learnt from data), as paths relative to the working directory.
  The pipeline makes them inputs of every job of the target, and ``run`` then receives them
  as a keyword argument ``inputs`` (a mapping from name to a path or a list of paths);
* ``deviations``: the names of the deviations from the paper that the target depends on
  (headings of ``docs/deviations/<paper>.md``, see :mod:`.deviations`);
* ``order``, ``schema``, ``caches``, ``ablation_of``, ``figure``: its place among its paper's
  targets, the schema block of its config, the cached artefacts it reads, the targets it
  ablates and the function that draws its figure.

The registry is the only written list of targets: the config schema's target ids and
per-target blocks (:func:`networkedfl.pipeline.config.validate_config` adds them when it
validates), the papers' target lists (:mod:`.papers`), ``docs/targets.md`` and the target
column of ``docs/deviations/README.md`` (written by :mod:`.lists`) are made from it, and the
workflow asks it which caches a target reads. Experiments are configuration: targets that
differ only in parameters share one ``run``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal

import numpy as np
import pandas as pd

# rng_for lives in networkedfl.seeding; re-exported for run functions written against the old docs
from ..seeding import rng_for
from .deviations import DEVIATIONS

__all__ = ["EXPERIMENTS", "Claim", "Experiment", "get_experiment", "inferred", "register", "register_target",
           "rng_for"]

Params = Mapping[str, Any]


#: The four verdicts, in the order they are shown (:mod:`.claims` decides them;
#: ``docs/verdicts.md`` states the rule): ``equivalent`` says the effect lies inside the
#: design's margin (no difference that matters).
VERDICTS = ("holds", "equivalent", "fails", "inconclusive")
#: A claim's kind: the paper's own, or a check of the comparison itself.
CLAIM_KINDS = ("paper", "reference", "diagnostic")
#: How a claim is decided, set by the constructor of :mod:`.claims` that made it: a
#: statistical test on per-seed values (:func:`.claims.claim`, ``all_of``, ``any_of``), a
#: fixed check without sampling noise (``exact``, ``check_all``) or a property checked on
#: every seed (``every_seed``).  The headline counts count the statistical paper claims.
CLAIM_TESTS = ("statistical", "fixed", "every_seed")


def _kind_of(text: str) -> str:
    for kind in CLAIM_KINDS[1:]:
        if text.startswith(f"[{kind}]"):
            return kind
    return "paper"


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, decided on a target's table (:mod:`.claims`).

    ``verdict`` is ``holds``, ``equivalent``, ``fails`` or ``inconclusive``; ``kind`` is ``paper`` (a claim
    of the paper, or of the reproduction's list for it, docs/verdicts.md) or ``reference`` / ``diagnostic`` (a
    check of the comparison itself; by default read from a ``[reference]`` or
    ``[diagnostic]`` prefix of the text).  ``effect`` with its interval ``low``..``high``
    (``interval`` says how it was computed) and ``n_seeds`` are those of the case that
    decided the claim; exact checks have none.  ``test`` says how the claim was decided
    (:data:`CLAIM_TESTS`; the constructors of :mod:`.claims` set it) and ``split`` reports
    per-seed values that fall into two clusters (e.g. ``"3 of 40 seeds in the upper
    cluster"``), apart from the verdict.  ``inferred`` marks a claim the experiment specification
    tags [inferred] (expected from the sources, not stated by the paper; :func:`inferred`),
    shown beside its text in the notebooks and the gallery.
    """

    claim: str
    verdict: str
    detail: str
    kind: str | None = None
    n_seeds: int | None = None
    effect: float | None = None
    low: float | None = None
    high: float | None = None
    interval: str = ""
    effect_label: str = ""
    test: str = "statistical"
    split: str = ""
    inferred: bool = False

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"claim {self.claim!r}: verdict {self.verdict!r} is not one of {VERDICTS}")
        if self.test not in CLAIM_TESTS:
            raise ValueError(f"claim {self.claim!r}: test {self.test!r} is not one of {CLAIM_TESTS}")
        kind = _kind_of(self.claim) if self.kind is None else self.kind
        if kind not in CLAIM_KINDS:
            raise ValueError(f"claim {self.claim!r}: kind {kind!r} is not one of {CLAIM_KINDS}")
        object.__setattr__(self, "kind", kind)

    @property
    def passed(self) -> bool:
        """Whether the claim holds (at the verdict's confidence)."""
        return self.verdict == "holds"

    def as_dict(self) -> dict[str, Any]:
        def num(x: float | None) -> float | str | None:
            if x is None:
                return None
            x = float(x)
            return x if np.isfinite(x) else ("inf" if x > 0 else ("-inf" if x < 0 else "nan"))

        return {"claim": self.claim, "verdict": self.verdict, "kind": self.kind, "n_seeds": self.n_seeds,
                "effect": num(self.effect), "effect_label": self.effect_label,
                "interval": [num(self.low), num(self.high)] if self.low is not None else None,
                "interval_method": self.interval, "test": self.test, "split": self.split, "detail": self.detail,
                "inferred": self.inferred}


def inferred(*claims: Claim) -> list[Claim]:
    """``claims`` tagged [inferred]: the experiment specification lists them as expected from the sources,
    not stated by the paper (its provenance tags).  Set where the claims are built, in the
    family's ``claims`` module."""
    return [replace(c, inferred=True) for c in claims]


def _single_setting(params: Params) -> list[str]:
    return ["all"]


@dataclass(frozen=True)
class Experiment:
    """A figure, diagram or table target."""

    id: str
    kind: Literal["figure", "diagram", "table"]
    source: str
    title: str
    run: Callable[[Params, str, int, int], pd.DataFrame]
    claims: Callable[[pd.DataFrame, Params], list[Claim]]
    settings: Callable[[Params], list[str]] = _single_setting
    inputs: Callable[[Params], Mapping[str, str | list[str]]] | None = None
    #: The ``method`` label of each setting, for rows written without a run's table (a
    #: tuning point whose run diverged); a setting not listed is its own label.
    method_names: Mapping[str, str] = field(default_factory=dict)
    #: The deviations from the paper this target depends on, by name (the headings of
    #: ``docs/deviations/<paper>.md``; :func:`.deviations.deviation_link` links one). Given
    #: in any order, possibly repeated (shared groups added together); kept once each, in the
    #: order of the pages (:data:`.deviations.DEVIATIONS`).
    deviations: tuple[str, ...] = ()
    #: The paper's value of each scale parameter the default config reduces or changes
    #: (param key -> the paper's value with its source), e.g. ``{"repetitions": "5 [paper]",
    #: "vocab_size": "63,144 [paper]"}``, for the gallery's default-vs-paper scale.
    paper_scale: Mapping[str, str] = field(default_factory=dict)
    #: Run all settings of a repetition set in one pipeline job (start-up paid once; for
    #: targets whose settings take seconds), not one job per setting; the results are the same.
    group_settings: bool = False
    #: The target's place among its paper's targets (:attr:`paper`): the paper's order of
    #: figures and tables, targets that are not in the paper after them. The gallery,
    #: ``claims.md``, the index page and ``docs/targets.md`` list targets in this order
    #: (:func:`.papers.ordered_targets`); a new target between two takes a number between theirs.
    order: float = math.inf
    #: The block under ``$defs`` of ``workflow/schemas/config.schema.yaml`` that the target's
    #: config block (``config['experiments'][id]``) is validated against.
    schema: str = ""
    #: The cached artefacts its jobs read, by the cache's name in ``workflow/rules/cache.smk``
    #: (``mnist_graph``: the graphs it names must be defined under ``config['mnist_graphs']``).
    caches: tuple[str, ...] = ()
    #: The targets whose settings this one switches one option at a time (an ablation: the
    #: gallery writes its table as Markdown).
    ablation_of: tuple[str, ...] = ()
    #: The function of ``networkedfl.experiments.<paper>.figures`` that draws the figure its
    #: notebook shows (``report.show_figure(figures.<figure>(...))``); by default the id
    #: without its paper's prefix (``fig13_star_lambda``); none for a table.
    figure: str = ""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.deviations) - set(DEVIATIONS))
        if unknown:
            raise ValueError(f"experiment {self.id!r}: unknown deviations {unknown} "
                             "(the names are the headings of docs/deviations/<paper>.md)")
        object.__setattr__(self, "deviations", tuple(d for d in DEVIATIONS if d in set(self.deviations)))
        if self.has_figure and not self.figure:
            object.__setattr__(self, "figure", self.id.partition("_")[2])

    @property
    def has_figure(self) -> bool:
        return self.kind in ("figure", "diagram")

    @property
    def paper(self) -> str:
        """The key of the paper it reproduces: its id's prefix (``<paper>_<fig|table><n>_<what>``)."""
        return self.id.split("_", 1)[0]


EXPERIMENTS: dict[str, Experiment] = {}


def register(experiment: Experiment) -> Experiment:
    if experiment.id in EXPERIMENTS:
        raise ValueError(f"experiment {experiment.id!r} is registered twice")
    EXPERIMENTS[experiment.id] = experiment
    return experiment


def register_target(
    id: str, kind: Literal["figure", "diagram", "table"], source: str, title: str,
    run: Callable[..., pd.DataFrame], claims: Callable[[pd.DataFrame, Params], list[Claim]],
    **fields: Any,
) -> Experiment:
    """Register the target ``id`` whose ``run`` takes the target's id as ``experiment_id``
    (its random streams are keyed by it); ``fields`` are the other fields of
    :class:`Experiment` (order, schema, settings, inputs, method_names, deviations, ...)."""
    return register(Experiment(id=id, kind=kind, source=source, title=title,
                               run=partial(run, experiment_id=id), claims=claims, **fields))


def get_experiment(experiment_id: str) -> Experiment:
    try:
        return EXPERIMENTS[experiment_id]
    except KeyError:
        raise KeyError(
            f"unknown target id {experiment_id!r}; registered targets: {', '.join(sorted(EXPERIMENTS))}"
        ) from None
