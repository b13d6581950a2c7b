"""The fused numba kernels of GTV Algorithm 1 (``networkedfl.gtv._kernels``) against the
NumPy path of :func:`gtv_primal_dual`: the same iterates bit for bit, whatever the penalty,
dimension (the ``d = 2`` pairs, the column-major ``d <= 8`` and the C-order ``d > 8``
layouts), step sizes, per-edge ``lambda`` and dual update; and the ``kernel`` argument's
choices and errors."""

import sys

import numpy as np
import pytest

import networkedfl.gtv as gtv_package
from networkedfl.graphs import EmpiricalGraph
from networkedfl.gtv import (
    DUAL_UPDATES,
    SquaredErrorLoss,
    UnprojectedEdges,
    get_penalty,
    gtv_primal_dual,
    linear_model_data,
    sampling_mask,
)

PENALTIES = ("l1", "nlasso", "mocha")
N_NODES, N_ITER = 200, 60


def _graph(rng, n=N_NODES, extra=3):
    """A random spanning tree plus about ``extra * n`` random edges, in random order."""
    order = rng.permutation(n)
    pairs = {tuple(sorted((int(order[k]), int(order[rng.integers(k)])))) for k in range(1, n)}
    ends = rng.integers(n, size=(extra * n, 2))
    pairs |= {(int(min(i, j)), int(max(i, j))) for i, j in ends if i != j}
    edges = np.array(sorted(pairs))[rng.permutation(len(pairs))]
    return EmpiricalGraph(n, edges, rng.uniform(0.3, 2.0, len(edges)))


def _problem(dim, seed=0):
    rng = np.random.default_rng(seed)
    graph = _graph(rng)
    data = linear_model_data(rng.standard_normal((graph.n_nodes, dim)), 4, 0.3, rng)
    loss = SquaredErrorLoss(data, sampling_mask(graph.n_nodes, 0.6, rng))
    # per-edge lambda with some zeros (a radius of 0: the clipping ties and MOCHA's 0 factor)
    lam = rng.uniform(0.0, 0.4, graph.n_edges) * (rng.random(graph.n_edges) > 0.15)
    return rng, graph, loss, lam


def _same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dual_update", DUAL_UPDATES)
@pytest.mark.parametrize("per_edge_sigma", [False, True])
@pytest.mark.parametrize("dim", [1, 2, 3, 9])
@pytest.mark.parametrize("name", PENALTIES)
def test_numba_iterates_are_bit_identical_to_numpy(name, dim, per_edge_sigma, dual_update):
    pytest.importorskip("numba")
    rng, graph, loss, lam = _problem(dim, seed=dim)
    sigma = rng.uniform(0.1, 0.45, graph.n_edges) if per_edge_sigma else None
    kwargs = {"sigma": sigma, "dual_update": dual_update}
    reference = gtv_primal_dual(graph, loss, name, lam, N_ITER, kernel="numpy", **kwargs)
    if name == "nlasso" and dim > 8:  # row norms of C-order arrays: NumPy's own order
        with pytest.raises(ValueError, match="d <= 8"):
            gtv_primal_dual(graph, loss, name, lam, N_ITER, kernel="numba", **kwargs)
        fused = gtv_primal_dual(graph, loss, name, lam, N_ITER, kernel="auto", **kwargs)
    else:
        fused = gtv_primal_dual(graph, loss, name, lam, N_ITER, kernel="numba", **kwargs)
    assert np.array_equal(fused.weights, reference.weights)
    assert np.array_equal(fused.duals, reference.duals)
    assert _same_bits(fused.weights, reference.weights) and _same_bits(fused.duals, reference.duals)
    assert fused.duals.flags.f_contiguous == reference.duals.flags.f_contiguous
    assert np.abs(reference.duals).max() > 0  # the duals moved


@pytest.mark.parametrize("name", PENALTIES)
def test_start_point_and_prox_step_are_honoured(name):
    pytest.importorskip("numba")
    rng, graph, loss, lam = _problem(2, seed=7)
    kwargs = {"w0": rng.standard_normal((graph.n_nodes, 2)),
              "u0": 0.1 * rng.standard_normal((graph.n_edges, 2)),
              "prox_tau": rng.uniform(0.05, 0.5, graph.n_nodes), "tau": 0.5 / graph.degrees}
    reference = gtv_primal_dual(graph, loss, name, 0.2, N_ITER, kernel="numpy", **kwargs)
    fused = gtv_primal_dual(graph, loss, name, 0.2, N_ITER, kernel="numba", **kwargs)
    assert _same_bits(fused.weights, reference.weights) and _same_bits(fused.duals, reference.duals)


@pytest.mark.parametrize("dim", [2, 3])
def test_callback_sees_the_same_fresh_iterates(dim):
    pytest.importorskip("numba")
    _, graph, loss, lam = _problem(dim, seed=3)
    runs = {}
    for kernel in ("numpy", "numba"):
        states = []
        result = gtv_primal_dual(graph, loss, "nlasso", lam, 20, kernel=kernel,
                                 callback=lambda s, states=states: states.append(s) or s.iteration == 15)
        assert result.n_iter == 15
        runs[kernel] = states
    for a, b in zip(runs["numpy"], runs["numba"], strict=True):
        assert a.iteration == b.iteration
        assert _same_bits(a.weights, b.weights) and _same_bits(a.duals, b.duals)
    # with a callback every iteration hands out new arrays (held states are not overwritten)
    duals = [s.duals for s in runs["numba"]]
    assert len({id(u) for u in duals}) == len(duals)
    assert not np.array_equal(duals[0], duals[-1])


def test_kernel_argument_is_validated():
    _, graph, loss, lam = _problem(2)
    for bad in ("fast", "NUMBA", None, 1):
        with pytest.raises(ValueError, match="kernel must be one of"):
            gtv_primal_dual(graph, loss, "nlasso", lam, 2, kernel=bad)


def test_numba_kernel_refuses_penalties_without_one():
    pytest.importorskip("numba")
    _, graph, loss, lam = _problem(2)
    wrapped = UnprojectedEdges(get_penalty("nlasso"), np.zeros(graph.n_edges, bool))
    with pytest.raises(ValueError, match="no fused kernel"):
        gtv_primal_dual(graph, loss, wrapped, lam, 2, kernel="numba")
    # "auto" keeps the NumPy path for it
    auto = gtv_primal_dual(graph, loss, wrapped, lam, 5)
    reference = gtv_primal_dual(graph, loss, wrapped, lam, 5, kernel="numpy")
    assert _same_bits(auto.weights, reference.weights)


def test_without_numba_auto_falls_back_and_numba_names_the_problem(monkeypatch):
    _, graph, loss, lam = _problem(2)
    reference = gtv_primal_dual(graph, loss, "nlasso", lam, 5, kernel="numpy")
    monkeypatch.delattr(gtv_package, "_kernels", raising=False)
    monkeypatch.setitem(sys.modules, "networkedfl.gtv._kernels", None)  # import fails
    with pytest.raises(ImportError, match=r"needs numba.*networkedfl\[fast\]"):
        gtv_primal_dual(graph, loss, "nlasso", lam, 5, kernel="numba")
    auto = gtv_primal_dual(graph, loss, "nlasso", lam, 5, kernel="auto")
    assert _same_bits(auto.weights, reference.weights) and _same_bits(auto.duals, reference.duals)
