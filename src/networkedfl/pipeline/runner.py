"""Pipeline steps as plain functions (the workflow scripts are thin wrappers around them)."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..algorithms.errors import NonFiniteError
from ..experiments import get_experiment
from ..experiments.claims import design
from ..experiments.tuning import (
    RUNG_COLUMNS,
    at_horizon,
    evaluate_point,
    for_setting,
    grid_points,
    halving_rungs,
    point_spec,
    survivors,
    tuned_params,
    tuning_rows,
)
from ..experiments.variants import (
    VARIANT_COLUMN,
    JobView,
    job_views,
    tag_variant,
    variant_names,
    variant_params,
)
from .provenance import input_digests

__all__ = [
    "GROUP_JOB",
    "SETTING_KEY",
    "collect_tables",
    "group_params",
    "job_groups",
    "run_group",
    "evaluate_claims",
    "job_inputs",
    "job_params",
    "job_settings",
    "run_job",
    "run_setting",
    "run_tuning_job",
    "run_tuning_setting",
    "seeds",
    "tuning_jobs",
    "tuning_settings",
    "tuning_spec",
    "tuning_specs",
    "tuning_table",
]

log = logging.getLogger(__name__)

#: Columns that come last in every table, in this order.
TRAILING = ["method", "penalty", "lam", "seed", "metric", "value"]


def seeds(config: Mapping[str, Any], target: str) -> list[int]:
    """Repetition seeds of a target: ``0 .. repetitions - 1`` (the config's ``base_seed`` is
    mixed in by :func:`~networkedfl.seeding.rng_for`)."""
    return list(range(int(config["experiments"][target]["repetitions"])))


def views(config: Mapping[str, Any], target: str) -> dict[str, JobView]:
    """Every job of ``target`` by setting (:func:`~networkedfl.experiments.variants.job_views`):
    its variant, own setting and parameters (the variant's overrides merged, before any
    tuning). Every job's parameters come from here, read once per call."""
    return job_views(config["experiments"][target], get_experiment(target).settings)


def _view(config: Mapping[str, Any], target: str, setting: str,
          jobs: Mapping[str, JobView] | None = None) -> JobView:
    """The :class:`~networkedfl.experiments.variants.JobView` of ``setting`` (from ``jobs``,
    the target's :func:`views`, if given); a ValueError naming the target's settings if it has
    no such job."""
    jobs = views(config, target) if jobs is None else jobs
    if setting not in jobs:
        raise ValueError(f"{target} has no setting {setting!r}; settings: {list(jobs)}")
    return jobs[setting]


def job_settings(config: Mapping[str, Any], target: str) -> list[str]:
    """The target's job names; with variants, ``<variant>.<setting>`` for every variant."""
    return list(views(config, target))


def job_inputs(config: Mapping[str, Any], target: str, setting: str | None = None) -> dict[str, str | list[str]]:
    """The files the jobs of ``target`` read, by name (empty for synthetic experiments).

    With ``setting`` (a job's setting, ``<variant>.<setting>`` for a target with variants)
    the files of that job's variant (e.g. the published variant's graph); without, those
    of the target's base parameters.
    """
    experiment = get_experiment(target)
    if experiment.inputs is None:
        return {}
    params = variant_params(config["experiments"][target], None) if setting is None \
        else _view(config, target, setting).params
    return dict(experiment.inputs(params))


def _missing(inputs: Mapping[str, str | list[str]]) -> list[str]:
    paths = [p for v in inputs.values() for p in ([v] if isinstance(v, str) else v)]
    return [p for p in paths if not Path(p).is_file()]


def _input_kwargs(experiment: Any, target: str, inputs: Mapping[str, str | list[str]] | None,
                  default: Any) -> dict[str, Any]:
    """``{"inputs": ...}`` for a run of an experiment that reads files (``default()`` gives
    them when ``inputs`` is None), after checking that they exist; ``{}`` otherwise."""
    if experiment.inputs is None:
        return {}
    inputs = default() if inputs is None else inputs
    missing = _missing(inputs)
    if missing:
        raise FileNotFoundError(
            f"{target} reads files that do not exist: {', '.join(missing)} "
            f"(the pipeline builds them: `snakemake {target}` with the config files of your run)")
    return {"inputs": inputs}


