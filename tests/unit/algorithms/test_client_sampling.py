"""Client sampling and client chunks of the server methods (FedAvg, FedSGD, IFCA).

A round with ``client_fraction`` C trains ``max(1, round(C n_g))`` clients of every group,
drawn from the seed, and averages their local results weighted by their samples; with every
client selected (the default) the run is the previous code path; ``client_chunk_size`` gives
the results of one batched call.
"""

import dataclasses

import numpy as np
import pytest
import torch

from networkedfl.algorithms import (
    client_chunks,
    fedavg,
    fedsgd,
    ifca,
    in_client_chunks,
    local_sgd,
    local_training,
)
from networkedfl.algorithms.aggregate import group_average
from networkedfl.nn import ClientData, cross_entropy, from_module, linear_regression


def _linear_data(n=30, m=12, d=3, seed=0, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    counts = rng.integers(3, m + 1, size=n)  # unequal sample counts, zero-weight padding
    x = rng.standard_normal((n, m, d))
    y = x @ rng.standard_normal(d) + 0.1 * rng.standard_normal((n, m))
    return ClientData.from_arrays(x, y, counts, dtype=dtype)


def _mlp_data(n=23, m=9, dtype=torch.float32):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, m, 4, generator=g)
    y = torch.randint(3, (n, m), generator=g)
    counts = torch.randint(2, m + 1, (n,), generator=g)
    return ClientData.from_arrays(x, y, counts.numpy(), dtype=dtype)


def _mlp():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    return from_module(net, cross_entropy)


class _Rounds:
    """A callback keeping every round's selection and server models."""

    def __init__(self):
        self.selected, self.global_params = [], []

    def __call__(self, state):
        self.selected.append(state.selected.clone())
        self.global_params.append(state.global_params.clone())


# ------------------------------------------------------------------ how many, which


def test_every_round_samples_the_documented_number_of_each_group():
    data = _linear_data(n=30)
    groups = np.array([0] * 20 + [1] * 10)
    rounds = _Rounds()
    res = fedavg(linear_regression(3), data, n_rounds=6, local_epochs=1, batch_size=4, lr=0.05,
                 client_fraction=0.25, groups=groups, seed=3, callback=rounds)
    # round(0.25 * 20) = 5 and round(0.25 * 10) = round(2.5) = 3 (half up)
    assert [row["clients"] for row in res.log] == [8] * 6
    for sel in rounds.selected:
        assert torch.bincount(torch.as_tensor(groups)[sel], minlength=2).tolist() == [5, 3]
    assert len({tuple(s.tolist()) for s in rounds.selected}) > 1  # a fresh draw every round
    for method in (fedsgd, lambda *a, **k: ifca(*a, n_clusters=2, **k)):
        res = method(linear_regression(3, init="bernoulli"), data, n_rounds=4, lr=0.05,
                     client_fraction=0.1, seed=3)
        assert [row["clients"] for row in res.log] == [3] * 4  # round(0.1 * 30)
    assert [sum(row["cluster_sizes"]) for row in res.history] == [3] * 4


def test_sampling_is_deterministic_for_a_seed():
    data = _linear_data()
    runs = {}
    for key, seed in (("a", 11), ("b", 11), ("c", 12)):
        rounds = _Rounds()
        res = fedavg(linear_regression(3), data, n_rounds=5, local_epochs=2, batch_size=5, lr=0.05,
                     client_fraction=0.2, seed=seed, callback=rounds)
        runs[key] = (torch.stack(rounds.selected), res.global_params)
    assert torch.equal(runs["a"][0], runs["b"][0]) and torch.equal(runs["a"][1], runs["b"][1])
    assert not torch.equal(runs["a"][0], runs["c"][0])
    # a numpy Generator and a torch.Generator are accepted as the seed, as everywhere
    same = fedavg(linear_regression(3), data, n_rounds=5, local_epochs=2, batch_size=5, lr=0.05,
                  client_fraction=0.2, seed=torch.Generator().manual_seed(11))
    assert torch.equal(same.global_params, runs["a"][1])


# ------------------------------------------------------------------ the average


def _local_gd(x, y, w, lr, steps):
    """Full-batch gradient descent on the mean squared error, by hand (numpy)."""
    for _ in range(steps):
        w = w - lr * 2.0 / len(y) * x.T @ (x @ w - y)
    return w


