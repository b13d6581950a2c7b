"""The restarted primal-dual method, the certified gap and the lambda path (issue 36, item 3).

References: the closed form of the MOCHA problem (a linear system), KKT conditions read off
the returned weights on trees, the fixed-step method run to a tight certified gap, weak
duality against a high-accuracy reference, and a step-by-step transcription of Algorithm 1
for the fixed-step method, which the notebooks' variant must keep bit for bit.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from networkedfl.graphs import EmpiricalGraph, chain_of_clusters, star, stochastic_block_model
from networkedfl.gtv import (
    FeasibleDualMap,
    LambdaPath,
    NodeData,
    PrimalDualResult,
    SquaredErrorLoss,
    cluster_index_step_sizes,
    default_step_sizes,
    get_penalty,
    gtv_lambda_path,
    gtv_objective,
    gtv_primal_dual,
    linear_model_data,
    mocha_lambda_factor,
    primal_dual_gap,
    relative_gap,
    sampling_mask,
)
from networkedfl.gtv._restarted import _step_scale

PENALTIES = ("l1", "nlasso", "mocha")


def _problem(seed, n=24, masked=True, weighted=True, dim=2, noise=0.2):
    """A two-cluster SBM with random edge weights (or 1), data at 60 % of the nodes (or all)."""
    rng = np.random.default_rng(seed)
    graph = stochastic_block_model([n // 2, n - n // 2], 0.5, 0.1, rng)
    if weighted:
        graph = EmpiricalGraph(n, graph.edges, rng.uniform(0.3, 2.0, graph.n_edges), graph.clusters)
    true_w = rng.standard_normal((2, dim))[graph.clusters]
    data = linear_model_data(true_w, 5, noise, rng)
    mask = sampling_mask(n, 0.6, rng) if masked else np.ones(n, bool)
    return graph, SquaredErrorLoss(data, mask)


def _restarted(graph, loss, name, lam, tol=1e-12, **kwargs):
    return gtv_primal_dual(graph, loss, name, lam, 50_000, method="restarted", rel_gap_tol=tol, **kwargs)


def _mocha_solution(graph, loss, lam):
    """MOCHA's optimum: (blockdiag(Q_i) + 2 lam L (x) I) vec(w) = vec(b_i), Q_i = 2 X_i^T X_i / m."""
    x, y = loss.data.features, loss.data.labels
    n, m, d = x.shape
    keep = loss.mask.astype(float)[:, None, None]
    blocks = keep * 2.0 * np.einsum("nmi,nmj->nij", x, x) / m
    rhs = (keep[:, :, 0] * 2.0 * np.einsum("nmi,nm->ni", x, y) / m).ravel()
    laplacian = graph.incidence.T @ sp.diags(graph.weights) @ graph.incidence
    system = sp.block_diag(list(blocks)) + 2.0 * lam * sp.kron(laplacian, sp.identity(d))
    return sp.linalg.spsolve(system.tocsc(), rhs).reshape(n, d)


# ---------------------------------------------------------------- the same solutions


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_mocha_restarted_reaches_the_closed_form(masked, weighted):
    graph, loss = _problem(1, masked=masked, weighted=weighted)
    expected = _mocha_solution(graph, loss, 0.3)
    result = _restarted(graph, loss, "mocha", 0.3)
    assert result.converged and result.rel_gap <= 1e-12
    np.testing.assert_allclose(result.weights, expected, atol=1e-6)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("name", PENALTIES)
def test_restarted_reaches_the_fixed_step_solution(name, masked):
    """Both methods to a certified relative gap of 1e-11 on a weighted graph: the same
    objective, and with data at every node (a strongly convex loss: one minimiser) the same
    weights."""
    graph, loss = _problem(2, masked=masked)
    lam = 0.05
    restarted = _restarted(graph, loss, name, lam, tol=1e-11)
    plain = gtv_primal_dual(graph, loss, name, lam, 200_000, rel_gap_tol=1e-11)
    assert restarted.converged and plain.converged
    p_restarted, p_plain = (gtv_objective(graph, loss, name, lam, r.weights) for r in (restarted, plain))
    assert p_restarted == pytest.approx(p_plain, rel=3e-11)
    if not masked:
        np.testing.assert_allclose(restarted.weights, plain.weights, atol=1e-5)