def job_params(config: Mapping[str, Any], target: str, setting: str) -> dict[str, Any]:
    """The target's parameters as the jobs of ``setting`` see them (only its own method's
    tuning grid; :func:`~networkedfl.experiments.tuning.for_setting`)."""
    return for_setting(config["experiments"][target], _view(config, target, setting).own_setting)


def tuning_jobs(config: Mapping[str, Any], target: str) -> list[tuple[str, int]]:
    """``(setting, point)`` of every grid point ``target`` tunes (none without a tuning
    grid); the pipeline runs the points of one setting in one job (:func:`tuning_settings`)."""
    return [(setting, k) for setting, view in views(config, target).items()
            for k in range(len(grid_points(view.params, view.own_setting)))]


def tuning_spec(config: Mapping[str, Any], target: str, setting: str, point: int) -> dict[str, Any]:
    """What one tuning job depends on (:func:`~networkedfl.experiments.tuning.point_spec`),
    plus its ``variant`` and the experiment's own ``setting``."""
    view = _view(config, target, setting)
    return {**point_spec(view.params, view.own_setting, int(point)), "variant": view.variant,
            "setting": view.own_setting}


def tuning_settings(config: Mapping[str, Any], target: str) -> list[str]:
    """The settings of ``target`` whose method is tuned: one tuning job each."""
    return list(dict.fromkeys(s for s, _ in tuning_jobs(config, target)))


def tuning_specs(config: Mapping[str, Any], target: str, setting: str) -> list[dict[str, Any]]:
    """The :func:`tuning_spec` of every point of ``setting``'s grid, in grid order: what its
    tuning job depends on (editing another method's grid changes none of them)."""
    view = views(config, target).get(setting)
    if view is None:
        return []
    return [{**point_spec(view.params, view.own_setting, k), "variant": view.variant, "setting": view.own_setting}
            for k in range(len(grid_points(view.params, view.own_setting)))]


#: Column of a tuning job's file: the key of the run that gave the row (:func:`point_key`).
POINT_KEY = "tuning_key"


