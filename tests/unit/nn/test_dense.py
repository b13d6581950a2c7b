"""Closed-form batched gradients and Hessian-vector products of the chapter's dense
networks (nn.DenseDerivatives) against torch.func's vmap(grad) and its vector-Jacobian
product, for every activation, with and without biases, both losses and scalar outputs."""

import pytest
import torch
from torch.func import grad, vjp, vmap

from networkedfl.experiments.gfl.synthetic import mlp
from networkedfl.nn import DenseDerivatives, batch_gradients, batch_hessian_products

DT = torch.float64


def _case(sizes, activation, bias, loss, n=4, m=7, seed=0):
    gen = torch.Generator().manual_seed(seed)
    model = mlp(sizes, activation=activation, bias=bias, loss=loss)
    params = torch.stack([model.initial_params(gen, dtype=DT) for _ in range(n)])
    params = params + 0.3 * torch.randn(params.shape, generator=gen, dtype=DT)
    x = torch.randn(n, m, sizes[0], generator=gen, dtype=DT)
    y = torch.randn((n, m) if sizes[-1] == 1 else (n, m, sizes[-1]), generator=gen, dtype=DT)
    w = torch.rand(n, m, generator=gen, dtype=DT)
    w[1] = 0.0          # a client without samples in the batch
    w[2, :3] = 0.0      # padding rows
    return model, params, x, y, w


@pytest.mark.parametrize("activation", ["relu", "sigmoid", "tanh"])
@pytest.mark.parametrize(("sizes", "bias", "loss"), [([3, 5, 4, 1], True, "squared"),
                                                     ([4, 6, 5, 3], False, "half_squared_norm"),
                                                     ([2, 3, 2], True, "half_squared_norm")])
def test_closed_forms_equal_torch_func(sizes, activation, bias, loss):
    model, params, x, y, w = _case(sizes, activation, bias, loss)
    generic = vmap(grad(model.loss))
    closed = model.batch_gradient(params, x, y, w)
    assert closed is not None
    torch.testing.assert_close(closed, generic(params, x, y, w), rtol=1e-11, atol=1e-13)
    assert torch.count_nonzero(closed[1]) == 0
    assert torch.equal(batch_gradients(model)(params, x, y, w), closed)
    v = torch.randn(params.shape, generator=torch.Generator().manual_seed(9), dtype=DT)
    _, pull = vjp(lambda th: generic(th, x, y, w), params)
    torch.testing.assert_close(batch_hessian_products(model, params, x, y, w)(v), pull(v)[0],
                               rtol=1e-10, atol=1e-12)


def test_the_hessian_product_is_a_derivative_of_the_gradient_and_symmetric():
    """Finite differences of the closed-form gradient, and u^T H v = v^T H u."""
    model, params, x, y, w = _case([3, 4, 4, 2], "tanh", True, "squared", seed=1)
    gen = torch.Generator().manual_seed(2)
    u, v = (torch.randn(params.shape, generator=gen, dtype=DT) for _ in range(2))
    hess = model.batch_hessian(params, x, y, w)
    eps = 1e-6
    fd = (model.batch_gradient(params + eps * v, x, y, w) - model.batch_gradient(params - eps * v, x, y, w)) / (2 * eps)
    torch.testing.assert_close(hess(v), fd, rtol=1e-6, atol=1e-8)
    torch.testing.assert_close((u * hess(v)).sum(dim=1), (v * hess(u)).sum(dim=1), rtol=1e-10, atol=1e-12)


def test_other_layouts_and_tracked_parameters_take_the_generic_path():
    model, params, x, y, w = _case([3, 5, 1], "relu", True, "squared")
    assert model.batch_gradient(params.clone().requires_grad_(), x, y, w) is None
    assert model.batch_gradient(params, x[:, :, :2], y, w) is None
    assert model.batch_hessian(params[:, :-1], x, y, w) is None
    with pytest.raises(ValueError, match="activation"):
        DenseDerivatives([2, 3, 1], activation="gelu", bias=True, loss="squared")
    with pytest.raises(ValueError, match="loss"):
        DenseDerivatives([2, 3, 1], activation="relu", bias=True, loss="hinge")
