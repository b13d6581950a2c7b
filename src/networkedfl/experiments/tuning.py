"""The tuning protocol: every method of a comparison gets the same chance (issue 17).

The graph-aware chapter publishes no code and no tuned values, so its comparisons are ours
to make fair.  A target opts in with a ``tuning`` block in its parameters::

    tuning:
      validation_fraction: 0.2     # held out of every client's training data
      seeds: [0]                   # repetitions whose instances the grid is evaluated on
      overrides: {rounds: 10}      # parameters of the tuning runs only (optional)
      grid:                        # per method: parameter (dotted path) -> candidate values
        fedavg: {lr: [0.01, 0.1, 1.0]}
        bigfl: {bigfl.lr_lower: [0.01, 0.1, 1.0], bigfl.lam: [0.01, 0.1, 1.0]}

The protocol, the same for every method of the target:

1. every point of the method's grid (the Cartesian product of its lists, in config order)
   is one run of the experiment with the point's values, on ``1 - validation_fraction`` of
   every client's training data, evaluated on the held-out rest: the target's test data are
   never seen.  The run function receives ``validation_fraction`` in its parameters and then
   records its loss metric under the name :data:`VALIDATION_METRIC` instead of the test loss;
2. a point's score is its final-round validation loss, averaged over the tuning seeds;
3. the chosen point has the lowest score among the finite ones (a diverged run scores
   ``inf`` and is never chosen; ties go to the first point in grid order); if every point
   diverged the target stops with an error naming the method;
4. the target's runs use the chosen values, on the full training data.

**Successive halving** (optional, ``halving`` in the tuning block; docs/tuning.md)::

    tuning:
      halving: {eta: 3, horizon: rounds}

evaluates every point on a fraction of the tuning horizon (the run parameter ``horizon``,
e.g. ``rounds``, after the overrides) and continues only the best ``1/eta`` of them (at
least two), rung after rung, to the full horizon (:func:`halving_rungs`, :func:`survivors`).  With ``N``
points there are ``s = floor(log_eta N)`` halvings; rung ``k`` runs to ``R / eta^(s - k)``
rounds (at least ``min_horizon``), each rung's runs start afresh (so a point's score at the
full horizon is the one the whole grid would give it), and the chosen point is the best of
the last rung.  Every evaluated point and rung is kept in the table (``tuning_rung``,
``tuning_horizon``).  Where the rungs would cost at least the whole grid (counted in advance,
:func:`halving_cost` with the block's ``overhead``), the whole grid runs instead.

The points of one method are one pipeline job (:func:`point_spec` and :func:`evaluate_point`
for each, :func:`networkedfl.pipeline.runner.run_tuning_setting`), cached like the others; a
changed grid reruns that job, which takes the unchanged points from its last results and
runs only the changed ones, and the runs that read it.  The target's
table gets rows whose ``metric`` starts with ``tuning_`` (:func:`tuning_rows`):
``tuning_validation_loss`` for every point (``tuning_values`` names the point) and
``tuning_chosen`` for every tuned parameter (``tuning_param``, its chosen value).
"""

from __future__ import annotations

import copy
import itertools
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..algorithms.errors import NonFiniteError
from .baselines import for_baseline_setting

log = logging.getLogger(__name__)

__all__ = [
    "RUNG_COLUMNS",
    "TUNING_KEY",
    "VALIDATION_METRIC",
    "apply_overrides",
    "at_horizon",
    "evaluation_data",
    "final_value",
    "for_setting",
    "grid_points",
    "grid_cost",
    "halving_cost",
    "halving_rungs",
    "point_label",
    "point_rungs",
    "point_scores",
    "evaluate_point",
    "point_spec",
    "rung_sizes",
    "run_overhead",
    "select_point",
    "split_clients",
    "split_ragged",
    "survivors",
    "tuned_params",
    "tuning_params",
    "tuning_rows",
    "tuning_seeds",
]

Params = Mapping[str, Any]

TUNING_KEY = "tuning"
#: The metric a run records on the held-out data when it receives ``validation_fraction``.
VALIDATION_METRIC = "validation_loss"


def _grid(params: Params, setting: str) -> Mapping[str, Sequence[Any]]:
    return ((params.get(TUNING_KEY) or {}).get("grid") or {}).get(setting) or {}


def grid_points(params: Params, setting: str) -> list[dict[str, Any]]:
    """The points of ``setting``'s grid (empty when the method is not tuned).

    The Cartesian product of the grid's value lists, the first parameter varying slowest.
    """
    grid = _grid(params, setting)
    if not grid:
        return []
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]


