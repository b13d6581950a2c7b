"""The torch methods' shared contract and kernels against known solutions: the options
(one object and/or keywords, errors naming the option), the aggregation kernels (weighted
means by hand) and the optimiser steps of networkedfl.nn (torch.optim's arithmetic)."""

import numpy as np
import pytest
import torch

from networkedfl.algorithms import fedavg, fedsgd, local_training
from networkedfl.algorithms.aggregate import (
    check_fraction,
    consensus_distance,
    group_average,
    mix,
    sample_clients,
)
from networkedfl.algorithms.contract import UNSET, TrainingOptions, start_run
from networkedfl.nn import (
    DEFAULT_DTYPE,
    ClientData,
    RMSprop,
    as_device,
    as_dtype,
    heavy_ball_step,
    linear_regression,
    sgd_step,
)


def _data(n=4, m=5, d=2, seed=0):
    rng = np.random.default_rng(seed)
    return ClientData.from_arrays(rng.standard_normal((n, m, d)), rng.standard_normal((n, m)),
                                  [5, 3, 4, 2][:n])


# ----------------------------------------------------------------------------- kernels


def test_group_average_is_the_weighted_mean_of_every_group_and_keeps_empty_groups():
    values = torch.tensor([[1.0, 2.0], [3.0, 6.0], [10.0, 0.0], [5.0, 5.0]], dtype=torch.float64)
    weights = torch.tensor([1.0, 3.0, 2.0, 0.0], dtype=torch.float64)
    groups = torch.tensor([0, 0, 2, 1])
    previous = torch.full((3, 2), -7.0, dtype=torch.float64)
    out = group_average(values, weights, groups, previous)
    # group 0: (1*[1,2] + 3*[3,6]) / 4; group 1: total weight 0 -> previous; group 2: [10, 0]
    assert torch.equal(out, torch.tensor([[2.5, 5.0], [-7.0, -7.0], [10.0, 0.0]], dtype=torch.float64))


def test_sample_clients_takes_round_c_times_the_participants_of_every_group():
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 1, 1])
    part = torch.tensor([1, 1, 1, 1, 1, 1, 0, 1, 1, 1], dtype=torch.bool)
    for seed in range(5):
        sel = sample_clients(groups, 2, 0.5, part, seed)
        assert int(sel[:4].sum()) == 2 and int(sel[4:].sum()) == 3  # round(0.5 * 4), round(0.5 * 5)
        assert not bool((sel & ~part).any())
    assert torch.equal(sample_clients(groups, 2, 1.0, part, None), part)
    assert int(sample_clients(groups, 2, 0.01, part, 0).sum()) == 2  # at least one per group
    with pytest.raises(ValueError, match="client_fraction"):
        check_fraction(0.0)


def test_mix_and_consensus_distance():
    w = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]], dtype=torch.float64)
    x = torch.tensor([[1.0], [3.0], [5.0]], dtype=torch.float64)
    assert torch.equal(mix(w, x), torch.tensor([[2.0], [3.0], [4.0]], dtype=torch.float64))
    assert torch.equal(mix(w.to_sparse(), x), mix(w, x))
    assert consensus_distance(x) == pytest.approx((4 + 0 + 4) / 3)


# ----------------------------------------------------------------------------- options


def test_options_as_one_object_and_as_keywords_give_the_same_run():
    data, model = _data(), linear_regression(2)
    base = TrainingOptions(n_rounds=3, local_epochs=2, batch_size=2, lr=0.1, seed=4)
    by_object = fedavg(model, data, base)
    by_keywords = fedavg(model, data, n_rounds=3, local_epochs=2, batch_size=2, lr=0.1, seed=4)
    assert torch.equal(by_object.client_params, by_keywords.client_params)
    assert by_object.history == by_keywords.history
    overridden = fedavg(model, data, base, lr=0.05)  # a keyword overrides the object's field
    again = fedavg(model, data, base.replace(lr=0.05))
    assert torch.equal(overridden.client_params, again.client_params)
    assert not torch.equal(overridden.client_params, by_object.client_params)