def test_restarted_needs_far_fewer_iterations_where_nodes_without_data_must_travel():
    """The regime of issue 36: 40 % of the nodes without data and a small lambda, where the
    fixed steps move such a node by at most about lambda per iteration.  Iteration counts
    (deterministic), not times."""
    graph, loss = _problem(15, n=60, weighted=False, noise=0.0)
    restarted = _restarted(graph, loss, "nlasso", 0.001, tol=1e-6)
    plain = gtv_primal_dual(graph, loss, "nlasso", 0.001, 100_000, rel_gap_tol=1e-6)
    assert restarted.converged and plain.converged
    assert restarted.n_iter * 5 < plain.n_iter


def _subgradient_flows(graph, loss, weights):
    """The flows u with grad L_i(w_i) + (D^T u)_i = 0 (unique on a tree), and the residual."""
    x, y = loss.data.features, loss.data.labels
    m = x.shape[1]
    grad = loss.mask[:, None] * 2.0 / m * np.einsum("nmi,nm->ni", x, np.einsum("nmi,ni->nm", x, weights) - y)
    transpose = graph.incidence.T.toarray()
    flows = np.linalg.lstsq(transpose, -grad, rcond=None)[0]
    return flows, np.abs(transpose @ flows + grad).max()


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("name", ["l1", "nlasso"])
@pytest.mark.parametrize("tree", ["chain", "star"])
def test_kkt_conditions_hold_at_the_restarted_solution_on_trees(tree, name, masked):
    """On a tree the stationarity condition fixes the flows; they must lie in the
    subdifferential of lambda A_e phi at (D w)_e: on the boundary of the dual ball, pointing
    along (D w)_e, where an edge is not fused, inside it where it is."""
    rng = np.random.default_rng(3)
    if tree == "chain":
        graph = chain_of_clusters([4, 4], bridge_weight=0.7)
    else:
        graph = EmpiricalGraph(8, star(8).edges, rng.uniform(0.5, 1.5, 7), np.array([0] * 4 + [1] * 4))
    data = linear_model_data(np.array([[1.0, -1.0], [-1.0, 1.0]])[graph.clusters], 10, 0.3, rng)
    mask = np.array([1, 0, 1, 1, 1, 0, 1, 1], bool) if masked else np.ones(8, bool)
    loss = SquaredErrorLoss(data, mask)
    lam = 3.0
    result = _restarted(graph, loss, name, lam, tol=1e-13)
    flows, residual = _subgradient_flows(graph, loss, result.weights)
    assert residual < 1e-7
    diff, radius = graph.incidence @ result.weights, lam * graph.weights
    if name == "nlasso":
        norms = np.linalg.norm(diff, axis=1)
        free = norms > 1e-6
        assert np.all(np.linalg.norm(flows, axis=1) <= radius * (1 + 1e-6))
        np.testing.assert_allclose(flows[free], radius[free, None] * diff[free] / norms[free, None], atol=1e-6)
    else:
        free = np.abs(diff) > 1e-6
        assert np.all(np.abs(flows) <= radius[:, None] * (1 + 1e-6))
        np.testing.assert_allclose(flows[free], (radius[:, None] * np.sign(diff))[free], atol=1e-6)
    assert free.any() and (~free).any()  # both regimes occur


# ---------------------------------------------------------------- the certificate


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("name", PENALTIES)
def test_certified_gap_bounds_the_suboptimality_along_the_iterates(name, masked):
    """Weak duality against a high-accuracy reference (MOCHA: the closed form): at every
    iterate of the restarted method, gap >= P(w_k) - p* and rel_gap >= (P(w_k) - p*) / P(w_k);
    the stopping rule at 1e-6 therefore stops within 1e-6 of the optimum."""
    graph, loss = _problem(4, masked=masked)
    lam = 0.1
    if name == "mocha":
        optimum = gtv_objective(graph, loss, name, lam, _mocha_solution(graph, loss, lam))
    else:
        reference = _restarted(graph, loss, name, lam, tol=1e-14)
        optimum = gtv_objective(graph, loss, name, lam, reference.weights)  # >= p*, within 1e-14
    seen = []

    def check(state):
        primal = gtv_objective(graph, loss, name, lam, state.weights)
        gap = primal_dual_gap(graph, loss, name, lam, state.weights, state.duals)
        assert gap >= primal - optimum - 1e-12
        if np.isfinite(gap) and gap < primal:
            assert gap / primal >= (primal - optimum) / primal - 1e-12
        seen.append(gap)

    result = gtv_primal_dual(graph, loss, name, lam, 40_000, method="restarted", rel_gap_tol=1e-6,
                             callback=check)
    assert result.converged and len(seen) == result.n_iter
    finite = [gap for gap in seen if np.isfinite(gap)]
    assert finite[-1] == seen[-1] and seen[-1] < 1e-3 * finite[0]
    primal = gtv_objective(graph, loss, name, lam, result.weights)
    assert 0.0 <= primal - optimum <= 1e-6 * primal + 1e-12
    assert result.gap == pytest.approx(seen[-1], rel=1e-9)
    assert result.rel_gap == pytest.approx(relative_gap(primal, primal - result.gap), rel=1e-6)


