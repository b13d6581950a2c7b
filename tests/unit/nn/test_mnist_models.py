"""The network (40), its inexact proximal step, per-block nLasso, and Alg. 1 with them."""

import dataclasses

import numpy as np
import pytest
import torch

from networkedfl.graphs import EmpiricalGraph
from networkedfl.gtv import BlockNLassoPenalty, LocalLoss, NLassoPenalty, gtv_primal_dual
from networkedfl.nn import InexactProxCrossEntropy, TwoLayerNetwork, accuracy

NET = TwoLayerNetwork(n_features=6, n_hidden=3, n_classes=2)


def _data(n=3, m=25, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, m, NET.n_features, generator=g, dtype=torch.float64)
    y = (x[..., 0] + 0.3 * torch.rand(n, m, generator=g, dtype=torch.float64) > 0.65).long()
    return x, y


def test_logits_match_a_torch_module_node_by_node():
    x, _ = _data()
    params = torch.randn(2, 3, NET.n_params, dtype=torch.float64)
    out = NET.logits(params, x)
    assert out.shape == (2, 3, 25, 2)
    for r in range(2):
        for i in range(3):
            w1, w2, b1, b2 = NET.unflatten(params[r, i])
            layer1 = torch.nn.Linear(6, 3).double()
            layer2 = torch.nn.Linear(3, 2).double()
            with torch.no_grad():
                layer1.weight.copy_(w1), layer1.bias.copy_(b1)
                layer2.weight.copy_(w2), layer2.bias.copy_(b2)
                ref = layer2(torch.relu(layer1(x[i])))
            assert torch.allclose(out[r, i], ref)
    # the flat model of the baselines computes the same function
    model = NET.flat_model()
    assert torch.allclose(model.forward(params[1, 2], x[2]), out[1, 2])
    assert torch.allclose(NET.logits(params[0], x), out[0])


def test_hand_written_gradient_equals_autograd():
    x, y = _data()
    params = torch.randn(2, 3, NET.n_params, dtype=torch.float64, requires_grad=True)
    loss = NET.node_losses(params, x, y)
    (auto,) = torch.autograd.grad(loss.sum(), params)
    value, manual = NET.losses_and_gradients(params.detach(), x, y)
    assert torch.allclose(value, loss.detach()) and torch.allclose(manual, auto, atol=1e-12)
    assert accuracy(NET.logits(params.detach(), x), y).shape == (2, 3)


