"""GTV Algorithm 1 (primal-dual) against independent solutions.

References used: the closed-form solution of the quadratic MOCHA problem, a KKT
certificate computed from the returned weights alone (on trees), brute-force
minimisation on tiny problems, the weak-duality bound, decoupling of components and
the local least-squares fits for ``lambda = 0``.
"""

import numpy as np
import pytest
from scipy.optimize import minimize

from networkedfl.graphs import (
    EmpiricalGraph,
    GraphError,
    chain_of_clusters,
    disjoint_union,
    star,
    stochastic_block_model,
)
from networkedfl.gtv import (
    FeasibleDualMap,
    HistoryRecorder,
    NodeData,
    SquaredErrorLoss,
    default_step_sizes,
    get_penalty,
    gtv_objective,
    gtv_primal_dual,
    linear_model_data,
    primal_dual_gap,
)

PENALTIES = ("l1", "nlasso", "mocha")


# ---------------------------------------------------------------- independent references


def _phi(name, v):
    if name == "l1":
        return float(np.sum(np.abs(v)))
    if name == "nlasso":
        return float(np.sqrt(np.sum(v**2)))
    return float(np.sum(v**2))


def _objective(graph, data, mask, name, lam, w):
    """sum_{i in M} (1/m)||y_i - X_i w_i||^2 + sum_e lam_e A_e phi(w_i - w_j), by loops."""
    lam = np.broadcast_to(np.asarray(lam, float), (graph.n_edges,))
    total = 0.0
    for i in range(data.n_nodes):
        if mask[i]:
            total += float(np.mean((data.labels[i] - data.features[i] @ w[i]) ** 2))
    for e, ((i, j), a) in enumerate(zip(graph.edges, graph.weights, strict=True)):
        total += lam[e] * a * _phi(name, w[i] - w[j])
    return total


def _local_gradients(data, mask, w):
    """grad L_i(w_i) = (2/m) X_i^T (X_i w_i - y_i) for i in M, 0 otherwise."""
    m = data.max_samples
    grad = np.zeros_like(w)
    for i in range(data.n_nodes):
        if mask[i]:
            x, y = data.features[i], data.labels[i]
            grad[i] = 2.0 / m * x.T @ (x @ w[i] - y)
    return grad


def _random_connected_graph(rng, n, extra_p=0.35):
    """Random spanning tree plus random extra edges, random positive weights."""
    order = rng.permutation(n)
    pairs = {tuple(sorted((int(order[k]), int(order[rng.integers(k)])))) for k in range(1, n)}
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < extra_p:
                pairs.add((i, j))
    pairs = sorted(pairs)
    return EmpiricalGraph(n, np.array(pairs), rng.uniform(0.3, 2.0, len(pairs)))


def _mocha_closed_form(graph, data, mask, lam):
    """Solve (blockdiag(2 X_i^T X_i/m) + 2 lam (L kron I_d)) vec(w) = vec(2 X_i^T y_i/m)."""
    n, m, d = data.features.shape
    h = np.zeros((n * d, n * d))
    rhs = np.zeros(n * d)
    for i in range(n):
        if mask[i]:
            x, y = data.features[i], data.labels[i]
            h[i * d : (i + 1) * d, i * d : (i + 1) * d] = 2.0 * x.T @ x / m
            rhs[i * d : (i + 1) * d] = 2.0 * x.T @ y / m
    lap = np.zeros((n, n))
    for (i, j), a in zip(graph.edges, graph.weights, strict=True):
        lap[i, i] += a
        lap[j, j] += a
        lap[i, j] -= a
        lap[j, i] -= a
    h += 2.0 * lam * np.kron(lap, np.eye(d))
    return np.linalg.solve(h, rhs).reshape(n, d)


def _pooled_least_squares(data, nodes):
    x = np.concatenate([data.features[i] for i in nodes])
    y = np.concatenate([data.labels[i] for i in nodes])
    return np.linalg.lstsq(x, y, rcond=None)[0]


# ---------------------------------------------------------------- objective