def test_local_training_runs_n_rounds_of_local_epochs():
    data, model = _data(), linear_regression(2)
    a = local_training(model, data, n_rounds=2, local_epochs=1, batch_size=None, lr=0.1)
    b = local_training(model, data, TrainingOptions(local_epochs=2, batch_size=None, lr=0.1))
    assert torch.equal(a.client_params, b.client_params) and (a.n_rounds, b.n_rounds) == (2, 1)
    with pytest.raises(TypeError, match="'epochs'; did you mean 'local_epochs'"):
        local_training(model, data, epochs=2, batch_size=None, lr=0.1)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda m, d: fedavg(m, d, n_rounds=1, local_epochs=1, batch_size=None), TypeError,
         "fedavg\\(\\) missing required option 'lr'"),
        (lambda m, d: fedsgd(m, d, n_rounds=1, lr=0.1, local_epochs=2), TypeError,
         "fedsgd\\(\\) does not use the option 'local_epochs'"),
        (lambda m, d: fedsgd(m, d, TrainingOptions(n_rounds=1, lr=0.1, batch_size=4)), TypeError,
         "fedsgd\\(\\) does not use the option 'batch_size'"),
        (lambda m, d: fedsgd(m, d, n_rounds=1, lr=0.1, n_round=2), TypeError,
         "unexpected keyword argument 'n_round'"),
        (lambda m, d: fedsgd(m, d, n_rounds=1, lr=-0.1), ValueError, "lr must be finite and positive"),
        (lambda m, d: fedsgd(m, d, n_rounds=1, lr=0.1, client_fraction=1.5), ValueError,
         "client_fraction"),
        (lambda m, d: fedavg(m, d, n_rounds=1, local_epochs=1, batch_size=0, lr=0.1), ValueError,
         "batch_size must be a positive integer"),
        (lambda m, d: fedsgd(m, d, n_rounds=1, lr=0.1, dtype="float16"), ValueError, "dtype must be"),
        (lambda m, d: fedsgd(m, d, {"n_rounds": 1}), TypeError, "options must be a TrainingOptions"),
    ],
)
def test_option_errors_name_the_option(call, error, message):
    with pytest.raises(error, match=message):
        call(linear_regression(2), _data())


def test_resolve_fills_the_method_defaults_and_parses_device_and_dtype():
    opts = TrainingOptions(n_rounds=2, lr=0.1, dtype="float32", device="cpu").resolve(
        "m", required=("n_rounds", "lr"), defaults={"local_epochs": 1, "batch_size": None})
    assert opts.local_epochs == 1 and opts.batch_size is None and opts.local_steps is UNSET
    assert opts.dtype is torch.float32 and opts.device == torch.device("cpu")
    with pytest.raises(TypeError, match="TrainingOptions has no option 'rounds'"):
        TrainingOptions().replace(rounds=3)
    run = start_run(linear_regression(2), _data(), None, {"n_rounds": 1, "lr": 0.1, "dtype": "float32"},
                    "m", required=("n_rounds", "lr"))
    assert run.data.dtype is torch.float32 and run.dtype is torch.float32 and run.n_clients == 4
    assert run.recorder.itemsize == 4


def test_one_default_dtype_and_its_parser():
    assert DEFAULT_DTYPE is torch.float32 and as_dtype(None) is torch.float32  # issue 35: float32
    assert as_dtype("float32") is torch.float32 and as_dtype(torch.float64) is torch.float64
    with pytest.raises(ValueError, match="dtype"):
        as_dtype(torch.int64)
    assert as_device(None) == torch.device("cpu") and as_device("cpu") == torch.device("cpu")


# ----------------------------------------------------------------------------- optimiser steps


