"""Ditto (Li et al. 2021, Algorithm 1) against local training (lam = 0), FedAvg (its global
model) and the personal optimum in closed form, v_k = (a_k + lam w*) / (1 + lam)."""

import numpy as np
import pytest
import torch

from networkedfl.algorithms import ditto, fedavg, local_training
from networkedfl.nn import linear_regression

CENTRES = np.array([[1.0, 0.0], [-1.0, 2.0], [3.0, -1.0], [0.5, 0.5]])
FULL_BATCH = dict(n_rounds=3, local_epochs=2, batch_size=None, lr=0.1)


def test_lam_zero_is_local_training_and_the_global_model_is_fedavg(ragged_clients):
    model = linear_regression(3)
    ours = ditto(model, ragged_clients, lam=0.0, **FULL_BATCH)
    assert torch.equal(ours.client_params, local_training(model, ragged_clients, **FULL_BATCH).client_params)
    assert torch.equal(ours.global_params, fedavg(model, ragged_clients, **FULL_BATCH).global_params)


@pytest.mark.parametrize("lam", [0.5, 2.0, 10.0])
def test_personal_models_reach_the_closed_form(quadratic_clients, lam):
    """F_k(v) = (1/2)||v - a_k||^2 with equal curvatures: FedAvg's w* = mean(a_k), and the
    personal problem min F_k(v) + (lam/2)||v - w*||^2 is solved by (a_k + lam w*) / (1 + lam)."""
    result = ditto(linear_regression(2), quadratic_clients(CENTRES), lam=lam, n_rounds=20,
                   local_epochs=15, batch_size=None, lr=0.1)
    w = CENTRES.mean(axis=0)
    np.testing.assert_allclose(result.global_params[0].numpy(), w, atol=1e-10)
    np.testing.assert_allclose(result.client_params.numpy(), (CENTRES + lam * w) / (1 + lam), atol=1e-10)


@pytest.mark.parametrize("lam", [1e2, 1e4, 1e6])
def test_a_large_lam_pins_the_personal_models_to_the_global_one(quadratic_clients, lam):
    w = CENTRES.mean(axis=0)
    result = ditto(linear_regression(2), quadratic_clients(CENTRES), lam=lam, init=w, n_rounds=2,
                   local_epochs=3, batch_size=None, lr=1 / (1 + lam))
    gap = np.linalg.norm(result.client_params.numpy() - result.global_params.numpy(), axis=1)
    np.testing.assert_allclose(gap, np.linalg.norm(CENTRES - w, axis=1) / (1 + lam), rtol=1e-6)


def test_only_the_selected_clients_update_their_personal_models(quadratic_clients):
    seen = []
    result = ditto(linear_regression(2), quadratic_clients(CENTRES), lam=1.0, n_rounds=1,
                   local_epochs=1, batch_size=None, lr=0.1, client_fraction=0.5, seed=0,
                   callback=lambda state: seen.append(state.selected.clone()))
    moved = (result.client_params != 0).any(dim=1)
    assert moved.tolist() == seen[0].tolist() and int(moved.sum()) == 2


def test_zero_personal_epochs_keep_the_start_and_bad_lam_is_named(quadratic_clients):
    data = quadratic_clients(CENTRES)
    result = ditto(linear_regression(2), data, lam=1.0, personal_epochs=0, init=[1.0, 2.0], **FULL_BATCH)
    assert torch.equal(result.client_params, torch.tensor([[1.0, 2.0]] * 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="lam must be"):
        ditto(linear_regression(2), data, lam=-1.0, **FULL_BATCH)


@pytest.mark.parametrize("method", ["ditto", "fedprox", "scaffold", "fedadam"])
def test_chunks_of_clients_give_the_same_bits(ragged_clients, method):
    """The corrections index their rows by the chunk: training in chunks of clients changes
    nothing (batches of two or more clients give every client the same bits)."""
    from networkedfl import algorithms

    kwargs = dict(n_rounds=2, local_epochs=2, batch_size=3, lr=0.05, seed=1, client_fraction=0.8)
    model = linear_regression(3, init="bernoulli")
    whole = getattr(algorithms, method)(model, ragged_clients, **kwargs)
    chunks = getattr(algorithms, method)(model, ragged_clients, client_chunk_size=2, **kwargs)
    assert torch.equal(whole.client_params, chunks.client_params)
