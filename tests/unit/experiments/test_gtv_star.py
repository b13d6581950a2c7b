"""GTV Fig. 13: Theorem 2's critical lambda on the star against the solver's fusion point."""

import numpy as np

from networkedfl.experiments.gtv.star import critical_lambda, spread
from networkedfl.graphs import star
from networkedfl.gtv import SquaredErrorLoss, gtv_lambda_path, linear_model_data


def test_the_star_fuses_exactly_above_the_critical_lambda():
    """Solved to a certified gap, nLasso on a star fuses every node just above the critical
    lambda and not just below it (the bound is sharp on a tree)."""
    rng = np.random.default_rng(3)
    graph = star(6, weight=2.0)
    data = linear_model_data(rng.standard_normal((6, 2)), 10, 0.1, rng)
    lam = critical_lambda(np.stack(data.features), np.stack(data.labels), 2.0)
    path = gtv_lambda_path(graph, SquaredErrorLoss(data), "nlasso", np.array([0.9 * lam, 1.02 * lam]), 20000,
                           rel_gap_tol=1e-12)
    below, above = (spread(w) for w in path.weights)
    assert above < 1e-4 * below
    assert below > 1e-3


def test_the_critical_lambda_scales_with_the_edge_weight():
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((5, 8, 3)), rng.standard_normal((5, 8))
    assert np.isclose(critical_lambda(x, y, 1.0), 4 * critical_lambda(x, y, 4.0))
