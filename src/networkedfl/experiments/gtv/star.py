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

__all__ = ["critical_lambda", "lambda_grid", "run_star_lambda", "spread"]

Params = Mapping[str, Any]


def lambda_grid(params: Params) -> np.ndarray:
    lo, hi = params["lam_range"]
    return np.logspace(np.log10(lo), np.log10(hi), int(params["n_lam"]))


def spread(weights: np.ndarray) -> float:
    """``s = max_i ||w_i - mean_j w_j||``."""
    return float(np.max(np.linalg.norm(weights - weights.mean(axis=0), axis=1)))


def critical_lambda(features: np.ndarray, labels: np.ndarray, weight: float) -> float:
    """Theorem 2's critical lambda on the star: the smallest ``lambda`` at which nLasso (16)
    with the mean squared error (38) fuses every node at the pooled fit ``w_bar``.

    The proof of Theorem 2 (Sec. IX-A, Lemma 3) certifies the fused solution by a flow on the
    edges with ``||u_e||_2 <= lambda A_e`` that carries every node's gradient at ``w_bar``
    (the primal-dual witness); on a star with the centre as Lemma 3's hub node each leaf
    ``i`` has one edge, whose flow must carry ``grad f_i(w_bar)`` alone, so the condition
    (35) reads ``lambda >= max_i ||grad f_i(w_bar)||_2 / A`` (the centre's balance holds
    because the gradients at the pooled fit sum to zero).  On a tree the flow is unique:
    the bound is also necessary.  ``f_i(w) = ||y_i - X_i w||^2 / m_i``, so
    ``grad f_i(w) = 2 X_i^T (X_i w - y_i) / m_i``; ``features`` ``(n, m, d)`` with node 0
    the centre, ``labels`` ``(n, m)``, ``weight`` every edge's ``A``.
    """
    x, y = np.asarray(features, float), np.asarray(labels, float)
    m = x.shape[1]
    gram, moment = np.einsum("nmd,nme->de", x, x) / m, np.einsum("nmd,nm->d", x, y) / m
    w_bar = np.linalg.solve(gram, moment)  # the pooled fit: sum_i grad f_i(w_bar) = 0
    grads = 2.0 * np.einsum("nmd,nm->nd", x, np.einsum("nmd,d->nm", x, w_bar) - y) / m
    return float(np.max(np.linalg.norm(grads[1:], axis=1)) / weight)


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

    # Theorem 2's fusion point of this draw, beside the observed one (issue 41)
    records: list[dict[str, Any]] = [{"lam": np.nan, "method": "theorem_2", "seed": seed, "metric": "critical_lambda",
                                      "value": critical_lambda(np.stack(data.features), np.stack(data.labels),
                                                               float(params["weight"]))}]
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