@pytest.mark.parametrize("name", PENALTIES)
def test_gtv_objective_matches_definition(name):
    rng = np.random.default_rng(0)
    graph = _random_connected_graph(rng, 7)
    data = NodeData(rng.standard_normal((7, 5, 3)), rng.standard_normal((7, 5)))
    mask = rng.random(7) < 0.6
    loss = SquaredErrorLoss(data, mask)
    for lam in (0.0, 0.4, rng.uniform(0, 2, graph.n_edges)):
        w = rng.standard_normal((7, 3))
        assert gtv_objective(graph, loss, name, lam, w) == pytest.approx(
            _objective(graph, data, mask, name, lam, w), rel=1e-12
        )


# ---------------------------------------------------------------- (a) MOCHA closed form


@pytest.mark.parametrize("masked", [False, True])
def test_mocha_converges_to_closed_form(masked):
    rng = np.random.default_rng(21)
    n, m, d = 6, 4, 2
    graph = _random_connected_graph(rng, n)
    data = NodeData(rng.standard_normal((n, m, d)), rng.standard_normal((n, m)))
    mask = np.array([1, 0, 1, 1, 0, 1], bool) if masked else np.ones(n, bool)
    lam = 0.7
    expected = _mocha_closed_form(graph, data, mask, lam)
    res = gtv_primal_dual(graph, SquaredErrorLoss(data, mask), "mocha", lam, 4000)
    np.testing.assert_allclose(res.weights, expected, atol=1e-8)
    # the closed form is indeed stationary: grad L_i + 2 lam sum_j A_ij (w_i - w_j) = 0
    stationarity = _local_gradients(data, mask, expected)
    for (i, j), a in zip(graph.edges, graph.weights, strict=True):
        stationarity[i] += 2 * lam * a * (expected[i] - expected[j])
        stationarity[j] -= 2 * lam * a * (expected[i] - expected[j])
    np.testing.assert_allclose(stationarity, 0.0, atol=1e-10)


# ---------------------------------------------------------------- (b) KKT certificate on trees


def _kkt_problem(kind, masked):
    rng = np.random.default_rng(31)
    m = 10
    if kind == "chain":
        graph = chain_of_clusters([3, 3], bridge_weight=1.0)
        groups = graph.clusters
        mask = np.array([1, 0, 1, 1, 1, 0], bool)
    else:
        graph = EmpiricalGraph(7, star(7).edges, rng.uniform(0.5, 1.5, 6))
        groups = np.array([0, 0, 0, 0, 1, 1, 1])
        mask = np.array([1, 1, 0, 1, 1, 0, 1], bool)
    true_w = np.array([[1.0, -1.0], [-1.0, 1.0]])[groups]
    data = linear_model_data(true_w, m, 0.3, rng)
    if not masked:
        mask = np.ones(graph.n_nodes, bool)
    return graph, data, mask


@pytest.mark.parametrize("name", ["nlasso", "l1"])
@pytest.mark.parametrize("kind", ["chain", "star"])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("lam", [0.2, 0.3])
def test_kkt_certificate_on_trees(name, kind, masked, lam):
    graph, data, mask = _kkt_problem(kind, masked)
    res = gtv_primal_dual(graph, SquaredErrorLoss(data, mask), name, lam, 3000)
    w = res.weights
    d_mat = graph.incidence.toarray()
    assert np.linalg.matrix_rank(d_mat.T) == graph.n_edges  # tree: D^T has full column rank
    grad = _local_gradients(data, mask, w)
    # stationarity: grad + D^T u = 0 has a solution u ...
    u, *_ = np.linalg.lstsq(d_mat.T, -grad, rcond=None)
    np.testing.assert_allclose(d_mat.T @ u + grad, 0.0, atol=1e-8)
    # ... with u_e in the subdifferential of r_e phi at v_e = (D w)_e
    v = d_mat @ w
    radius = lam * graph.weights
    tol = 1e-7
    n_fused = n_free = 0
    if name == "nlasso":
        for e in range(graph.n_edges):
            norm_v = np.linalg.norm(v[e])
            assert np.linalg.norm(u[e]) <= radius[e] * (1 + 1e-6)
            if norm_v > tol:
                n_free += 1
                np.testing.assert_allclose(u[e], radius[e] * v[e] / norm_v, atol=1e-6)
            else:
                n_fused += 1
    else:
        assert np.all(np.abs(u) <= radius[:, None] * (1 + 1e-6))
        free = np.abs(v) > tol
        n_free, n_fused = int(free.sum()), int((~free).sum())
        np.testing.assert_allclose(u[free], (radius[:, None] * np.sign(v))[free], atol=1e-6)
    # the instance exercises both regimes
    assert n_fused > 0 and n_free > 0


