"""Configuration loading and validation against the workflow's JSON schema."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..experiments.variants import deep_merge

__all__ = ["ConfigError", "deep_merge", "load_config", "validate_config"]


class ConfigError(ValueError):
    """The configuration does not match the schema; the message names the key."""


def _location(error: jsonschema.ValidationError) -> str:
    return "config" + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in error.absolute_path)


def validate_config(config: Mapping[str, Any], schema_path: str | os.PathLike) -> None:
    """Validate ``config`` against the schema; raise :class:`ConfigError` naming every bad key."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(e.absolute_path))
    lines = _non_finite_errors(config) + [f"{_location(e)}: {e.message}" for e in errors]
    if lines:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines[:20]))
    lines = _variant_errors(config, schema) + _tuning_errors(config, schema)
    if lines:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines[:20]))


def _non_finite_errors(value: Any, where: str = "config") -> list[str]:
    """Every NaN or infinite number in the config (YAML's ``.nan``/``.inf``), by its key.

    JSON Schema's ``number`` admits them, and a step size of ``.inf`` would otherwise run to
    tables of NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{where}: {value} is not a finite number (NaN and infinities are not allowed)"]
    if isinstance(value, Mapping):
        return [line for k, v in value.items()
                for line in _non_finite_errors(v, f"{where}[{k!r}]" if isinstance(k, str) else f"{where}[{k}]")]
    if isinstance(value, list | tuple):
        return [line for i, v in enumerate(value) for line in _non_finite_errors(v, f"{where}[{i}]")]
    return []


def _variant_errors(config: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Validate every variant's merged parameters against its target's schema.

    A variant overrides some of a target's parameters (``variants: {published: {...}}``);
    the merged parameters must be as valid as the target's own.
    """
    from ..experiments.variants import variant_names, variant_params

    targets = schema.get("properties", {}).get("experiments", {}).get("properties", {})
    lines = []
    for target, params in (config.get("experiments") or {}).items():
        if not isinstance(params, Mapping) or target not in targets:
            continue
        sub = jsonschema.Draft202012Validator({"$defs": schema.get("$defs", {}), **targets[target]})
        for variant in variant_names(params):
            merged = variant_params(params, variant)
            for e in sorted(sub.iter_errors(merged), key=lambda e: list(e.absolute_path)):
                where = "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in e.absolute_path)
                lines.append(f"config['experiments'][{target!r}], variant {variant!r} (merged){where}: "
                             f"{e.message}")
    return lines


def load_config(
    *paths: str | os.PathLike, schema_path: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Load and merge YAML config files (later ones override), then validate."""
    config: dict[str, Any] = {}
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        config = deep_merge(config, yaml.safe_load(path.read_text()) or {})
    if schema_path is not None:
        validate_config(config, schema_path)
    return config


def _tuning_errors(config: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Validate every target's tuning grid: its keys are settings (jobs) of the target (its
    methods where every method is one job; ``all`` where one job runs every method), and
    every grid point's parameters (overrides and point applied) are as valid as the
    target's own."""
    from ..experiments import get_experiment
    from ..experiments.tuning import TUNING_KEY, apply_overrides, grid_points

    targets = schema.get("properties", {}).get("experiments", {}).get("properties", {})
    lines = []
    for target, params in (config.get("experiments") or {}).items():
        if not isinstance(params, Mapping) or not params.get(TUNING_KEY) or target not in targets:
            continue
        where = f"config['experiments'][{target!r}]['tuning']"
        spec = params[TUNING_KEY]
        try:
            settings = list(get_experiment(target).settings(params))
        except (KeyError, TypeError, ValueError) as exc:  # a bad method list, named by the schema too
            lines.append(f"{where}['grid']: the target's settings cannot be listed ({exc})")
            continue
        unknown = sorted(set(spec.get("grid") or {}) - set(settings))
        if unknown:
            lines.append(f"{where}['grid']: methods {unknown} are not in the target's methods "
                         f"(a grid is keyed by the target's job settings: {settings})")
        sub = jsonschema.Draft202012Validator({"$defs": schema.get("$defs", {}), **targets[target]})
        base = {k: v for k, v in params.items() if k != TUNING_KEY}
        for method in spec.get("grid") or {}:
            for k, point in enumerate(grid_points(params, method)):
                try:
                    merged = apply_overrides(apply_overrides(base, spec.get("overrides") or {}), point)
                except KeyError as exc:
                    lines.append(f"{where}['grid'][{method!r}]: {exc.args[0]}")
                    break
                errors = sorted(sub.iter_errors(merged), key=lambda e: list(e.absolute_path))
                for e in errors:
                    path = "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in e.absolute_path)
                    lines.append(f"{where}['grid'][{method!r}], point {k} {point}{path}: {e.message}")
                if errors:
                    break
    return lines
