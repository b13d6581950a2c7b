"""FedAdam, FedYogi, FedAdagrad (Reddi et al. 2021, Algorithm 2) against their formulas by hand,
Flower's ``FedAdam``/``FedYogi`` strategies' arithmetic (ported: weighted FedAvg aggregate,
``m``, ``v`` from zero, ``x + eta m / (sqrt(v) + tau)``), and FedAvg (server SGD, step 1)."""

import numpy as np
import pytest
import torch

from networkedfl.algorithms import (
    fedadam,
    fedavg,
    fedopt,
    fedyogi,
    server_optimizer_step,
)
from networkedfl.nn import linear_regression

CENTRES = np.array([[1.0, 0.0], [-1.0, 2.0], [3.0, -1.0]])
CURVATURES = np.array([1.0, 4.0, 0.5])
REPEATS = np.array([1, 3, 2])  # 2, 6 and 4 samples: the weights of the average


def _t(values):
    return torch.as_tensor(np.asarray(values, dtype=float))


@pytest.mark.parametrize("optimizer", ["adagrad", "adam", "yogi", "sgd"])
def test_one_server_step_is_the_paper_s_update_by_hand(optimizer):
    x, delta = np.array([0.5, -1.0, 2.0]), np.array([0.3, -0.2, 0.0])
    m, v = np.array([0.1, 0.1, -0.4]), np.array([0.2, 0.01, 0.5])
    eta, b1, b2, tau = 0.3, 0.9, 0.99, 1e-3
    m_new = b1 * m + (1 - b1) * delta
    v_new = {"adagrad": v + delta**2,
             "adam": b2 * v + (1 - b2) * delta**2,
             # Yogi: v - (1 - b2) delta^2 sign(v - delta^2): here the signs +, -, +
             "yogi": np.array([0.2 - 0.01 * 0.09, 0.01 + 0.01 * 0.04, 0.5]),
             "sgd": v}[optimizer]
    x_new = x + eta * delta if optimizer == "sgd" else x + eta * m_new / (np.sqrt(v_new) + tau)
    out = server_optimizer_step(_t(x), _t(delta), _t(m), _t(v), optimizer=optimizer, lr=eta, beta1=b1,
                                beta2=b2, tau=tau)
    np.testing.assert_allclose(out[0].numpy(), x_new, rtol=1e-14)
    if optimizer != "sgd":
        np.testing.assert_allclose(out[1].numpy(), m_new, rtol=1e-14)
        np.testing.assert_allclose(out[2].numpy(), v_new, rtol=1e-14)


def flower_rounds(rule, x, rounds, *, eta_l, epochs, eta, b1, b2, tau):
    """Flower's FedAdam / FedYogi ``aggregate_fit`` on the quadratic clients (full-batch
    ``ClientUpdate``: ``y_i = a_i + (1 - eta_l h_i)^E (x - a_i)``), written from its formulas."""
    weights = REPEATS * CENTRES.shape[1]
    m = v = None
    for _ in range(rounds):
        local = CENTRES + ((1 - eta_l * CURVATURES) ** epochs)[:, None] * (x - CENTRES)
        delta = weights @ local / weights.sum() - x
        m = (1 - b1) * delta if m is None else b1 * m + (1 - b1) * delta
        v = np.zeros_like(delta) if v is None else v
        v = b2 * v + (1 - b2) * delta**2 if rule == "adam" else \
            v - (1 - b2) * delta**2 * np.sign(v - delta**2)
        x = x + eta * m / (np.sqrt(v) + tau)
    return x


@pytest.mark.parametrize("method", [fedadam, fedyogi])
def test_rounds_equal_flower_s_strategies(quadratic_clients, method):
    rule = method.__name__[3:]
    x0 = np.array([0.5, -0.5])
    hyper = dict(eta=0.1, b1=0.9, b2=0.99, tau=1e-3)
    result = method(linear_regression(2), quadratic_clients(CENTRES, CURVATURES, REPEATS), init=x0,
                    n_rounds=5, local_epochs=3, batch_size=None, lr=0.1, server_lr=hyper["eta"],
                    beta1=hyper["b1"], beta2=hyper["b2"], tau=hyper["tau"], initial_accumulator=0.0)
    expected = flower_rounds(rule, x0, 5, eta_l=0.1, epochs=3, **hyper)
    np.testing.assert_allclose(result.global_params[0].numpy(), expected, rtol=1e-12)


