"""Issue 35: the torch methods as a newcomer calls them.  Items 1 (a loss that reduces over the
samples), 2 (the methods are functions of ``networkedfl.algorithms``), 3 (IFCA from any
``nn.Module``), 5 (one name per option, ``progress`` everywhere, a callback stops a run) and 7
(float32 by default, a per-client ``evaluate`` that ignores padding)."""

import functools
import importlib
import inspect
import pkgutil

import networkx as nx
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import networkedfl.algorithms as algorithms
from networkedfl.nn import ClientData, client_losses, cross_entropy, from_module, linear_regression

METHODS = ["fedavg", "fedsgd", "fedavg_steps", "ifca", "pfedme", "local_training",
           "local_momentum_sgd", "decentralized_fedavg", "dfl_sgd", "dfl_gt", "fesem", "bigfl",
           "fedprox", "scaffold", "fedopt", "fedadam", "fedyogi", "ditto"]


def mlp(seed=None):
    if seed is not None:
        torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def padded_classes(seed=0):
    """Three clients of 3, 5 and 8 samples (padding rows hold zeros and label 0)."""
    rng = np.random.default_rng(seed)
    sizes = [3, 5, 8]
    x = [rng.standard_normal((m, 4)) for m in sizes]
    y = [rng.integers(0, 3, size=m) for m in sizes]
    return ClientData.from_client_arrays(x, y)


# --------------------------------------------------------------------------- item 1


@pytest.mark.parametrize("loss", [F.cross_entropy, torch.nn.CrossEntropyLoss()],
                         ids=["functional", "module"])
def test_a_torch_loss_that_reduces_over_the_samples_is_refused(loss):
    with pytest.raises(ValueError, match=r"one loss per sample.*reduction='none'"):
        from_module(mlp(0), loss)


def test_a_reducing_loss_is_caught_at_its_first_evaluation():
    data = padded_classes()
    model = from_module(mlp(0), lambda out, y: cross_entropy(out, y).mean())
    params = model.initial_params(0).expand(3, -1)
    with pytest.raises(ValueError, match=r"shape \(m,\).*got \(\)"):
        client_losses(model, params, data.features, data.targets, data.sample_weights)


def test_per_sample_torch_losses_leave_the_padding_out():
    data = padded_classes()
    per_sample = from_module(mlp(0), functools.partial(F.cross_entropy, reduction="none"))
    ours = from_module(mlp(0), cross_entropy)
    params = ours.initial_params(0).expand(3, -1)
    a = client_losses(per_sample, params, data.features, data.targets, data.sample_weights)
    b = client_losses(ours, params, data.features, data.targets, data.sample_weights)
    torch.testing.assert_close(a, b)
    # client 0 alone: the mean over its three real samples, not over the padded eight
    first = F.cross_entropy(mlp_with(params[0])(data.features[0, :3]), data.targets[0, :3])
    torch.testing.assert_close(a[0], first)


def mlp_with(flat):
    net = mlp(0).to(flat.dtype).requires_grad_(False)
    torch.nn.utils.vector_to_parameters(flat, net.parameters())
    return net


# --------------------------------------------------------------------------- item 2


@pytest.mark.parametrize("name", METHODS)
def test_every_method_is_a_function_of_the_package(name):
    for module in pkgutil.iter_modules(algorithms.__path__):  # whatever was imported before
        importlib.import_module(f"networkedfl.algorithms.{module.name}")
    method = getattr(algorithms, name)
    assert inspect.isfunction(method) and method.__name__ == name
    assert name in algorithms.__all__
    namespace = {}
    exec(f"from networkedfl.algorithms import {name}", namespace)
    assert namespace[name] is method


# --------------------------------------------------------------------------- item 3


def test_a_module_draws_its_start_from_the_seed_as_pytorch_initialises_it():
    model = from_module(mlp(), cross_entropy)
    state = torch.get_rng_state()
    drawn = model.initial_params(7)
    assert torch.equal(torch.get_rng_state(), state)  # no global state touched
    expected = torch.nn.utils.parameters_to_vector(mlp(7).parameters())  # torch.manual_seed(7)
    torch.testing.assert_close(drawn, expected.to(drawn.dtype), rtol=0, atol=0)
    assert not torch.equal(model.initial_params(8), drawn)


def test_ifca_starts_from_any_module():
    data = padded_classes()
    model = from_module(mlp(), cross_entropy)
    state = torch.get_rng_state()
    result = algorithms.ifca(model, data, n_clusters=3, n_rounds=2, lr=0.1, seed=0)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.unique(result.global_params, dim=0).shape[0] == 3
    again = algorithms.ifca(model, data, n_clusters=3, n_rounds=2, lr=0.1, seed=0)
    assert torch.equal(again.global_params, result.global_params)


def test_the_module_as_it_is_stays_available():
    net = mlp(3)
    model = from_module(net, cross_entropy, init="module")
    torch.testing.assert_close(model.initial_params(0),
                               torch.nn.utils.parameters_to_vector(net.parameters()).to(torch.float32))


# --------------------------------------------------------------------------- item 5


def linear_clients():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6, 2))
    return ClientData.from_arrays(x, x @ np.array([1.0, -1.0]))


def test_a_step_based_method_names_its_option_for_epochs():
    with pytest.raises(TypeError, match="local_steps"):
        algorithms.dfl_sgd(linear_regression(2), linear_clients(), nx.cycle_graph(4), n_rounds=2,
                           local_epochs=1, batch_size=2, lr=0.1, seed=0)
    with pytest.raises(TypeError, match="local_epochs"):
        algorithms.fedavg(linear_regression(2), linear_clients(), n_rounds=2, local_steps=1,
                          batch_size=2, lr=0.1, seed=0)


