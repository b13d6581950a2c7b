"""The walk of GTV's ``lam`` from the config to the solver (issue 43 item 5, bar: at most 4
returns to a module it left). A profiler records, in order, every call into the package whose
arguments hold the target's ``lam`` (the config block's object, reached through mappings,
sequences and the package's objects, or a ``lam`` argument of its values), from the workflow's
validation (common.smk) through a job (run_experiment.py's ``run_group``) to the solver.

Before the fix (variants re-entered per job, the job's settings listed twice, the config's
variant and tuning checks in two passes) the walk was 19 module hops with 13 returns (5 to
``experiments.variants``); docs/variants.md records the walk after it."""

import copy
import sys
from collections.abc import Mapping

import pytest

from networkedfl.pipeline.config import validate_config
from networkedfl.pipeline.runner import run_group

SOLVER = "networkedfl.gtv._primal_dual"
MAX_RETURNS = 4


class _Solver(Exception):
    """Raised when the walk reaches the solver: nothing is solved."""


def _holds(value, lam, depth=0) -> bool:
    if value is lam:
        return True
    if depth >= 3:
        return False
    if isinstance(value, Mapping):
        return any(_holds(v, lam, depth + 1) for v in list(value.values())[:60])
    if isinstance(value, list | tuple):
        return any(_holds(v, lam, depth + 1) for v in list(value)[:20])
    if hasattr(value, "__dict__") and type(value).__module__.startswith("networkedfl"):
        return any(_holds(v, lam, depth + 1) for v in list(vars(value).values())[:20])
    return False


def _is_lam(name, value, lam) -> bool:
    if name not in ("lam", "lams") or value is None:
        return False
    try:
        return value is lam or float(value) in [float(v) for v in lam.values()]
    except (TypeError, ValueError):
        return False


def lam_walk(config, schema_path, target, job) -> list[str]:
    """The modules the target's ``lam`` passes through, consecutive repeats merged."""
    lam = config["experiments"][target]["lam"]
    calls = []

    def profile(frame, event, arg):
        module = frame.f_globals.get("__name__", "")
        if event != "call" or not module.startswith("networkedfl"):
            return
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if any(_is_lam(n, frame.f_locals.get(n), lam) or _holds(frame.f_locals.get(n), lam) for n in names):
            calls.append(module)
            if module == SOLVER:
                raise _Solver

    sys.setprofile(profile)
    try:
        validate_config(config, schema_path)
        run_group(config, target, job, [0])
    except _Solver:
        pass
    finally:
        sys.setprofile(None)
    return [m for i, m in enumerate(calls) if i == 0 or calls[i - 1] != m]


def _returns(walk) -> int:
    return sum(m in walk[:i] for i, m in enumerate(walk))


@pytest.fixture
def config(test_config):
    return copy.deepcopy(test_config)


@pytest.mark.parametrize(("target", "job"), [("gtv_fig09_sbm_sampling", "published.penalty-l1"),
                                              ("gtv_fig03_chain_sampling", "paper.penalty-nlasso")])
def test_lam_walks_from_the_config_to_the_solver_returning_at_most_four_times(config, schema_path, target, job):
    walk = lam_walk(config, schema_path, target, job)
    assert walk[0] == "networkedfl.pipeline.config" and walk[-1] == SOLVER, walk
    assert _returns(walk) <= MAX_RETURNS, " -> ".join(walk)
    assert walk.count("networkedfl.experiments.variants") <= 2, walk  # validation, and the job's views


def test_the_walk_counts_a_return():
    assert _returns(["a", "b", "a", "c", "b"]) == 2 and _returns(["a", "b", "c"]) == 0


def test_a_job_reads_its_targets_parameters_once(config, monkeypatch):
    """Issue 43 item 5: one pipeline job (here the grouped job of every covariance-table
    setting) resolves its target's variants and settings once, however many settings and
    seeds it runs (the runs themselves stubbed)."""
    import pandas as pd

    from networkedfl.pipeline import runner

    calls = []
    real = runner.job_views
    monkeypatch.setattr(runner, "job_views", lambda *a: calls.append(a) or real(*a))
    monkeypatch.setattr(runner, "_run_seed", lambda job, seed: pd.DataFrame(
        {"setting": [job.setting], "seed": [seed], "metric": ["m"], "value": [1.0]}))
    table = runner.run_group(config, "gtv_table3_covariance", runner.GROUP_JOB, [0, 1])
    assert len(calls) == 1
    assert table["setting"].nunique() == len(real(config["experiments"]["gtv_table3_covariance"],
                                                  runner.get_experiment("gtv_table3_covariance").settings)) > 1