def point_key(spec: Mapping[str, Any], base_seed: int, code: str, digests: Mapping[str, Any]) -> str:
    """What one grid point's run depends on, hashed: its :func:`tuning_spec` without the
    point's position (a point keeps its key when values are inserted before it), the base
    seed, the code hash of the target's modules and the input files' digests."""
    identity = {"spec": {k: v for k, v in spec.items() if k != "point"}, "base_seed": int(base_seed),
                "code": code, "inputs": digests}
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def run_tuning_setting(target: str, specs: Sequence[Mapping[str, Any]], base_seed: int,
                       inputs: Mapping[str, str | list[str]] | None = None, *, code: str = "",
                       previous: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every grid point of one method's tuning (its :func:`tuning_specs`), one process.

    With successive halving (``tuning.halving``) the points run rung by rung
    (:func:`~networkedfl.experiments.tuning.halving_rungs`): every point to the first rung's
    horizon, then the best ``1/eta`` of them to the next one, and so on to the full horizon;
    each row carries its ``tuning_rung`` and ``tuning_horizon``.

    ``previous``: the job's last good table; a run whose :func:`point_key` it holds (the
    point's parameters at its rung's horizon) is taken from it (its ``tuning_point`` and rung
    renumbered: without halving it has none, as every point) instead of run again, so an edited
    grid runs only its new or changed points.
    Each run's rows are taken as their CSV text reads back, so a reused run and a computed
    one are the same bytes in the file.  Rows: those of :func:`run_tuning_job` and the run's
    key (:data:`POINT_KEY`).
    """
    digests = input_digests(inputs)
    known: dict[str, pd.DataFrame] = {}
    if previous is not None and POINT_KEY in previous:
        known = {str(key): rows for key, rows in previous.groupby(POINT_KEY, sort=False)}
    rungs = halving_rungs(specs[0], len(specs)) if specs else [None]
    halved = rungs != [None]
    alive = list(range(len(specs)))
    frames, reused, runs = [], 0, 0
    for rung, horizon in enumerate(rungs):
        scores = {}
        for i in alive:
            spec = at_horizon(specs[i], horizon)
            key = point_key(spec, base_seed, code, digests)
            extra = {"tuning_rung": rung, "tuning_horizon": horizon} if halved else {}
            if key in known:  # the run plays this tuning's rung, whatever rung it played before
                rows = known[key].drop(columns=[*RUNG_COLUMNS, POINT_KEY], errors="ignore").assign(
                    tuning_point=int(spec["point"]), **extra, **{POINT_KEY: key})  # a computed run's columns
                log.info("reused %s/%s point %s (%s)%s: unchanged since its last run", target, spec["setting"],
                         spec["point"], spec["label"], f", rung {rung} ({horizon} rounds)" if halved else "")
                reused += 1
            else:
                start = time.perf_counter()
                rows = run_tuning_job(target, spec, base_seed, inputs).assign(**extra, **{POINT_KEY: key})
                log.info("tuning run %s/%s point %s rung %s horizon %s: %.2f s", target, spec["setting"],
                         spec["point"], rung, horizon, time.perf_counter() - start)
            runs += 1
            text = rows.to_csv(index=False, float_format="%.17g")
            frames.append(pd.read_csv(io.StringIO(text)))
            scores[i] = float(frames[-1]["value"].astype(float).mean())
        if rung < len(rungs) - 1:
            alive = survivors(scores, int(specs[0]["halving"].get("eta", 3)))
            log.info("tuning of %s/%s, rung %d (%s rounds): %d points go on: %s", target, specs[0]["setting"], rung,
                     horizon, len(alive), ", ".join(specs[i]["label"] for i in alive))
    log.info("tuning of %s: %d runs, %d of them reused", target, runs, reused)
    return pd.concat(frames, ignore_index=True)


def read_previous_table(path: str | Path) -> pd.DataFrame | None:
    """A job's last good table (None if there is none, or it is not what its kept sidecar
    records or cannot be read: every point or setting is then run again, and the job's new
    table replaces it)."""
    from .integrity import read_table

    if not Path(path).is_file():
        return None
    try:
        return read_table(path)
    except ValueError as err:  # CorruptArtefactError: a ValueError
        problem = getattr(err, "problems", {}).get(str(path), err)
        log.warning("ignoring the last good results at %s (%s): everything runs again", path, problem)
        return None


#: The name the tuning job's script used (kept for it).
read_previous_tuning = read_previous_table


def run_tuning_job(target: str, spec: Mapping[str, Any], base_seed: int,
                   inputs: Mapping[str, str | list[str]] | None = None) -> pd.DataFrame:
    """One grid point of one method's tuning, from its :func:`tuning_spec`.

    ``inputs`` as in :func:`run_job` (default: the files the tuning run's parameters name).
    """
    experiment = get_experiment(target)
    extra = _input_kwargs(experiment, target, inputs, lambda: dict(experiment.inputs(spec["params"])))
    start = time.perf_counter()
    method = experiment.method_names.get(spec["setting"], spec["setting"])
    table = evaluate_point(experiment.run, spec, spec["setting"], int(base_seed), method_name=method, **extra)
    log.info("tuned %s/%s point %s (%s): validation loss %s in %.1f s", target, spec["setting"],
             spec["point"], spec["label"], ", ".join(f"{v:.6g}" for v in table["value"]),
             time.perf_counter() - start)
    return tag_variant(table, spec.get("variant"))


class _Job(NamedTuple):
    """One job's view of its target, read from the config once (:func:`_prepare`): the
    parameters of its variant with the tuned values applied, the experiment's own setting,
    the base seed and the input files a run is given."""

    experiment: Any
    target: str
    setting: str
    variant: str | None
    own_setting: str
    params: dict[str, Any]
    base_seed: int
    extra: dict[str, Any]


def _prepare(view: JobView, target: str, base_seed: int,
             inputs: Mapping[str, str | list[str]] | None, tuning: Sequence[pd.DataFrame] | None) -> _Job:
    """The job of ``view`` (its parameters read once, for every seed it runs) with the tuned
    values applied and its input files."""
    experiment = get_experiment(target)
    extra = _input_kwargs(experiment, target, inputs, lambda: dict(experiment.inputs(view.params)))
    params = tuned_params(view.params, view.own_setting, tuning)
    return _Job(experiment, target, view.setting, view.variant, view.own_setting, params, int(base_seed), extra)


def _run_seed(job: _Job, seed: int) -> pd.DataFrame:
    """The tidy records of one repetition ``seed`` of a prepared job."""
    start = time.perf_counter()
    log.info("running %s, setting %s, seed %s", job.target, job.setting, seed)
    try:
        table = job.experiment.run(job.params, job.own_setting, int(seed), job.base_seed, **job.extra)
    except NonFiniteError as err:  # name the job: the algorithm knows only rounds and clients
        raise RuntimeError(f"{job.target}, setting {job.setting!r}, seed {seed} diverged: {err}") from err
    _check_finite_values(table, f"{job.target}, setting {job.setting!r}, seed {seed}")
    table = tag_variant(table, job.variant)
    log.info("finished %s/%s/seed-%s: %d rows in %.1f s", job.target, job.setting, seed, len(table),
             time.perf_counter() - start)
    return table


def run_job(config: Mapping[str, Any], target: str, setting: str, seed: int,
            inputs: Mapping[str, str | list[str]] | None = None,
            tuning: Sequence[pd.DataFrame] | None = None) -> pd.DataFrame:
    """Run one job of ``target`` and return its tidy records.

    ``inputs`` are the job's input files by name; by default the target's declared inputs
    below the current directory (see :func:`job_inputs`), which must exist.  ``tuning``:
    the tables of the setting's tuning jobs when its method is tuned (the chosen point's
    values replace the configured ones, :func:`~networkedfl.experiments.tuning.tuned_params`).
    """
    return _run_seed(_prepare(_view(config, target, setting), target, config["base_seed"], inputs, tuning), int(seed))


def _check_finite_values(table: pd.DataFrame, job: str) -> None:
    """Fail a job whose table holds a NaN, infinite or missing value (text values, e.g. what
    a round uploaded, are fine); the message names the job and the metrics."""
    if "value" not in table or table.empty:
        return
    values = table["value"]
    text = values.map(lambda v: isinstance(v, str))
    bad = ~text & ~np.isfinite(pd.to_numeric(values.where(~text), errors="coerce").astype(float))
    if bad.any():
        rows = table[bad]
        metrics = ", ".join(sorted(map(str, rows["metric"].unique()))) if "metric" in rows else "?"
        first = rows.iloc[0].to_dict()
        raise ValueError(f"{job}: {int(bad.sum())} non-finite values (NaN, inf or missing) of metric "
                         f"{metrics}; first row: {first}. Nothing was written for this job")


def tuning_table(config: Mapping[str, Any], target: str,
                 tables: Mapping[str, Sequence[pd.DataFrame]]) -> pd.DataFrame | None:
    """The ``tuning_`` rows of ``target``'s table from its tuning jobs' tables by setting."""
    parts, jobs = [], views(config, target)
    for setting, results in tables.items():
        view = _view(config, target, setting, jobs)
        parts.append(tag_variant(tuning_rows(view.params, view.own_setting, results), view.variant))
    return pd.concat(parts, ignore_index=True) if parts else None


def run_setting(config: Mapping[str, Any], target: str, setting: str, seed_list: Sequence[int],
                inputs: Mapping[str, str | list[str]] | None = None,
                tuning: Sequence[pd.DataFrame] | None = None) -> pd.DataFrame:
    """The records of one setting's pipeline job: :func:`run_job` for every repetition seed,
    in order, one process for all of them, the target's parameters read once.

    Every seed's table is taken as its CSV text reads back (:func:`~networkedfl.io.write_csv`'s
    format) before they are concatenated, so the target's table is the one that one file per
    seed would give, byte for byte.
    """
    if not len(seed_list):
        raise ValueError(f"{target}, setting {setting!r}: no repetition seed (repetitions must be >= 1)")
    return _run_view(_view(config, target, setting), target, config["base_seed"], seed_list, inputs, tuning)


def _run_view(view: JobView, target: str, base_seed: int, seed_list: Sequence[int],
              inputs: Mapping[str, str | list[str]] | None, tuning: Sequence[pd.DataFrame] | None) -> pd.DataFrame:
    """:func:`run_setting` of a resolved job."""
    setting = view.setting
    if not len(seed_list):
        raise ValueError(f"{target}, setting {setting!r}: no repetition seed (repetitions must be >= 1)")
    log.info("running %s, setting %s, seeds %s", target, setting, ", ".join(str(int(s)) for s in seed_list))
    job, frames = _prepare(view, target, base_seed, inputs, tuning), []  # the parameters read once
    for seed in seed_list:
        text = _run_seed(job, int(seed)).to_csv(index=False, float_format="%.17g")
        frames.append(pd.read_csv(io.StringIO(text)))
    return pd.concat(frames, ignore_index=True)


#: The name of that job (its raw file ``results/raw/<target>/settings.csv``).
GROUP_JOB = "settings"
#: Column of a grouped job's file: the key of the setting's run that gave the row.
SETTING_KEY = "setting_key"


def job_groups(config: Mapping[str, Any], target: str) -> dict[str, list[str]]:
    """The target's pipeline jobs: job name -> the settings it runs, in order.

    One job per setting (named after it), or for a target registered with
    ``group_settings=True`` one job named :data:`GROUP_JOB` for all of them (start-up paid
    once; a setting whose run did not change is taken from the job's last good output,
    :func:`run_group`)."""
    settings = job_settings(config, target)
    if get_experiment(target).group_settings and len(settings) > 1:
        return {GROUP_JOB: settings}
    return {s: [s] for s in settings}


def group_params(config: Mapping[str, Any], target: str, job: str) -> dict[str, Any]:
    """The parameters a job's reruns depend on: its setting's (:func:`job_params`), or for a
    grouped job the target's whole block."""
    if job == GROUP_JOB and job not in job_settings(config, target):
        return dict(config["experiments"][target])
    return job_params(config, target, job)