def point_label(point: Mapping[str, Any]) -> str:
    """``"lr=0.1, bigfl.lam=1"``: a grid point as it appears in the table."""
    return ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool)
                     else f"{k}={v}" for k, v in point.items())


def apply_overrides(params: Params, overrides: Mapping[str, Any], *, where: str = "tuning") -> dict[str, Any]:
    """A deep copy of ``params`` with every dotted path of ``overrides`` set.

    The parent of every path must exist and be a mapping (``bigfl.lam`` needs a ``bigfl``
    block); otherwise a :class:`KeyError` names the path and ``where``.
    """
    out = copy.deepcopy(dict(params))
    for path, value in overrides.items():
        node: Any = out
        parts = str(path).split(".")
        for i, part in enumerate(parts[:-1]):
            if not isinstance(node.get(part), Mapping):
                raise KeyError(f"{where}: parameter {path!r} does not exist "
                               f"({'.'.join(parts[:i + 1])!r} is not a parameter block)")
            node[part] = dict(node[part])
            node = node[part]
        node[parts[-1]] = value
    return out


def for_setting(params: Params, setting: str) -> dict[str, Any]:
    """``params`` as one job of ``setting`` sees them: the tuning grid holds its own method
    only, so editing another method's grid does not change (nor rerun) the job."""
    params = for_baseline_setting(params, setting)
    spec = params.get(TUNING_KEY)
    if not spec:
        return params
    grid = {k: v for k, v in (spec.get("grid") or {}).items() if k == setting}
    return {**params, TUNING_KEY: {**spec, "grid": grid}}


def tuning_seeds(params: Params) -> list[int]:
    return [int(s) for s in (params.get(TUNING_KEY) or {}).get("seeds", [0])]


def tuning_params(params: Params, setting: str, point: int) -> dict[str, Any]:
    """The parameters of one tuning run: the target's, the ``overrides`` of the tuning
    block, the grid point's values and ``validation_fraction`` (``tuning`` and
    ``repetitions`` removed; ``methods`` narrowed to ``setting`` when it is one of them, so
    adding a method or a repetition to the target reruns no tuning job)."""
    spec = params.get(TUNING_KEY) or {}
    points = grid_points(params, setting)
    if not 0 <= point < len(points):
        raise ValueError(f"{setting} has {len(points)} tuning points, not a point {point}")
    base = {k: v for k, v in for_baseline_setting(params, setting).items() if k not in (TUNING_KEY, "repetitions")}
    methods = base.get("methods")
    if isinstance(methods, Mapping) and setting in methods:  # the run's own method only, so
        base["methods"] = {setting: methods[setting]}          # adding a method reruns no tuning
    elif isinstance(methods, list) and setting in methods:
        base["methods"] = [setting]
    run = apply_overrides(base, spec.get("overrides") or {}, where=f"tuning.overrides of {setting}")
    run = apply_overrides(run, points[point], where=f"tuning.grid.{setting}")
    run["validation_fraction"] = float(spec["validation_fraction"])
    return run


#: Columns of a tuning run's rows that say at which rung of successive halving it ran.
RUNG_COLUMNS = ("tuning_rung", "tuning_horizon")


def _lookup(params: Params, path: str) -> Any:
    node: Any = params
    for part in str(path).split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(part)
        node = node[part]
    return node


