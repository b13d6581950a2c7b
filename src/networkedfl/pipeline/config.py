"""Configuration loading and validation against the workflow's JSON schema."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .._validation import unrepresentable
from ..experiments.variants import deep_merge
from ._yaml import (
    MAX_YAML_BYTES,
    MAX_YAML_DEPTH,
    MAX_YAML_VALUES,
    YamlProblem,
    check_bounds,
    load_yaml,
)

__all__ = ["MAX_GRID_POINTS", "MAX_YAML_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_VALUES", "OVERLAYS", "ConfigError",
           "check_command_line", "deep_merge", "load_config", "load_schema", "merge_overlays", "read_yaml",
           "type_command_line_values", "validate_config"]

#: The config key naming overlay files the workflow reads itself (``--config overlays=<file>``).
OVERLAYS = "overlays"

#: Points a grid may hold (a tuning grid per method, a sweep's grid): the combinations of its
#: lists, each a run (the largest shipped grid has 90).
MAX_GRID_POINTS = 10_000


class ConfigError(ValueError):
    """The configuration does not match the schema; the message names the key."""


def _location(error: jsonschema.ValidationError) -> str:
    return "config" + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in error.absolute_path)


def _describe(error: jsonschema.ValidationError) -> str:
    """``<key path>: <message>``; for a value that fits none of the forms a ``oneOf`` or
    ``anyOf`` allows, the key inside it that breaks the closest form (e.g. the bad item of a
    list), not only the whole value."""
    if error.validator in ("oneOf", "anyOf") and error.context:
        best = max(error.context, key=lambda e: len(e.absolute_path))  # the first of the deepest
        if len(best.absolute_path) > len(error.absolute_path):
            return (f"{_location(best)}: {best.message} (so {_location(error)} fits none of the "
                    f"{len(error.validator_value)} forms allowed)")
    return f"{_location(error)}: {error.message}"


def load_schema(schema_path: str | os.PathLike) -> dict[str, Any]:
    """The config schema with the registry's targets: the file holds the blocks (``$defs``),
    the registry (:data:`networkedfl.experiments.EXPERIMENTS`) which targets there are, so
    ``$defs.target_id`` gets the registered ids as its ``enum`` and ``experiments`` one
    property per target, the block its ``Experiment.schema`` names.  Every block a target
    names accepts the verdicts' ``design`` (``$defs.design``, docs/verdicts.md#design)."""
    from ..experiments import EXPERIMENTS

    schema = yaml.safe_load(Path(schema_path).read_text())
    defs = schema.setdefault("$defs", {})
    missing = {target: e.schema for target, e in EXPERIMENTS.items() if e.schema not in defs}
    if missing:
        raise ConfigError(f"{schema_path}: registered targets name config blocks (Experiment.schema) that are not "
                          f"under its $defs: {missing}")
    defs["target_id"] = {**defs.get("target_id", {}), "enum": list(EXPERIMENTS)}
    for block in {e.schema for e in EXPERIMENTS.values()}:
        defs[block].setdefault("properties", {})["design"] = {"$ref": "#/$defs/design"}
    schema["properties"]["experiments"]["properties"] = {
        target: {"$ref": f"#/$defs/{e.schema}"} for target, e in EXPERIMENTS.items()}
    return schema


def validate_config(
    config: Mapping[str, Any], schema_path: str | os.PathLike, command_line: Mapping[str, Any] | None = None
) -> None:
    """Validate ``config`` against the schema; raise :class:`ConfigError` naming every bad key.

    ``command_line``: the values given with Snakemake's ``--config``; an error then also shows
    them as the overlay file that sets them (``--configfile``), which types every value as
    written."""
    schema = load_schema(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(e.absolute_path))
    lines = _renamed_key_errors(config) + _non_finite_errors(config) + [_describe(e) for e in errors]
    if not lines:
        lines = _grid_errors(config.get("experiments") or {}, "config['experiments']")
    if not lines:
        lines = _block_errors(config, schema)
    if lines:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines[:20]) + _overlay_hint(command_line))


#: Top-level keys that were renamed: old name -> (new name, why).
RENAMED_KEYS = {
    "seed": ("base_seed", "'seed' is the repetition index 0 .. repetitions - 1 (docs/determinism.md)"),
}