def test_sgd_step_keeps_frozen_coordinates():
    w = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
    g = torch.tensor([[10.0, 10.0]], dtype=torch.float64)
    assert torch.equal(sgd_step(w, g, 0.1), torch.tensor([[0.0, 1.0]], dtype=torch.float64))
    mask = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    assert torch.equal(sgd_step(w, g, 0.1, mask), torch.tensor([[0.0, 2.0]], dtype=torch.float64))
    # a boolean mask (mask > 0, computed once by a loop) freezes the same coordinates,
    # also where the gradient is not finite
    bad = torch.tensor([[10.0, float("nan")]], dtype=torch.float64)
    assert torch.equal(sgd_step(w, bad, 0.1, mask > 0), torch.tensor([[0.0, 2.0]], dtype=torch.float64))
    assert torch.equal(sgd_step(w, bad, 0.1, mask), sgd_step(w, bad, 0.1, mask > 0))


def test_local_steps_equal_steps_of_the_masked_gradient_bit_for_bit():
    """local_steps freezes instead of zeroing the gradient first: the same floats as
    ``sgd_step(params, g * mask, lr, mask)`` at every step, inf and NaN gradients included."""
    from networkedfl.algorithms import local_steps
    from networkedfl.nn import ClientBatches, make_generator

    rng = np.random.default_rng(5)
    data = ClientBatches(torch.as_tensor(rng.standard_normal((3, 8, 2))), torch.as_tensor(rng.standard_normal((3, 8))),
                         torch.ones((3, 8), dtype=torch.float64))
    mask = torch.as_tensor(rng.integers(0, 2, (3, 4)).astype(np.float64))
    start = torch.as_tensor(rng.standard_normal((3, 4)))

    def gradient(params, batch):  # not finite on some frozen coordinates
        x, y, _ = batch
        g = torch.cat([params[:, :2] * x.mean(dim=1), params[:, 2:] - y.mean(dim=1, keepdim=True)], dim=1) ** 3
        return torch.where(mask > 0, g, torch.tensor([float("inf"), float("nan"), 1.0, -float("inf")]))

    got, t = local_steps(gradient, start, data, steps=6, batch_size=3, lr=lambda k: 0.3 / (k + 1), start=2,
                         seed=make_generator(7), mask=mask)
    expected, gen = start, make_generator(7)
    for k in range(2, 8):
        expected = sgd_step(expected, gradient(expected, data.sample(3, gen)) * mask, 0.3 / (k + 1), mask)
    assert t == 8 and torch.equal(got, expected) and bool(torch.isfinite(got).all())
    assert torch.equal(got[mask == 0], start[mask == 0])


def test_heavy_ball_step_is_torch_sgd_with_momentum():
    torch.manual_seed(0)
    grads = [torch.randn(3, 4, dtype=torch.float64) for _ in range(4)]
    start = torch.randn(3, 4, dtype=torch.float64)
    ref = start.clone().requires_grad_(True)
    opt = torch.optim.SGD([ref], lr=0.1, momentum=0.7)
    w, buf = start.clone(), None
    active = torch.ones(3, 1, dtype=torch.bool)
    for g in grads:
        ref.grad = g.clone()
        opt.step()
        w, buf = heavy_ball_step(w, g, buf, 0.1, 0.7, active)
    assert torch.allclose(w, ref.detach(), rtol=0, atol=1e-15)
    frozen = torch.tensor([[True], [False], [True]])
    w2, buf2 = heavy_ball_step(w, grads[0], buf, 0.1, 0.7, frozen)
    assert torch.equal(w2[1], w[1]) and torch.equal(buf2[1], buf[1])


@pytest.mark.parametrize("options", [{}, {"centered": True}, {"momentum": 0.5, "weight_decay": 0.1}])
def test_rmsprop_is_torch_optim_rmsprop(options):
    torch.manual_seed(1)
    grads = [torch.randn(2, 3, dtype=torch.float64) for _ in range(5)]
    start = torch.randn(2, 3, dtype=torch.float64)
    ref = start.clone().requires_grad_(True)
    opt = torch.optim.RMSprop([ref], lr=0.01, foreach=False, **options)
    mine = start.clone()
    step = RMSprop(mine, 0.01, options)
    for g in grads:
        ref.grad = g.clone()
        opt.step()
        step.step_(mine, g)
    assert torch.equal(mine, ref.detach())
    with pytest.raises(ValueError, match="unsupported RMSprop options"):
        RMSprop(mine, 0.01, {"betas": 1})
