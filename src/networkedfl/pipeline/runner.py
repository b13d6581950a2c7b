"""Pipeline steps as plain functions (the workflow scripts are thin wrappers around them)."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..algorithms.errors import NonFiniteError
from ..experiments import get_experiment
from ..experiments.tuning import (
    evaluate_point,
    for_setting,
    grid_points,
    point_spec,
    tuned_params,
    tuning_rows,
)
from ..experiments.variants import (
    VARIANT_COLUMN,
    join_setting,
    split_setting,
    tag_variant,
    variant_names,
    variant_params,
)
from .provenance import input_digests

__all__ = [
    "collect_tables",
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
    """Repetition seeds of a target: ``0 .. repetitions - 1`` (the config seed is mixed in)."""
    return list(range(int(config["experiments"][target]["repetitions"])))


def job_settings(config: Mapping[str, Any], target: str) -> list[str]:
    """The target's job names; with variants, ``<variant>.<setting>`` for every variant."""
    experiment = get_experiment(target)
    params = config["experiments"][target]
    names = variant_names(params)
    if not names:
        return experiment.settings(params)
    return [join_setting(v, s) for v in names for s in experiment.settings(variant_params(params, v))]


def job_inputs(config: Mapping[str, Any], target: str, setting: str | None = None) -> dict[str, str | list[str]]:
    """The files the jobs of ``target`` read, by name (empty for synthetic experiments).

    With ``setting`` (a job's setting, ``<variant>.<setting>`` for a target with variants)
    the files of that job's variant (e.g. the published variant's graph); without, those
    of the target's base parameters.
    """
    experiment = get_experiment(target)
    if experiment.inputs is None:
        return {}
    params = config["experiments"][target]
    variant = None if setting is None else split_setting(params, setting)[0]
    return dict(experiment.inputs(variant_params(params, variant)))


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
    params = config["experiments"][target]
    return for_setting(params, split_setting(params, setting)[1])


def tuning_jobs(config: Mapping[str, Any], target: str) -> list[tuple[str, int]]:
    """``(setting, point)`` of every grid point ``target`` tunes (none without a tuning
    grid); the pipeline runs the points of one setting in one job (:func:`tuning_settings`)."""
    params = config["experiments"][target]
    jobs = []
    for setting in job_settings(config, target):
        variant, own = split_setting(params, setting)
        jobs += [(setting, k) for k in range(len(grid_points(variant_params(params, variant), own)))]
    return jobs


def tuning_spec(config: Mapping[str, Any], target: str, setting: str, point: int) -> dict[str, Any]:
    """What one tuning job depends on (:func:`~networkedfl.experiments.tuning.point_spec`),
    plus its ``variant`` and the experiment's own ``setting``."""
    params = config["experiments"][target]
    if setting not in job_settings(config, target):
        raise ValueError(f"{target} has no setting {setting!r}; settings: {job_settings(config, target)}")
    variant, own = split_setting(params, setting)
    return {**point_spec(variant_params(params, variant), own, int(point)), "variant": variant, "setting": own}


def tuning_settings(config: Mapping[str, Any], target: str) -> list[str]:
    """The settings of ``target`` whose method is tuned: one tuning job each."""
    return list(dict.fromkeys(s for s, _ in tuning_jobs(config, target)))