def test_local_training_counts_rounds_as_fedavg_does():
    data = linear_clients()
    res = algorithms.local_training(linear_regression(2), data, n_rounds=3, local_epochs=2,
                                    batch_size=2, lr=0.05, seed=0)
    assert res.n_rounds == 3
    once = algorithms.local_training(linear_regression(2), data, n_rounds=1, local_epochs=6,
                                     batch_size=2, lr=0.05, seed=0)
    assert torch.equal(once.client_params, res.client_params)  # the same epochs, the same draws
    with pytest.raises(TypeError, match="local_epochs"):
        algorithms.local_training(linear_regression(2), data, epochs=2, batch_size=2, lr=0.05)


@pytest.mark.parametrize("name", ["fedavg", "fedsgd", "ifca", "local_training", "dfl_sgd"])
def test_every_method_takes_progress(name, capsys):
    kwargs = dict(n_rounds=2, lr=0.05, seed=0, progress=True)
    data, model = linear_clients(), linear_regression(2, init="bernoulli")
    call = {
        "fedavg": lambda: algorithms.fedavg(model, data, local_epochs=1, batch_size=2, **kwargs),
        "fedsgd": lambda: algorithms.fedsgd(model, data, **kwargs),
        "ifca": lambda: algorithms.ifca(model, data, n_clusters=2, **kwargs),
        "local_training": lambda: algorithms.local_training(model, data, local_epochs=1,
                                                            batch_size=2, **kwargs),
        "dfl_sgd": lambda: algorithms.dfl_sgd(model, data, nx.cycle_graph(4), local_steps=1,
                                              batch_size=2, **kwargs),
    }[name]
    assert call().n_rounds == 2
    err = capsys.readouterr().err
    assert f"{name}:" in err and "/2 [" in err  # a bar over the two rounds


@pytest.mark.parametrize("name", ["fedavg", "ifca", "local_training", "dfl_sgd", "fedavg_steps"])
def test_a_callback_that_returns_true_stops_the_run(name):
    data, model = linear_clients(), linear_regression(2, init="bernoulli")
    seen = []

    def stop_at_three(state):
        seen.append(state.round)
        return state.round == 3

    kwargs = dict(n_rounds=10, lr=0.05, seed=0, callback=stop_at_three, batch_size=2)
    result = {
        "fedavg": lambda: algorithms.fedavg(model, data, local_epochs=1, **kwargs),
        "ifca": lambda: algorithms.ifca(model, data, n_clusters=2, **kwargs),
        "local_training": lambda: algorithms.local_training(model, data, local_epochs=1, **kwargs),
        "dfl_sgd": lambda: algorithms.dfl_sgd(model, data, nx.cycle_graph(4), local_steps=1, **kwargs),
        "fedavg_steps": lambda: algorithms.fedavg_steps(model, data, local_steps=1, **kwargs),
    }[name]()
    assert seen == [1, 2, 3] and result.n_rounds == 3 and len(result.history) == 3


def test_a_callback_returning_something_else_is_an_error_naming_it():
    with pytest.raises(TypeError, match="callback returned int"):
        algorithms.fedavg(linear_regression(2), linear_clients(), n_rounds=2, local_epochs=1,
                          batch_size=2, lr=0.1, seed=0, callback=lambda s: 3)


@pytest.mark.parametrize("lr", [float("inf"), float("nan"), -0.1])
def test_a_step_size_must_be_finite_and_positive(lr):
    with pytest.raises(ValueError, match="lr must be finite and positive"):
        algorithms.fedavg(linear_regression(2), linear_clients(), n_rounds=1, local_epochs=1,
                          batch_size=2, lr=lr, seed=0)


# --------------------------------------------------------------------------- item 7


def test_float32_is_the_default_precision():
    res = algorithms.fedavg(linear_regression(2), linear_clients(), n_rounds=1, local_epochs=1,
                            batch_size=2, lr=0.1, seed=0)
    assert res.global_params.dtype == torch.float32
    assert res.log[0]["bytes_up"] == 4 * res.log[0]["floats_up"]


def test_evaluate_scores_every_client_on_its_real_samples():
    data = padded_classes()
    model = from_module(mlp(0), cross_entropy)
    params = torch.stack([model.initial_params(s) for s in range(3)])
    scores = algorithms.evaluate(model, params, data)
    for i, m in enumerate([3, 5, 8]):
        logits = mlp_with(params[i])(data.features[i, :m])
        target = data.targets[i, :m]
        assert scores["loss"][i] == pytest.approx(float(F.cross_entropy(logits, target)), rel=1e-6)
        assert scores["accuracy"][i] == pytest.approx(float((logits.argmax(1) == target).float().mean()))
    assert scores["n_samples"].tolist() == [3, 5, 8]
    result = algorithms.fedavg(model, data, n_rounds=1, local_epochs=1, batch_size=2, lr=0.1, seed=0)
    np.testing.assert_array_equal(algorithms.evaluate(model, result, data)["loss"],
                                  algorithms.evaluate(model, result.client_params, data)["loss"])


def test_the_loggers_example_uses_public_names_only():
    import networkedfl.algorithms.loggers as loggers

    assert "._" not in loggers.__doc__ and "evaluate" in loggers.__doc__
