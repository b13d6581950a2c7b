"""FedProx (Li et al. 2020) against FedAvg (mu = 0) and its proximal points in closed form."""

import numpy as np
import pytest
import torch

from networkedfl.algorithms import fedavg, fedprox, local_sgd, local_step_counts, proximal_term
from networkedfl.nn import ClientData, linear_regression

ROUND = dict(n_rounds=1, batch_size=None)


@pytest.mark.parametrize("extra", [{}, {"client_fraction": 0.6}, {"groups": [0, 1, 0, 1, 1]}])
def test_mu_zero_is_fedavg_bit_for_bit(extra, ragged_clients):
    kwargs = dict(n_rounds=4, local_epochs=2, batch_size=2, lr=0.05, seed=3, **extra)
    model, data = linear_regression(3, init="bernoulli"), ragged_clients
    ours, reference = fedprox(model, data, mu=0.0, **kwargs), fedavg(model, data, **kwargs)
    assert torch.equal(ours.global_params, reference.global_params)
    assert ours.history == reference.history and ours.log == reference.log


def test_mu_changes_the_result(ragged_clients):
    kwargs = dict(n_rounds=2, local_epochs=2, batch_size=2, lr=0.05, seed=3)
    model, data = linear_regression(3, init="bernoulli"), ragged_clients
    assert not torch.allclose(fedprox(model, data, mu=1.0, **kwargs).global_params,
                              fedavg(model, data, **kwargs).global_params)


def test_two_local_steps_match_the_hand_computed_update(quadratic_clients):
    """The proximal term vanishes at the first step (w = w^t); the second step adds it:
    y1 = w - eta h (w - a),  y2 = y1 - eta (h (y1 - a) + mu (y1 - w))."""
    a, h, w, eta, mu = np.array([[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0]]), np.array([1.0, 2.0, 0.5]), \
        np.array([0.3, -0.7]), 0.1, 0.8
    y1 = w - eta * h[:, None] * (w - a)
    y2 = y1 - eta * (h[:, None] * (y1 - a) + mu * (y1 - w))
    result = fedprox(linear_regression(2), quadratic_clients(a, h), init=w, local_epochs=2, lr=eta,
                     mu=mu, **ROUND)
    np.testing.assert_allclose(result.global_params[0].numpy(), y2.mean(axis=0), rtol=1e-13)


def test_solved_local_problems_give_the_proximal_points(quadratic_clients):
    """Full local convergence: w_i = argmin (1/2)||w - a_i||^2 + (mu/2)||w - w^t||^2
    = (a_i + mu w^t) / (1 + mu); the server averages them."""
    rng = np.random.default_rng(1)
    a, w, mu = rng.standard_normal((4, 3)), rng.standard_normal(3), 2.5
    data, model = quadratic_clients(a), linear_regression(3)
    start = torch.as_tensor(w).expand(4, -1)
    local = local_sgd(model, start, data, epochs=400, batch_size=None, lr=0.2,
                      correction=proximal_term(mu, start))
    expected = (a + mu * w) / (1 + mu)
    np.testing.assert_allclose(local.numpy(), expected, atol=1e-12)
    result = fedprox(model, data, init=w, local_epochs=400, lr=0.2, mu=mu, **ROUND)
    np.testing.assert_allclose(result.global_params[0].numpy(), expected.mean(axis=0), atol=1e-12)


def test_only_the_steps_a_client_takes_carry_the_term():
    """With zero features (zero loss gradient) only the term moves a client, once per step it
    takes: ``ceil(n_i / B)`` per epoch (a block of padding only is no step), so that
    ``w - far = (1 - lr mu)^K_i (start - far)``."""
    sizes = [3, 7, 12, 5, 9]
    data = ClientData.from_client_arrays([np.zeros((m, 3)) for m in sizes],
                                         [np.ones(m) for m in sizes], dtype=torch.float64)
    start = torch.zeros(5, 3, dtype=torch.float64)
    far = torch.ones(5, 3, dtype=torch.float64)
    end = local_sgd(linear_regression(3), start, data, epochs=2, batch_size=3, lr=0.1, seed=0,
                    correction=proximal_term(2.0, far))
    steps = np.array([1, 3, 4, 2, 3]) * 2
    assert local_step_counts(data, 2, 3).tolist() == steps.tolist()
    np.testing.assert_allclose((end - far).numpy(), -(0.8 ** steps)[:, None] * np.ones((5, 3)),
                               rtol=1e-12)


@pytest.mark.parametrize("mu", [-0.1, float("nan")])
def test_a_bad_mu_is_an_error_naming_it(mu, ragged_clients):
    with pytest.raises(ValueError, match="mu must be"):
        fedprox(linear_regression(3), ragged_clients, mu=mu, n_rounds=1, local_epochs=1,
                batch_size=2, lr=0.1)