@pytest.mark.parametrize("mask_kind", ["stretches", "random"])
def test_routing_zeroes_the_flow_at_every_node_without_data(mask_kind):
    """The feasible dual map on a chain with long stretches without data (routing depth up to
    4) and on an SBM: zero flow at the nodes without data to rounding, the flows within the
    balls, and the conjugate of the loss finite."""
    rng = np.random.default_rng(5)
    if mask_kind == "stretches":
        graph = chain_of_clusters([10, 10], bridge_weight=0.5)
        mask = np.zeros(20, bool)
        mask[[0, 9, 10, 19]] = True  # 8 nodes between two with data, depth up to 4
    else:
        graph = stochastic_block_model([30, 30], 0.2, 0.05, rng)
        mask = sampling_mask(60, 0.3, rng)
    data = linear_model_data(rng.standard_normal((graph.n_nodes, 3)), 5, 0.1, rng)
    loss = SquaredErrorLoss(data, mask)
    duals = rng.standard_normal((graph.n_edges, 3))
    for name in PENALTIES:
        radius = 0.5 * graph.weights
        repaired = FeasibleDualMap(graph, loss, radius)(graph, get_penalty(name), radius, duals)
        flow = graph.incidence.T @ repaired
        np.testing.assert_allclose(flow[~mask], 0.0, atol=1e-12)
        assert np.all(np.isfinite(loss.conjugate(-flow)))
        assert np.isfinite(get_penalty(name).conjugate(repaired, radius).sum())


def test_zero_weight_edges_carry_no_routed_flow():
    """An edge with lambda A_e = 0 has a zero dual (its conjugate forces it): the routing uses
    the other edges, and a node whose only edges have weight 0 has no feasible dual point."""
    graph = EmpiricalGraph(4, np.array([[0, 1], [1, 2], [2, 3], [0, 2]]), np.array([1.0, 0.0, 1.0, 1.0]))
    rng = np.random.default_rng(6)
    data = linear_model_data(rng.standard_normal((4, 2)), 5, 0.1, rng)
    loss = SquaredErrorLoss(data, np.array([True, False, False, True]))
    radius = 0.3 * graph.weights
    duals = rng.standard_normal((4, 2))
    duals[1] = 0.0
    repaired = FeasibleDualMap(graph, loss, radius)(graph, get_penalty("nlasso"), radius, duals)
    assert repaired is not None and np.all(repaired[1] == 0.0)
    np.testing.assert_allclose((graph.incidence.T @ repaired)[[1, 2]], 0.0, atol=1e-14)
    # node 1's edges are {0,1} (weight 1) and {1,2} (weight 0): cut {0,1} too and node 1 is alone
    cut = EmpiricalGraph(4, graph.edges, np.array([0.0, 0.0, 1.0, 1.0]))
    assert FeasibleDualMap(cut, loss, 0.3 * cut.weights)(cut, get_penalty("nlasso"), 0.3 * cut.weights,
                                                          duals) is None


def test_relative_gap_definition():
    assert relative_gap(2.0, 1.0) == 0.5
    assert relative_gap(1.0, -3.0) == pytest.approx(4.0 / 3.0)
    assert relative_gap(0.0, 0.0) == 0.0
    assert relative_gap(1.0, float("-inf")) == float("inf")


# ---------------------------------------------------------------- determinism and arguments


def test_restarted_runs_are_deterministic_and_kernel_independent():
    graph, loss = _problem(7, n=40)
    first = _restarted(graph, loss, "nlasso", 0.01, tol=1e-8, kernel="numpy")
    again = _restarted(graph, loss, "nlasso", 0.01, tol=1e-8, kernel="numpy")
    assert first.n_restarts > 0
    for a, b in ((first.weights, again.weights), (first.duals, again.duals)):
        assert a.tobytes() == b.tobytes()
    assert (first.n_iter, first.n_restarts, first.primal_weight) == (again.n_iter, again.n_restarts,
                                                                      again.primal_weight)
    pytest.importorskip("numba")
    fused = _restarted(graph, loss, "nlasso", 0.01, tol=1e-8, kernel="numba")
    assert fused.weights.tobytes() == first.weights.tobytes() and fused.n_iter == first.n_iter