def test_fedavg_and_fedsgd_average_the_sampled_clients_by_hand():
    """Each round's server model equals the sample-weighted average of the sampled clients'
    local results, computed by hand from their data alone."""
    data = _linear_data(n=25, seed=4)
    counts = data.counts.numpy()
    xs = [data.features[i, :c].numpy() for i, c in enumerate(counts)]
    ys = [data.targets[i, :c].numpy() for i, c in enumerate(counts)]
    lr, epochs = 0.05, 2
    for method in ("fedavg", "fedsgd"):
        rounds = _Rounds()
        kw = dict(n_rounds=4, lr=lr, client_fraction=0.3, seed=5, callback=rounds)
        if method == "fedavg":
            fedavg(linear_regression(3), data, local_epochs=epochs, batch_size=None, **kw)
        else:
            fedsgd(linear_regression(3), data, **kw)
        w = np.zeros(3)
        for sel, server in zip(rounds.selected, rounds.global_params, strict=True):
            ids = np.flatnonzero(sel.numpy())
            assert len(ids) == 8  # round(0.3 * 25) = round(7.5)
            local = [_local_gd(xs[i], ys[i], w, lr, epochs if method == "fedavg" else 1) for i in ids]
            w = sum(counts[i] * wi for i, wi in zip(ids, local, strict=True)) / counts[ids].sum()
            np.testing.assert_allclose(server[0].numpy(), w, rtol=1e-12, atol=1e-14)