def tuning_specs(config: Mapping[str, Any], target: str, setting: str) -> list[dict[str, Any]]:
    """The :func:`tuning_spec` of every point of ``setting``'s grid, in grid order: what its
    tuning job depends on (editing another method's grid changes none of them)."""
    return [tuning_spec(config, target, setting, k) for s, k in tuning_jobs(config, target) if s == setting]


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

    ``previous``: the job's last good table; a point whose :func:`point_key` it holds is
    taken from it (its ``tuning_point`` renumbered) instead of run again, so an edited grid
    runs only its new or changed points.  Each point's rows are taken as their CSV text
    reads back, so a reused point and a computed one are the same bytes in the file.
    Rows: those of :func:`run_tuning_job` and the point's key (:data:`POINT_KEY`).
    """
    digests = input_digests(inputs)
    known: dict[str, pd.DataFrame] = {}
    if previous is not None and POINT_KEY in previous:
        known = {str(key): rows for key, rows in previous.groupby(POINT_KEY, sort=False)}
    frames, reused = [], 0
    for spec in specs:
        key = point_key(spec, base_seed, code, digests)
        if key in known:
            rows = known[key].assign(tuning_point=int(spec["point"]))
            log.info("reused %s/%s point %s (%s): unchanged since its last run", target, spec["setting"],
                     spec["point"], spec["label"])
            reused += 1
        else:
            rows = run_tuning_job(target, spec, base_seed, inputs).assign(**{POINT_KEY: key})
        text = rows.to_csv(index=False, float_format="%.17g")
        frames.append(pd.read_csv(io.StringIO(text)))
    log.info("tuning of %s: %d points run, %d reused", target, len(specs) - reused, reused)
    return pd.concat(frames, ignore_index=True)


def read_previous_tuning(path: str | Path) -> pd.DataFrame | None:
    """A tuning job's last good table (None if there is none, or it is not what its kept
    sidecar records or cannot be read: every point is then run again, and the job's new
    table replaces it)."""
    from .integrity import read_table

    if not Path(path).is_file():
        return None
    try:
        return read_table(path)
    except ValueError as err:  # CorruptArtefactError: a ValueError
        problem = getattr(err, "problems", {}).get(str(path), err)
        log.warning("ignoring the last tuning results at %s (%s): every point runs again", path, problem)
        return None


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


def run_job(config: Mapping[str, Any], target: str, setting: str, seed: int,
            inputs: Mapping[str, str | list[str]] | None = None,
            tuning: Sequence[pd.DataFrame] | None = None) -> pd.DataFrame:
    """Run one job of ``target`` and return its tidy records.

    ``inputs`` are the job's input files by name; by default the target's declared inputs
    below the current directory (see :func:`job_inputs`), which must exist.  ``tuning``:
    the tables of the setting's tuning jobs when its method is tuned (the chosen point's
    values replace the configured ones, :func:`~networkedfl.experiments.tuning.tuned_params`).
    """
    experiment = get_experiment(target)
    settings = job_settings(config, target)
    if setting not in settings:
        raise ValueError(f"{target} has no setting {setting!r}; settings: {settings}")
    variant, own_setting = split_setting(config["experiments"][target], setting)
    params = tuned_params(variant_params(config["experiments"][target], variant), own_setting, tuning)
    extra = _input_kwargs(experiment, target, inputs, lambda: job_inputs(config, target, setting))
    start = time.perf_counter()
    log.info("running %s, setting %s, seed %s", target, setting, seed)
    try:
        table = experiment.run(params, own_setting, int(seed), int(config["seed"]), **extra)
    except NonFiniteError as err:  # name the job: the algorithm knows only rounds and clients
        raise RuntimeError(f"{target}, setting {setting!r}, seed {seed} diverged: {err}") from err
    _check_finite_values(table, f"{target}, setting {setting!r}, seed {seed}")
    table = tag_variant(table, variant)
    log.info("finished %s/%s/seed-%s: %d rows in %.1f s", target, setting, seed, len(table),
             time.perf_counter() - start)
    return table


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
    params = config["experiments"][target]
    parts = []
    for setting, results in tables.items():
        variant, own = split_setting(params, setting)
        parts.append(tag_variant(tuning_rows(variant_params(params, variant), own, results), variant))
    return pd.concat(parts, ignore_index=True) if parts else None


def run_setting(config: Mapping[str, Any], target: str, setting: str, seed_list: Sequence[int],
                inputs: Mapping[str, str | list[str]] | None = None,
                tuning: Sequence[pd.DataFrame] | None = None) -> pd.DataFrame:
    """The records of one setting's pipeline job: :func:`run_job` for every repetition seed,
    in order, one process for all of them.

    Every seed's table is taken as its CSV text reads back (:func:`~networkedfl.io.write_csv`'s
    format) before they are concatenated, so the target's table is the one that one file per
    seed would give, byte for byte.
    """
    if not len(seed_list):
        raise ValueError(f"{target}, setting {setting!r}: no repetition seed (repetitions must be >= 1)")
    log.info("running %s, setting %s, seeds %s", target, setting, ", ".join(str(int(s)) for s in seed_list))
    frames = []
    for seed in seed_list:
        text = run_job(config, target, setting, int(seed), inputs, tuning).to_csv(index=False, float_format="%.17g")
        frames.append(pd.read_csv(io.StringIO(text)))
    return pd.concat(frames, ignore_index=True)


def collect_tables(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate job tables into one long table with a stable column order."""
    table = pd.concat(tables, ignore_index=True)
    leading = [c for c in table.columns if c not in TRAILING]
    trailing = [c for c in TRAILING if c in table.columns]
    return table[leading + trailing]


def evaluate_claims(config: Mapping[str, Any], target: str, table: pd.DataFrame) -> list[dict[str, Any]]:
    """Evaluate the target's claims; an exception inside a claim is reported as a failed claim.

    With variants, every claim is evaluated once per variant on that variant's rows, and
    each entry carries a ``variant`` key.
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
                       for c in _claims_of(target, rows.reset_index(drop=True), variant_params(params, variant))]
    for c in claims:
        shown = f"[{c['variant']}] " if "variant" in c else ""
        log.info("[%s] %s: %s%s (%s)", "PASS" if c["passed"] else "FAIL", target, shown, c["claim"], c["detail"])
    return claims


def _claims_of(target: str, table: pd.DataFrame, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    try:
        if table.empty:
            raise ValueError("the table has no rows")
        return [c.as_dict() for c in get_experiment(target).claims(table, params)]
    except Exception as exc:  # a broken claim must not hide the others' results
        log.exception("claims of %s could not be evaluated", target)
        return [{"claim": "claims evaluation", "passed": False,
                 "detail": f"error while evaluating the claims: {type(exc).__name__}: {exc}"}]
