"""Variants of a target: the same experiment under named sets of parameter overrides.

The GTV targets run in two variants side by side (docs/variants.md, issue 16):

* ``published``: what the authors' notebooks computed; each notebook behaviour that changes
  the numbers is a named option of the package, switched on by the variant's overrides;
* ``paper``: what the paper's equations define (the target's parameters as they are).

A target opts in with a ``variants`` mapping in its parameters, from variant name to the
parameters it overrides (deep-merged over the target's own, as config files merge)::

    variants:
      published: {loss_scale: sum, label_noise: per_node, n_iter: 2000}
      paper: {}

Every job then belongs to one variant: its setting is ``<variant>.<setting>`` (e.g.
``published.penalty-l1``), its records carry a leading ``variant`` column, and the
target's claims are evaluated once per variant on that variant's rows.  Both variants of
one repetition draw from the same random streams (:func:`networkedfl.seeding.rng_for` does not see
the variant), so their difference is the quirks' effect, not sampling noise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import pandas as pd

__all__ = [
    "SEPARATOR",
    "VARIANT_COLUMN",
    "JobView",
    "deep_merge",
    "job_views",
    "join_setting",
    "split_setting",
    "tag_variant",
    "variant_names",
    "variant_params",
    "variant_views",
]

Params = Mapping[str, Any]

#: Separates the variant from the experiment's own setting name in a job's setting.
SEPARATOR = "."
VARIANT_COLUMN = "variant"


def deep_merge(base: Params, override: Params) -> dict[str, Any]:
    """Recursively merge ``override`` into ``base`` (as Snakemake merges config files)."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def variant_names(params: Params) -> list[str]:
    """The target's variants in config order (empty if it defines none)."""
    return list(params.get("variants") or {})


def variant_params(params: Params, variant: str | None) -> dict[str, Any]:
    """The target's parameters with ``variant``'s overrides merged in (``variants`` removed)."""
    base = {k: v for k, v in params.items() if k != "variants"}
    if variant is None:
        return base
    variants = params.get("variants") or {}
    if variant not in variants:
        raise ValueError(f"unknown variant {variant!r}; the target defines {sorted(variants) or 'none'}")
    return deep_merge(base, variants[variant] or {})


class JobView(NamedTuple):
    """One job of a target as it runs: its ``setting`` (``<variant>.<setting>`` with
    variants), the ``variant`` (``None`` without), the experiment's ``own_setting`` and the
    ``params`` it runs with (the variant's overrides merged in, before any tuning)."""

    setting: str
    variant: str | None
    own_setting: str
    params: dict[str, Any]


def job_views(params: Params, settings: Callable[[Params], list[str]]) -> dict[str, JobView]:
    """Every job of a target, by setting, resolved once: each variant's parameters are merged
    (:func:`variant_params`) before the experiment lists its settings (``settings``, the
    registered ``Experiment.settings``) on them, so a job's parameters are read here and
    nowhere else (issue 43 item 5: the runner no longer re-enters this module per job)."""
    merged = variant_views(params) or {None: variant_params(params, None)}
    listed = {v: list(settings(p)) for v, p in merged.items()}
    return {(s if v is None else join_setting(v, s)): JobView(s if v is None else join_setting(v, s), v, s, p)
            for v, p in merged.items() for s in listed[v]}


def variant_views(params: Params) -> dict[str, dict[str, Any]]:
    """Every variant's parameters, by name (:func:`variant_params`; empty without variants)."""
    return {v: variant_params(params, v) for v in variant_names(params)}


def join_setting(variant: str, setting: str) -> str:
    return f"{variant}{SEPARATOR}{setting}"


def split_setting(params: Params, setting: str) -> tuple[str | None, str]:
    """``(variant, setting)`` of a job's setting name (``variant`` is ``None`` without variants)."""
    if not variant_names(params):
        return None, setting
    variant, sep, rest = setting.partition(SEPARATOR)
    if not sep or variant not in variant_names(params):
        raise ValueError(
            f"setting {setting!r} names no variant; expected '<variant>{SEPARATOR}<setting>' with "
            f"a variant of {variant_names(params)}")
    return variant, rest


def tag_variant(table: pd.DataFrame, variant: str | None) -> pd.DataFrame:
    """``table`` with a leading ``variant`` column (unchanged when ``variant`` is ``None``)."""
    if variant is None:
        return table
    table = table.copy()
    table.insert(0, VARIANT_COLUMN, variant)
    return table