def test_the_callback_sees_every_iterate_and_can_stop_the_restarted_method():
    graph, loss = _problem(8)
    iterations = []
    result = _restarted(graph, loss, "l1", 0.05, tol=1e-9,
                        callback=lambda s: iterations.append(s.iteration) or s.iteration == 30)
    assert iterations == list(range(1, 31)) and result.n_iter == 30 and not result.converged
    # stopping does not change the iterates: the first 30 of a longer run
    longer = gtv_primal_dual(graph, loss, "l1", 0.05, 30, method="restarted")
    assert longer.weights.tobytes() == result.weights.tobytes()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "pdlp"}, "method must be one of"),
    ({"method": None}, "method must be one of"),
    ({"rel_gap_tol": 0.0}, "rel_gap_tol must be a positive number"),
    ({"rel_gap_tol": -1e-6}, "rel_gap_tol must be a positive number"),
    ({"rel_gap_tol": float("nan")}, "rel_gap_tol must be a positive number"),
    ({"rel_gap_tol": "1e-6"}, "rel_gap_tol must be a positive number"),
    ({"primal_weight": 0.0}, "primal_weight must be a positive finite number"),
    ({"primal_weight": float("inf")}, "primal_weight must be a positive finite number"),
    ({"gap_every": 0}, "gap_every must be a positive integer"),
    ({"gap_every": 2.5}, "gap_every must be a positive integer"),
    ({"method": "restarted", "prox_tau": 0.5}, "prox_tau is not supported with method='restarted'"),
    ({"method": "restarted", "dual_update": "doubled_difference"},
     "dual_update='doubled_difference' is not supported with method='restarted'"),
])
def test_bad_arguments_are_refused_naming_the_argument(kwargs, message):
    graph, loss = _problem(9, n=10)
    with pytest.raises(ValueError, match=message):
        gtv_primal_dual(graph, loss, "nlasso", 0.1, 10, **kwargs)


def test_step_scale_meets_the_convergence_condition():
    """eta puts ||Sigma^1/2 D T^1/2||^2 at 0.95 / 1.02 of the Lanczos estimate: below 1, and
    above the default steps' value on an SBM (larger steps); exact (dense) on small graphs."""
    for n in (30, 150):  # dense eigenvalues below 64 nodes, Lanczos above
        graph, _ = _problem(10, n=n, masked=False)
        tau, sigma = default_step_sizes(graph)
        eta = _step_scale(graph, tau, sigma)
        op = sp.diags(np.sqrt(eta * sigma)) @ graph.incidence @ sp.diags(np.sqrt(eta * tau))
        norm2 = np.linalg.eigvalsh((op.T @ op).toarray())[-1]  # ||op||^2, dense
        assert 0.9 < norm2 < 0.95 and eta > 1.0


# ---------------------------------------------------------------- the lambda path


@pytest.mark.parametrize("name", PENALTIES)
def test_lambda_path_equals_cold_solves(name):
    """Warm starts change the work, not the result: every solve on the path meets the same
    certified gap as a cold solve, and they agree to it; the path takes fewer iterations."""
    graph, loss = _problem(11, n=40)
    lams = [0.001, 0.01, 0.03, 0.1, 0.3, 1.0]
    path = gtv_lambda_path(graph, loss, name, lams, rel_gap_tol=1e-10)
    assert isinstance(path, LambdaPath) and len(path) == 6 and path.weights.shape == (6, 40, 2)
    assert path.converged.all() and np.all(path.rel_gap <= 1e-10)
    cold = [_restarted(graph, loss, name, lam, tol=1e-10) for lam in lams]
    for k, (lam, result) in enumerate(zip(lams, cold, strict=True)):
        p_path = gtv_objective(graph, loss, name, lam, path.weights[k])
        p_cold = gtv_objective(graph, loss, name, lam, result.weights)
        assert p_path == pytest.approx(p_cold, rel=2e-10)
        # the path's own certificate, recomputed from its iterates
        gap = primal_dual_gap(graph, loss, name, lam, path.weights[k], path.duals[k])
        assert 0.0 <= gap <= 1e-10 * p_path * (1 + 1e-6)
    assert path.n_iter.sum() < sum(r.n_iter for r in cold)
    item = path[2]
    assert isinstance(item, PrimalDualResult) and np.array_equal(item.weights, path.weights[2])
    assert item.n_iter == path.n_iter[2] and item.rel_gap == path.rel_gap[2]


