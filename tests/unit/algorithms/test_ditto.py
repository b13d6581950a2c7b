"""Ditto (Li et al. 2021, Algorithm 1) against local training (lam = 0), FedAvg (its global
model) and the personal optimum in closed form, v_k = (a_k + lam w*) / (1 + lam)."""

import numpy as np
import pytest
import torch

from networkedfl.algorithms import ditto, ditto_steps, fedavg, fedavg_steps, local_training
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


# ---------------------------------------------------------------- counted in steps (Fig. 10.4)

STEPS = dict(n_rounds=3, local_steps=2, batch_size=None, lr=0.1)


@pytest.mark.filterwarnings("error")  # client_weights="samples" read a renamed attribute (a warning) until issue 42
@pytest.mark.parametrize("personal", [None, 1, 3])
def test_steps_equal_the_epoch_ditto_with_full_batches(ragged_clients, personal):
    """Full-batch: an epoch is one step, so ``local_steps`` = ``local_epochs`` (the personal
    steps, epochs too) and the server's weights the sample counts give Algorithm 1 twice."""
    model = linear_regression(3, init="bernoulli")
    epochs = ditto(model, ragged_clients, lam=0.5, personal_epochs=personal, seed=0, n_rounds=3,
                   local_epochs=2, batch_size=None, lr=0.1)
    steps = ditto_steps(model, ragged_clients, lam=0.5, personal_steps=personal, client_weights="samples",
                        seed=0, **STEPS)
    torch.testing.assert_close(steps.client_params, epochs.client_params, rtol=0, atol=1e-12)
    torch.testing.assert_close(steps.global_params, epochs.global_params, rtol=0, atol=1e-12)


@pytest.mark.parametrize("lam", [0.5, 2.0, 10.0])
def test_steps_personal_models_reach_the_closed_form(quadratic_clients, lam):
    """F_k(v) = (1/2)||v - a_k||^2: FedAvg's w* = mean(a_k) (uniform weights), the personal
    optimum (a_k + lam w*) / (1 + lam) (Li et al. 2021, eq. (2))."""
    result = ditto_steps(linear_regression(2), quadratic_clients(CENTRES), lam=lam, n_rounds=20, local_steps=15,
                         batch_size=None, lr=0.1)
    w = CENTRES.mean(axis=0)
    np.testing.assert_allclose(result.global_params[0].numpy(), w, atol=1e-10)
    np.testing.assert_allclose(result.client_params.numpy(), (CENTRES + lam * w) / (1 + lam), atol=1e-10)


def test_steps_one_personal_step_is_the_paper_s_update_by_hand(quadratic_clients):
    """One round, one step each: w_k = w - eta (w - a_k), v_k = v - eta ((v - a_k) + lam (v - w))."""
    w0, v0, eta, lam = np.array([0.5, -1.0]), np.array([0.5, -1.0]), 0.3, 2.0
    result = ditto_steps(linear_regression(2), quadratic_clients(CENTRES), lam=lam, init=w0, n_rounds=1,
                         local_steps=1, batch_size=None, lr=eta)
    np.testing.assert_allclose(result.global_params[0].numpy(), (w0 - eta * (w0 - CENTRES)).mean(axis=0),
                               atol=1e-12)
    np.testing.assert_allclose(result.client_params.numpy(), v0 - eta * ((v0 - CENTRES) + lam * (v0 - w0)),
                               atol=1e-12)


def test_steps_global_model_is_fedavg_steps_and_lam_zero_is_local_steps(ragged_clients):
    """With mini-batches the global steps draw first: after one round the global model is
    FedAvg's bit for bit; with lam = 0 (full batch) the personal models are local training."""
    model = linear_regression(3, init="bernoulli")
    batched = dict(n_rounds=1, local_steps=3, batch_size=2, lr=0.1)
    ours = ditto_steps(model, ragged_clients, lam=1.0, seed=torch.Generator().manual_seed(3), **batched)
    plain = fedavg_steps(model, ragged_clients, seed=torch.Generator().manual_seed(3), **batched)
    assert torch.equal(ours.global_params, plain.global_params)
    assert not torch.equal(ours.client_params, plain.client_params)
    alone = ditto_steps(model, ragged_clients, lam=0.0, seed=0, **STEPS)
    local = fedavg_steps(model, ragged_clients, groups=np.arange(5), seed=0, **STEPS)
    torch.testing.assert_close(alone.client_params, local.client_params, rtol=0, atol=1e-12)
    assert ours.log == plain.log  # personal models stay on the clients


def test_steps_keep_masked_coordinates_and_show_the_personal_models_to_the_callback(ragged_clients):
    model = linear_regression(3, init="bernoulli")
    mask = torch.ones(5, model.n_params, dtype=torch.float64)
    mask[1, 0] = mask[3, 2] = 0.0
    seen = []
    result = ditto_steps(model, ragged_clients, lam=0.5, mask=mask, mask_average=True, init=torch.full((3,), 0.25),
                         callback=lambda state: seen.append(state.client_params.clone()), seed=1,
                         n_rounds=2, local_steps=2, batch_size=3, lr=0.1)
    assert float(result.client_params[1, 0]) == 0.25 and float(result.client_params[3, 2]) == 0.25
    assert torch.equal(seen[-1], result.client_params) and len(seen) == 2
    with pytest.raises(TypeError, match="local_epochs"):
        ditto_steps(model, ragged_clients, lam=0.5, n_rounds=1, local_epochs=1, batch_size=None, lr=0.1)
    with pytest.raises(ValueError, match="lam must be"):
        ditto_steps(model, ragged_clients, lam=-1.0, **STEPS)
