"""SCAFFOLD (Karimireddy et al. 2020, Algorithm 1, option II) against the algorithm written
client by client, its control-variate formula by hand, and the optimum where FedAvg drifts."""

import numpy as np
import pytest
import torch

from networkedfl.algorithms import fedavg, scaffold, scaffold_controls
from networkedfl.nn import linear_regression

CENTRES = np.array([[1.0, 0.0], [-1.0, 2.0], [3.0, -1.0]])
CURVATURES = np.array([1.0, 4.0, 0.5])


def algorithm_1(a, h, x, eta, k, rounds, eta_g=1.0, selections=None):
    """The paper's Algorithm 1 on F_i(w) = (h_i/2)||w - a_i||^2, one client at a time, option
    II; ``selections``: the clients of every round (default: all): the reference."""
    n = len(a)
    c, ci = np.zeros_like(x), np.zeros((n, x.size))
    for r in range(rounds):
        chosen = range(n) if selections is None else np.flatnonzero(selections[r])
        dy, dc = [], []
        for i in chosen:
            y = x.copy()
            for _ in range(k):
                y = y - eta * (h[i] * (y - a[i]) - ci[i] + c)
            new = ci[i] - c + (x - y) / (k * eta)
            dy.append(y - x)
            dc.append(new - ci[i])
            ci[i] = new
        x = x + eta_g * np.mean(dy, axis=0)
        c = c + len(dc) / n * np.mean(dc, axis=0)  # c + (|S| / N) mean of Delta c_i
    return x


@pytest.mark.parametrize(("k", "eta_g"), [(1, 1.0), (3, 1.0), (5, 0.5)])
def test_rounds_equal_the_paper_s_algorithm(quadratic_clients, k, eta_g):
    x0 = np.array([0.5, -0.5])
    result = scaffold(linear_regression(2), quadratic_clients(CENTRES, CURVATURES), init=x0,
                      n_rounds=6, local_epochs=k, batch_size=None, lr=0.1, server_lr=eta_g)
    expected = algorithm_1(CENTRES, CURVATURES, x0, 0.1, k, 6, eta_g)
    np.testing.assert_allclose(result.global_params[0].numpy(), expected, rtol=1e-12)


def test_sampled_rounds_equal_the_paper_s_algorithm(quadratic_clients):
    """Partial participation: c moves by |S|/N times the mean of the Delta c_i."""
    a, h = np.vstack([CENTRES, CENTRES[::-1] + 1]), np.concatenate([CURVATURES, CURVATURES[::-1]])
    seen = []
    result = scaffold(linear_regression(2), quadratic_clients(a, h), n_rounds=5, local_epochs=3,
                      batch_size=None, lr=0.1, client_fraction=0.5, seed=4,
                      callback=lambda state: seen.append(state.selected.numpy().copy()))
    assert all(s.sum() == 3 for s in seen) and len({tuple(s) for s in seen}) > 1
    expected = algorithm_1(a, h, np.zeros(2), 0.1, 3, 5, selections=seen)
    np.testing.assert_allclose(result.global_params[0].numpy(), expected, rtol=1e-12)


def test_scaffold_reaches_the_optimum_where_fedavg_drifts(quadratic_clients):
    """Optimum of (1/n) sum_i (h_i/2)||w - a_i||^2: sum h_i a_i / sum h_i.  FedAvg with K local
    steps maps w to the mean of a_i + r_i (w - a_i), r_i = (1 - eta h_i)^K: its fixed point is
    sum (1 - r_i) a_i / sum (1 - r_i), another point when the h_i differ."""
    eta, k = 0.1, 10
    optimum = CURVATURES @ CENTRES / CURVATURES.sum()
    r = (1 - eta * CURVATURES) ** k
    drifted = (1 - r) @ CENTRES / (1 - r).sum()
    assert np.linalg.norm(drifted - optimum) > 0.1
    kwargs = dict(n_rounds=60, local_epochs=k, batch_size=None, lr=eta)
    data, model = quadratic_clients(CENTRES, CURVATURES), linear_regression(2)
    np.testing.assert_allclose(fedavg(model, data, **kwargs).global_params[0].numpy(), drifted, atol=1e-9)
    np.testing.assert_allclose(scaffold(model, data, **kwargs).global_params[0].numpy(), optimum, atol=1e-9)


def test_control_variates_follow_option_ii_by_hand():
    """c_i+ = c_i - c + (x - y_i) / (K_i eta_l); a client that took no step keeps c_i."""
    ci = torch.tensor([[1.0, 2.0], [0.5, -1.0], [3.0, 3.0]], dtype=torch.float64)
    c = torch.tensor([0.25, -0.5], dtype=torch.float64)
    x = torch.tensor([1.0, 1.0], dtype=torch.float64)
    y = torch.tensor([[0.0, 2.0], [1.5, 0.5], [9.0, 9.0]], dtype=torch.float64)
    out = scaffold_controls(ci, c, x, y, torch.tensor([2, 4, 0]), 0.5)
    expected = [[1 - 0.25 + 1.0, 2 + 0.5 - 1.0], [0.5 - 0.25 - 0.25, -1 + 0.5 + 0.25], [3.0, 3.0]]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-15)


def test_one_step_control_variate_is_the_client_gradient(quadratic_clients):
    """K = 1, c = c_i = 0: y_i = x - eta g_i(x), so c_i+ = g_i(x) and c = mean g_i(x); the
    second round steps with g_i(x1) - g_i(x0) + mean g(x0)."""
    x0, eta = np.array([0.5, -0.5]), 0.1
    grad = CURVATURES[:, None] * (x0 - CENTRES)
    x1 = x0 - eta * grad.mean(axis=0)
    y = x1 - eta * (CURVATURES[:, None] * (x1 - CENTRES) - grad + grad.mean(axis=0))
    result = scaffold(linear_regression(2), quadratic_clients(CENTRES, CURVATURES), init=x0,
                      n_rounds=2, local_epochs=1, batch_size=None, lr=eta)
    np.testing.assert_allclose(result.global_params[0].numpy(), y.mean(axis=0), rtol=1e-13)


def test_the_log_counts_a_model_and_a_control_variate_each_way(quadratic_clients):
    result = scaffold(linear_regression(2), quadratic_clients(CENTRES, CURVATURES), n_rounds=2,
                      local_epochs=1, batch_size=None, lr=0.1, client_fraction=0.5, seed=0)
    row = result.log[0]
    assert row["clients"] == 2 and row["floats_up"] == row["floats_down"] == 2 * 2 * 2


def test_a_step_schedule_and_a_bad_server_lr_are_refused(quadratic_clients):
    data = quadratic_clients(CENTRES, CURVATURES)
    with pytest.raises(ValueError, match="server_lr must be finite and positive"):
        scaffold(linear_regression(2), data, n_rounds=1, local_epochs=1, batch_size=None, lr=0.1,
                 server_lr=0.0)
    with pytest.raises(TypeError, match="constant lr"):
        scaffold(linear_regression(2), data, n_rounds=1, local_epochs=1, batch_size=None,
                 lr=lambda t: 0.1)
