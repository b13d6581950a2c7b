"""Softmax regression's closed-form client gradients against ``vmap(grad(loss))``."""

import dataclasses

import numpy as np
import pytest
import torch
from torch.func import grad, vmap

from networkedfl.algorithms import fedavg
from networkedfl.nn import ClientData, batch_gradients, softmax_regression


@pytest.mark.parametrize("bias", [True, False])
def test_closed_form_gradient_equals_vmap_of_grad_with_weights_and_padding(bias):
    rng = np.random.default_rng(0)
    model = softmax_regression(5, 4, bias=bias)
    params = torch.as_tensor(rng.standard_normal((3, model.n_params)))
    x = torch.as_tensor(rng.standard_normal((3, 7, 5)))
    y = torch.as_tensor(rng.integers(0, 4, (3, 7)))
    w = torch.as_tensor(rng.random((3, 7)))
    w[1] = 0.0  # a client whose batch is all padding: gradient 0
    w[2, :3] = 0.0
    closed = model.batch_gradient(params, x, y, w)
    torch.testing.assert_close(closed, vmap(grad(model.loss))(params, x, y, w), rtol=1e-12, atol=1e-14)
    assert closed[1].abs().max() == 0
    ones = torch.ones(3, 7, dtype=torch.float64)
    torch.testing.assert_close(model.batch_gradient(params, x, y, None), vmap(grad(model.loss))(params, x, y, ones),
                               rtol=1e-12, atol=1e-14)


def test_tracked_parameters_and_other_layouts_take_the_generic_path():
    model = softmax_regression(3, 2)
    x, y = torch.zeros(2, 4, 3, dtype=torch.float64), torch.zeros(2, 4, dtype=torch.int64)
    params = torch.zeros(2, model.n_params, dtype=torch.float64, requires_grad=True)
    assert model.batch_gradient(params, x, y, None) is None
    assert model.batch_gradient(params.detach()[0], x[0], y[0], None) is None  # one client
    assert model.batch_gradient(params.detach(), x[..., :2], y, None) is None  # wrong dimension
    # the generic path differentiates through it (as torch.func.grad of a client's loss)
    g = batch_gradients(model)(params.detach(), x, y, torch.ones(2, 4, dtype=torch.float64))
    assert g.shape == (2, model.n_params)


def test_fedavg_with_the_closed_form_is_fedavg_with_autograd():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((4, 30, 6)), rng.integers(0, 3, (4, 30))
    data = ClientData.from_arrays(x, y, [30, 25, 12, 30])  # unequal clients: padded batches
    closed = softmax_regression(6, 3)
    generic = dataclasses.replace(closed, batch_gradient=None)
    runs = [fedavg(m, data, n_rounds=3, local_epochs=2, batch_size=7, lr=0.3, seed=5,
                   dtype="float64") for m in (closed, generic)]
    torch.testing.assert_close(runs[0].client_params, runs[1].client_params, rtol=1e-10, atol=1e-12)
    assert runs[0].client_params.abs().max() > 0.1  # it moved
