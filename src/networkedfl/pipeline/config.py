"""Configuration loading and validation against the workflow's JSON schema."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

__all__ = ["ConfigError", "deep_merge", "load_config", "validate_config"]


class ConfigError(ValueError):
    """The configuration does not match the schema; the message names the key."""


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Recursively merge ``override`` into ``base`` (as Snakemake merges config files)."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _location(error: jsonschema.ValidationError) -> str:
    return "config" + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in error.absolute_path)


def validate_config(config: Mapping[str, Any], schema_path: str | os.PathLike) -> None:
    """Validate ``config`` against the schema; raise :class:`ConfigError` naming every bad key."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{_location(e)}: {e.message}" for e in errors[:20]]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))


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
