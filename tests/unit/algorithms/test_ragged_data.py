"""Issue 42 item 4: clients of very different sizes in memory proportional to the data
(bucketed padding), FedAvg's per-client models as a view of the global model, per-client
``torch.utils.data`` datasets and loaders as input, and the way back to an ``nn.Module``."""

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import networkedfl.algorithms as algorithms
from networkedfl.datasets import client_data, quantity_skew
from networkedfl.nn import ClientBuckets, ClientData, cross_entropy, from_module, load_into


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def ragged(sizes, seed=0):
    rng = np.random.default_rng(seed)
    x = [rng.standard_normal((m, 4)).astype(np.float32) for m in sizes]
    y = [rng.integers(0, 3, size=m) for m in sizes]
    return x, y


def test_quantity_skew_buckets_store_at_most_twice_the_data():
    """quantity_skew(200000, 2000, 0.1) padded to its largest client stores ~50x the data;
    in buckets of sizes within a factor 2 it stores at most 2x."""
    n_samples, dim = 200_000, 2
    parts = quantity_skew(n_samples, 2000, 0.1, seed=0)
    x = np.zeros((n_samples, dim), dtype=np.float32)
    y = np.zeros(n_samples, dtype=np.int64)
    data = client_data(x, y, parts, layout="buckets")
    assert isinstance(data, ClientBuckets)
    assert data.n_nodes == 2000
    assert data.counts.tolist() == [len(p) for p in parts]
    stored = sum(b.features.numel() for b in data.buckets)
    assert stored <= 2 * x.size
    assert max(len(p) for p in parts) * len(parts) * dim > 20 * x.size  # what padding would store


def test_buckets_hold_every_client_in_order():
    x, y = ragged([1, 2, 3, 9, 17, 4, 40])
    data = ClientBuckets.from_client_arrays(x, y)
    padded = ClientData.from_client_arrays(x, y)
    back = data.padded()
    torch.testing.assert_close(back.features, padded.features)
    torch.testing.assert_close(back.targets, padded.targets)
    torch.testing.assert_close(back.sample_weights, padded.sample_weights)
    torch.testing.assert_close(data.weight_per_node, padded.weight_per_node)
    sub = data.subset(torch.tensor([6, 0, 3]))
    torch.testing.assert_close(sub.padded().features, padded.subset([6, 0, 3]).features[:, :40])


@pytest.mark.parametrize("fraction", [1.0, 0.5])
def test_fedavg_on_buckets_equals_fedavg_on_padded_data(fraction):
    """Full-batch local steps draw nothing: each client's update is its own, so the bucketed
    and the padded layouts give the same models."""
    x, y = ragged([2, 3, 30, 5, 64, 7, 1, 12])
    model = from_module(mlp(), cross_entropy)
    kwargs = dict(n_rounds=3, local_epochs=2, batch_size=None, lr=0.3, seed=1,
                  client_fraction=fraction)
    a = algorithms.fedavg(model, ClientData.from_client_arrays(x, y), **kwargs)
    b = algorithms.fedavg(model, ClientBuckets.from_client_arrays(x, y), **kwargs)
    torch.testing.assert_close(b.global_params, a.global_params)


def test_buckets_refused_by_a_method_that_needs_padded_data():
    x, y = ragged([2, 3, 30])
    with pytest.raises(TypeError, match=r"pfedme\(\).*ClientBuckets.*padded\(\)"):
        algorithms.pfedme(from_module(mlp(), cross_entropy), ClientBuckets.from_client_arrays(x, y),
                          n_rounds=1, seed=0)


#: The methods on FedAvg's contract that take buckets beside FedAvg (issue 42, item 4), each
#: with keywords that make it differ from FedAvg.
BUCKETED = {
    "fedsgd": {"n_rounds": 3, "lr": 0.3},
    "fedprox": {"mu": 0.5},
    "scaffold": {"server_lr": 1.0},
    "fedadam": {"server_lr": 0.05},
    "fedyogi": {"server_lr": 0.05},
    "ditto": {"lam": 0.5},
}


