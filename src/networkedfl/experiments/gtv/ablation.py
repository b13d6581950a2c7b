"""Which notebook behaviour moves which GTV result, and by how much (issue 16).

Starting from the ``published`` variant of a GTV target (what the authors' notebooks
computed), each job switches exactly one of its notebook options back to the paper's
definition and reruns the target's headline numbers.  A *case* is one source target (its
parameters, copied into this target's config, restricted to the headline grid points or
methods); its jobs are ``<case>.published``, ``<case>.<option>`` for every parameter the
published variant overrides (nested ones by their dotted path, e.g.
``methods.primal_dual.prox_scale``), and ``<case>.paper``.  Cases ``fig09`` and ``table1``
are linear sweeps; case ``fig06`` is the MNIST experiment (its headline: the accuracy at
the last plotted iteration).

Every job draws from the source target's random streams (``rng_for`` keyed by the source
target's id and the grid point), so the ``published`` and ``paper`` rows equal those of the
source target at the same grid points, and every difference between rows is the effect
of the switched option alone.  With ``ends_from_source: true`` the linear cases' two ends
are therefore not run again: their jobs read the source target's table (an input of the
ablation) and keep its rows at the case's grid points, methods and seed, bit for bit what
running them gives (``tests/unit/experiments/test_gtv_ablation.py`` checks this, and that
each case's parameters are its source's).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...io import Paths
from ..variants import variant_params
from .linear import grid_points, linear_settings, run_gtv_linear
from .mnist import ALL_METHODS, run_mnist
from .mnist_graph import graph_file, graph_names, mnist_train_files

__all__ = ["ablation_inputs", "ablation_settings", "ablation_switches", "run_quirk_ablation", "source_rows",
           "switched_params"]

Params = Mapping[str, Any]

#: The source target of each case (the streams and the parameters come from it).
SOURCES = {"fig09": "gtv_fig09_sbm_sampling", "table1": "gtv_table1_highdim_sbm",
           "fig06": "gtv_fig06_mnist_methods"}
#: Cases that are MNIST experiments (they read the MNIST files and a learnt graph).
MNIST_CASES = ("fig06",)


def _leaves(tree: Params, prefix: str = "") -> list[str]:
    out = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        out += _leaves(value, path + ".") if isinstance(value, Mapping) and value else [path]
    return out


#: Parameters the published variant sets that are not notebook options: not switched.
NOT_SWITCHED = ("solver",)  # the published variant pins the notebooks' fixed-K iteration (issue 36)


def ablation_switches(case: Params) -> list[str]:
    """``published``, then every parameter the published variant overrides (by dotted
    path) except :data:`NOT_SWITCHED`, then ``paper``."""
    overridden = _leaves((case.get("variants") or {}).get("published") or {})
    options = [path for path in overridden if path.split(".")[0] not in NOT_SWITCHED]
    return ["published", *dict.fromkeys(options), "paper"]


#: The switches whose rows are the source target's own (its two variants).
ENDS = ("published", "paper")


def _reads_source(params: Params, name: str) -> bool:
    return bool(params.get("ends_from_source")) and name not in MNIST_CASES


def ablation_inputs(params: Params) -> dict[str, str | list[str]]:
    """The MNIST files of the MNIST cases (``<case>_mnist``) and every graph their switches
    run on (``<case>_graph_<name>``: the published variant's and the paper's); with
    ``ends_from_source``, the source target's table of each linear case (``<case>_source``)."""
    inputs: dict[str, str | list[str]] = {}
    for name in params["cases"]:
        if _reads_source(params, name):
            inputs[f"{name}_source"] = Paths().table(SOURCES[name])
    for name in MNIST_CASES:
        if name in params["cases"]:
            inputs[f"{name}_mnist"] = mnist_train_files()
            inputs.update({f"{name}_graph_{g}": graph_file(g) for g in graph_names(params["cases"][name])})
    return inputs


def ablation_settings(params: Params) -> list[str]:
    return [f"{name}.{switch}" for name, case in params["cases"].items() for switch in ablation_switches(case)]


def switched_params(case: Params, switch: str) -> dict[str, Any]:
    """The case's published parameters with ``switch`` set back to the paper's value."""
    if switch in ("published", "paper"):
        return variant_params(case, switch)
    if switch not in ablation_switches(case):
        raise ValueError(f"no option {switch!r} in the published variant; known: {ablation_switches(case)}")
    published, paper = variant_params(case, "published"), variant_params(case, "paper")
    *parents, leaf = switch.split(".")
    out = copy.deepcopy(published)
    node, ref = out, paper
    for key in parents:
        node, ref = node[key], (ref or {}).get(key)
    if isinstance(ref, Mapping) and leaf in ref:
        node[leaf] = copy.deepcopy(ref[leaf])
    else:  # an option the paper leaves at its default
        node.pop(leaf)
    return out


def run_quirk_ablation(params: Params, setting: str, seed: int, base_seed: int, *,
                       inputs: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Run one (case, switch) of the ablation for one seed: every penalty and baseline of a
    linear case, every method of an MNIST case."""
    name, _, switch = setting.partition(".")
    if name not in params["cases"]:
        raise ValueError(f"unknown ablation case {name!r}; cases: {sorted(params['cases'])}")
    source = SOURCES.get(name, name)
    p = switched_params(params["cases"][name], switch)
    if name in MNIST_CASES:
        inputs = inputs or {}
        graph = f"{name}_graph_{p['graph']}"
        if graph not in inputs:
            raise ValueError(f"ablation case {name}, switch {switch}: graph {p['graph']!r} is not among "
                             f"the job's inputs {sorted(inputs)}")
        mine = {"mnist": inputs[f"{name}_mnist"], "graph": inputs[graph]}
        table = run_mnist(p, ALL_METHODS, seed, base_seed, inputs=mine, experiment_id=source)
    elif switch in ENDS and _reads_source(params, name):
        table = source_rows(pd.read_csv((inputs or {})[f"{name}_source"]), p, switch, seed)
    else:
        table = pd.concat([run_gtv_linear(p, job, seed, base_seed, experiment_id=source)
                           for job in linear_settings(p)], ignore_index=True)
    table.insert(0, "switch", switch)
    table.insert(0, "case", name)
    return table


def source_rows(source: pd.DataFrame, params: Params, variant: str, seed: int) -> pd.DataFrame:
    """The rows of a linear case's end (``variant``) for ``seed``, taken from the source
    target's table: its grid points, penalties and baselines, in the order and columns that
    running them gives (the source's rows of one seed come setting by setting, grid point by
    grid point, as :func:`~.linear.run_gtv_linear` writes them)."""
    grid = params["grid"]
    baselines = [m for m in params.get("methods", []) if m != "primal_dual"]
    rows = source[(source["variant"] == variant) & (source["seed"] == seed)]
    keep = rows["method"].isin(baselines) | ((rows["method"] == "primal_dual") & rows["penalty"].isin(params["lam"]))
    for key, values in grid.items():
        keep &= rows[key].isin(values)
    rows = rows[keep].drop(columns="variant")
    expected = len(grid_points(params)) * (len(params["lam"]) + len(baselines))
    found = rows.groupby([*grid, "method", "penalty"]).ngroups
    if found != expected:
        raise ValueError(f"the source table has {found} of the {expected} (grid point, method) runs of the "
                         f"ablation case's {variant} end at seed {seed}: is the case a restriction of its source?")
    columns = [*grid, "method", "penalty", "lam", "seed", "metric", "value"]
    return rows[columns].reset_index(drop=True)
