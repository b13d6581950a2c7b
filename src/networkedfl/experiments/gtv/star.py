"""Star graph: learnt parameters as a function of lambda (GTV Sec. IX-B3, Figs. 12-13).

A centre node joined to all others with equal weight; ``w_bar_i ~ N(0, I)`` i.i.d. per
node.  For growing ``lambda`` GTV minimisation (nLasso) fuses all local models into one
(Theorem 2).  The ``lambda`` values of a repetition are solved in increasing order along one
path (:func:`~networkedfl.gtv.gtv_lambda_path`: the restarted method, each solve warm-started
from the previous one and stopped on its certified relative gap ``rel_gap_tol``, at most
``n_iter`` iterations per ``lambda``).  Until issue 36 every ``lambda`` ran ``n_iter``
fixed-step iterations on a disjoint union of copies of the star.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...graphs import star
from ...gtv import SquaredErrorLoss, gtv_lambda_path, linear_model_data
from ...seeding import rng_for
from ..claims import every_seed
from ..registry import Claim

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
    path = gtv_lambda_path(graph, SquaredErrorLoss(data), params["penalty"], lams, int(params["n_iter"]),
                           rel_gap_tol=float(params["rel_gap_tol"]))
    local = np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(data.features, data.labels, strict=True)])

    records: list[dict[str, Any]] = []
    for k, lam in enumerate(lams):
        w = path.weights[k]
        records.append({"lam": lam, "method": "primal_dual", "seed": seed, "metric": "spread", "value": spread(w)})
        # the solve's iterations and certified relative gap (issue 36)
        records += [{"lam": lam, "method": "primal_dual", "seed": seed, "metric": metric, "value": value}
                    for metric, value in (("n_iter", float(path.n_iter[k])), ("rel_gap", path.rel_gap[k]))]
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
    """Theorem 2's fusion and the small-lambda limit, properties of every realisation: each is
    checked on every seed (one counterexample fails it)."""
    level = float(params["fusion_level"])
    spreads = table[table["metric"] == "spread"].pivot_table(index="lam", columns="seed", values="value")
    fused, stays, details = {}, {}, []
    for seed in spreads.columns:
        s = spreads[seed].dropna().sort_index()
        threshold = level * s.iloc[0]
        fused[seed] = bool(s.iloc[-1] <= threshold)
        below = (s <= threshold).to_numpy()
        first = int(np.argmax(below)) if below.any() else below.size
        stays[seed] = bool(below.any() and below[first:].all())
        at = f"{s.index[first]:.3g}" if below.any() else "none"
        details.append(f"seed {seed}: s(lam_min)={s.iloc[0]:.3g}, s(lam_max)={s.iloc[-1]:.3g}, first fused lam {at}")
    w = table[(table["metric"] == "weight")]
    lam_min = w.loc[w["method"] == "primal_dual", "lam"].min()
    pd_w = w[(w["method"] == "primal_dual") & (w["lam"] == lam_min)]
    loc_w = w[w["method"] == "local_least_squares"]
    key = ["seed", "node", "component"]
    merged = pd_w.merge(loc_w, on=key, suffixes=("_gtv", "_local"))
    tol = float(params["local_fit_tolerance"])
    gap = merged.assign(d2=(merged["value_gtv"] - merged["value_local"]) ** 2, l2=merged["value_local"] ** 2)
    per_node = gap.groupby(["seed", "node"])[["d2", "l2"]].sum()
    rel = np.sqrt(per_node["d2"] / per_node["l2"]).groupby(level="seed").max()
    near_local = {seed: bool(r <= tol) for seed, r in rel.items()}
    return [
        every_seed(f"s(lambda_max) <= {level:g} * s(lambda_min): all local models fused", fused, "; ".join(details)),
        every_seed("once below that level, the spread stays below it for all larger lambda", stays),
        every_seed(
            f"at lambda_min every w_i is within {tol:.0%} (relative l2) of node i's local least-squares fit",
            near_local, "largest relative distance per seed: " + ", ".join(f"{r:.3g}" for r in rel),
        ),
    ]