def halving_rungs(spec: Mapping[str, Any], n_points: int) -> list[int | None]:
    """The horizons of the rungs of one method's tuning (``spec`` is a point's
    :func:`point_spec`): ``[None]`` (one rung, the runs' own horizon) without ``halving``,
    else ``R / eta^(s - k)`` rounded (at least ``min_horizon``, at most ``R``, increasing) for
    ``k = 0 .. s``, ``s = floor(log_eta n_points)``, the last one ``R`` itself.

    The cost rule: where these rungs cost at least the whole grid (:func:`halving_cost`
    against :func:`grid_cost`, both counted in advance with the halving block's
    ``overhead``), the rungs are ``[R]``: one rung, every point to the full horizon, the
    whole grid (same runs, same cache keys, same chosen point). So halving never costs more
    than the grid: a 3-point grid (a third of the horizon for all 3, then 2 to the full one)
    costs ``3 + 2 o`` full runs against 3, and always runs whole.  A method listed in the
    block's ``whole_grid`` runs the whole grid too: one whose halving chose another point than
    its whole grid (``benchmarks/bench_tuning.py``; docs/tuning.md)."""
    halving = spec.get("halving")
    if not halving:
        return [None]
    eta, path = int(halving.get("eta", 3)), str(halving["horizon"])
    try:
        full = _lookup(spec["params"], path)
    except KeyError:
        raise KeyError(f"tuning.halving.horizon: the tuning runs have no parameter {path!r}") from None
    if isinstance(full, bool) or not isinstance(full, int) or full < 1:
        raise ValueError(f"tuning.halving.horizon: {path} = {full!r} is not a positive number of rounds")
    if eta < 2:
        raise ValueError(f"tuning.halving.eta must be at least 2, got {eta}")
    if spec.get("setting") in tuple(halving.get("whole_grid", ())):
        return [full]  # halving chose another point than the whole grid: the grid
    halvings = 0
    while eta ** (halvings + 1) <= n_points:
        halvings += 1
    least = min(int(halving.get("min_horizon", 1)), full)
    rungs = [max(least, round(full / eta ** (halvings - k))) for k in range(halvings)] + [full]
    rungs = [r for i, r in enumerate(rungs) if i == len(rungs) - 1 or r < rungs[i + 1]]
    overhead = run_overhead(halving)
    if halving_cost(rungs, n_points, eta, overhead) >= grid_cost(n_points):
        return [full]  # the whole grid is not dearer: one rung, every point to the full horizon
    return rungs


def run_overhead(halving: Mapping[str, Any]) -> float:
    """The fixed cost of one tuning run (``overhead`` of the halving block), as a fraction
    of a run to the full horizon: a run to ``h`` of ``R`` rounds costs ``o + (1 - o) h / R``."""
    overhead = float(halving.get("overhead", 0.0))
    if not 0.0 <= overhead < 1.0:
        raise ValueError(f"tuning.halving.overhead must lie in [0, 1), got {overhead}")
    return overhead


def rung_sizes(n_rungs: int, n_points: int, eta: int, least: int = 2) -> list[int]:
    """How many points run at each of ``n_rungs`` rungs: all of them at the first, then
    :func:`survivors`' count of the rung before (``ceil(n / eta)``, at least ``least``)."""
    sizes = [int(n_points)]
    for _ in range(n_rungs - 1):
        sizes.append(min(sizes[-1], max(int(least), math.ceil(sizes[-1] / int(eta)))))
    return sizes


def halving_cost(rungs: Sequence[int], n_points: int, eta: int, overhead: float = 0.0) -> float:
    """The cost of successive halving over ``rungs`` (every rung's runs start afresh), in
    runs to the full horizon ``rungs[-1]``: ``sum_k n_k (o + (1 - o) r_k / R)``."""
    full = float(rungs[-1])
    return sum(n * (overhead + (1.0 - overhead) * r / full)
               for n, r in zip(rung_sizes(len(rungs), n_points, eta), rungs, strict=True))


def grid_cost(n_points: int) -> float:
    """The cost of the whole grid in runs to the full horizon: ``n_points``."""
    return float(n_points)


def at_horizon(spec: Mapping[str, Any], horizon: int | None) -> dict[str, Any]:
    """A point's :func:`point_spec` run to ``horizon`` (the spec itself for ``None``; the
    halving key is dropped so that a run's cache key is its own parameters')."""
    out = {k: v for k, v in spec.items() if k != "halving"}
    if horizon is not None:
        out["params"] = apply_overrides(spec["params"], {str(spec["halving"]["horizon"]): int(horizon)},
                                        where="tuning.halving")
    return out


def survivors(scores: Mapping[int, float], eta: int, least: int = 2) -> list[int]:
    """The points that go on to the next rung: the best ``ceil(n / eta)`` by score, at least
    ``least`` of them (so that the full horizon still compares two points: a step that looks
    best on a short horizon may diverge on the full one), lowest first, ``inf`` last, ties in
    grid order; returned in grid order."""
    keep = min(len(scores), max(int(least), math.ceil(len(scores) / int(eta))))
    ranked = sorted(scores, key=lambda k: (not math.isfinite(scores[k]), scores[k], k))
    return sorted(ranked[:keep])


def final_value(table: pd.DataFrame, metric: str = VALIDATION_METRIC) -> float:
    """The last round's value of ``metric`` (``inf`` when missing or not finite); the
    round is the table's ``round`` column, or ``iteration`` where it has none (FedRelax)."""
    rows = table[table["metric"] == metric]
    if "domain" in rows:  # per-client rows carry a domain; the average has none
        rows = rows[rows["domain"].isna()]
    if rows.empty:
        return math.inf
    step = "round" if "round" in rows else "iteration"
    value = float(rows.loc[rows[step].astype(float).idxmax(), "value"])
    return value if math.isfinite(value) else math.inf