def test_a_round_sees_only_the_sampled_clients():
    """The clients left out of every round may hold anything: the result does not change,
    and the model's gradients are evaluated for the sampled clients only (at most
    client_chunk_size at a time)."""
    data = _linear_data(n=40, seed=6)
    seen = []
    base = linear_regression(3)

    def spy(params, *rest):
        seen.append(int(params.shape[0]))
        return None  # the generic vmap(grad) path

    model = dataclasses.replace(base, batch_gradient=spy)
    rounds = _Rounds()
    kw = dict(n_rounds=3, local_epochs=1, batch_size=5, lr=0.05, client_fraction=0.1, seed=8)
    res = fedavg(model, data, callback=rounds, client_chunk_size=3, **kw)
    counts = data.counts
    steps = [int(-(-int(counts[sel].max()) // 5)) for sel in rounds.selected]  # ceil(m_max / B)
    assert seen == [2] * (2 * sum(steps))  # round(0.1 * 40) = 4 clients: chunks of 2 and 2
    never = ~torch.stack(rounds.selected).any(dim=0)
    assert int(never.sum()) > 0
    x = data.features.clone()
    x[never] = 1e6  # the unsampled clients' data: huge, still finite
    other = fedavg(base, ClientData(x, data.targets, data.sample_weights), **kw)
    assert torch.equal(other.global_params, res.global_params)


# ------------------------------------------------------------------ full participation


@pytest.mark.parametrize("batch_size", [4, None])
def test_full_participation_is_the_previous_code_path(batch_size):
    """client_fraction = 1 (the default) draws nothing for the selection: the run equals the
    plain loop of the kernels that FedAvg ran before sampling and chunks existed (local
    training of all clients from the group models, then the weighted group average), bit
    for bit, with groups; likewise FedSGD."""
    data = _linear_data(n=17, seed=9)
    model = linear_regression(3, bias=True)
    groups = torch.tensor([0, 1, 2] * 5 + [0, 1])
    init = torch.linspace(-1, 1, 4, dtype=torch.float64)
    res = fedavg(model, data, n_rounds=4, local_epochs=2, batch_size=batch_size, lr=0.05,
                 groups=groups, init=init, seed=21)
    gen = torch.Generator().manual_seed(21)
    ref = init.expand(3, -1).clone()
    for _ in range(4):
        local = local_sgd(model, ref[groups], data, epochs=2, batch_size=batch_size, lr=0.05, seed=gen)
        ref = group_average(local, data.weight_per_node, groups, ref)
    assert torch.equal(res.global_params, ref) and torch.equal(res.client_params, ref[groups])

    got = fedsgd(model, data, n_rounds=3, lr=0.05, groups=groups, init=init)
    ref = init.expand(3, -1).clone()
    for _ in range(3):
        x1 = torch.cat([data.features, torch.ones_like(data.features[..., :1])], dim=-1)
        resid = (x1 @ ref[groups][:, :, None])[..., 0] - data.targets
        grads = 2 * torch.einsum("nm,nmd->nd", data.sample_weights * resid, x1) / data.weight_per_node[:, None]
        ref = ref - 0.05 * group_average(grads, data.weight_per_node, groups, torch.zeros_like(ref))
    torch.testing.assert_close(got.global_params, ref, rtol=1e-13, atol=1e-15)


def test_full_participation_results_and_history_do_not_depend_on_a_callback():
    """The clients' models are gathered for a callback only; with or without one the run
    is the same, and the callback sees every client's model."""
    data = _linear_data(n=12, seed=10)
    seen = []
    kw = dict(n_rounds=3, local_epochs=1, batch_size=3, lr=0.05, seed=2)
    plain = fedavg(linear_regression(3), data, **kw)
    watched = fedavg(linear_regression(3), data, callback=lambda s: seen.append(s.client_params.clone()), **kw)
    assert torch.equal(plain.global_params, watched.global_params)
    assert plain.history == watched.history and plain.log == watched.log
    assert len(seen) == 3 and torch.equal(seen[-1], plain.global_params[[0] * 12])


# ------------------------------------------------------------------ chunks


def _runs(model, data, chunk, fraction):
    """FedAvg (mini-batches and full batches), FedSGD and IFCA with the given chunk size."""
    init2 = torch.randn(2, model.n_params, generator=torch.Generator().manual_seed(5),
                        dtype=data.dtype)
    common = dict(n_rounds=3, lr=0.1, seed=3, dtype=data.dtype, client_fraction=fraction,
                  client_chunk_size=chunk)
    return {
        "fedavg": fedavg(model, data, local_epochs=2, batch_size=4, **common),
        "fedavg full batch": fedavg(model, data, local_epochs=2, batch_size=None, **common),
        "fedsgd": fedsgd(model, data, **common),
        "ifca": ifca(model, data, n_clusters=2, init=init2, local_epochs=2, batch_size=3, **common),
    }


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("fraction", [1.0, 0.6])
def test_client_chunks_give_the_results_of_one_call_bit_for_bit(dtype, fraction):
    """Every chunk size gives the bits of one batched call: the random orders are drawn for
    all clients first, and each client's steps are its own (an MLP through the generic
    vmap(grad) path, and a linear model)."""
    for model, data in ((_mlp(), _mlp_data(dtype=dtype)),
                        (linear_regression(4, init="bernoulli"), _linear_data(n=23, d=4, dtype=dtype))):
        one = _runs(model, data, None, fraction)
        for chunk in (3, 5, 22, 23, 1000):
            chunked = _runs(model, data, chunk, fraction)
            for name, res in chunked.items():
                ref = one[name]
                assert torch.equal(res.global_params, ref.global_params), (name, chunk)
                assert torch.equal(res.client_params, ref.client_params), (name, chunk)
                assert torch.equal(res.assignment, ref.assignment), (name, chunk)
                assert res.history == ref.history and res.log == ref.log, (name, chunk)


def test_local_sgd_chunks_equal_one_call_and_local_training_is_unchanged():
    data = _mlp_data(n=20)
    model = _mlp()
    row = model.initial_params(torch.Generator().manual_seed(0), dtype=torch.float32)
    start = row.expand(20, -1).clone()
    kw = dict(epochs=3, batch_size=2, lr=0.1)
    one = local_sgd(model, start, data, seed=torch.Generator().manual_seed(4), **kw)
    for chunk in (3, 7, 19):
        got = local_sgd(model, start, data, seed=torch.Generator().manual_seed(4), chunk_size=chunk, **kw)
        assert torch.equal(got, one)
    assert torch.equal(start, row.expand(20, -1))  # not modified
    res = local_training(model, data, local_epochs=3, batch_size=2, lr=0.1, init=row, seed=4,
                         dtype="float32")
    assert torch.equal(res.client_params, one)


def test_client_chunks_cover_the_clients_without_a_chunk_of_one():
    def sizes(n, c):
        chunks = client_chunks(n, c)
        assert chunks[0].start == 0 and chunks[-1].stop == n
        assert all(a.stop == b.start for a, b in zip(chunks, chunks[1:], strict=False))
        return [s.stop - s.start for s in chunks]

    assert sizes(10, None) == [10] and sizes(10, 10) == [10] and sizes(10, 50) == [10]
    assert sizes(10, 4) == [4, 4, 2]
    assert sizes(10, 3) == [3, 3, 2, 2]  # not 3, 3, 3, 1
    assert sizes(5, 2) == [2, 2, 1] and sizes(3, 1) == [1, 1, 1]
    parts = in_client_chunks(lambda a, b: a + b, 4, torch.arange(10), torch.ones(10, dtype=torch.int64))
    assert torch.equal(parts, torch.arange(1, 11))


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "3"])
def test_client_chunk_size_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="client_chunk_size"):
        fedavg(linear_regression(3), _linear_data(n=5), n_rounds=1, local_epochs=1, batch_size=2,
               lr=0.1, client_chunk_size=bad)
    with pytest.raises(ValueError, match="chunk_size"):
        local_sgd(linear_regression(3), torch.zeros(5, 3, dtype=torch.float64), _linear_data(n=5),
                  epochs=1, batch_size=2, lr=0.1, seed=0, chunk_size=bad)


def test_methods_without_chunks_refuse_the_option():
    with pytest.raises(TypeError, match="client_chunk_size"):
        local_training(linear_regression(3), _linear_data(n=5), local_epochs=1, batch_size=2, lr=0.1,
                       client_chunk_size=2)
