"""Proximal FedAvg (GTV form) and the pooled baselines against closed-form references.

References: the proximal step of GTV eq. (32) for the squared error of eq. (38) solved by
hand with ``numpy.linalg.solve``, the fixed-point equation of the averaged proximal map,
``numpy.linalg.lstsq`` on the pooled data of the sampled nodes, and scikit-learn's
``DecisionTreeRegressor`` fitted directly on the pooled data.
"""

import dataclasses

import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor

from networkedfl.graphs import ring
from networkedfl.gtv import (
    NodeData,
    PooledFit,
    SquaredErrorLoss,
    fedavg_proximal,
    pooled_linear_regression,
    pooled_per_group,
    pooled_tree,
)

# ---------------------------------------------------------------- helpers and references


def _ragged(rng, sizes, d, truth=None, noise=0.3, offset=0.0):
    """Per-node linear data of different sizes (node i holds sizes[i] samples)."""
    xs, ys = [], []
    for i, m in enumerate(sizes):
        x = rng.standard_normal((m, d))
        w = rng.standard_normal(d) if truth is None else truth[i]
        xs.append(x)
        ys.append(x @ w + offset + noise * rng.standard_normal(m))
    return NodeData.from_ragged(xs, ys)


def _quadratic(data, i, reduction="mean"):
    """``Q_i = 2 X^T X / m_i`` and ``b_i = 2 X^T y / m_i`` of GTV eq. (38), real samples only."""
    m = int(data.samples_per_node[i])
    x, y = data.features[i, :m], data.labels[i, :m]
    scale = 2.0 / m if reduction == "mean" else 2.0
    return scale * x.T @ x, scale * x.T @ y


def _prox(data, i, tau, w_hat, reduction="mean"):
    """``argmin_v L_i(v) + ||v - w_hat||^2 / (2 tau)`` by solving its optimality condition."""
    q, b = _quadratic(data, i, reduction)
    return np.linalg.solve(tau * q + np.eye(len(w_hat)), w_hat + tau * b)


def _lstsq(x, y, intercept=False):
    if intercept:
        x = np.column_stack([x, np.ones(len(x))])
    return np.linalg.lstsq(x, y, rcond=None)[0]


def _pooled_xy(data, nodes):
    nodes = np.asarray(nodes)
    m = data.samples_per_node
    return (np.concatenate([data.features[i, : m[i]] for i in nodes]),
            np.concatenate([data.labels[i, : m[i]] for i in nodes]))


def _with_changed_nodes(data, nodes, rng):
    """A copy of ``data`` with fresh random features and labels at ``nodes``."""
    x, y = data.features.copy(), data.labels.copy()
    x[nodes] = 10.0 * rng.standard_normal(x[nodes].shape)
    y[nodes] = 10.0 * rng.standard_normal(y[nodes].shape) + 5.0
    return NodeData(x, y, data.counts)


# ---------------------------------------------------------------- proximal FedAvg


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_fedavg_proximal_one_round_is_average_of_hand_prox_steps(reduction):
    rng = np.random.default_rng(0)
    n, d = 6, 3
    data = _ragged(rng, [4, 7, 5, 3, 6, 8], d)
    mask = np.array([True, True, False, True, False, True])
    tau = rng.uniform(0.1, 2.0, n)
    w0 = np.tile(rng.standard_normal(d), (n, 1))  # one global initial model at every node
    loss = SquaredErrorLoss(data, mask, reduction=reduction)
    out = fedavg_proximal(loss, mask, tau, 1, w0=w0)
    expected = np.mean([_prox(data, i, tau[i], w0[i], reduction) for i in np.flatnonzero(mask)], axis=0)
    np.testing.assert_allclose(out, np.tile(expected, (n, 1)), rtol=1e-12, atol=1e-12)


def test_fedavg_proximal_two_rounds_match_hand_iteration_with_ring_degree_steps():
    rng = np.random.default_rng(1)
    n, d = 5, 2
    data = _ragged(rng, [3, 4, 5, 6, 7], d)
    mask = np.array([True, False, True, True, True])
    tau = 1.0 / ring(n).degrees  # the authors' choice tau_i = 1/deg_i (= 1/2 on a ring)
    np.testing.assert_allclose(tau, 0.5)
    out = fedavg_proximal(SquaredErrorLoss(data, mask), mask, tau, 2, dim=d)
    w = np.zeros(d)
    for _ in range(2):
        w = np.mean([_prox(data, i, tau[i], w) for i in np.flatnonzero(mask)], axis=0)
    np.testing.assert_allclose(out, np.tile(w, (n, 1)), rtol=1e-12, atol=1e-12)