def _rung_rows(tables: Iterable[pd.DataFrame]) -> pd.DataFrame:
    rows = pd.concat(list(tables), ignore_index=True)
    rows = rows[rows["metric"] == "tuning_validation_loss"]
    if "tuning_rung" not in rows:  # without successive halving: one rung
        rows = rows.assign(tuning_rung=0)
    return rows.assign(tuning_rung=rows["tuning_rung"].fillna(0).astype(int))


def point_scores(tables: Iterable[pd.DataFrame]) -> pd.Series:
    """Score of every point at the last rung it reached: the mean over tuning seeds of its
    final validation loss there."""
    rows = _rung_rows(tables)
    last = rows.groupby("tuning_point")["tuning_rung"].transform("max")
    return rows[rows["tuning_rung"] == last].groupby("tuning_point")["value"].mean().sort_index()


def point_rungs(tables: Iterable[pd.DataFrame]) -> pd.Series:
    """The last rung every point reached (0 for every point without successive halving)."""
    return _rung_rows(tables).groupby("tuning_point")["tuning_rung"].max().sort_index()


def select_point(params: Params, setting: str, tables: Iterable[pd.DataFrame]) -> int:
    """The chosen point of ``setting``: the lowest finite score among the points that reached
    the last rung (every point without successive halving), the first on ties."""
    tables = list(tables)
    scores = point_scores(tables)
    expected = len(grid_points(params, setting))
    if sorted(scores.index.astype(int)) != list(range(expected)):
        raise ValueError(f"{setting}: tuning results cover points {sorted(scores.index.astype(int))}, "
                         f"but the grid has {expected} (rerun its tuning jobs)")
    rungs = point_rungs(tables)
    scores = scores[rungs == rungs.max()]
    finite = scores[scores.map(math.isfinite)]
    if finite.empty:
        raise ValueError(f"{setting}: every point of its tuning grid diverged "
                         f"({len(scores)} points): widen tuning.grid.{setting}")
    return int(finite.idxmin())


def tuned_params(params: Params, setting: str, tables: Iterable[pd.DataFrame] | None) -> dict[str, Any]:
    """``params`` with the chosen point of ``setting`` applied (unchanged when untuned)."""
    if not grid_points(params, setting):
        return dict(params)
    if tables is None:
        raise ValueError(f"{setting} is tuned (tuning.grid.{setting}) but no tuning results were given")
    chosen = grid_points(params, setting)[select_point(params, setting, tables)]
    return apply_overrides(params, chosen, where=f"tuning.grid.{setting}")


