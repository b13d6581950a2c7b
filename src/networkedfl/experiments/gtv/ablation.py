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
of the switched option alone.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..registry import Claim, Experiment, register
from ..variants import variant_params
from .linear import linear_settings, run_gtv_linear
from .mnist import ALL_METHODS, run_mnist
from .mnist_graph import graph_file, graph_names, mnist_train_files

__all__ = ["ablation_inputs", "ablation_settings", "ablation_switches", "run_quirk_ablation",
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


def ablation_switches(case: Params) -> list[str]:
    """``published``, then every parameter the published variant overrides (by dotted
    path), then ``paper``."""
    overridden = _leaves((case.get("variants") or {}).get("published") or {})
    return ["published", *dict.fromkeys(overridden), "paper"]


def ablation_inputs(params: Params) -> dict[str, str | list[str]]:
    """The MNIST files of the MNIST cases (``<case>_mnist``) and every graph their switches
    run on (``<case>_graph_<name>``: the published variant's and the paper's); none for
    linear cases."""
    inputs: dict[str, str | list[str]] = {}
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
    else:
        table = pd.concat([run_gtv_linear(p, job, seed, base_seed, experiment_id=source)
                           for job in linear_settings(p)], ignore_index=True)
    table.insert(0, "switch", switch)
    table.insert(0, "case", name)
    return table


def ablation_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    """Structural checks: every switch ran, and the two ends differ where the variants do."""
    expected = {(c, s) for c, case in params["cases"].items() for s in ablation_switches(case)}
    found = set(zip(table["case"], table["switch"], strict=True))
    missing = sorted(expected - found)
    from ...plotting import ablation_summary

    summary = ablation_summary(table)
    ends = summary[summary["switch"].isin(["published", "paper"])].groupby(["case", "switch"])["value"].mean()
    moved = {c: abs(ends[(c, "published")] - ends[(c, "paper")]) > 0 for c in params["cases"]
             if (c, "published") in ends and (c, "paper") in ends}
    return [
        Claim("every notebook option of each case's published variant is switched on its own",
              not missing, "missing: " + ", ".join(f"{c}.{s}" for c, s in missing) if missing
              else f"{len(expected)} (case, switch) runs"),
        Claim("in every case the published and paper variants give different headline numbers",
              bool(moved) and all(moved.values()),
              "; ".join(f"{c}: published {ends[(c, 'published')]:.3g} vs paper {ends[(c, 'paper')]:.3g}"
                        for c in moved)),
    ]


register(Experiment(
    id="gtv_quirk_ablation", kind="figure", source="GTV (issue 16; not in the paper)",
    title="Notebook behaviours switched one at a time: effect on Fig. 9 and Table I",
    run=run_quirk_ablation, claims=ablation_claims, settings=ablation_settings, inputs=ablation_inputs,
    # those of its cases' sources, gtv_fig09_sbm_sampling and gtv_table1_highdim_sbm
    deviations=("two-variants", "step-sizes", "label-noise-per-point", "local-loss-average",
                "mocha-dual-step", "parameter-mse", "sbm-iterations", "sbm-sampler", "sampling-set",
                "claims-means", "memory-layout", "ifca-linear", "table1-fig02-setup",
                "linear-test-profile"),
))