# ---------------------------------------------------------------- (c) brute force on a triangle


@pytest.mark.parametrize("name", PENALTIES)
@pytest.mark.parametrize("lam", [0.1, 0.3, 1.0])
def test_triangle_against_brute_force(name, lam):
    rng = np.random.default_rng(41)
    graph = EmpiricalGraph(3, np.array([[0, 1], [1, 2], [0, 2]]), rng.uniform(0.5, 1.5, 3))
    x = rng.standard_normal((3, 5, 1))
    y = x[:, :, 0] * np.array([[1.0], [1.3], [-0.5]]) + 0.2 * rng.standard_normal((3, 5))
    data = NodeData(x, y)
    mask = np.ones(3, bool)
    loss = SquaredErrorLoss(data, mask)
    res = gtv_primal_dual(graph, loss, name, lam, 5000)

    xs, (ei, ej), radius = x[:, :, 0], graph.edges.T, lam * graph.weights
    phi_1d = np.square if name == "mocha" else np.abs  # for d = 1, l1 = l2 norm = |.|

    def f(z):  # the objective for d = 1, all nodes sampled
        return float(np.sum(np.mean((y - xs * z[:, None]) ** 2, axis=1))
                     + np.sum(radius * phi_1d(z[ei] - z[ej])))

    z_test = rng.standard_normal(3)
    assert f(z_test) == pytest.approx(_objective(graph, data, mask, name, lam, z_test[:, None]))

    local = np.array([np.linalg.lstsq(x[i], y[i], rcond=None)[0][0] for i in range(3)])
    starts = [np.zeros(3), local, *rng.standard_normal((2, 3))]
    options = {"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000, "maxfev": 40000}
    best = None
    for x0 in starts:
        out = minimize(f, x0, method="Nelder-Mead", options=options)
        out = minimize(f, out.x, method="Nelder-Mead", options=options)  # restart
        if best is None or out.fun < best.fun:
            best = out
    pd_value = gtv_objective(graph, loss, name, lam, res.weights)
    assert pd_value <= best.fun + 1e-6
    np.testing.assert_allclose(res.weights[:, 0], best.x, atol=1e-3)


# ---------------------------------------------------------------- (d) primal-dual gap


def _gap_problem(masked):
    rng = np.random.default_rng(51)
    graph = _random_connected_graph(rng, 8)
    true_w = np.array([[1.0, 0.5], [-0.5, 1.0]])[np.arange(8) % 2]
    data = linear_model_data(true_w, 6, 0.2, rng)
    mask = np.array([1, 0, 1, 1, 0, 1, 1, 0], bool) if masked else np.ones(8, bool)
    return graph, data, mask


def _check_gap_along_iterates(graph, data, mask, name, lam, n_iter):
    loss = SquaredErrorLoss(data, mask)
    # an upper bound on the optimal value: the objective after many iterations
    # (for mocha the exact optimum from the closed form)
    if name == "mocha":
        w_star = _mocha_closed_form(graph, data, mask, lam)
    else:
        w_star = gtv_primal_dual(graph, loss, name, lam, 6000).weights
    p_upper = _objective(graph, data, mask, name, lam, w_star)
    gaps = []

    def record(state):
        if state.iteration in (1, 2, 5, 10, 20, 50, 100, 200, 500) or state.iteration % 250 == 0:
            gap = primal_dual_gap(graph, loss, name, lam, state.weights, state.duals)
            primal = _objective(graph, data, mask, name, lam, state.weights)
            gaps.append((state.iteration, gap, primal))

    gtv_primal_dual(graph, loss, name, lam, n_iter, callback=record)
    for _, gap, primal in gaps:
        assert gap >= -1e-9  # weak duality
        # the gap bounds the sub-optimality: primal - p* <= gap, hence primal - p_upper <= gap;
        # equivalently the dual value primal - gap is a lower bound of p* <= p_upper
        assert primal - p_upper <= gap + 1e-9
    return gaps


@pytest.mark.parametrize("name", PENALTIES)
def test_gap_nonnegative_and_vanishing_all_sampled(name):
    graph, data, mask = _gap_problem(masked=False)
    gaps = _check_gap_along_iterates(graph, data, mask, name, 0.2, 3000)
    finite = [g for _, g, _ in gaps if np.isfinite(g)]
    assert len(finite) == len(gaps)  # all nodes sampled: the dual is always feasible
    assert gaps[-1][1] < 1e-6
    assert gaps[0][1] > 1e3 * gaps[-1][1]


@pytest.mark.parametrize("name", PENALTIES)
def test_gap_tol_stops_with_converged_flag(name):
    graph, data, mask = _gap_problem(masked=False)
    loss = SquaredErrorLoss(data, mask)
    lam, gap_tol = 0.2, 1e-8
    res = gtv_primal_dual(graph, loss, name, lam, 20000, gap_tol=gap_tol, gap_every=7)
    assert res.converged
    assert res.n_iter < 20000 and res.n_iter % 7 == 0
    assert 0.0 <= res.gap <= gap_tol + 1e-12
    long = gtv_primal_dual(graph, loss, name, lam, 6000).weights
    assert _objective(graph, data, mask, name, lam, res.weights) <= (
        _objective(graph, data, mask, name, lam, long) + gap_tol + 1e-12
    )
    # without gap_tol the gap is not evaluated and the run is not flagged as converged
    plain = gtv_primal_dual(graph, loss, name, lam, 10)
    assert not plain.converged and np.isnan(plain.gap) and plain.n_iter == 10


@pytest.mark.parametrize("name", PENALTIES)
def test_gap_is_a_valid_certificate_with_unsampled_nodes(name):
    """Weak duality must also hold when some nodes carry the trivial loss L_i = 0.

    The gap is documented as non-negative and as bounding the sub-optimality (the dual is
    evaluated at a repaired feasible point), so the ``gap_tol`` stopping rule may only
    report convergence at a point within ``gap_tol`` of the optimum.
    """
    graph, data, mask = _gap_problem(masked=True)
    lam = 0.2
    _check_gap_along_iterates(graph, data, mask, name, lam, 1000)
    loss = SquaredErrorLoss(data, mask)
    gap_tol = 1e-9
    res = gtv_primal_dual(graph, loss, name, lam, 5000, gap_tol=gap_tol)
    if res.converged:
        assert res.gap >= -1e-12
        long = gtv_primal_dual(graph, loss, name, lam, 6000).weights
        assert _objective(graph, data, mask, name, lam, res.weights) <= (
            _objective(graph, data, mask, name, lam, long) + gap_tol + 1e-12
        )


def test_feasible_dual_map_repairs_infeasible_duals():
    graph, data, mask = _gap_problem(masked=True)
    loss = SquaredErrorLoss(data, mask)
    duals = np.random.default_rng(0).standard_normal((graph.n_edges, 2)) * 0.01
    # the raw iterate is infeasible: D^T u != 0 at the unsampled nodes
    assert np.all(np.linalg.norm(graph.incidence.T @ duals, axis=1)[~mask] > 1e-3)
    assert np.all(np.isinf(loss.conjugate(-(graph.incidence.T @ duals))[~mask]))
    for lam in (1.0, 1e-4):  # with 1e-4 the repaired flow must also be scaled into the balls
        radius = lam * graph.weights
        repaired = FeasibleDualMap(graph, loss, radius)(graph, get_penalty("nlasso"), radius, duals)
        flow = graph.incidence.T @ repaired
        np.testing.assert_allclose(flow[~mask], 0.0, atol=1e-14)
        assert np.all(np.linalg.norm(repaired, axis=1) <= radius * (1 + 1e-12))
        assert np.all(np.isfinite(loss.conjugate(-flow)))
        # a valid certificate at the arbitrary point w = 0: gap >= objective(0) - optimum >= 0
        gap = primal_dual_gap(graph, loss, "nlasso", lam, np.zeros((8, 2)), duals)
        assert np.isfinite(gap)
        assert gap >= gtv_objective(graph, loss, "nlasso", lam, np.zeros((8, 2))) - gtv_objective(
            graph, loss, "nlasso", lam, gtv_primal_dual(graph, loss, "nlasso", lam, 6000).weights
        ) - 1e-9


def test_gap_is_infinite_when_trivial_nodes_reach_no_data():
    # two components; the second has no sampled node, so no dual point is feasible
    graph, _ = disjoint_union([chain_of_clusters([2, 2], 1.0), chain_of_clusters([2], 1.0)])
    rng = np.random.default_rng(3)
    data = linear_model_data(rng.standard_normal((graph.n_nodes, 2)), 5, 0.1, rng)
    mask = np.arange(graph.n_nodes) < 4
    loss = SquaredErrorLoss(data, mask)
    duals = rng.standard_normal((graph.n_edges, 2))
    assert np.isinf(primal_dual_gap(graph, loss, "mocha", 1.0, np.zeros((6, 2)), duals))


# ---------------------------------------------------------------- (e) decoupling by a zero bridge


def _two_cluster_chain(k, bridge_weight, rng, noise):
    graph = chain_of_clusters([k, k], bridge_weight=bridge_weight)
    base = np.array([[1.0, 0.5], [0.4, 1.1]])[graph.clusters]
    true_w = base + 0.1 * rng.standard_normal(base.shape)  # heterogeneous within a cluster
    data = linear_model_data(true_w, 8, noise, rng)
    return graph, data


@pytest.mark.parametrize("name", PENALTIES)
def test_zero_bridge_decouples_halves(name):
    k = 4
    graph, data = _two_cluster_chain(k, 0.0, np.random.default_rng(61), noise=0.3)
    lam = 0.3
    full = gtv_primal_dual(graph, SquaredErrorLoss(data), name, lam, 3000).weights
    for half in (np.arange(k), np.arange(k, 2 * k)):
        sub = graph.subgraph(half)
        sub_data = NodeData(data.features[half], data.labels[half])
        part = gtv_primal_dual(sub, SquaredErrorLoss(sub_data), name, lam, 3000).weights
        np.testing.assert_allclose(full[half], part, atol=1e-7)
    # the halves really differ (no accidental fusion across the zero bridge)
    assert np.linalg.norm(full[k - 1] - full[k]) > 1e-2


def test_large_lambda_fuses_to_pooled_least_squares():
    k, lam = 4, 5.0
    rng = np.random.default_rng(62)
    graph, data = _two_cluster_chain(k, 0.0, rng, noise=0.0)
    halves = (np.arange(k), np.arange(k, 2 * k))
    cut = gtv_primal_dual(graph, SquaredErrorLoss(data), "nlasso", lam, 3000).weights
    for half in halves:
        np.testing.assert_allclose(cut[half], np.tile(_pooled_least_squares(data, half), (k, 1)),
                                   atol=1e-7)
    assert np.linalg.norm(cut[0] - cut[-1]) > 0.1
    # the same data on a chain whose bridge has weight 1: one common vector for everybody
    bridged = chain_of_clusters([k, k], bridge_weight=1.0)
    joint = gtv_primal_dual(bridged, SquaredErrorLoss(data), "nlasso", lam, 3000).weights
    pooled = _pooled_least_squares(data, np.arange(2 * k))
    np.testing.assert_allclose(joint, np.tile(pooled, (2 * k, 1)), atol=1e-7)


# ---------------------------------------------------------------- (f) lambda = 0


@pytest.mark.parametrize("name", PENALTIES)
def test_lambda_zero_gives_local_least_squares(name):
    rng = np.random.default_rng(71)
    graph = _random_connected_graph(rng, 7)
    n, m, d = 7, 12, 3
    data = NodeData(rng.standard_normal((n, m, d)), rng.standard_normal((n, m)))
    mask = np.array([1, 1, 0, 1, 0, 1, 1], bool)
    loss = SquaredErrorLoss(data, mask)
    res = gtv_primal_dual(graph, loss, name, 0.0, 3000)
    for i in range(n):
        if mask[i]:
            local = np.linalg.lstsq(data.features[i], data.labels[i], rcond=None)[0]
            np.testing.assert_allclose(res.weights[i], local, atol=1e-9)
        else:
            np.testing.assert_array_equal(res.weights[i], 0.0)
    np.testing.assert_array_equal(res.duals, 0.0)
    # unsampled nodes keep any initial value
    w0 = rng.standard_normal((n, d))
    res0 = gtv_primal_dual(graph, loss, name, 0.0, 50, w0=w0)
    np.testing.assert_array_equal(res0.weights[~mask], w0[~mask])


# ---------------------------------------------------------------- (g) isolated nodes


def test_isolated_node_needs_explicit_tau():
    graph = EmpiricalGraph(4, np.array([[0, 1], [1, 2]]), np.ones(2))
    rng = np.random.default_rng(81)
    data = NodeData(rng.standard_normal((4, 6, 2)), rng.standard_normal((4, 6)))
    loss = SquaredErrorLoss(data)
    with pytest.raises(GraphError, match="isolated"):
        gtv_primal_dual(graph, loss, "nlasso", 0.1, 10)
    with pytest.raises(GraphError, match="isolated"):
        default_step_sizes(graph)
    res = gtv_primal_dual(graph, loss, "nlasso", 0.1, 4000, tau=0.5)
    assert np.all(np.isfinite(res.weights))
    # the isolated node solves its own least-squares problem
    local = np.linalg.lstsq(data.features[3], data.labels[3], rcond=None)[0]
    np.testing.assert_allclose(res.weights[3], local, atol=1e-9)
    # the others solve the problem on the connected part
    part = graph.subgraph(np.arange(3))
    sub = gtv_primal_dual(part, SquaredErrorLoss(NodeData(data.features[:3], data.labels[:3])),
                          "nlasso", 0.1, 4000)
    np.testing.assert_allclose(res.weights[:3], sub.weights, atol=1e-8)


def test_default_step_sizes():
    graph = chain_of_clusters([2, 3], bridge_weight=0.0)
    tau, sigma = default_step_sizes(graph)
    np.testing.assert_allclose(tau, [1.0, 0.5, 0.5, 0.5, 1.0])  # 1/deg, zero weights count
    assert sigma.shape == (graph.n_edges,)
    # Chambolle-Pock condition ||Sigma^1/2 D T^1/2||^2 < 1
    d = graph.incidence.toarray()
    op = np.diag(np.sqrt(sigma)) @ d @ np.diag(np.sqrt(tau))
    assert np.linalg.norm(op, 2) ** 2 < 1.0


# ---------------------------------------------------------------- (h) callbacks


def test_history_recorder_and_early_stop():
    rng = np.random.default_rng(91)
    graph = _random_connected_graph(rng, 6)
    data = NodeData(rng.standard_normal((6, 5, 2)), rng.standard_normal((6, 5)))
    loss = SquaredErrorLoss(data)
    rec = HistoryRecorder(
        {"w00": lambda s: float(s.weights[0, 0]), "n_duals": lambda s: float(s.duals.shape[0])},
        every=5,
    )
    res = gtv_primal_dual(graph, loss, "nlasso", 0.3, 23, callback=rec)
    assert res.n_iter == 23
    assert [r["iteration"] for r in rec.records] == [5, 10, 15, 20]
    assert all(r["n_duals"] == graph.n_edges for r in rec.records)
    # the recorded value at iteration 20 is the weight of a 20-iteration run
    res20 = gtv_primal_dual(graph, loss, "nlasso", 0.3, 20)
    assert rec.records[-1]["w00"] == res20.weights[0, 0]

    seen = []

    def stop_at_7(state):
        seen.append(state.iteration)
        return state.iteration == 7

    early = gtv_primal_dual(graph, loss, "nlasso", 0.3, 100, callback=stop_at_7)
    assert early.n_iter == 7
    assert seen == list(range(1, 8))
    res7 = gtv_primal_dual(graph, loss, "nlasso", 0.3, 7)
    np.testing.assert_array_equal(early.weights, res7.weights)
    np.testing.assert_array_equal(early.duals, res7.duals)


# ---------------------------------------------------------------- (i) per-edge lambda


@pytest.mark.parametrize("name", PENALTIES)
def test_per_edge_lambda_on_disjoint_union(name):
    rng = np.random.default_rng(101)
    g1 = chain_of_clusters([3, 3], bridge_weight=0.5)
    g2 = _random_connected_graph(rng, 5)
    w1 = np.array([[1.0, -1.0], [-1.0, 1.0]])[g1.clusters]
    d1 = linear_model_data(w1, 6, 0.3, rng)
    d2 = linear_model_data(rng.standard_normal((5, 2)), 6, 0.3, rng)
    m1 = np.array([1, 1, 0, 1, 1, 1], bool)
    m2 = np.ones(5, bool)
    lam1, lam2 = 0.05, 0.8
    union, offsets = disjoint_union([g1, g2])
    data = NodeData(np.concatenate([d1.features, d2.features]), np.concatenate([d1.labels, d2.labels]))
    lam = np.concatenate([np.full(g1.n_edges, lam1), np.full(g2.n_edges, lam2)])
    joint = gtv_primal_dual(union, SquaredErrorLoss(data, np.concatenate([m1, m2])), name, lam, 1500)
    sep1 = gtv_primal_dual(g1, SquaredErrorLoss(d1, m1), name, lam1, 1500)
    sep2 = gtv_primal_dual(g2, SquaredErrorLoss(d2, m2), name, lam2, 1500)
    np.testing.assert_allclose(joint.weights[: offsets[1]], sep1.weights, atol=1e-10)
    np.testing.assert_allclose(joint.weights[offsets[1] :], sep2.weights, atol=1e-10)
    np.testing.assert_allclose(joint.duals[: g1.n_edges], sep1.duals, atol=1e-10)
    # a scalar lambda would give a different answer on the second part
    scalar = gtv_primal_dual(union, SquaredErrorLoss(data, np.concatenate([m1, m2])), name, lam1,
                             1500)
    assert np.abs(scalar.weights[offsets[1] :] - sep2.weights).max() > 1e-3


def test_lambda_validation():
    graph = chain_of_clusters([2, 2], bridge_weight=1.0)
    data = NodeData(np.ones((4, 3, 2)), np.ones((4, 3)))
    loss = SquaredErrorLoss(data)
    for bad in (np.ones(2), -0.1, np.array([0.1, np.nan, 0.1]), np.ones((3, 1))):
        with pytest.raises(ValueError):
            gtv_primal_dual(graph, loss, "nlasso", bad, 5)


def test_bad_input_is_named_before_any_iteration():
    """Issue 19: a node-count mismatch, a non-positive n_iter and a w0 of the wrong shape
    raise errors that name the problem (not numpy broadcast errors); an empty sampling mask
    warns."""
    rng = np.random.default_rng(0)
    graph = stochastic_block_model([5, 5], 0.9, 0.1, rng)
    data = NodeData(rng.standard_normal((10, 3, 2)), rng.standard_normal((10, 3)))
    loss = SquaredErrorLoss(data)
    short = SquaredErrorLoss(NodeData(data.features[:8], data.labels[:8]))
    with pytest.raises(ValueError, match="the loss holds data of 8 nodes but the graph has 10 nodes"):
        gtv_primal_dual(graph, short, lam=0.1, n_iter=5)
    for n_iter in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="n_iter must be a positive integer"):
            gtv_primal_dual(graph, loss, lam=0.1, n_iter=n_iter)
    with pytest.raises(ValueError, match=r"w0 has shape \(10, 3\), expected \(10, 2\)"):
        gtv_primal_dual(graph, loss, lam=0.1, n_iter=5, w0=np.zeros((10, 3)))
    assert gtv_primal_dual(graph, loss, lam=0.1, n_iter=np.int64(3)).n_iter == 3
    with pytest.warns(UserWarning, match="the sampling mask selects no node"):
        SquaredErrorLoss(data, mask=np.zeros(10, dtype=bool))