def test_fedavg_proximal_converges_to_the_fixed_point_of_the_averaged_prox():
    # Fixed point: sum_{i in M} (tau_i Q_i + I)^{-1} tau_i (b_i - Q_i w) = 0, a linear system.
    rng = np.random.default_rng(2)
    n, d = 6, 3
    data = _ragged(rng, [5, 9, 4, 6, 7, 5], d)
    mask = np.array([True, True, True, False, True, True])
    tau = rng.uniform(0.2, 1.0, n)
    a, r = np.zeros((d, d)), np.zeros(d)
    for i in np.flatnonzero(mask):
        q, b = _quadratic(data, i)
        inv = np.linalg.inv(tau[i] * q + np.eye(d))
        a += tau[i] * inv @ q
        r += tau[i] * inv @ b
    fixed = np.linalg.solve(a, r)
    out = fedavg_proximal(SquaredErrorLoss(data, mask), mask, tau, 400, dim=d)
    np.testing.assert_allclose(out, np.tile(fixed, (n, 1)), rtol=1e-9, atol=1e-9)
    # Heterogeneous clients drift: the fixed point is not the pooled least-squares solution.
    pooled = _lstsq(*_pooled_xy(data, np.flatnonzero(mask)))
    assert np.linalg.norm(out[0] - pooled) > 1e-3


def test_fedavg_proximal_shared_dataset_converges_to_pooled_least_squares():
    rng = np.random.default_rng(3)
    n, m, d = 5, 8, 3
    x = np.broadcast_to(rng.standard_normal((m, d)), (n, m, d))
    y = np.broadcast_to(rng.standard_normal(m), (n, m))
    data = NodeData(x, y)
    mask = np.array([True, False, True, True, False])
    out = fedavg_proximal(SquaredErrorLoss(data, mask), mask, rng.uniform(0.3, 1.0, n), 300, dim=d)
    expected = _lstsq(*_pooled_xy(data, np.flatnonzero(mask)))
    np.testing.assert_allclose(out, np.tile(expected, (n, 1)), rtol=1e-9, atol=1e-9)


def test_fedavg_proximal_single_sampled_node_converges_to_its_least_squares():
    rng = np.random.default_rng(4)
    n, d = 4, 3
    data = _ragged(rng, [6, 5, 9, 4], d)
    mask = np.array([False, False, True, False])
    out = fedavg_proximal(SquaredErrorLoss(data, mask), mask, np.full(n, 0.7), 300, dim=d)
    expected = _lstsq(*_pooled_xy(data, [2]))
    np.testing.assert_allclose(out, np.tile(expected, (n, 1)), rtol=1e-9, atol=1e-9)


def test_fedavg_proximal_noise_free_shared_model_is_recovered():
    rng = np.random.default_rng(5)
    n, d = 6, 3
    truth = rng.standard_normal(d)
    data = _ragged(rng, [4, 5, 6, 7, 3, 8], d, truth=np.tile(truth, (n, 1)), noise=0.0)
    mask = np.ones(n, bool)
    out = fedavg_proximal(SquaredErrorLoss(data, mask), mask, rng.uniform(0.2, 2.0, n), 300, dim=d)
    np.testing.assert_allclose(out, np.tile(truth, (n, 1)), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out[0], _lstsq(*_pooled_xy(data, np.arange(n))), rtol=1e-9, atol=1e-9)


def test_fedavg_proximal_groups_equal_separate_runs_per_group():
    rng = np.random.default_rng(6)
    n, d = 7, 2
    data = _ragged(rng, [4, 5, 6, 3, 7, 5, 4], d)
    groups = np.array([0, 1, 0, 2, 1, 2, 0])
    mask = np.array([True, True, False, True, True, True, True])
    tau = rng.uniform(0.2, 1.5, n)
    w0 = rng.standard_normal((3, d))[groups]  # one initial model per group, broadcast
    out = fedavg_proximal(SquaredErrorLoss(data, mask), mask, tau, 5, groups=groups, w0=w0)
    for g in range(3):
        members = np.flatnonzero(groups == g)
        sub = NodeData(data.features[members], data.labels[members], data.counts[members])
        alone = fedavg_proximal(SquaredErrorLoss(sub, mask[members]), mask[members], tau[members], 5,
                                w0=w0[members])
        np.testing.assert_allclose(out[members], alone, rtol=1e-12, atol=1e-12)
    assert not np.allclose(out[0], out[1])  # groups really keep separate models


