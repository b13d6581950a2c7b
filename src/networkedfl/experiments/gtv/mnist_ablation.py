"""The MNIST quirk ablation (issue 16): Fig. 6's notebook options switched one at a time.

A case (``fig06``: Fig. 6's block, restricted to Alg. 1 and IFCA) runs as
:mod:`.ablation` describes: jobs ``<case>.published``, ``<case>.<option>`` for every option
of the published variant (nested by dotted path) and ``<case>.paper``, every job on the
source target's random streams, so ``published`` and ``paper`` repeat Fig. 6's rows.  A job
runs only the methods its switch can move: an option of one method's block moves that
method, the graph only Alg. 1 (IFCA reads no graph), ``published`` and ``paper`` all of
them; the others would repeat the published rows exactly.  Every job solves its seeds
together (:func:`~.mnist.mnist_records`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from .ablation import SOURCES, switched_params
from .mnist import job_seeds, last_job, load_problem, mnist_records

__all__ = ["run_mnist_ablation", "switch_methods"]

Params = Mapping[str, Any]

#: The methods that read the learnt graph (a ``graph`` switch moves only these).
GRAPH_METHODS = ("primal_dual",)

def switch_methods(case: Params, switch: str) -> list[str]:
    """The methods of ``case`` that the switch ``switch`` can change (config order)."""
    methods = list(case["methods"])
    if switch in ("published", "paper"):
        return methods
    parts = switch.split(".")
    if parts[0] == "methods" and len(parts) > 2:
        return [parts[1]]
    if switch == "graph":
        algorithms = {m: case["methods"][m]["algorithm"] for m in methods}
        return [m for m in methods if algorithms[m] in GRAPH_METHODS]
    return methods


def run_mnist_ablation(params: Params, setting: str, seed: int, base_seed: int, *,
                       inputs: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One (case, switch) of the MNIST ablation for one seed: the methods the switch moves.

    The first call of a job computes every seed of :func:`~.mnist.job_seeds` (the
    ablation's repetitions) and keeps them for the other seeds' calls."""
    name, _, switch = setting.partition(".")
    if name not in params["cases"]:
        raise ValueError(f"ablation case {name!r} is not an MNIST case; cases: {sorted(params['cases'])}")
    seeds = job_seeds(params, seed)
    table = last_job(["run_mnist_ablation", params, setting, seeds, int(base_seed), dict(inputs or {})],
                     lambda: _ablation_job(params, name, switch, seeds, base_seed, inputs or {}))
    return table[table["seed"] == int(seed)].reset_index(drop=True)


def _ablation_job(params: Params, name: str, switch: str, seeds: Sequence[int], base_seed: int,
                  inputs: Mapping[str, Any]) -> pd.DataFrame:
    case = params["cases"][name]
    p = switched_params(case, switch)
    graph = f"{name}_graph_{p['graph']}"
    if graph not in inputs:
        raise ValueError(f"ablation case {name}, switch {switch}: graph {p['graph']!r} is not among "
                         f"the job's inputs {sorted(inputs)}")
    problem = load_problem(p, {"mnist": inputs[f"{name}_mnist"], "graph": inputs[graph]})
    records = mnist_records(problem, p, switch_methods(case, switch), seeds, base_seed, SOURCES.get(name, name))
    table = pd.DataFrame.from_records([r for s in seeds for r in records[s]])
    table.insert(0, "switch", switch)
    table.insert(0, "case", name)
    return table
