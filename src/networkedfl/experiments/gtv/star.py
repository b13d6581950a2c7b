"""Star graph: learnt parameters as a function of lambda (GTV Sec. IX-B3, Figs. 12-13).

A centre node joined to all others with equal weight; ``w_bar_i ~ N(0, I)`` i.i.d. per
node.  For growing ``lambda`` GTV minimisation (nLasso) fuses all local models into one
(Theorem 2).  All ``lambda`` values of a repetition are solved at once on the disjoint
union of copies of the same star, with one ``lambda`` per copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..._nodedata import NodeData
from ...graphs import disjoint_union, star
from ...gtv import SquaredErrorLoss, gtv_primal_dual, linear_model_data
from ..claims import check_all
from ..registry import Claim, rng_for

__all__ = ["lambda_grid", "run_star_lambda", "spread", "star_lambda_claims"]

Params = Mapping[str, Any]


def lambda_grid(params: Params) -> np.ndarray:
    lo, hi = params["lam_range"]
    return np.logspace(np.log10(lo), np.log10(hi), int(params["n_lam"]))


def spread(weights: np.ndarray) -> float:
    """``s = max_i ||w_i - mean_j w_j||``."""
    return float(np.max(np.linalg.norm(weights - weights.mean(axis=0), axis=1)))


def run_star_lambda(
    params: Params, setting: str, seed: int, base_seed: int, *, experiment_id: str
) -> pd.DataFrame:
    rng = rng_for(base_seed, experiment_id, seed)
    n, d = int(params["n_nodes"]), int(params["d"])
    graph = star(n, weight=float(params["weight"]))
    true_w = rng.standard_normal((n, d))
    data = linear_model_data(true_w, int(params["m"]), float(params["sigma"]), rng)
    lams = lambda_grid(params)

    union, offsets = disjoint_union([graph] * lams.size)
    stacked = NodeData(np.tile(data.features, (lams.size, 1, 1)), np.tile(data.labels, (lams.size, 1)))
    lam_per_edge = np.repeat(lams, graph.n_edges)
    result = gtv_primal_dual(
        union, SquaredErrorLoss(stacked), params["penalty"], lam_per_edge, int(params["n_iter"])
    )
    local = np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(data.features, data.labels, strict=True)])

    records: list[dict[str, Any]] = []
    for k, lam in enumerate(lams):
        w = result.weights[offsets[k] : offsets[k + 1]]
        records.append({"lam": lam, "method": "primal_dual", "seed": seed, "metric": "spread", "value": spread(w)})
        for i in range(n):
            for c in range(d):
                records.append({"lam": lam, "node": i, "component": c, "method": "primal_dual",
                                "seed": seed, "metric": "weight", "value": w[i, c]})
    for i in range(n):
        for c in range(d):
            records.append({"lam": np.nan, "node": i, "component": c, "method": "local_least_squares",
                            "seed": seed, "metric": "weight", "value": local[i, c]})
    return pd.DataFrame.from_records(records)


def star_lambda_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    level = float(params["fusion_level"])
    spreads = table[table["metric"] == "spread"].pivot_table(index="lam", columns="seed", values="value")
    fused, stays, near_local = {}, {}, {}
    details = {}
    for seed in spreads.columns:
        s = spreads[seed].sort_index()
        threshold = level * s.iloc[0]
        fused[f"seed {seed}"] = bool(s.iloc[-1] <= threshold)
        details[f"seed {seed}"] = f"s(lam_min)={s.iloc[0]:.3g}, s(lam_max)={s.iloc[-1]:.3g}"
        below = (s <= threshold).to_numpy()
        first = int(np.argmax(below)) if below.any() else below.size
        stays[f"seed {seed}"] = bool(below.any() and below[first:].all())
    w = table[(table["metric"] == "weight")]
    lam_min = w.loc[w["method"] == "primal_dual", "lam"].min()
    pd_w = w[(w["method"] == "primal_dual") & (w["lam"] == lam_min)]
    loc_w = w[w["method"] == "local_least_squares"]
    key = ["seed", "node", "component"]
    merged = pd_w.merge(loc_w, on=key, suffixes=("_gtv", "_local"))
    tol = float(params["local_fit_tolerance"])
    for (seed, node), grp in merged.groupby(["seed", "node"]):
        rel = np.linalg.norm(grp["value_gtv"] - grp["value_local"]) / np.linalg.norm(grp["value_local"])
        near_local[f"seed {seed} node {node}"] = bool(rel <= tol)
    return [
        check_all(f"s(lambda_max) <= {level:g} * s(lambda_min): all local models fused", fused, details),
        check_all("once below that level, the spread stays below it for all larger lambda", stays),
        check_all(
            f"at lambda_min every w_i is within {tol:.0%} (relative l2) of node i's local least-squares fit",
            near_local,
        ),
    ]
