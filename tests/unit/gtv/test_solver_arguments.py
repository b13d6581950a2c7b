"""Issue 35 item 1: every step size and float argument of the GTV solvers is checked at entry,
for finiteness and sign, and the error names the argument (no run that returns NaN weights)."""

import numpy as np
import pytest

from networkedfl.graphs import chain_of_clusters
from networkedfl.gtv import (
    SquaredErrorLoss,
    fedavg_proximal,
    gtv_primal_dual,
    linear_model_data,
)


def problem():
    graph = chain_of_clusters([4, 4], 0.5)
    data = linear_model_data(np.repeat([[1.0, 0.0], [0.0, 1.0]], 4, axis=0), 5, 0.1, seed=1)
    return graph, SquaredErrorLoss(data)


BAD = [
    ("sigma", np.nan), ("sigma", np.inf), ("sigma", -1.0), ("sigma", 0.0),
    ("tau", np.inf), ("tau", np.nan), ("tau", -0.5), ("prox_tau", np.inf),
    ("gap_tol", np.nan), ("gap_tol", -1.0), ("lam", np.inf), ("lam", -0.1),
]


@pytest.mark.parametrize(("name", "value"), BAD, ids=[f"{n}={v}" for n, v in BAD])
def test_gtv_primal_dual_refuses_a_bad_float_naming_it(name, value):
    graph, loss = problem()
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        gtv_primal_dual(graph, loss, "nlasso", **{"lam": 0.1, name: value}, n_iter=5)


@pytest.mark.parametrize("name", ["w0", "u0"])
def test_starting_points_must_be_finite(name):
    graph, loss = problem()
    shape = (graph.n_nodes, 2) if name == "w0" else (graph.n_edges, 2)
    start = np.zeros(shape)
    start[0, 0] = np.nan
    with pytest.raises(ValueError, match=rf"^{name} must be finite"):
        gtv_primal_dual(graph, loss, "nlasso", 0.1, 5, **{name: start})


def test_a_sigma_array_names_the_first_bad_edge():
    graph, loss = problem()
    sigma = np.full(graph.n_edges, 0.4)
    sigma[2] = -1.0
    with pytest.raises(ValueError, match=r"sigma must be finite and positive.*edge 2"):
        gtv_primal_dual(graph, loss, "nlasso", 0.1, 5, sigma=sigma)


@pytest.mark.parametrize("tau", [np.inf, np.nan, -1.0, 0.0])
def test_fedavg_proximal_checks_its_step_size(tau):
    graph, loss = problem()
    with pytest.raises(ValueError, match=r"^tau must be finite and positive"):
        fedavg_proximal(loss, np.ones(graph.n_nodes, bool), np.full(graph.n_nodes, tau), 3)