def test_flat_models_closed_forms_equal_vmap_of_autograd_with_sample_weights():
    """The baselines' closed forms (FlatModel.batch_gradient/batch_loss of the network):
    weighted means equal vmap(grad(loss)) and vmap(loss), a node with zero weights has loss
    and gradient 0, and losses_of_models / local_sgd take them."""
    from torch.func import grad, vmap

    from networkedfl.algorithms import local_sgd
    from networkedfl.nn import ClientData, batch_gradients, client_losses, losses_of_models

    x, y = _data(n=4, m=25)
    w = torch.rand(4, 25, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    w[1] = 0.0                      # a node without samples (a padded mini-batch)
    w[2, :10] = 0.0                 # padding rows of a smaller node
    params = torch.randn(4, NET.n_params, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    model = NET.flat_model()
    generic_grad = vmap(grad(model.loss))(params, x, y, w)
    closed_grad = model.batch_gradient(params, x, y, w)
    assert closed_grad is not None and torch.allclose(closed_grad, generic_grad, atol=1e-13, rtol=1e-12)
    assert torch.equal(batch_gradients(model)(params, x, y, w), closed_grad)
    assert torch.count_nonzero(closed_grad[1]) == 0
    generic_loss = vmap(model.loss)(params, x, y, w)
    closed_loss = model.batch_loss(params, x, y, w)
    assert closed_loss is not None and torch.allclose(closed_loss, generic_loss, atol=0, rtol=1e-13)
    assert float(closed_loss[1]) == 0.0
    assert torch.allclose(client_losses(model, params, x, y, w), generic_loss, rtol=1e-13, atol=0)
    # IFCA's (n, k) table: once per model through the closed form
    models = torch.randn(3, NET.n_params, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    table = losses_of_models(model, models, x, y, w)
    reference = vmap(vmap(model.loss, in_dims=(0, None, None, None)), in_dims=(None, 0, 0, 0))(models, x, y, w)
    assert table.shape == (4, 3) and torch.allclose(table, reference, rtol=1e-13, atol=0)
    # autograd-tracked params and other layouts go the generic way
    assert model.batch_gradient(params.clone().requires_grad_(), x, y, w) is None
    assert model.batch_loss(params, x[:, :, :5], y, w) is None
    # full-batch local training takes the closed form: the same steps as vmap(grad)
    data = ClientData(x, y, w)
    calls = []

    def spy(*args):
        calls.append(1)
        return model.batch_gradient(*args)

    trained = local_sgd(dataclasses.replace(model, batch_gradient=spy), params, data, epochs=3,
                        batch_size=None, lr=0.5)
    assert len(calls) == 3
    expected = params.clone()
    for _ in range(3):
        expected = expected - 0.5 * vmap(grad(model.loss))(expected, x, y, w)
    assert torch.allclose(trained, expected, atol=1e-12)


def test_layout_blocks_and_initialisation():
    assert NET.blocks == {"W1": (0, 18), "W2": (18, 24), "b1": (24, 27), "b2": (27, 29)}
    assert NET.n_params == 29 and NET.n_weights == 24
    assert NET.weight_mask().sum() == 24
    w0 = NET.initial_params(np.random.default_rng(0))
    assert np.all((w0[:24] >= 0) & (w0[:24] < 1)) and np.all(w0[24:] == 0)


def _prox_objective_gradient(loss, w, w_hat, tau):
    """Gradient of L_i(v) + ||v_W - w_hat_W||^2 / (2 tau_i) at w (weights W only)."""
    _, g = loss.network.losses_and_gradients(torch.as_tensor(w)[None], loss.features, loss.labels)
    g = g[0].numpy() + (w - w_hat) * loss.network.weight_mask() / tau[:, None]
    return g


def _prox_objective(loss, w, w_hat, tau):
    value = loss.network.node_losses(torch.as_tensor(w)[None], loss.features, loss.labels)[0].numpy()
    return value + (((w - w_hat) * loss.network.weight_mask()) ** 2).sum(axis=1) / (2 * tau)


def test_inexact_prox_with_many_steps_satisfies_the_optimality_condition():
    """Gradient of the prox objective ~ 0 at the result of many plain gradient steps.

    The objective is differentiable only away from the ReLU kinks (a sample with
    ``W1 x + b1 = 0``); at a minimiser on a kink the condition is a subdifferential
    inclusion and fixed-step gradient descent oscillates across the kink (with a random
    ``w_hat`` a hidden unit may end there: the gradient of its bias then stalls at
    ~1e-3).  The start is the experiments' own (weights ``U[0, 1)`` on pixels in
    ``[0, 1]``, positive biases), and the test first checks that the solution lies in the
    smooth region, where the exact condition must hold.
    """
    x, y = _data()
    loss = InexactProxCrossEntropy(NET, x, y, steps=4000, lr=0.05, optimizer="sgd", dtype=torch.float64)
    assert isinstance(loss, LocalLoss)
    tau = np.array([0.25, 0.5, 1.0])
    rng = np.random.default_rng(1)
    w_hat = np.stack([NET.initial_params(rng, bias=1.0) for _ in range(3)])
    w_hat[:, 18:24] = rng.normal(0.0, 1.0, (3, 6))  # W2 of both signs
    w = loss.prox_operator(tau)(w_hat)
    w1, _, b1, _ = NET.unflatten(torch.as_tensor(w))
    pre = torch.einsum("nmf,nhf->nmh", x, w1) + b1[:, None, :]
    assert pre.abs().min() > 0.1  # smooth region: every unit strictly active or inactive
    grad = _prox_objective_gradient(loss, w, w_hat, tau)
    assert np.abs(grad).max() < 1e-6
    assert np.all(_prox_objective(loss, w, w_hat, tau) < _prox_objective(loss, w_hat, w_hat, tau))
    # a smaller tau keeps the weights closer to w_hat
    assert np.abs(w - w_hat)[0, :24].sum() < np.abs(w - w_hat)[1, :24].sum() < np.abs(w - w_hat)[2, :24].sum()


def test_inexact_prox_keeps_rows_outside_the_sampling_set_and_carries_rmsprop_state():
    x, y = _data()
    mask = np.array([True, False, True, True, True, False])
    loss = InexactProxCrossEntropy(NET, x, y, replicas=2, steps=5, mask=mask, dtype=torch.float64)
    assert loss.n_nodes == 6 and loss.trivial_nodes.tolist() == (~mask).tolist()
    w_hat = np.random.default_rng(2).normal(0, 0.5, (6, NET.n_params))
    prox = loss.prox_operator(np.full(6, 0.5))
    first = prox(w_hat)
    assert np.array_equal(first[~mask], w_hat[~mask]) and not np.allclose(first[mask], w_hat[mask])
    # replicas of the same node with the same start get the same update
    loss_all = InexactProxCrossEntropy(NET, x, y, replicas=2, steps=5, dtype=torch.float64)
    both = loss_all.prox_operator(np.full(6, 0.5))(np.concatenate([w_hat[:3], w_hat[:3]]))
    assert np.allclose(both[:3], both[3:])
    # the optimiser's averages persist: a second call differs from a fresh operator's first
    again = prox(w_hat)
    fresh = loss.prox_operator(np.full(6, 0.5))(w_hat)
    assert np.array_equal(fresh, first) and not np.allclose(again[mask], first[mask])
    with pytest.raises(NotImplementedError, match="gap"):
        loss.conjugate(w_hat)


def test_prox_scale_zero_is_plain_gradient_descent_on_the_local_loss():
    """The authors' detached proximal term (ablation): steps on L_i alone from w_hat."""
    x, y = _data()
    w_hat = np.random.default_rng(4).normal(0, 0.5, (3, NET.n_params))
    loss = InexactProxCrossEntropy(NET, x, y, steps=3, lr=0.1, optimizer="sgd", prox_scale=0.0,
                                   dtype=torch.float64)
    got = loss.prox_operator(np.array([0.25, 0.5, 1.0]))(w_hat)
    v = torch.as_tensor(w_hat)[None]
    for _ in range(3):
        v = v - 0.1 * NET.losses_and_gradients(v, x, y)[1]
    assert np.allclose(got, v[0].numpy(), atol=1e-12)
    real = InexactProxCrossEntropy(NET, x, y, steps=3, lr=0.1, optimizer="sgd", dtype=torch.float64)
    assert not np.allclose(real.prox_operator(np.array([0.25, 0.5, 1.0]))(w_hat), got)
    with pytest.raises(ValueError, match="prox_scale"):
        InexactProxCrossEntropy(NET, x, y, prox_scale=-1.0)


def test_block_nlasso_projects_each_block_and_zeroes_free_coordinates():
    pen = BlockNLassoPenalty(((0, 2), (2, 5)))
    z = np.array([[3.0, 4.0, 0.0, 0.0, 0.2, 7.0], [0.3, 0.4, 1.0, 2.0, 2.0, -1.0]])
    radius = np.array([1.0, 2.0])
    u = pen.dual_prox(z, 0.45, radius)
    assert np.allclose(u[0], [0.6, 0.8, 0.0, 0.0, 0.2, 0.0])
    assert np.allclose(u[1], [0.3, 0.4, 2 / 3, 4 / 3, 4 / 3, 0.0])
    assert np.allclose(pen.value(z, radius), radius * np.array([5.0 + 0.2, 0.5 + 3.0]))
    assert np.all(pen.conjugate(u, radius) == 0) and np.isinf(pen.conjugate(z, radius)).all()
    assert pen.feasible_scale(z, radius) == 0.0  # free coordinates must vanish
    assert pen.feasible_scale(u * 2, radius) == pytest.approx(0.5)
    # one block over every coordinate is the plain nLasso penalty
    whole = BlockNLassoPenalty(((0, 6),))
    assert np.allclose(whole.dual_prox(z, 0.45, radius), NLassoPenalty().dual_prox(z, 0.45, radius))
    with pytest.raises(ValueError, match="overlap"):
        BlockNLassoPenalty(((0, 3), (2, 5)))


def test_primal_dual_with_the_neural_loss_fuses_a_connected_pair_and_ignores_edges_at_lambda_0():
    x, y = _data(n=2, m=30, seed=3)
    graph = EmpiricalGraph(4, np.array([[0, 1], [2, 3]]), np.ones(2))  # two replicas of the pair
    loss = InexactProxCrossEntropy(NET, x, y, replicas=2, steps=50, lr=0.05, optimizer="sgd",
                                   dtype=torch.float64)
    pen = BlockNLassoPenalty(((0, NET.n_weights),))
    w0 = np.tile(NET.initial_params(np.random.default_rng(0)) * 0.3, (4, 1))
    res = gtv_primal_dual(graph, loss, pen, np.array([0.0, 1e4]), 400, w0=w0)
    w = res.weights[:, : NET.n_weights]
    assert np.abs(res.duals[0]).max() == 0  # lambda = 0: the edge is ignored
    assert np.linalg.norm(w[0] - w[1]) > 1e-2  # ... and the two nodes fit their own data
    assert np.linalg.norm(w[2] - w[3]) < 1e-3 * np.linalg.norm(w[2])  # huge lambda: one model
    assert np.abs(res.duals[1, NET.n_weights:]).max() == 0  # biases are not coupled


# ---------------------------------------------------------------- sparse samples


def _sparse_data(n=4, m=30, seed=3, dtype=torch.float64):
    """Samples with about 80 % zeros, as MNIST images."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, m, NET.n_features, generator=g, dtype=dtype)
    x = x * (torch.rand(n, m, NET.n_features, generator=g, dtype=dtype) < 0.2)
    y = torch.randint(0, 2, (n, m), generator=g)
    return x, y


def test_sparse_samples_hold_the_block_diagonal_matrix_and_its_transpose():
    from networkedfl.nn import SparseSamples

    x, _ = _sparse_data()
    n, m, f = x.shape
    s = SparseSamples.of(x)
    dense = torch.block_diag(*[x[i] for i in range(n)])  # (n m, n F)
    assert s.shape == (n, m, f) and s.rows.col_indices().dtype == torch.int32
    assert torch.equal(s.rows.to_dense(), dense) and torch.equal(s.cols.to_dense(), dense.T)
    assert s.to(torch.float32).dtype == torch.float32 and s.to(torch.float64) is s
    with pytest.raises(ValueError, match=r"\(n, m, F\)"):
        SparseSamples.of(x[0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_one_column_products_by_scipy_are_torchs_bit_for_bit(dtype):
    """SparseSamples.times hands a product with one dense column (one replica, one hidden
    unit) to scipy's CSR kernel: the numbers of torch's, bit for bit, both ways round; with
    more columns, torch's own product; the one-unit network's gradients (scipy) equal the
    same replica's inside a batch of three (torch) bit for bit."""
    from networkedfl.nn import SparseSamples

    g = torch.Generator().manual_seed(5)
    x = torch.rand(6, 40, 784, generator=g, dtype=dtype)
    x = x * (torch.rand(6, 40, 784, generator=g, dtype=dtype) < 0.2)  # MNIST's share of non-zeros
    s = SparseSamples.of(x)
    for which, matrix in (("rows", s.rows), ("cols", s.cols)):
        for width in (1, 3):
            dense = torch.randn(matrix.shape[1], width, generator=g, dtype=dtype)
            assert torch.equal(s.times(which, dense), matrix @ dense)
    one = TwoLayerNetwork(n_features=784, n_hidden=1, n_classes=2)
    params = torch.randn(3, 6, one.n_params, generator=g, dtype=dtype)
    labels = torch.randint(0, 2, (6, 40), generator=g)
    together = one.losses_and_gradients(params, s, labels)
    alone = one.losses_and_gradients(params[1:2], s, labels)
    assert torch.equal(alone[0], together[0][1:2]) and torch.equal(alone[1], together[1][1:2])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sparse_products_give_the_dense_losses_and_gradients_and_replicas_do_not_interact(dtype):
    """Bit for bit whatever the replicas beside it, where each node holds a multiple of 32
    samples (whole vector blocks in torch's elementwise kernels; the default config's 400)."""
    from networkedfl.nn import SparseSamples

    x, y = _sparse_data(m=32, dtype=dtype)
    s = SparseSamples.of(x)
    params = torch.randn(5, x.shape[0], NET.n_params, dtype=dtype, generator=torch.Generator().manual_seed(1))
    loss_d, grad_d = NET.losses_and_gradients(params, x, y)
    loss_s, grad_s = NET.losses_and_gradients(params, s, y)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-12}
    torch.testing.assert_close(loss_s, loss_d, **tol)
    torch.testing.assert_close(grad_s, grad_d, **tol)
    torch.testing.assert_close(NET.node_losses(params, s, y), loss_d, **tol)
    # a replica's numbers are the same bit for bit with any replicas beside it
    for k in range(5):
        alone = NET.losses_and_gradients(params[k:k + 1], s, y)
        assert torch.equal(alone[0], loss_s[k:k + 1]) and torch.equal(alone[1], grad_s[k:k + 1])
    pair = NET.losses_and_gradients(params[1:3], s, y)[1]
    assert torch.equal(pair, grad_s[1:3])


def test_flat_model_uses_the_sparse_form_of_exactly_the_tensors_it_was_given():
    from networkedfl.nn import ClientData, batch_gradients
    from networkedfl.nn._mnist_network import SparseSamples

    x, y = _sparse_data()
    data = ClientData.from_arrays(x, y)
    params = torch.randn(x.shape[0], NET.n_params, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    seen = []
    original = TwoLayerNetwork.losses_and_gradients

    def spy(self, p, features, *args, **kwargs):
        seen.append(isinstance(features, SparseSamples))
        return original(self, p, features, *args, **kwargs)

    TwoLayerNetwork.losses_and_gradients = spy
    try:
        sparse = batch_gradients(NET.flat_model(sparse=[data.features]))
        dense = batch_gradients(NET.flat_model())
        g_sparse = sparse(params, data.features, data.targets, data.sample_weights)
        g_dense = dense(params, data.features, data.targets, data.sample_weights)
        g_copy = sparse(params, data.features.clone(), data.targets, data.sample_weights)  # another tensor
    finally:
        TwoLayerNetwork.losses_and_gradients = original
    assert seen == [True, False, False]
    torch.testing.assert_close(g_sparse, g_dense, rtol=1e-12, atol=1e-12)
    assert torch.equal(g_copy, g_dense)


def test_local_training_of_all_clients_multiplies_the_sparse_form(monkeypatch):
    """local_sgd passes the whole-range view ``x[0:n]`` of the registered features: the
    sparse form applies to it (issue 44: before, every full-batch step was dense), and not
    to a proper slice or a changed tensor."""
    from networkedfl.algorithms import local_sgd
    from networkedfl.nn import ClientData
    from networkedfl.nn._mnist_network import SparseSamples

    x, y = _sparse_data()
    data = ClientData.from_arrays(x, y)
    seen = []
    original = TwoLayerNetwork.losses_and_gradients

    def spy(self, p, features, *args, **kwargs):
        seen.append(isinstance(features, SparseSamples))
        return original(self, p, features, *args, **kwargs)

    monkeypatch.setattr(TwoLayerNetwork, "losses_and_gradients", spy)
    model = NET.flat_model(sparse=[data.features])
    start = torch.randn(x.shape[0], NET.n_params, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    sparse = local_sgd(model, start, data, epochs=3, batch_size=None, lr=0.1)
    assert seen == [True] * 3
    dense = local_sgd(NET.flat_model(), start, data, epochs=3, batch_size=None, lr=0.1)
    torch.testing.assert_close(sparse, dense, rtol=1e-12, atol=1e-12)
    seen.clear()
    batches = model.batch_gradient
    batches(start[:2], data.features[:2], data.targets[:2], None)  # a proper slice: dense
    assert seen == [False]


def test_losses_of_models_evaluates_all_models_in_one_pass_with_the_same_bits():
    """IFCA's cluster estimate: the k models of every client in one stacked call equal the
    k separate calls bit for bit (each replica's sparse product is its own)."""
    from networkedfl.nn import ClientData, losses_of_models
    from networkedfl.nn._mnist_network import SparseSamples

    x, y = _sparse_data()
    data = ClientData.from_arrays(x, y, dtype=torch.float32)
    model = NET.flat_model(sparse=[data.features])
    models = torch.randn(4, NET.n_params, generator=torch.Generator().manual_seed(4))
    calls = []
    original = TwoLayerNetwork.node_losses

    def spy(self, p, features, *args, **kwargs):
        calls.append((tuple(p.shape), isinstance(features, SparseSamples)))
        return original(self, p, features, *args, **kwargs)

    TwoLayerNetwork.node_losses = spy
    try:
        stacked = losses_of_models(model, models, data.features, data.targets)
        one_by_one = dataclasses.replace(model, stacked_loss=False)
        separate = losses_of_models(one_by_one, models, data.features, data.targets)
    finally:
        TwoLayerNetwork.node_losses = original
    n = x.shape[0]
    assert calls == [((4, n, NET.n_params), True)] + [((n, NET.n_params), True)] * 4
    assert stacked.shape == (n, 4) and torch.equal(stacked, separate)
