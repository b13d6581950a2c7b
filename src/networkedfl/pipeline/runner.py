"""Pipeline steps as plain functions (the workflow scripts are thin wrappers around them)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..experiments import get_experiment

__all__ = ["collect_tables", "evaluate_claims", "job_inputs", "job_settings", "run_job", "seeds"]

log = logging.getLogger(__name__)

#: Columns that come last in every table, in this order.
TRAILING = ["method", "penalty", "lam", "seed", "metric", "value"]


def seeds(config: Mapping[str, Any], target: str) -> list[int]:
    """Repetition seeds of a target: ``0 .. repetitions - 1`` (the config seed is mixed in)."""
    return list(range(int(config["experiments"][target]["repetitions"])))


def job_settings(config: Mapping[str, Any], target: str) -> list[str]:
    return get_experiment(target).settings(config["experiments"][target])


def job_inputs(config: Mapping[str, Any], target: str) -> dict[str, str | list[str]]:
    """The files every job of ``target`` reads, by name (empty for synthetic experiments)."""
    experiment = get_experiment(target)
    if experiment.inputs is None:
        return {}
    return dict(experiment.inputs(config["experiments"][target]))


def _missing(inputs: Mapping[str, str | list[str]]) -> list[str]:
    paths = [p for v in inputs.values() for p in ([v] if isinstance(v, str) else v)]
    return [p for p in paths if not Path(p).is_file()]


def run_job(config: Mapping[str, Any], target: str, setting: str, seed: int,
            inputs: Mapping[str, str | list[str]] | None = None) -> pd.DataFrame:
    """Run one job of ``target`` and return its tidy records.

    ``inputs`` are the job's input files by name; by default the target's declared inputs
    below the current directory (see :func:`job_inputs`), which must exist.
    """
    experiment = get_experiment(target)
    params = config["experiments"][target]
    settings = experiment.settings(params)
    if setting not in settings:
        raise ValueError(f"{target} has no setting {setting!r}; settings: {settings}")
    extra: dict[str, Any] = {}
    if experiment.inputs is not None:
        inputs = job_inputs(config, target) if inputs is None else inputs
        missing = _missing(inputs)
        if missing:
            raise FileNotFoundError(
                f"{target} reads files that do not exist: {', '.join(missing)} "
                f"(the pipeline builds them, e.g. `snakemake {target}`)")
        extra["inputs"] = inputs
    start = time.perf_counter()
    log.info("running %s, setting %s, seed %s", target, setting, seed)
    table = experiment.run(params, setting, int(seed), int(config["seed"]), **extra)
    log.info("finished %s/%s/seed-%s: %d rows in %.1f s", target, setting, seed, len(table),
             time.perf_counter() - start)
    return table


def collect_tables(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate job tables into one long table with a stable column order."""
    table = pd.concat(tables, ignore_index=True)
    leading = [c for c in table.columns if c not in TRAILING]
    trailing = [c for c in TRAILING if c in table.columns]
    return table[leading + trailing]


def evaluate_claims(config: Mapping[str, Any], target: str, table: pd.DataFrame) -> list[dict[str, Any]]:
    """Evaluate the target's claims; an exception inside a claim is reported as a failed claim."""
    experiment = get_experiment(target)
    try:
        claims = [c.as_dict() for c in experiment.claims(table, config["experiments"][target])]
    except Exception as exc:  # a broken claim must not hide the others' results
        log.exception("claims of %s could not be evaluated", target)
        claims = [{"claim": "claims evaluation", "passed": False,
                   "detail": f"error while evaluating the claims: {type(exc).__name__}: {exc}"}]
    for c in claims:
        log.info("[%s] %s: %s (%s)", "PASS" if c["passed"] else "FAIL", target, c["claim"], c["detail"])
    return claims