def _renamed_key_errors(config: Mapping[str, Any]) -> list[str]:
    """One line per top-level key under its old name (a config file or overlay written before
    the rename): the new name to write, so the schema's bare "unexpected key" is explained."""
    return [f"config[{old!r}]: renamed {new!r}; write `{new}: {config[old]!r}` instead ({why})"
            for old, (new, why) in RENAMED_KEYS.items() if old in config]


def type_command_line_values(config: MutableMapping[str, Any], command_line: Mapping[str, Any]) -> None:
    """Give the nested values of Snakemake's ``--config`` the types a config file gives them.

    Snakemake types a top-level value (``--config base_seed=3``) but reads a nested one
    (``--config 'experiments={gtv_fig13_star_lambda: {n_iter: 500}}'``) with YAML's base
    loader, which leaves every scalar a string (``'500'``) that the schema would refuse.
    Every string below a top-level key of ``command_line`` that ``config`` still holds there
    becomes the number, boolean or null it reads as (``1e-3`` too); other strings stay.
    ``config`` is changed in place (Snakemake's ``config`` object)."""
    for key, given in command_line.items():
        if key in config and isinstance(given, Mapping | list | tuple):
            config[key] = _retype(config[key], given)


def _retype(current: Any, given: Any) -> Any:
    if isinstance(given, Mapping) and isinstance(current, MutableMapping):
        for key, value in given.items():
            if key in current:
                current[key] = _retype(current[key], value)
        return current
    if isinstance(given, list | tuple) and isinstance(current, list) and len(given) == len(current):
        return [_retype(c, g) for c, g in zip(current, given, strict=True)]
    if isinstance(given, str) and current == given:
        return _scalar(given)
    return current


def _scalar(text: str) -> Any:
    """A command-line string as the number, boolean or null it reads as; else the string."""
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if value is None or isinstance(value, bool | float) else text


def _overlay_hint(command_line: Mapping[str, Any] | None) -> str:
    """The ``--config`` values as the overlay file that sets them, for an error message."""
    if not command_line:
        return ""

    def plain(value: Any, nested: bool) -> Any:
        if isinstance(value, Mapping):
            return {k: plain(v, True) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v, True) for v in value]
        return _scalar(value) if nested and isinstance(value, str) else value

    overlay = yaml.safe_dump({k: plain(v, False) for k, v in command_line.items()}, sort_keys=False)
    return ("\n(the --config values as an overlay file, which types every value as written: put\n\n"
            + "".join(f"    {line}\n" for line in overlay.splitlines())
            + "\n  in overlay.yaml and pass it after the other config files, e.g. "
              "`--configfile config/test.yaml overlay.yaml`, target ids before --configfile)")


def _non_finite_errors(value: Any, where: str = "config") -> list[str]:
    """Every NaN or infinite number in the config (YAML's ``.nan``/``.inf``), and every
    number the solvers cannot represent (beyond ``1e150`` or nonzero below the smallest
    normal float, :func:`networkedfl._validation.unrepresentable`: weights, scales, steps),
    by its key.

    JSON Schema's ``number`` admits them, and a step size of ``.inf`` would otherwise run to
    tables of NaN, an edge weight of ``1e308`` to overflows."""
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{where}: {value} is not a finite number (NaN and infinities are not allowed)"]
    if isinstance(value, int | float) and not isinstance(value, bool) and unrepresentable(value):
        return [f"{where}: {value!r} {unrepresentable(value)}"]
    if isinstance(value, Mapping):
        return [line for k, v in value.items()
                for line in _non_finite_errors(v, f"{where}[{k!r}]" if isinstance(k, str) else f"{where}[{k}]")]
    if isinstance(value, list | tuple):
        return [line for i, v in enumerate(value) for line in _non_finite_errors(v, f"{where}[{i}]")]
    return []