def test_the_paper_s_start_tau_squared_differs_from_flower_s_zero(quadratic_clients):
    kwargs = dict(init=[0.5, -0.5], n_rounds=1, local_epochs=1, batch_size=None, lr=0.1,
                  server_lr=0.1, tau=0.1)
    data = quadratic_clients(CENTRES, CURVATURES, REPEATS)
    paper = fedadam(linear_regression(2), data, **kwargs).global_params[0]
    flower = fedadam(linear_regression(2), data, initial_accumulator=0.0, **kwargs).global_params[0]
    x0 = np.array([0.5, -0.5])
    local = CENTRES + (1 - 0.1 * CURVATURES)[:, None] * (x0 - CENTRES)
    delta = REPEATS @ local / REPEATS.sum() - x0
    m, v = 0.1 * delta, 0.99 * 0.01 + 0.01 * delta**2  # v_{-1} = tau^2
    np.testing.assert_allclose(paper.numpy(), x0 + 0.1 * m / (np.sqrt(v) + 0.1), rtol=1e-12)
    assert not torch.allclose(paper, flower)


def test_server_sgd_with_step_one_is_fedavg(ragged_clients):
    kwargs = dict(n_rounds=4, local_epochs=2, batch_size=2, lr=0.05, seed=3, client_fraction=0.6)
    model = linear_regression(3, init="bernoulli")
    ours = fedopt(model, ragged_clients, server_optimizer="sgd", server_lr=1.0, **kwargs)
    reference = fedavg(model, ragged_clients, **kwargs)
    np.testing.assert_allclose(ours.global_params.numpy(), reference.global_params.numpy(), rtol=1e-13)
    assert ours.log == reference.log


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"server_optimizer": "rmsprop"}, "unknown server_optimizer 'rmsprop'"),
    ({"beta1": 1.0}, r"beta1 must be in \[0, 1\)"),
    ({"beta2": -0.1}, r"beta2 must be in \[0, 1\)"),
    ({"tau": 0.0}, "tau must be finite and positive"),
    ({"server_lr": float("inf")}, "server_lr must be finite and positive"),
])
def test_bad_server_options_are_errors_naming_them(ragged_clients, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fedopt(linear_regression(3), ragged_clients, n_rounds=1, local_epochs=1, batch_size=2,
               lr=0.1, **kwargs)


def test_groups_are_refused(ragged_clients):
    with pytest.raises(TypeError, match="groups"):
        fedadam(linear_regression(3), ragged_clients, n_rounds=1, local_epochs=1, batch_size=2,
                lr=0.1, groups=[0, 1, 0, 1, 1])


@pytest.mark.parametrize("optimizer", ["adam", "yogi"])
def test_the_first_step_moves_every_large_coordinate_by_about_the_server_step(optimizer):
    """Algorithm 2 has no bias correction: from m = 0, v = tau^2 a pseudo-gradient much larger
    than tau moves its coordinate by eta (1 - beta1) / sqrt(1 - beta2) = eta (beta 0.9, 0.99)
    in its sign's direction, whatever its size: with eta = 1 every weight moves by about 1
    (why FedAdam/FedYogi with server_lr 1 diverge on Fig. 10.4, docs/tuning.md#extra-baselines)."""
    delta = torch.tensor([[3.0, -0.5, 20.0, -1e-1]], dtype=torch.float64)
    tau, eta = 1e-5, 1.0
    x0 = torch.zeros_like(delta)
    x1, _, _ = server_optimizer_step(x0, delta, torch.zeros_like(delta), torch.full_like(delta, tau**2),
                                     optimizer=optimizer, lr=eta, beta1=0.9, beta2=0.99, tau=tau)
    np.testing.assert_allclose(x1.numpy(), eta * np.sign(delta.numpy()), rtol=2e-3)