def tuning_rows(params: Params, setting: str, tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The table rows of one method's tuning: every point's score at every rung it ran (the
    mean over tuning seeds; ``tuning_rung``, ``tuning_horizon``: the rung and its horizon,
    empty without successive halving) and the chosen values."""
    points = grid_points(params, setting)
    chosen = select_point(params, setting, tables)
    every = _rung_rows(tables)
    method = str(every["method"].iloc[0])
    if "tuning_horizon" not in every:
        every = every.assign(tuning_horizon=np.nan)
    means = every.groupby(["tuning_point", "tuning_rung"], sort=True).agg(
        value=("value", "mean"), tuning_horizon=("tuning_horizon", "first")).reset_index()
    halved = "tuning_rung" in pd.concat(list(tables)).columns
    rows = [{"method": method, "tuning_point": int(r.tuning_point), "tuning_values": point_label(points[r.tuning_point]),
             "tuning_param": None, **({"tuning_rung": int(r.tuning_rung), "tuning_horizon": r.tuning_horizon}
                                      if halved else {}),
             "metric": "tuning_validation_loss", "value": float(r.value)}
            for r in means.itertuples(index=False)]
    rows += [{"method": method, "tuning_point": chosen, "tuning_values": point_label(points[chosen]),
              "tuning_param": name, "metric": "tuning_chosen", "value": float(value)}
             for name, value in points[chosen].items()]
    return pd.DataFrame.from_records(rows)


def point_spec(params: Params, setting: str, point: int) -> dict[str, Any]:
    """Everything one tuning job depends on (its run parameters, seeds and point label, and
    the successive-halving settings where the target has them).

    The pipeline passes this, not the target's whole parameters, to the job, so editing
    another method's grid, the repetitions or the method list does not rerun it.
    """
    spec = {"params": tuning_params(params, setting, point), "seeds": tuning_seeds(params),
            "point": int(point), "label": point_label(grid_points(params, setting)[point])}
    halving = (params.get(TUNING_KEY) or {}).get("halving")
    return {**spec, "halving": dict(halving)} if halving else spec


def evaluate_point(run: Any, spec: Mapping[str, Any], setting: str, base_seed: int,
                   *, method_name: str | None = None, **extra: Any) -> pd.DataFrame:
    """Run one tuning job (a :func:`point_spec`) on every tuning seed; one row per seed.

    ``run`` is the experiment's run function; rows: ``method``, ``tuning_point``,
    ``tuning_values``, ``seed``, ``metric`` (``tuning_validation_loss``), ``value`` (the
    final validation loss, ``inf`` if the run diverged: non-finite, or stopped by
    :class:`~networkedfl.algorithms.NonFiniteError`).  ``method_name``: the ``method`` of
    a row whose run stopped (default: ``setting``).
    """
    rows = []
    for seed in spec["seeds"]:
        try:
            table = run(spec["params"], setting, int(seed), base_seed, **extra)
        except NonFiniteError as err:  # a diverged grid point is an outcome, scored inf
            log.info("tuning point %s (%s), seed %s diverged: %s", spec["point"], spec["label"], seed, err)
            rows.append({"method": method_name or setting, "tuning_point": int(spec["point"]),
                         "tuning_values": spec["label"], "seed": int(seed),
                         "metric": "tuning_validation_loss", "value": math.inf})
            continue
        method = str(table["method"].iloc[0]) if "method" in table and len(table) else setting
        rows.append({"method": method, "tuning_point": int(spec["point"]), "tuning_values": spec["label"],
                     "seed": int(seed), "metric": "tuning_validation_loss", "value": final_value(table)})
    return pd.DataFrame.from_records(rows)


def _held_out(fraction: float, m: int) -> int:
    k = int(round(float(fraction) * m))
    if not 0 < k < m:
        raise ValueError(f"validation_fraction {fraction} holds out {k} of {m} samples: need 1..{m - 1}")
    return k


def split_clients(rng: Any, fraction: float, *arrays: Any) -> tuple[list[Any], list[Any]]:
    """Hold out ``round(fraction * m)`` random samples of every client.

    ``arrays`` are ``(n, m, ...)`` per-client samples (the same ``m`` for every client);
    returns ``(train, validation)``, each a list of the arrays restricted to the kept and
    held-out samples (every client's own random subset, one draw for all arrays).
    """
    n, m = arrays[0].shape[:2]
    k = _held_out(fraction, m)
    order = rng.random((n, m)).argsort(axis=1)

    def take(a: Any, idx: Any) -> Any:
        return np.take_along_axis(a, idx.reshape(n, -1, *([1] * (a.ndim - 2))), axis=1)

    return [take(a, order[:, k:]) for a in arrays], [take(a, order[:, :k]) for a in arrays]


def evaluation_data(params: Params, rng: Any, x_train: Any, y_train: Any, x_test: Any,
                    y_test: Any) -> tuple[Any, Any, Any, Any, str]:
    """``(x_train, y_train, x_eval, y_eval, metric)`` of a run: the test data and
    ``"test_loss"``, or with ``validation_fraction`` in ``params`` the held-out part of the
    training data (:func:`split_clients`, drawn from ``rng``) and :data:`VALIDATION_METRIC`."""
    if params.get("validation_fraction") is None:
        return x_train, y_train, x_test, y_test, "test_loss"
    (x_train, y_train), (x_eval, y_eval) = split_clients(rng, params["validation_fraction"], x_train, y_train)
    return x_train, y_train, x_eval, y_eval, VALIDATION_METRIC


def split_ragged(rng: Any, fraction: float, blocks: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """:func:`split_clients` for clients of different sizes: ``blocks[i]`` is client ``i``'s
    ``(m_i, ...)`` array; every client holds out ``round(fraction * m_i)`` random rows (their
    original order kept)."""
    train, valid = [], []
    for block in blocks:  # data assembly, once per job
        k = _held_out(fraction, len(block))
        held = np.zeros(len(block), dtype=bool)
        held[rng.permutation(len(block))[:k]] = True
        train.append(block[~held])
        valid.append(block[held])
    return train, valid