def setting_run_key(params: Mapping[str, Any], setting: str, seed_list: Sequence[int], base_seed: int,
                    code: str, digests: Mapping[str, Any]) -> str:
    """What one setting's runs in a grouped job depend on, hashed: the parameters it runs
    with (tuned values applied; ``threads`` and the verdicts' ``design`` left out), its seeds,
    the base seed, the code hash and the input files' digests."""
    identity = {"params": {k: v for k, v in params.items() if k not in ("threads", "design")}, "setting": setting,
                "seeds": [int(s) for s in seed_list], "base_seed": int(base_seed), "code": code, "inputs": digests}
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def run_group(config: Mapping[str, Any], target: str, job: str, seed_list: Sequence[int],
              inputs: Mapping[str, str | list[str]] | None = None,
              tuning: Mapping[str, Sequence[pd.DataFrame]] | None = None, *, code: str = "",
              previous: pd.DataFrame | None = None) -> pd.DataFrame:
    """The records of one pipeline job: :func:`run_setting` for each of its settings
    (:func:`job_groups`), in order, one process for all of them.

    ``tuning``: the tuning tables of the job's tuned settings, by setting.  ``previous``: the
    job's last good table; a setting whose :func:`setting_run_key` it holds is taken from it
    instead of run again, so an edit of one setting's parameters reruns that setting alone.
    Each setting's rows are taken as their CSV text reads back, with the columns it fills,
    so a reused setting and a computed one are the same bytes in the file; a grouped job's
    rows carry their key (:data:`SETTING_KEY`), which :func:`collect_tables` drops.
    """
    jobs = views(config, target)  # every job's parameters, read once
    if job in jobs:  # one setting (also one of a grouped target's)
        return _run_view(jobs[job], target, config["base_seed"], seed_list, inputs, (tuning or {}).get(job))
    if not (get_experiment(target).group_settings and len(jobs) > 1) or job != GROUP_JOB:
        raise ValueError(f"{target} has no job {job!r}; jobs: {list(job_groups(config, target))}")
    settings = list(jobs)
    digests = input_digests({k: v for k, v in (inputs or {}).items() if k != "tuning"})
    known: dict[str, pd.DataFrame] = {}
    if previous is not None and SETTING_KEY in previous:
        known = {str(key): rows for key, rows in previous.groupby(SETTING_KEY, sort=False)}
    frames, reused = [], 0
    for setting in settings:
        view, setting_tuning = jobs[setting], (tuning or {}).get(setting)
        # what the setting's rows depend on: its own method's tuning grid only (job_params)
        params = tuned_params(for_setting(view.params, view.own_setting), view.own_setting, setting_tuning)
        key = setting_run_key(params, setting, seed_list, int(config["base_seed"]), code, digests)
        if key in known:
            rows = known[key]
            log.info("reused %s/%s: unchanged since its last run", target, setting)
            reused += 1
        else:
            rows = _run_view(view, target, config["base_seed"], seed_list, inputs,
                             setting_tuning).assign(**{SETTING_KEY: key})
        # a setting's own columns: those it fills (a reused setting's rows come with every
        # column of the file), so that reusing a setting changes no column of the output
        text = rows.dropna(axis=1, how="all").to_csv(index=False, float_format="%.17g")
        frames.append(pd.read_csv(io.StringIO(text)))
    log.info("%s, job %s: %d settings run, %d reused", target, job, len(settings) - reused, reused)
    return pd.concat(frames, ignore_index=True)


