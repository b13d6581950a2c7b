"""pFedMe and local momentum SGD against closed forms and hand-written recursions.

References: the exact proximal point of a least-squares loss (a linear solve), Algorithm 1
of Dinh et al. (2020) written out in numpy for full batches, the Moreau envelope's
large-``lambda`` limit (a plain gradient step), PyTorch's own ``torch.optim.SGD`` with
momentum, a numpy heavy-ball recursion, and plain local SGD for ``momentum = 0``.
"""

import numpy as np
import pytest
import torch

from networkedfl.algorithms import (
    epoch_order,
    local_momentum_sgd,
    local_training,
    personalized_steps,
    pfedme,
)
from networkedfl.nn import ClientData, linear_regression, make_generator

# ---------------------------------------------------------------- helpers and references


def _grad(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Gradient of the mean squared error (1/m) ||X w - y||^2."""
    return 2.0 * x.T @ (x @ w - y) / x.shape[0]


def _prox(x: np.ndarray, y: np.ndarray, anchor: np.ndarray, lam: float) -> np.ndarray:
    """argmin_theta (1/m)||X theta - y||^2 + lam/2 ||theta - anchor||^2 (a linear solve)."""
    m, d = x.shape
    a = 2.0 * x.T @ x / m
    b = 2.0 * x.T @ y / m
    return np.linalg.solve(a + lam * np.eye(d), b + lam * anchor)


def _clients(seed: int, counts, m: int, d: int):
    """Padded linear data; padding rows are garbage with weight 0 (must not matter)."""
    rng = np.random.default_rng(seed)
    n = len(counts)
    x = rng.standard_normal((n, m, d))
    y = np.einsum("nmd,nd->nm", x, rng.standard_normal((n, d))) + 0.1 * rng.standard_normal((n, m))
    for i, c in enumerate(counts):
        x[i, c:] = 1e3
        y[i, c:] = -1e3
    xs = [x[i, :c] for i, c in enumerate(counts)]
    ys = [y[i, :c] for i, c in enumerate(counts)]
    return ClientData.from_arrays(x, y, counts, dtype=torch.float64), xs, ys


def _pfedme_reference(xs, ys, w0, *, rounds, local_rounds, inner, lr, plr, lam, beta):
    """Algorithm 1 of pFedMe with full batches, every client selected, in numpy."""
    counts = np.array([len(y) for y in ys], dtype=float)
    g = w0.copy()
    thetas = []
    for _ in range(rounds):
        thetas, locals_ = [], []
        for x, y in zip(xs, ys, strict=True):
            theta, w = g.copy(), g.copy()
            for _ in range(local_rounds):
                for _ in range(inner):
                    theta = theta - plr * (_grad(x, y, theta) + lam * (theta - w))
                w = w - lr * lam * (w - theta)
            thetas.append(theta)
            locals_.append(w)
        average = (counts[:, None] * np.array(locals_)).sum(0) / counts.sum()
        g = (1.0 - beta) * g + beta * average
    return np.array(thetas), g


def _heavy_ball(x, y, w0, *, lr, momentum, steps):
    """b <- g (first), b <- mu b + g (later), w <- w - lr b; all iterates."""
    w, b, out = w0.copy(), None, []
    for _ in range(steps):
        g = _grad(x, y, w)
        b = g if b is None else momentum * b + g
        w = w - lr * b
        out.append(w.copy())
    return np.array(out)


def _t(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float64)


# ---------------------------------------------------------------- pFedMe


def test_personalized_steps_converge_to_the_exact_proximal_point():
    data, xs, ys = _clients(0, [5, 8, 3], 8, 3)
    model = linear_regression(3)
    rng = np.random.default_rng(1)
    anchors = rng.standard_normal((3, 3))
    start = rng.standard_normal((3, 3))
    lam = 3.0
    theta = personalized_steps(
        model, _t(start), _t(anchors), data.features, data.targets, data.sample_weights,
        lam=lam, lr=0.08, steps=400,
    )
    expected = np.array([_prox(x, y, a, lam) for x, y, a in zip(xs, ys, anchors, strict=True)])
    np.testing.assert_allclose(theta.numpy(), expected, rtol=0, atol=1e-10)
    # one step is exactly the stated gradient step of f_i + lam/2 ||theta - anchor||^2
    one = personalized_steps(
        model, _t(start), _t(anchors), data.features, data.targets, data.sample_weights,
        lam=lam, lr=0.08, steps=1,
    )
    hand = np.array([
        s - 0.08 * (_grad(x, y, s) + lam * (s - a))
        for x, y, s, a in zip(xs, ys, start, anchors, strict=True)
    ])
    np.testing.assert_allclose(one.numpy(), hand, rtol=0, atol=1e-12)


def test_pfedme_one_round_matches_closed_form_prox_and_beta_weighted_server_rule():
    counts = [5, 8, 3]
    data, xs, ys = _clients(2, counts, 8, 3)
    w0 = np.array([0.5, -1.0, 2.0])
    lam, eta, beta = 3.0, 0.05, 0.7
    res = pfedme(
        linear_regression(3), data, n_rounds=1, local_rounds=1, inner_steps=400,
        batch_size=8, lr=eta, personal_lr=0.08, lam=lam, beta=beta, init=w0, seed=0,
    )
    prox = np.array([_prox(x, y, w0, lam) for x, y in zip(xs, ys, strict=True)])
    np.testing.assert_allclose(res.client_params.numpy(), prox, rtol=0, atol=1e-10)
    local_w = w0 - eta * lam * (w0 - prox)
    n_i = np.array(counts, dtype=float)
    expected = (1 - beta) * w0 + beta * (n_i[:, None] * local_w).sum(0) / n_i.sum()
    assert res.global_params.shape == (1, 3)
    np.testing.assert_allclose(res.global_params[0].numpy(), expected, rtol=0, atol=1e-10)
    # a plain (unweighted) mean of the local models would differ visibly
    assert np.abs((1 - beta) * w0 + beta * local_w.mean(0) - expected).max() > 1e-4
    assert res.log[0]["messages_up"] == 3 and res.log[0]["floats_up"] == 9
    assert res.log[0]["upload"] == "models"
    assert torch.equal(res.assignment, torch.zeros(3, dtype=torch.int64))


def test_pfedme_several_rounds_match_algorithm_1_in_numpy_every_round():
    counts = [6, 4, 7]
    data, xs, ys = _clients(3, counts, 7, 2)
    w0 = np.array([1.0, -0.5])
    kw = dict(local_rounds=3, inner_steps=4, lr=0.05, lam=2.0, beta=1.3)
    seen = []
    res = pfedme(
        linear_regression(2), data, n_rounds=3, batch_size=50, personal_lr=0.07,
        init=w0, seed=5, callback=lambda s: seen.append(
            (s.client_params.clone(), s.global_params.clone())
        ) or None,
        **kw,
    )
    assert len(seen) == 3 and res.n_rounds == 3
    for t, (theta, g) in enumerate(seen, start=1):
        ref_theta, ref_g = _pfedme_reference(
            xs, ys, w0, rounds=t, local_rounds=3, inner=4, lr=0.05, plr=0.07, lam=2.0, beta=1.3
        )
        np.testing.assert_allclose(theta.numpy(), ref_theta, rtol=0, atol=1e-12)
        np.testing.assert_allclose(g[0].numpy(), ref_g, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.global_params.numpy(), seen[-1][1].numpy(), rtol=0, atol=0)


def test_pfedme_beta_scales_the_server_step_linearly():
    data, _, _ = _clients(4, [5, 5, 5], 5, 3)
    w0 = np.array([0.3, 0.1, -0.2])

    def run(beta):
        return pfedme(
            linear_regression(3), data, n_rounds=1, local_rounds=2, inner_steps=3,
            batch_size=5, lr=0.05, personal_lr=0.05, lam=4.0, beta=beta, init=w0, seed=1,
        )

    one, part = run(1.0), run(0.25)
    # the first round's training does not depend on beta
    torch.testing.assert_close(part.client_params, one.client_params, rtol=0, atol=0)
    expected = 0.75 * w0 + 0.25 * one.global_params[0].numpy()
    np.testing.assert_allclose(part.global_params[0].numpy(), expected, rtol=0, atol=1e-14)


def test_pfedme_large_lambda_pins_theta_to_w_and_reduces_to_a_gradient_step():
    counts = [5, 8, 3]
    data, xs, ys = _clients(6, counts, 8, 3)
    w0 = np.array([1.0, 0.0, -1.0])
    lam, eta = 1e5, 0.05
    res = pfedme(
        linear_regression(3), data, n_rounds=1, local_rounds=1, inner_steps=20,
        batch_size=8, lr=eta, personal_lr=1.0 / (lam + 50.0), lam=lam, beta=1.0, init=w0,
    )
    theta = res.client_params.numpy()
    np.testing.assert_allclose(theta, np.broadcast_to(w0, theta.shape), rtol=0, atol=1e-3)
    # lam (w - prox(w)) -> grad f_i(w): the server step becomes FedSGD's
    n_i = np.array(counts, dtype=float)
    grads = np.array([_grad(x, y, w0) for x, y in zip(xs, ys, strict=True)])
    fedsgd = w0 - eta * (n_i[:, None] * grads).sum(0) / n_i.sum()
    np.testing.assert_allclose(res.global_params[0].numpy(), fedsgd, rtol=0, atol=1e-4)


def test_pfedme_partial_participation_and_client_sampling():
    counts = [5, 8, 3, 6]
    data, xs, ys = _clients(7, counts, 8, 2)
    w0 = np.array([0.2, -0.4])
    lam, eta, beta = 2.0, 0.1, 1.0
    kw = dict(n_rounds=1, local_rounds=1, inner_steps=400, batch_size=8, lr=eta,
              personal_lr=0.08, lam=lam, beta=beta, init=w0, seed=3)
    prox = np.array([_prox(x, y, w0, lam) for x, y in zip(xs, ys, strict=True)])
    local_w = w0 - eta * lam * (w0 - prox)
    n_i = np.array(counts, dtype=float)

    # participants: client 1 neither trains nor is averaged
    mask = torch.tensor([True, False, True, True])
    res = pfedme(linear_regression(2), data, participants=mask, **kw)
    theta = res.client_params.numpy()
    np.testing.assert_allclose(theta[1], w0, rtol=0, atol=0)
    np.testing.assert_allclose(theta[[0, 2, 3]], prox[[0, 2, 3]], rtol=0, atol=1e-10)
    keep = mask.numpy()
    expected = (n_i[keep, None] * local_w[keep]).sum(0) / n_i[keep].sum()
    np.testing.assert_allclose(res.global_params[0].numpy(), expected, rtol=0, atol=1e-10)
    assert res.log[0]["clients"] == 3 and res.log[0]["messages_up"] == 3

    # client_fraction: everyone trains, only the selected clients are averaged
    picked = []
    res = pfedme(linear_regression(2), data, client_fraction=0.5,
                 callback=lambda s: picked.append(s.selected.clone()) or None, **kw)
    sel = picked[0].numpy()
    assert sel.sum() == 2
    np.testing.assert_allclose(res.client_params.numpy(), prox, rtol=0, atol=1e-10)
    expected = (n_i[sel, None] * local_w[sel]).sum(0) / n_i[sel].sum()
    np.testing.assert_allclose(res.global_params[0].numpy(), expected, rtol=0, atol=1e-10)
    assert res.log[0]["messages_up"] == 2 and res.log[0]["messages_down"] == 4

    # nobody allowed: nothing moves
    res = pfedme(linear_regression(2), data, participants=torch.zeros(4, dtype=torch.bool), **kw)
    np.testing.assert_allclose(res.global_params[0].numpy(), w0, rtol=0, atol=0)
    np.testing.assert_allclose(res.client_params.numpy(), np.tile(w0, (4, 1)), rtol=0, atol=0)


def test_pfedme_zero_rounds_returns_the_initial_model():
    data, _, _ = _clients(8, [3, 3], 3, 2)
    res = pfedme(linear_regression(2), data, n_rounds=0, init=np.array([1.0, 2.0]))
    assert res.n_rounds == 0
    np.testing.assert_array_equal(res.client_params.numpy(), [[1.0, 2.0], [1.0, 2.0]])
    np.testing.assert_array_equal(res.global_params.numpy(), [[1.0, 2.0]])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"lr": 0.0}, "lr"),
        ({"personal_lr": -1.0}, "personal_lr"),
        ({"lam": 0.0}, "lam"),
        ({"beta": 0.0}, "beta"),
        ({"beta": 2.5}, "beta"),
        ({"local_rounds": 0}, "local_rounds"),
        ({"inner_steps": 0}, "inner_steps"),
        ({"batch_size": 0}, "batch_size"),
        ({"n_rounds": -1}, "n_rounds"),
        ({"client_fraction": 0.0}, "client_fraction"),
        ({"participants": [True]}, "participants"),
    ],
)
def test_pfedme_rejects_invalid_hyperparameters(kwargs, name):
    data, _, _ = _clients(9, [3, 3], 3, 2)
    args = {"n_rounds": 1, **kwargs}
    with pytest.raises(ValueError, match=name):
        pfedme(linear_regression(2), data, **args)


# ---------------------------------------------------------------- local momentum SGD


def test_local_momentum_full_batch_matches_heavy_ball_and_torch_sgd():
    data, xs, ys = _clients(10, [6], 6, 3)
    w0 = np.array([0.5, -0.5, 1.0])
    lr, mu, steps = 0.05, 0.9, 6
    seen = []
    res = local_momentum_sgd(
        linear_regression(3), data, n_rounds=steps, local_epochs=1, batch_size=6, lr=lr, momentum=mu,
        init=w0, seed=0, callback=lambda s: seen.append(s.client_params[0].clone()) or None,
    )
    ref = _heavy_ball(xs[0], ys[0], w0, lr=lr, momentum=mu, steps=steps)
    np.testing.assert_allclose(torch.stack(seen).numpy(), ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.client_params[0].numpy(), ref[-1], rtol=0, atol=1e-12)
    # momentum really changes the path (not plain GD)
    gd = _heavy_ball(xs[0], ys[0], w0, lr=lr, momentum=0.0, steps=steps)
    assert np.abs(gd[-1] - ref[-1]).max() > 1e-3
    # PyTorch's optimiser, as the docstring states
    p = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.SGD([p], lr=lr, momentum=mu)
    model = linear_regression(3)
    for _ in range(steps):
        opt.zero_grad()
        model.loss(p, _t(xs[0]), _t(ys[0])).backward()
        opt.step()
    np.testing.assert_allclose(res.client_params[0].numpy(), p.detach().numpy(), rtol=0, atol=1e-12)
    assert res.global_params is res.client_params
    assert res.assignment.tolist() == [0]
    assert [row["upload"] for row in res.log] == ["none"] * steps
    assert all(row["floats_up"] == 0 and row["messages_up"] == 0 for row in res.log)


def test_local_momentum_zero_is_plain_gradient_descent():
    data, xs, ys = _clients(11, [5, 5], 5, 2)
    w0 = np.array([[1.0, 1.0], [-1.0, 0.5]])
    res = local_momentum_sgd(linear_regression(2), data, n_rounds=7, local_epochs=1, batch_size=10, lr=0.1,
                             momentum=0.0, init=w0, seed=0)
    for i in range(2):
        gd = _heavy_ball(xs[i], ys[i], w0[i], lr=0.1, momentum=0.0, steps=7)[-1]
        np.testing.assert_allclose(res.client_params[i].numpy(), gd, rtol=0, atol=1e-12)


def test_local_momentum_zero_equals_local_training_with_minibatches():
    data, _, _ = _clients(12, [7, 4, 6], 7, 3)
    kw = dict(n_rounds=3, local_epochs=1, batch_size=2, lr=0.05, init=np.array([0.1, 0.2, 0.3]), seed=42)
    mom = local_momentum_sgd(linear_regression(3), data, momentum=0.0, **kw)
    plain = local_training(linear_regression(3), data, **kw)
    torch.testing.assert_close(mom.client_params, plain.client_params, rtol=0, atol=1e-13)


def test_local_momentum_minibatches_follow_the_shuffled_blocks_and_padded_clients_wait():
    counts = [7, 2]
    data, xs, ys = _clients(13, counts, 7, 2)
    w0 = np.array([0.4, -0.3])
    lr, mu, bs, epochs = 0.05, 0.8, 3, 3
    res = local_momentum_sgd(linear_regression(2), data, n_rounds=epochs, local_epochs=1, batch_size=bs,
                             lr=lr, momentum=mu, init=w0, seed=17)
    # reference: replay the same per-epoch orders; client 0 takes ceil(7/3) = 3 steps,
    # client 1 (2 samples) one full-batch step per epoch, its buffer waiting otherwise
    gen = make_generator(17)
    w = [w0.copy(), w0.copy()]
    buf = [None, None]
    for _ in range(epochs):
        order = epoch_order(data.sample_weights, gen).numpy()
        for s in range(3):
            for i in range(2):
                idx = [j for j in order[i, s * bs:(s + 1) * bs] if j < counts[i]]
                if not idx:
                    continue
                g = _grad(xs[i][idx], ys[i][idx], w[i])
                buf[i] = g if buf[i] is None else mu * buf[i] + g
                w[i] = w[i] - lr * buf[i]
    np.testing.assert_allclose(res.client_params.numpy(), np.array(w), rtol=0, atol=1e-12)
    # the small client alone: heavy ball with one full-batch step per epoch
    hb = _heavy_ball(xs[1], ys[1], w0, lr=lr, momentum=mu, steps=epochs)[-1]
    np.testing.assert_allclose(res.client_params[1].numpy(), hb, rtol=0, atol=1e-12)


def test_local_momentum_clients_do_not_interact():
    rng = np.random.default_rng(14)
    x = rng.standard_normal((2, 6, 3))
    y = rng.standard_normal((2, 6))
    kw = dict(n_rounds=4, local_epochs=1, batch_size=6, lr=0.05, momentum=0.7, seed=0)
    init = np.array([[0.1, 0.2, 0.3], [-0.3, 0.0, 0.5]])
    a = local_momentum_sgd(linear_regression(3), ClientData.from_arrays(x, y, dtype=torch.float64), init=init, **kw)
    b = local_momentum_sgd(linear_regression(3), ClientData.from_arrays(x[::-1].copy(), y[::-1].copy(), dtype=torch.float64),
                           init=init[::-1].copy(), **kw)
    torch.testing.assert_close(b.client_params, a.client_params.flip(0), rtol=0, atol=1e-14)
    alone = local_momentum_sgd(linear_regression(3), ClientData.from_arrays(x[:1], y[:1], dtype=torch.float64),
                               init=init[0], **kw)
    torch.testing.assert_close(alone.client_params[0], a.client_params[0], rtol=0, atol=1e-14)
    assert not torch.allclose(a.client_params[0], a.client_params[1])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"lr": 0.0}, "lr"),
        ({"momentum": -0.1}, "momentum"),
        ({"momentum": 1.0}, "momentum"),
        ({"local_epochs": -1}, "local_epochs"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_local_momentum_rejects_invalid_hyperparameters(kwargs, name):
    data, _, _ = _clients(15, [3, 3], 3, 2)
    args = {"local_epochs": 1, "batch_size": 2, "lr": 0.1, **kwargs}
    with pytest.raises(ValueError, match=name):
        local_momentum_sgd(linear_regression(2), data, **args)