def test_fedavg_proximal_ignores_data_of_unsampled_nodes():
    rng = np.random.default_rng(7)
    n, d = 6, 3
    data = _ragged(rng, [5, 6, 4, 7, 5, 6], d)
    mask = np.array([True, False, True, True, False, True])
    tau = np.full(n, 0.5)
    # The loss covers every node: only the sampling mask of FedAvg keeps nodes 1, 4 out.
    before = fedavg_proximal(SquaredErrorLoss(data), mask, tau, 10, dim=d)
    after = fedavg_proximal(SquaredErrorLoss(_with_changed_nodes(data, [1, 4], rng)), mask, tau, 10, dim=d)
    np.testing.assert_array_equal(before, after)
    changed = fedavg_proximal(SquaredErrorLoss(_with_changed_nodes(data, [2], rng)), mask, tau, 10, dim=d)
    assert not np.allclose(before, changed)


def test_fedavg_proximal_zero_rounds_returns_a_copy_of_w0_or_zeros():
    rng = np.random.default_rng(8)
    data = _ragged(rng, [3, 4, 5], 2)
    loss = SquaredErrorLoss(data)
    w0 = rng.standard_normal((3, 2))
    out = fedavg_proximal(loss, np.ones(3, bool), np.ones(3), 0, w0=w0)
    np.testing.assert_array_equal(out, w0)
    assert not np.shares_memory(out, w0)
    np.testing.assert_array_equal(fedavg_proximal(loss, np.ones(3, bool), np.ones(3), 0), np.zeros((3, 2)))


def test_fedavg_proximal_group_without_sampled_node_raises():
    rng = np.random.default_rng(9)
    data = _ragged(rng, [3, 4, 5, 4], 2)
    mask = np.array([True, False, False, True])
    with pytest.raises(ValueError, match=r"groups \[1\] have no node in the sampling set"):
        fedavg_proximal(SquaredErrorLoss(data, mask), mask, np.ones(4), 3, groups=np.array([0, 1, 1, 0]))


# ---------------------------------------------------------------- pooled linear regression