def collect_tables(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate job tables into one long table with a stable column order (a grouped
    job's :data:`SETTING_KEY` left out)."""
    table = pd.concat(tables, ignore_index=True).drop(columns=SETTING_KEY, errors="ignore")
    leading = [c for c in table.columns if c not in TRAILING]
    trailing = [c for c in TRAILING if c in table.columns]
    return table[leading + trailing]


def evaluate_claims(config: Mapping[str, Any], target: str, table: pd.DataFrame) -> list[dict[str, Any]]:
    """Evaluate the target's claims.

    With variants, every claim is evaluated once per variant on that variant's rows, and
    each entry carries a ``variant`` key.

    Raises
    ------
    ValueError
        If the table (or a variant's part of it) has no rows: a broken run, not a verdict.
    Exception
        Whatever a claims function raises, with its traceback (a note names the target):
        an error in claim code is a bug, never a claim that fails (issue 45), and the
        pipeline's claims job fails without writing a verdict.
    """
    params = config["experiments"][target]
    names = variant_names(params)
    if not names:
        claims = _claims_of(target, table, params)
    else:
        claims = []
        for variant in names:
            rows = (table[table[VARIANT_COLUMN] == variant].drop(columns=VARIANT_COLUMN)
                    if VARIANT_COLUMN in table else table.iloc[0:0])
            claims += [{"variant": variant, **c}
                       for c in _claims_of(target, rows.reset_index(drop=True), variant_params(params, variant),
                                           variant)]
    for c in claims:
        shown = f"[{c['variant']}] " if "variant" in c else ""
        log.info("[%s] %s: %s%s (%s)", c["verdict"].upper(), target, shown, c["claim"], c["detail"])
    return claims


def _claims_of(target: str, table: pd.DataFrame, params: Mapping[str, Any],
               variant: str | None = None) -> list[dict[str, Any]]:
    where = f"{target}" + (f", variant {variant!r}" if variant else "")
    if table.empty:
        raise ValueError(f"{where}: the table has no rows, so no claim can be evaluated (a broken run or "
                         "table, not a verdict); no claims were written")
    try:
        with design(params.get("design")):  # the margins of docs/verdicts.md#design
            claims = get_experiment(target).claims(table, params)
    except Exception as exc:  # noted and raised: an error in claim code is a bug, not a verdict
        exc.add_note(f"while evaluating the claims of {where}: no claims were written")
        raise
    return [c.as_dict() for c in claims]
