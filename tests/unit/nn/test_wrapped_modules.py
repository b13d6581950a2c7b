"""Issue 42 item 5: a module is checked when it is wrapped (``from_module``), and labels are
checked against the model's outputs before training, not deep inside it."""

import numpy as np
import pytest
import torch

import networkedfl.algorithms as algorithms
from networkedfl.nn import ClientData, cross_entropy, from_module


def data(labels):
    rng = np.random.default_rng(0)
    x = [rng.standard_normal((len(ys), 4)) for ys in labels]
    return ClientData.from_client_arrays(x, [np.asarray(ys) for ys in labels])


def test_dropout_in_training_mode_is_refused_with_the_way_out():
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 3))
    with pytest.raises(ValueError, match=r"'1' \(Dropout\).*random.*eval\(\)"):
        from_module(net, cross_entropy)


def test_dropout_in_eval_mode_is_the_identity():
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 3)).eval()
    model = from_module(net, cross_entropy)
    result = algorithms.fedavg(model, data([[0, 1, 2], [2, 1]]), n_rounds=1, local_epochs=1,
                               batch_size=None, lr=0.1, seed=0)
    assert torch.isfinite(result.global_params).all()


@pytest.mark.parametrize("norm", [torch.nn.BatchNorm1d(8), torch.nn.SyncBatchNorm(8)],
                         ids=["BatchNorm1d", "SyncBatchNorm"])
def test_batch_norm_in_training_mode_is_refused_naming_group_and_layer_norm(norm):
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), norm, torch.nn.Linear(8, 3))
    with pytest.raises(ValueError, match=r"'1' \(\w*BatchNorm\w*\).*GroupNorm.*LayerNorm"):
        from_module(net, cross_entropy)


def test_layer_norm_trains():
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 3))
    result = algorithms.fedavg(from_module(net, cross_entropy), data([[0, 1, 2], [2, 1]]), n_rounds=1,
                               local_epochs=1, batch_size=None, lr=0.1, seed=0)
    assert torch.isfinite(result.global_params).all()


@pytest.mark.parametrize("method", ["fedavg", "local_training", "fedavg_steps"])
def test_a_label_out_of_the_models_range_names_the_label_and_the_client(method):
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    bad = data([[0, 1, 2], [2, 1, 3], [0]])
    opts = dict(n_rounds=1, lr=0.1, seed=0, batch_size=None)
    opts.update({"local_steps": 1} if method == "fedavg_steps" else {"local_epochs": 1})
    with pytest.raises(ValueError, match=r"client 1 .*label 3.*3 outputs"):
        getattr(algorithms, method)(from_module(net, cross_entropy), bad, **opts)
    with pytest.raises(ValueError, match=r"client 0 .*label -1"):
        getattr(algorithms, method)(from_module(net, cross_entropy), data([[-1, 1]]), **opts)


def test_padding_labels_are_not_checked():
    x = np.zeros((2, 3, 4))
    y = np.array([[0, 2, 7], [1, 9, 9]])  # the padding holds labels no class has
    padded = ClientData.from_arrays(x, y, counts=[2, 1])
    net = torch.nn.Sequential(torch.nn.Linear(4, 3))
    result = algorithms.fedavg(from_module(net, cross_entropy), padded, n_rounds=1, local_epochs=1,
                               batch_size=None, lr=0.1, seed=0)
    assert torch.isfinite(result.global_params).all()