def test_lambda_path_without_warm_start_is_the_cold_solves_bit_for_bit():
    graph, loss = _problem(12, n=20)
    lams = np.array([0.3, 0.01])
    path = gtv_lambda_path(graph, loss, "nlasso", lams, rel_gap_tol=1e-8, warm_start=False)
    for k, lam in enumerate(lams):
        cold = _restarted(graph, loss, "nlasso", lam, tol=1e-8)
        assert path.weights[k].tobytes() == cold.weights.tobytes() and path.n_iter[k] == cold.n_iter


@pytest.mark.parametrize("lams", [[], [-0.1, 1.0], [[0.1, 0.2]], [0.1, float("nan")], "0.1"])
def test_lambda_path_refuses_bad_grids(lams):
    graph, loss = _problem(13, n=10)
    with pytest.raises(ValueError, match="lams must be a non-empty 1-D sequence"):
        gtv_lambda_path(graph, loss, "nlasso", lams)
    with pytest.raises(ValueError, match="warm_start must be True or False"):
        gtv_lambda_path(graph, loss, "nlasso", [0.1], warm_start="yes")


# ---------------------------------------------------------------- the fixed-step method, bit for bit


def _algorithm_1(graph, loss, name, lam, n_iter, prox_tau, extrapolation):
    """Algorithm 1 transcribed step by step, in the floating-point operations documented in
    :mod:`networkedfl.gtv._kernels` (gathers for D v up to d = 8, scipy's product beyond)."""
    tau, sigma = default_step_sizes(graph)
    penalty, radius = get_penalty(name), lam * graph.weights
    prox = loss.prox_operator(tau if prox_tau is None else prox_tau)
    head, tail = graph.edges[:, 0], graph.edges[:, 1]
    d = loss.dim
    w, u = np.zeros((graph.n_nodes, d)), np.zeros((graph.n_edges, d))
    for _ in range(n_iter):
        w_new = prox((graph.incidence.T @ u) * (-tau)[:, None] + w)
        v = 2.0 * w_new - (w if extrapolation == 1.0 else extrapolation * w)
        diff = (v[head] - v[tail]) if d <= 8 else graph.incidence @ v
        u = penalty.dual_prox(u + diff * sigma[:, None], sigma, radius)
        w = w_new
    return w, u


@pytest.mark.parametrize("kernel", ["numpy", "numba"])
@pytest.mark.parametrize("dim", [2, 12])
@pytest.mark.parametrize("name", PENALTIES)
def test_fixed_step_method_with_the_notebooks_options_is_algorithm_1_bit_for_bit(name, dim, kernel):
    """The published variant's iteration (sum of squared errors, the cluster-index prox step,
    MOCHA's notebook step as a smaller lambda; the MNIST notebooks' doubled difference) is
    unchanged by the restarted method's refactoring: the same bits as the transcription."""
    if kernel == "numba":
        pytest.importorskip("numba")
        if name == "nlasso" and dim > 8:
            pytest.skip("no nLasso kernel for d > 8 (the solver refuses kernel='numba' there)")
    rng = np.random.default_rng(14)
    graph = stochastic_block_model([8, 8], 0.6, 0.1, rng)
    data = NodeData(rng.standard_normal((16, 5, dim)), rng.standard_normal((16, 5)))
    loss = SquaredErrorLoss(data, sampling_mask(16, 0.6, rng), reduction="sum")
    lam = 0.05 * (mocha_lambda_factor("notebook_sbm") if name == "mocha" else 1.0)
    prox_tau = cluster_index_step_sizes(graph)[0]
    for extrapolation, update in ((1.0, "extrapolated"), (2.0, "doubled_difference")):
        expected = _algorithm_1(graph, loss, name, lam, 40, prox_tau, extrapolation)
        got = gtv_primal_dual(graph, loss, name, lam, 40, prox_tau=prox_tau, dual_update=update, kernel=kernel)
        assert got.weights.tobytes() == np.ascontiguousarray(expected[0]).tobytes()
        assert np.ascontiguousarray(got.duals).tobytes() == np.ascontiguousarray(expected[1]).tobytes()