@pytest.mark.parametrize("name", sorted(BUCKETED))
@pytest.mark.parametrize("fraction", [1.0, 0.5])
def test_every_fedavg_contract_method_on_buckets_equals_it_on_padded_data(name, fraction):
    """Clients of sizes 1 to 64 in buckets (memory at most twice the data) give the models of
    the padded layout (full-batch local steps draw nothing; the gradient corrections of FedProx,
    SCAFFOLD and Ditto index the clients of the whole network from every bucket)."""
    x, y = ragged([2, 3, 30, 5, 64, 7, 1, 12])
    model = from_module(mlp(), cross_entropy)
    kwargs = {"n_rounds": 3, "local_epochs": 2, "batch_size": None, "lr": 0.3, "seed": 1,
              "client_fraction": fraction, "dtype": torch.float64, **BUCKETED[name]}
    if name == "fedsgd":
        kwargs = {k: v for k, v in kwargs.items() if k not in ("local_epochs", "batch_size")}
    method = getattr(algorithms, name)
    a = method(model, ClientData.from_client_arrays(x, y), **kwargs)
    b = method(model, ClientBuckets.from_client_arrays(x, y), **kwargs)
    torch.testing.assert_close(b.global_params, a.global_params, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(b.client_params, a.client_params, rtol=1e-12, atol=1e-12)


def test_fedprox_on_buckets_is_not_fedavg():
    """The proximal term acts inside every bucket (mapping a bucket's rows to the network's)."""
    x, y = ragged([2, 3, 30, 5, 64, 7, 1, 12])
    model = from_module(mlp(), cross_entropy)
    kwargs = dict(n_rounds=2, local_epochs=3, batch_size=None, lr=0.3, seed=1, dtype=torch.float64)
    data = ClientBuckets.from_client_arrays(x, y)
    prox = algorithms.fedprox(model, data, mu=5.0, **kwargs)
    plain = algorithms.fedavg(model, data, **kwargs)
    assert not torch.allclose(prox.global_params, plain.global_params, atol=1e-6)


def test_fedavg_client_params_are_a_view_of_the_global_model():
    x, y = ragged([3, 5, 8, 2])
    result = algorithms.fedavg(from_module(mlp(), cross_entropy), ClientData.from_client_arrays(x, y),
                               n_rounds=1, local_epochs=1, batch_size=None, lr=0.1, seed=0)
    cp, gp = result.client_params, result.global_params
    assert cp.shape == (4, gp.shape[1])
    assert cp.untyped_storage().data_ptr() == gp.untyped_storage().data_ptr()
    assert cp.stride(0) == 0
    torch.testing.assert_close(cp, gp.expand(4, -1))


@pytest.mark.parametrize("wrap", ["dataset", "loader"])
def test_torch_datasets_give_the_result_of_tensors(wrap):
    x, y = ragged([3, 5, 8])
    sets = [TensorDataset(torch.as_tensor(a), torch.as_tensor(b)) for a, b in zip(x, y, strict=True)]
    clients = sets if wrap == "dataset" else [DataLoader(s, batch_size=2) for s in sets]
    model = from_module(mlp(), cross_entropy)
    kwargs = dict(n_rounds=2, local_epochs=2, batch_size=2, lr=0.2, seed=3)
    a = algorithms.fedavg(model, ClientData.from_client_arrays(x, y), **kwargs)
    b = algorithms.fedavg(model, clients, **kwargs)
    assert torch.equal(a.global_params, b.global_params)
    c = algorithms.local_training(model, clients, n_rounds=1, local_epochs=1, batch_size=2, lr=0.2,
                                  seed=3)
    assert c.client_params.shape == (3, model.n_params)


def test_a_plain_dataset_of_pairs_is_read_item_by_item():
    x, y = ragged([3, 4])

    class Pairs(torch.utils.data.Dataset):
        def __init__(self, a, b):
            self.a, self.b = a, b

        def __len__(self):
            return len(self.b)

        def __getitem__(self, i):
            return torch.as_tensor(self.a[i]), int(self.b[i])

    model = from_module(mlp(), cross_entropy)
    kwargs = dict(n_rounds=1, local_epochs=1, batch_size=None, lr=0.2, seed=0)
    a = algorithms.fedavg(model, ClientData.from_client_arrays(x, y), **kwargs)
    b = algorithms.fedavg(model, [Pairs(a_, b_) for a_, b_ in zip(x, y, strict=True)], **kwargs)
    assert torch.equal(a.global_params, b.global_params)


def test_load_into_gives_the_module_the_functional_forward():
    x, y = ragged([3, 5, 8])
    net = mlp()
    model = from_module(net, cross_entropy)
    result = algorithms.fedavg(model, ClientData.from_client_arrays(x, y), n_rounds=2, local_epochs=1,
                               batch_size=None, lr=0.5, seed=0)
    trained = load_into(net, result.global_params[0])
    assert trained is net
    features = torch.as_tensor(np.concatenate(x))
    with torch.no_grad():
        torch.testing.assert_close(net(features), model.forward(result.global_params[0], features))
    with pytest.raises(ValueError, match=r"params must have shape \(67,\)"):
        load_into(net, torch.zeros(5))


def test_local_training_on_buckets_keeps_every_client_in_its_row():
    x, y = ragged([2, 40, 3, 9, 1])
    model = from_module(mlp(), cross_entropy)
    kwargs = dict(n_rounds=2, local_epochs=2, batch_size=None, lr=0.3, seed=0)
    a = algorithms.local_training(model, ClientData.from_client_arrays(x, y), **kwargs)
    b = algorithms.local_training(model, ClientBuckets.from_client_arrays(x, y), **kwargs)
    torch.testing.assert_close(b.client_params, a.client_params)


def test_one_bucket_draws_the_mini_batches_of_the_padded_layout():
    """Sizes within a factor 2 share one bucket padded as ClientData pads: same draws, same bits."""
    x, y = ragged([5, 6, 8, 7])
    data = ClientBuckets.from_client_arrays(x, y)
    assert len(data.buckets) == 1
    model = from_module(mlp(), cross_entropy)
    kwargs = dict(n_rounds=3, local_epochs=2, batch_size=2, lr=0.2, seed=4, client_fraction=0.5)
    a = algorithms.fedavg(model, ClientData.from_client_arrays(x, y), **kwargs)
    b = algorithms.fedavg(model, data, **kwargs)
    assert torch.equal(a.global_params, b.global_params)


def test_a_dataset_whose_items_are_not_pairs_is_named():
    sets = [TensorDataset(torch.zeros(3, 4), torch.zeros(3, dtype=torch.long)),
            TensorDataset(torch.zeros(2, 4))]
    with pytest.raises(ValueError, match=r"client 1: item 0 of its Dataset is not a \(features, target\) pair"):
        ClientData.from_datasets(sets)


@pytest.mark.parametrize("aggregation", ["cluster", "all_clients"])
@pytest.mark.parametrize("fraction", [1.0, 0.5])
def test_ifca_on_buckets_equals_ifca_on_padded_data(aggregation, fraction):
    """IFCA's losses of the k cluster models are computed bucket by bucket and written to each
    client's row: every client picks the cluster it picks in the padded layout, every round,
    and the cluster models agree to 1e-12 (full-batch local steps draw nothing)."""
    x, y = ragged([2, 3, 30, 5, 64, 7, 1, 12, 20, 4])
    model = from_module(mlp(), cross_entropy)
    kwargs = {"n_rounds": 4, "local_epochs": 2, "batch_size": None, "lr": 0.3, "seed": 1,
              "client_fraction": fraction, "dtype": torch.float64, "n_clusters": 3,
              "aggregation": aggregation}
    rows_a, rows_b = [], []
    a = algorithms.ifca(model, ClientData.from_client_arrays(x, y),
                        callback=lambda s: rows_a.append(s.assignment.clone()), **kwargs)
    b = algorithms.ifca(model, ClientBuckets.from_client_arrays(x, y),
                        callback=lambda s: rows_b.append(s.assignment.clone()), **kwargs)
    assert len(ClientBuckets.from_client_arrays(x, y).buckets) > 3
    assert torch.equal(b.assignment, a.assignment)
    assert len(torch.unique(a.assignment)) > 1  # the clients do not all pick one cluster
    for ra, rb in zip(rows_a, rows_b, strict=True):
        assert torch.equal(rb, ra)
    assert [h["cluster_sizes"] for h in b.history] == [h["cluster_sizes"] for h in a.history]
    torch.testing.assert_close(b.global_params, a.global_params, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(b.client_params, a.client_params, rtol=1e-12, atol=1e-12)


def test_ifca_on_buckets_never_pads_to_the_largest_client(monkeypatch):
    """On a quantity-skewed partition, every batch of clients IFCA scores or trains holds at
    most twice the data (padding to the largest client would hold over 10x), and the
    bucketed data are never padded to one length."""
    import networkedfl.algorithms._ifca as ifca_module
    import networkedfl.algorithms._local_sgd as local_module

    n_samples, dim = 20_000, 2
    parts = quantity_skew(n_samples, 200, 0.1, seed=0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n_samples, dim)).astype(np.float32)
    y = rng.integers(0, 3, size=n_samples)
    data = client_data(x, y, parts, layout="buckets")
    assert max(len(p) for p in parts) * len(parts) * dim > 10 * x.size
    seen = []  # the number of feature entries of every batched loss and gradient call
    losses, gradients = ifca_module.losses_of_models, local_module.batch_gradients

    def recorded_losses(model, models, features, *args):
        seen.append(features.numel())
        return losses(model, models, features, *args)

    def recorded_gradients(model):
        step = gradients(model)

        def wrapper(params, features, *args):
            seen.append(features.numel())
            return step(params, features, *args)
        return wrapper

    monkeypatch.setattr(ifca_module, "losses_of_models", recorded_losses)
    monkeypatch.setattr(local_module, "batch_gradients", recorded_gradients)
    monkeypatch.setattr(ClientBuckets, "padded", lambda self: pytest.fail("IFCA padded the buckets"))
    model = from_module(torch.nn.Linear(dim, 3), cross_entropy)
    result = algorithms.ifca(model, data, n_rounds=2, lr=0.1, seed=0, n_clusters=2)
    assert result.assignment.shape == (200,)
    assert seen and max(seen) <= 2 * x.size


def test_ifca_takes_per_client_torch_datasets_as_fedavg_does():
    x, y = ragged([3, 5, 8, 2])
    sets = [DataLoader(TensorDataset(torch.as_tensor(a), torch.as_tensor(b)), batch_size=2)
            for a, b in zip(x, y, strict=True)]
    model = from_module(mlp(), cross_entropy)
    kwargs = dict(n_rounds=2, local_epochs=2, batch_size=2, lr=0.2, seed=3, n_clusters=2)
    a = algorithms.ifca(model, ClientData.from_client_arrays(x, y), **kwargs)
    b = algorithms.ifca(model, sets, **kwargs)
    assert torch.equal(a.global_params, b.global_params)
    assert torch.equal(a.assignment, b.assignment)