def _block_errors(config: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Every target block's tuning grid (:func:`_tuning_lines`) and variants checked.

    A variant overrides some of a target's parameters (``variants: {published: {...}}``);
    the merged parameters (:func:`~networkedfl.experiments.variants.variant_views`, each
    block's variants merged once) must be as valid as the target's own.
    """
    from ..experiments.variants import variant_views

    targets = schema.get("properties", {}).get("experiments", {}).get("properties", {})
    blocks = {target: (params, jsonschema.Draft202012Validator({"$defs": schema.get("$defs", {}),
                                                                **targets[target]}))
              for target, params in (config.get("experiments") or {}).items()
              if isinstance(params, Mapping) and target in targets}
    tuning = [line for target, (params, sub) in blocks.items() for line in _tuning_lines(target, params, sub)]
    merged = {target: variant_views(params) for target, (params, _) in blocks.items()}
    lines = []
    for target, views in merged.items():
        for variant, params in views.items():
            for e in sorted(blocks[target][1].iter_errors(params), key=lambda e: list(e.absolute_path)):
                where = "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in e.absolute_path)
                lines.append(f"config['experiments'][{target!r}], variant {variant!r} (merged){where}: "
                             f"{e.message}")
    return lines + tuning


def _grid_errors(node: Any, where: str) -> list[str]:
    """Every grid of the config over :data:`MAX_GRID_POINTS` points, by its key: a ``grid``
    mapping of lists (a sweep's; a tuning grid's per method) holds the product of their
    lengths, ``sweeps`` (a list of such mappings) the sum of theirs. Checked before the
    points are listed (tuning grids are, to validate each point)."""
    def points(grid: Mapping[str, Any]) -> int:
        return math.prod(len(v) for v in grid.values())

    def lists(value: Any) -> bool:
        return isinstance(value, Mapping) and bool(value) and all(isinstance(v, list) for v in value.values())

    lines = []
    if isinstance(node, Mapping):
        for key, value in node.items():
            here = f"{where}[{key!r}]"
            if key == "grid" and lists(value):
                counts = [(here, points(value))]
            elif key == "grid" and isinstance(value, Mapping):
                counts = [(f"{here}[{k!r}]", points(v)) for k, v in value.items() if lists(v)]
            elif key == "sweeps" and isinstance(value, list) and all(lists(v) for v in value):
                counts = [(here, sum(points(v) for v in value))]
            else:
                lines += _grid_errors(value, here)
                continue
            lines += [f"{at}: {n} points, more than the limit of {MAX_GRID_POINTS}"
                      for at, n in counts if n > MAX_GRID_POINTS]
    return lines


def read_yaml(path: str | os.PathLike) -> Any:
    """A YAML file's content, exact and bounded (:mod:`networkedfl.pipeline._yaml`): a file
    over :data:`MAX_YAML_BYTES` bytes (checked before it is read) or nested deeper than
    :data:`MAX_YAML_DEPTH` levels (before it is parsed), a syntax error, a key given twice,
    a recursive alias or aliases that expand it past :data:`MAX_YAML_VALUES` values raise
    :class:`ConfigError` naming the file, the line and the column (Snakemake's own loader
    names neither and keeps the last of two keys)."""
    path = Path(path)
    try:
        return load_yaml(check_bounds(path), str(path), bounded=True)
    except YamlProblem as err:
        raise ConfigError(str(err)) from err


def merge_overlays(config: MutableMapping[str, Any], command_line: Mapping[str, Any]) -> list[Path]:
    """Merge the overlay files that ``config['overlays']`` names (a file or a list; a
    relative path is relative to the run's working directory) over ``config``, in order,
    then ``command_line`` (the ``--config`` values) again, so that they still win; returns
    the files.

    The workflow's bounded way to pass an overlay (``--config overlays=<file>``): each is
    read with :func:`read_yaml`, its size and depth checked before any parser reads it,
    whereas Snakemake parses a ``--configfile`` itself before the workflow starts.
    ``config`` is changed in place (Snakemake's ``config`` object).

    Raises
    ------
    ConfigError
        A value that is not a file or a list of files, a missing file, an overlay that is not
        a mapping or that names overlays itself, or any problem :func:`read_yaml` names.
    """
    files = config.get(OVERLAYS)
    if files is None:
        return []
    files = [files] if isinstance(files, str) else files
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ConfigError(f"config['{OVERLAYS}']: expected a file or a list of files, got {config[OVERLAYS]!r}")
    merged = dict(config)
    for name in files:
        path = Path(name)
        if not path.is_file():
            raise ConfigError(f"config['{OVERLAYS}']: no file {name}")
        overlay = read_yaml(path)
        if overlay is not None and not isinstance(overlay, Mapping):
            raise ConfigError(f"{path}: an overlay must be a mapping of config keys, got {type(overlay).__name__}")
        if overlay and OVERLAYS in overlay:
            raise ConfigError(f"{path}: an overlay cannot name further overlays (config['{OVERLAYS}'])")
        merged = deep_merge(merged, overlay or {})
    merged = deep_merge(merged, command_line)
    config.clear()
    config.update(merged)
    return [Path(f) for f in files]


def check_command_line(argv: list[str]) -> None:
    """Check Snakemake's ``--config`` entries in ``argv`` (``sys.argv`` of a run) as a config
    file is checked: a top-level key given twice, or a value whose YAML gives a key twice or
    whose aliases are unbounded, raises :class:`ConfigError` naming the entry (Snakemake
    parses them itself, the last of two keys winning). A value Snakemake takes as a plain
    string (not valid YAML) is left to the schema."""
    entries, taking = [], False
    for arg in argv[1:]:
        if arg in ("--config", "-C"):
            taking = True
        elif arg.startswith("--config="):
            entries.append(arg.split("=", 1)[1])
            taking = False
        elif arg.startswith("-"):
            taking = False
        elif taking:
            entries.append(arg)
    first: dict[str, str] = {}
    for entry in entries:
        key, _, value = entry.partition("=")
        if key in first:
            raise ConfigError(f"--config: the key {key!r} is given twice ({first[key]} and {entry}); the later "
                              "value would silently replace the earlier")
        first[key] = entry
        try:
            load_yaml(value, f"--config {entry}")
        except YamlProblem as err:
            if "not valid YAML" not in str(err):
                raise ConfigError(str(err)) from err


def load_config(
    *paths: str | os.PathLike, schema_path: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Load and merge YAML config files (later ones override), then validate."""
    config: dict[str, Any] = {}
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        config = deep_merge(config, read_yaml(path) or {})
    if schema_path is not None:
        validate_config(config, schema_path)
    return config


def _tuning_lines(target: str, params: Mapping[str, Any], sub: jsonschema.Draft202012Validator) -> list[str]:
    """Validate a target's tuning grid (none: no line): its keys are settings (jobs) of the
    target (its methods where every method is one job; ``all`` where one job runs every
    method; or an extra baseline whose parameter block is configured, for an overlay that
    lists it), and every grid point's parameters (overrides and point applied) are as valid
    as the target's own (``sub``)."""
    from ..experiments import get_experiment
    from ..experiments.baselines import EXTRA_BASELINES
    from ..experiments.tuning import TUNING_KEY, apply_overrides, grid_points

    if not params.get(TUNING_KEY):
        return []
    where = f"config['experiments'][{target!r}]['tuning']"
    spec = params[TUNING_KEY]
    try:
        settings = list(get_experiment(target).settings(params))
    except (KeyError, TypeError, ValueError) as exc:  # a bad method list, named by the schema too
        return [f"{where}['grid']: the target's settings cannot be listed ({exc})"]
    lines = []
    # an extra baseline's grid may wait for the overlay that lists it (its block configured)
    waiting = {name for name in EXTRA_BASELINES if isinstance(params.get(name), Mapping)}
    unknown = sorted(set(spec.get("grid") or {}) - set(settings) - waiting)
    if unknown:
        lines.append(f"{where}['grid']: methods {unknown} are not in the target's methods "
                     f"(a grid is keyed by the target's job settings: {settings})")
    whole = sorted(set((spec.get("halving") or {}).get("whole_grid") or ()) - set(spec.get("grid") or {}))
    if whole:
        lines.append(f"{where}['halving']['whole_grid']: {whole} have no tuning grid (the grid's methods: "
                     f"{sorted(spec.get('grid') or {})})")
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


def main(argv: list[str] | None = None) -> int:
    """``python -m networkedfl.pipeline.config [FILE ...]``: check config files as the
    workflow merges them (``config/config.yaml`` first, then each FILE), naming the file and
    line of a YAML syntax error and the key of every invalid value."""
    import sys

    repo = Path(__file__).resolve().parents[3]
    files = [repo / "config" / "config.yaml", *(argv if argv is not None else sys.argv[1:])]
    try:
        load_config(*files, schema_path=repo / "workflow" / "schemas" / "config.schema.yaml")
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"valid: {', '.join(map(str, files))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