def test_ragged_clients_equal_a_per_node_reference():
    """Issue 19: nodes with different sample counts (NodeData.from_ragged, zero-padded and
    batched).  Value, closed-form prox, conjugate and the GTV solution equal those computed
    node by node on the unpadded data."""
    rng = np.random.default_rng(7)
    sizes = [2, 5, 3, 8, 1, 4]
    xs = [rng.standard_normal((m, 2)) for m in sizes]
    ys = [rng.standard_normal(m) for m in sizes]
    data = NodeData.from_ragged(xs, ys)
    assert data.features.shape == (6, 8, 2) and data.samples_per_node.tolist() == sizes
    fx, fy = data.pooled(np.array([1, 4]))
    assert np.array_equal(fx, np.concatenate([xs[1], xs[4]])) and np.array_equal(fy, np.concatenate([ys[1], ys[4]]))
    mask = np.array([True, True, False, True, True, True])
    loss = SquaredErrorLoss(data, mask=mask)
    w = rng.standard_normal((6, 2))
    expected = [np.mean((y - x @ wi) ** 2) if keep else 0.0 for x, y, wi, keep in zip(xs, ys, w, mask, strict=True)]
    np.testing.assert_allclose(loss.value(w), expected, rtol=1e-12)
    tau = rng.uniform(0.5, 2.0, 6)
    w_hat = rng.standard_normal((6, 2))
    got = loss.prox_operator(tau)(w_hat)
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        q = 2 * x.T @ x / len(y) * mask[i]
        b = 2 * x.T @ y / len(y) * mask[i]
        np.testing.assert_allclose(got[i], np.linalg.solve(tau[i] * q + np.eye(2), w_hat[i] + tau[i] * b), rtol=1e-10)
    # the GTV solution satisfies its optimality condition node by node: 0 in grad L_i + (D^T u)_i
    graph = stochastic_block_model([3, 3], 1.0, 0.5, rng)
    result = gtv_primal_dual(graph, loss, penalty="mocha", lam=0.3, n_iter=20000, gap_tol=1e-10)
    grad = np.stack([2 * x.T @ (x @ wi - y) / len(y) * keep for x, y, wi, keep in zip(xs, ys, result.weights, mask, strict=True)])
    edge_diff = graph.incidence @ result.weights
    penalty_grad = graph.incidence.T @ (2 * 0.3 * graph.weights[:, None] * edge_diff)
    np.testing.assert_allclose(grad + penalty_grad, 0.0, atol=1e-6)
    with pytest.raises(ValueError, match=r"counts must lie in \[1, 8\]; nodes \[1\]"):
        NodeData(data.features, data.labels, np.array([2, 0, 3, 8, 1, 4]))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_prox_with_fewer_samples_than_features_is_the_closed_form(reduction):
    """With fewer samples than features (m < d, Table I and Fig. 2) the prox goes through
    Woodbury's identity with m x m systems: it equals the closed form (tau Q + I)^{-1}
    (w_hat + tau b) solved node by node in d dimensions, on ragged nodes (zero padding)
    and with unsampled nodes (the identity), and it is the minimiser of (32): the gradient
    of L_i(v) + ||v - w_hat||^2 / (2 tau) vanishes there."""
    rng = np.random.default_rng(11)
    sizes, d = [3, 1, 4, 2, 4], 7
    xs = [rng.standard_normal((m, d)) for m in sizes]
    ys = [rng.standard_normal(m) for m in sizes]
    data = NodeData.from_ragged(xs, ys)
    assert data.features.shape == (5, 4, 7)
    mask = np.array([True, True, False, True, True])
    loss = SquaredErrorLoss(data, mask=mask, reduction=reduction)
    tau = rng.uniform(0.1, 3.0, 5)
    w_hat = rng.standard_normal((5, d))
    got = loss.prox_operator(tau)(w_hat)
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        scale = (2 / len(y) if reduction == "mean" else 2.0) * mask[i]
        q, b = scale * x.T @ x, scale * x.T @ y
        expected = np.linalg.solve(tau[i] * q + np.eye(d), w_hat[i] + tau[i] * b)
        np.testing.assert_allclose(got[i], expected, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(q @ got[i] - b + (got[i] - w_hat[i]) / tau[i], 0.0, atol=1e-12)
    np.testing.assert_array_equal(got[2], w_hat[2])  # unsampled: L_2 = 0, the prox is the identity