def test_pooled_linear_regression_matches_lstsq_with_intercept_on_sampled_real_samples():
    rng = np.random.default_rng(10)
    n, d = 6, 3
    data = _ragged(rng, [4, 7, 5, 3, 6, 8], d, offset=2.5)  # padding rows must not enter the fit
    mask = np.array([True, False, True, True, False, True])
    fit = pooled_linear_regression(data, mask)
    assert isinstance(fit, PooledFit)
    x, y = _pooled_xy(data, np.flatnonzero(mask))
    coef = _lstsq(x, y, intercept=True)
    np.testing.assert_allclose(fit.model.coef_, coef[:d], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(fit.model.intercept_, coef[d], rtol=1e-10, atol=1e-10)
    assert abs(fit.model.intercept_) > 1.0  # the documented intercept is really fitted
    assert fit.weights.shape == (n, d)
    np.testing.assert_allclose(fit.weights, np.tile(coef[:d], (n, 1)), rtol=1e-10, atol=1e-10)
    # Predictions at every node (sampled or not) use the pooled model, intercept included.
    expected = np.einsum("nmd,d->nm", data.features, coef[:d]) + coef[d]
    np.testing.assert_allclose(fit.predictions, expected, rtol=1e-10, atol=1e-10)


def test_pooled_linear_regression_ignores_unsampled_nodes():
    rng = np.random.default_rng(11)
    data = _ragged(rng, [5, 6, 4, 7, 5], 2)
    mask = np.array([True, False, True, False, True])
    before = pooled_linear_regression(data, mask)
    after = pooled_linear_regression(_with_changed_nodes(data, [1, 3], rng), mask)
    np.testing.assert_allclose(after.model.coef_, before.model.coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(after.model.intercept_, before.model.intercept_, rtol=1e-12, atol=1e-12)
    sampled = np.flatnonzero(mask)
    np.testing.assert_allclose(after.predictions[sampled], before.predictions[sampled], rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- pooled per group (oracle)


def test_pooled_per_group_matches_lstsq_without_intercept_per_group():
    rng = np.random.default_rng(12)
    d = 3
    groups = np.array([2, 0, 1, 0, 2, 1, 0, 2])
    truth = rng.standard_normal((3, d))[groups]
    data = _ragged(rng, [4, 6, 5, 3, 7, 5, 4, 6], d, truth=truth, offset=1.5)
    mask = np.array([True, True, False, True, True, True, False, False])
    fit = pooled_per_group(data, mask, groups)
    assert len(fit.model) == 3
    for g in range(3):
        members = np.flatnonzero(groups == g)
        w = _lstsq(*_pooled_xy(data, np.flatnonzero((groups == g) & mask)))
        np.testing.assert_allclose(fit.weights[members], np.tile(w, (len(members), 1)), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(fit.predictions[members], data.features[members] @ w, rtol=1e-10, atol=1e-10)
    assert all(m.intercept_ == 0.0 for m in fit.model)  # documented: no intercept


def test_pooled_per_group_ignores_unsampled_nodes():
    rng = np.random.default_rng(13)
    data = _ragged(rng, [5, 6, 4, 7, 5, 6], 2)
    groups = np.array([0, 0, 0, 1, 1, 1])
    mask = np.array([True, False, True, True, True, False])
    before = pooled_per_group(data, mask, groups)
    after = pooled_per_group(_with_changed_nodes(data, [1, 5], rng), mask, groups)
    np.testing.assert_allclose(after.weights, before.weights, rtol=1e-12, atol=1e-12)
    changed = pooled_per_group(_with_changed_nodes(data, [3], rng), mask, groups)
    np.testing.assert_allclose(changed.weights[:3], before.weights[:3], rtol=1e-12, atol=1e-12)
    assert not np.allclose(changed.weights[3:], before.weights[3:])


def test_pooled_per_group_group_without_sampled_node_raises():
    rng = np.random.default_rng(14)
    data = _ragged(rng, [3, 4, 5, 4], 2)
    with pytest.raises(ValueError, match="group 1 has no node in the sampling set"):
        pooled_per_group(data, np.array([True, False, False, True]), np.array([0, 1, 1, 0]))


# ---------------------------------------------------------------- pooled tree


@pytest.mark.parametrize("max_depth", [1, 2, 3])
def test_pooled_tree_matches_sklearn_tree_on_pooled_data(max_depth):
    rng = np.random.default_rng(15)
    data = _ragged(rng, [6, 8, 5, 7, 9], 2, offset=1.0)
    mask = np.array([True, True, False, True, True])
    fit = pooled_tree(data, mask, seed=42, max_depth=max_depth)
    random_state = int(np.random.default_rng(42).integers(2**31 - 1))
    reference = DecisionTreeRegressor(max_depth=max_depth, random_state=random_state)
    reference.fit(*_pooled_xy(data, np.flatnonzero(mask)))
    expected = reference.predict(data.features.reshape(-1, 2)).reshape(data.labels.shape)
    np.testing.assert_array_equal(fit.predictions, expected)
    assert fit.model.get_depth() == max_depth
    assert fit.model.random_state == random_state
    assert fit.weights is None


def test_pooled_tree_default_depth_and_unsampled_nodes_ignored():
    rng = np.random.default_rng(16)
    data = _ragged(rng, [6, 8, 5, 7, 9], 2)
    mask = np.array([True, False, True, False, True])
    fit = pooled_tree(data, mask, seed=3)
    assert fit.model.get_depth() == 2  # GTV Table I: max_depth=2
    assert len(np.unique(fit.predictions)) <= 4
    other = pooled_tree(_with_changed_nodes(data, [1, 3], rng), mask, seed=3)
    sampled = np.flatnonzero(mask)
    np.testing.assert_array_equal(other.predictions[sampled], fit.predictions[sampled])


def test_pooled_tree_rejects_bad_seed():
    data = _ragged(np.random.default_rng(17), [3, 4], 2)
    mask = np.ones(2, bool)
    with pytest.raises(TypeError, match="seed"):
        pooled_tree(data, mask, seed="0")
    with pytest.raises(ValueError, match="seed"):
        pooled_tree(data, mask, seed=-1)


def test_pooled_fit_is_frozen():
    fit = pooled_linear_regression(_ragged(np.random.default_rng(18), [3, 4], 2), np.ones(2, bool))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.weights = None
