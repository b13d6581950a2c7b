"""Federated baselines (FedAvg, FedAvgC, FedSGD, IFCA, gossip, local) against references.

References: hand-written gradient descent on closed-form least-squares gradients, the
pooled (centralised) data, separate runs per cluster, per-client autograd, hand-computed
losses, and the algebraic properties of doubly stochastic gossip matrices.
"""

import numpy as np
import pytest
import torch
from sklearn.metrics import adjusted_rand_score

from networkedfl import NodeData
from networkedfl.algorithms import (
    MIXING_RULES,
    consensus_distance,
    decentralized_fedavg,
    fedavg,
    fedsgd,
    gossip_average,
    ifca,
    local_sgd,
    local_training,
    mixing_matrix,
    sample_clients,
)
from networkedfl.graphs import EmpiricalGraph, stochastic_block_model
from networkedfl.nn import (
    ClientData,
    client_gradients,
    client_losses,
    cross_entropy,
    from_module,
    linear_regression,
    losses_of_models,
    softmax_regression,
    squared_error,
)

# ---------------------------------------------------------------- helpers and references


def _lsq_grad(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Gradient of the average squared error (1/m) ||X w - y||^2 (GTV eq. (38))."""
    return 2.0 * x.T @ (x @ w - y) / x.shape[0]


def _gd(x: np.ndarray, y: np.ndarray, w0: np.ndarray, lr: float, steps: int) -> np.ndarray:
    w = w0.copy()
    for _ in range(steps):
        w = w - lr * _lsq_grad(x, y, w)
    return w


def _linear_clients(rng, n, m, d, counts=None, truth=None, noise=0.1):
    """Linear data (n, m, d); padding (beyond counts) filled with garbage on purpose."""
    truth = rng.standard_normal((n, d)) if truth is None else truth
    x = rng.standard_normal((n, m, d))
    y = np.einsum("nmd,nd->nm", x, truth) + noise * rng.standard_normal((n, m))
    if counts is not None:
        pad = np.arange(m)[None, :] >= np.asarray(counts)[:, None]
        x[pad] = 1e3
        y[pad] = -1e3
    return x, y


def _torch(a):
    return torch.as_tensor(a, dtype=torch.float64)


# ---------------------------------------------------------------- FedAvg


@pytest.mark.parametrize("local_epochs", [1, 3])
def test_fedavg_one_client_full_batch_is_gradient_descent(local_epochs):
    rng = np.random.default_rng(0)
    x, y = _linear_clients(rng, 1, 20, 3)
    data = ClientData.from_arrays(x, y, dtype=torch.float64)
    res = fedavg(
        linear_regression(3),
        data,
        n_rounds=7,
        local_epochs=local_epochs,
        batch_size=None,
        lr=0.05,
    )
    expected = _gd(x[0], y[0], np.zeros(3), 0.05, 7 * local_epochs)
    np.testing.assert_allclose(res.client_params[0].numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.global_params[0].numpy(), expected, rtol=1e-12, atol=1e-12)
    assert [row["upload"] for row in res.log] == ["models"] * 7
    assert res.log[0]["messages_up"] == 1 and res.log[0]["floats_up"] == 3
    assert [row["round"] for row in res.history] == list(range(1, 8))
    assert res.history[-1]["messages_total"] == 14


def test_fedavg_identical_clients_equals_centralised_gd():
    rng = np.random.default_rng(1)
    x, y = _linear_clients(rng, 1, 15, 4)
    n = 5
    data = ClientData.from_arrays(np.repeat(x, n, 0), np.repeat(y, n, 0), dtype=torch.float64)
    res = fedavg(
        linear_regression(4, bias=True), data, n_rounds=6, local_epochs=2, batch_size=None, lr=0.03
    )
    px, py, _ = data.pooled()
    px1 = np.hstack([px.numpy(), np.ones((px.shape[0], 1))])
    expected = _gd(px1, py.numpy(), np.zeros(5), 0.03, 12)
    np.testing.assert_allclose(
        res.client_params.numpy(), np.tile(expected, (n, 1)), rtol=1e-11, atol=1e-12
    )


def test_fedavg_one_client_minibatch_equals_local_sgd_on_its_data():
    """T rounds of E epochs = T*E epochs of the same mini-batch SGD (same random orders)."""
    rng = np.random.default_rng(2)
    x, y = _linear_clients(rng, 1, 23, 3)
    data = ClientData.from_arrays(x, y, dtype=torch.float64)
    model = linear_regression(3)
    res = fedavg(model, data, n_rounds=4, local_epochs=2, batch_size=5, lr=0.02, seed=11)
    ref = local_sgd(
        model,
        torch.zeros(1, 3, dtype=torch.float64),
        data,
        epochs=8,
        batch_size=5,
        lr=0.02,
        seed=torch.Generator().manual_seed(11),
    )
    torch.testing.assert_close(res.client_params, ref, rtol=0, atol=0)


def test_fedavgc_equals_fedavg_per_cluster():
    rng = np.random.default_rng(3)
    counts = np.array([4, 9, 6, 12, 3, 7, 10])
    groups = np.array([2, 0, 2, 1, 0, 2, 1])
    x, y = _linear_clients(rng, 7, 12, 3, counts=counts)
    data = ClientData.from_arrays(x, y, counts, dtype=torch.float64)
    model = linear_regression(3, bias=True)
    kw = dict(n_rounds=5, local_epochs=2, batch_size=None, lr=0.02)
    joint = fedavg(model, data, groups=groups, **kw)
    assert joint.global_params.shape == (3, 4)
    for g in range(3):
        members = np.flatnonzero(groups == g)
        alone = fedavg(model, data.subset(members), **kw)
        torch.testing.assert_close(joint.global_params[g], alone.global_params[0])
        torch.testing.assert_close(joint.client_params[members], alone.client_params)
    # the three groups really differ (averaging did not leak across groups)
    assert not torch.allclose(joint.global_params[0], joint.global_params[1])


def test_client_sampling_per_group_and_participants():
    groups = torch.tensor([0] * 5 + [1] * 10 + [2])
    allowed = torch.ones(16, dtype=torch.bool)
    gen = torch.Generator().manual_seed(0)
    picks = []
    for _ in range(20):
        sel = sample_clients(groups, 3, 0.3, allowed, gen)
        # round half up: 0.3*5 = 1.5 -> 2, 0.3*10 = 3, max(1, 0.3) = 1
        assert torch.bincount(groups[sel], minlength=3).tolist() == [2, 3, 1]
        picks.append(sel)
    assert len({tuple(p.tolist()) for p in picks}) > 1
    allowed[5:12] = False  # group 1 keeps 3 participants: round(0.9) = 1
    sel = sample_clients(groups, 3, 0.3, allowed, gen)
    assert not bool(torch.any(sel & ~allowed))
    assert torch.bincount(groups[sel], minlength=3).tolist() == [2, 1, 1]


# ---------------------------------------------------------------- FedSGD


def test_fedsgd_equals_pooled_gd_with_unequal_sizes():
    rng = np.random.default_rng(4)
    counts = np.array([3, 7, 12, 1, 9])
    x, y = _linear_clients(rng, 5, 12, 4, counts=counts)
    data = ClientData.from_arrays(x, y, counts, dtype=torch.float64)
    res = fedsgd(linear_regression(4), data, n_rounds=15, lr=0.05)
    px, py, _ = data.pooled()
    assert px.shape[0] == counts.sum()
    expected = _gd(px.numpy(), py.numpy(), np.zeros(4), 0.05, 15)
    np.testing.assert_allclose(res.global_params[0].numpy(), expected, rtol=1e-11, atol=1e-12)
    assert {row["upload"] for row in res.log} == {"gradients"}
    assert res.log[0]["messages_up"] == 5 and res.log[0]["floats_up"] == 20
    # unweighted averaging of the client gradients would give something else
    naive = np.zeros(4)
    for _ in range(15):
        g = [_lsq_grad(x[i, : counts[i]], y[i, : counts[i]], naive) for i in range(5)]
        naive = naive - 0.05 * np.mean(g, axis=0)
    assert not np.allclose(naive, expected, atol=1e-6)


# ---------------------------------------------------------------- IFCA


def test_ifca_recovers_planted_partition():
    rng = np.random.default_rng(5)
    n, d = 16, 4
    truth_clusters = rng.permutation(np.repeat([0, 1], n // 2))
    centres = np.array([[2.0, -1.0, 1.5, 0.5], [-1.5, 2.0, -0.5, -2.0]])
    truth = centres[truth_clusters]
    x, y = _linear_clients(rng, n, 25, d, truth=truth, noise=0.05)
    data = ClientData.from_arrays(x, y, dtype=torch.float64)
    res = ifca(
        linear_regression(d, init="bernoulli"),
        data,
        n_clusters=2,
        n_rounds=150,
        lr=0.1,
        seed=0,
    )
    labels = res.assignment.numpy()
    assert adjusted_rand_score(truth_clusters, labels) == 1.0
    # cluster models match the centres up to the label permutation
    first = int(labels[np.flatnonzero(truth_clusters == 0)[0]])
    models = res.global_params.numpy()
    np.testing.assert_allclose(models[first], centres[0], atol=0.05)
    np.testing.assert_allclose(models[1 - first], centres[1], atol=0.05)
    np.testing.assert_array_equal(res.client_params.numpy(), models[labels])
    assert all(sum(row["cluster_sizes"]) == n for row in res.history)
    # "incorrect" IFCA is the same code with another k
    wrong = ifca(
        linear_regression(d, init="bernoulli"), data, n_clusters=3, n_rounds=5, lr=0.1, seed=0
    )
    assert wrong.global_params.shape == (3, d)


def test_ifca_rejects_identical_random_init():
    data = ClientData.from_arrays(np.zeros((2, 3, 2)), np.zeros((2, 3)), dtype=torch.float64)
    with pytest.raises(ValueError, match="cluster models.*are identical"):
        ifca(linear_regression(2), data, n_clusters=2, n_rounds=1, lr=0.1)


# ---------------------------------------------------------------- gossip


def _test_graph() -> EmpiricalGraph:
    graph = stochastic_block_model([6, 5], 0.6, 0.2, np.random.default_rng(6))
    weights = np.linspace(0.2, 2.0, graph.n_edges)
    weights[0] = 0.0  # a zero-weight edge: a link for MH / max-degree, none for Laplacian
    graph = EmpiricalGraph(graph.n_nodes, graph.edges, weights)
    assert graph.is_connected()
    assert EmpiricalGraph(graph.n_nodes, graph.edges[1:], weights[1:]).is_connected()
    return graph


@pytest.mark.parametrize("rule", MIXING_RULES)
def test_mixing_matrix_is_symmetric_doubly_stochastic_on_the_graph(rule):
    graph = _test_graph()
    w = mixing_matrix(graph, rule).toarray()
    np.testing.assert_allclose(w, w.T, atol=0)
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-14)
    allowed = graph.adjacency.toarray() != 0
    allowed |= np.eye(graph.n_nodes, dtype=bool)
    i0, j0 = graph.edges[0]
    if rule != "laplacian":
        allowed[i0, j0] = allowed[j0, i0] = True
    assert np.all((w != 0) <= allowed)
    assert (w[i0, j0] != 0) == (rule != "laplacian")
    if rule == "metropolis":
        deg = graph.degrees
        i, j = graph.edges[3]
        assert w[i, j] == pytest.approx(1.0 / (1.0 + max(deg[i], deg[j])))
    if rule == "laplacian":
        i, j = graph.edges[3]
        alpha = 1.0 / (graph.weighted_degrees.max() + 1.0)
        assert w[i, j] == pytest.approx(alpha * graph.weights[3])


@pytest.mark.parametrize("rule", MIXING_RULES)
def test_gossip_preserves_average_and_converges(rule):
    graph = _test_graph()
    w = mixing_matrix(graph, rule)
    rng = np.random.default_rng(7)
    values = rng.standard_normal((graph.n_nodes, 3))
    mean = values.mean(axis=0)
    current_np, current_t = values, _torch(values)
    for _ in range(30):
        current_np = gossip_average(current_np, w, 1)
        current_t = gossip_average(current_t, w, 1)
        np.testing.assert_allclose(current_np.mean(axis=0), mean, rtol=0, atol=1e-14)
        np.testing.assert_allclose(current_t.mean(dim=0).numpy(), mean, rtol=0, atol=1e-14)
    np.testing.assert_allclose(current_t.numpy(), current_np, atol=1e-13)
    far = gossip_average(values, w, 3000)
    np.testing.assert_allclose(far, np.tile(mean, (graph.n_nodes, 1)), atol=1e-8)


def test_mixing_matrix_errors():
    graph = _test_graph()
    with pytest.raises(ValueError, match="unknown mixing rule 'bogus'"):
        mixing_matrix(graph, "bogus")
    with pytest.raises(ValueError, match="laplacian"):
        mixing_matrix(graph, "laplacian", alpha=10.0)


def test_decentralized_fedavg_pure_gossip_and_message_count():
    n, p = 8, 3
    ring = EmpiricalGraph(n, np.stack([np.arange(n), (np.arange(n) + 1) % n], 1), np.ones(n))
    data = ClientData.from_arrays(np.zeros((n, 2, p)), np.zeros((n, 2)), dtype=torch.float64)
    init = _torch(np.random.default_rng(8).standard_normal((n, p)))
    res = decentralized_fedavg(
        linear_regression(p),
        data,
        ring,
        n_rounds=6,
        local_epochs=0,
        batch_size=None,
        lr=0.1,
        gossip_steps=2,
        init=init,
    )
    expected = gossip_average(init, mixing_matrix(ring, "metropolis"), 12)
    torch.testing.assert_close(res.client_params, expected)
    torch.testing.assert_close(res.global_params[0], init.mean(0))
    distances = [row["consensus_distance"] for row in res.history]
    assert distances[0] < consensus_distance(init)
    assert all(b <= a for a, b in zip(distances, distances[1:], strict=False))
    assert res.log[0]["messages_up"] == 2 * 2 * n  # 2E per gossip step on a ring, E = n
    assert res.history[-1]["messages_total"] == 6 * 2 * 2 * n


def test_decentralized_fedavg_trains_and_reaches_consensus():
    rng = np.random.default_rng(9)
    graph = stochastic_block_model([6, 6], 0.7, 0.3, rng)
    x, y = _linear_clients(rng, 12, 20, 3, truth=np.tile([1.0, -2.0, 0.5], (12, 1)))
    data = ClientData.from_arrays(x, y, dtype=torch.float64)
    model = linear_regression(3)
    res = decentralized_fedavg(
        model, data, graph, n_rounds=40, local_epochs=1, batch_size=5, lr=0.02, seed=1
    )
    assert res.history[-1]["consensus_distance"] < 1e-3
    np.testing.assert_allclose(res.global_params[0].numpy(), [1.0, -2.0, 0.5], atol=0.1)


# ---------------------------------------------------------------- models and gradients


def _mlp_model():
    module = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)
    ).double()
    n_params = sum(p.numel() for p in module.parameters())
    fixed = torch.randn(n_params, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    torch.nn.utils.vector_to_parameters(fixed, module.parameters())  # no global seeding
    model = from_module(module, lambda out, t: squared_error(out.squeeze(-1), t), init="module")
    return module, model


def test_vmap_gradients_equal_per_client_autograd():
    module, model = _mlp_model()
    rng = np.random.default_rng(10)
    x = _torch(rng.standard_normal((3, 6, 3)))
    y = _torch(rng.standard_normal((3, 6)))
    weights = _torch([[1] * 6, [1] * 4 + [0] * 2, [1, 0, 1, 1, 0, 1]])
    params = _torch(rng.standard_normal((3, model.n_params)))
    batched = client_gradients(model, params, x, y, weights)
    for i in range(3):
        torch.nn.utils.vector_to_parameters(params[i].clone(), module.parameters())
        module.zero_grad()
        per_sample = (module(x[i]).squeeze(-1) - y[i]) ** 2
        loss = (weights[i] * per_sample).sum() / weights[i].sum()
        loss.backward()
        ref = torch.cat([p.grad.reshape(-1) for p in module.parameters()])
        torch.testing.assert_close(batched[i], ref, rtol=1e-12, atol=1e-12)
    # and softmax regression against torch.autograd on the same flat function
    soft = softmax_regression(3, 4)
    labels = torch.as_tensor(rng.integers(0, 4, (3, 6)))
    ps = _torch(rng.standard_normal((3, soft.n_params)))
    batched = client_gradients(soft, ps, x, labels, weights)
    for i in range(3):
        p = ps[i].clone().requires_grad_(True)
        logits = x[i] @ p[:12].reshape(4, 3).T + p[12:]
        ce = torch.nn.functional.cross_entropy(logits, labels[i], reduction="none")
        (g,) = torch.autograd.grad((weights[i] * ce).sum() / weights[i].sum(), p)
        torch.testing.assert_close(batched[i], g, rtol=1e-12, atol=1e-12)


def test_softmax_and_module_losses_match_hand_computation():
    rng = np.random.default_rng(11)
    n, m, d, c = 2, 5, 3, 4
    x = rng.standard_normal((n, m, d))
    labels = rng.integers(0, c, (n, m))
    params = rng.standard_normal((n, c * d + c))
    soft = softmax_regression(d, c)
    got = client_losses(soft, _torch(params), _torch(x), torch.as_tensor(labels)).numpy()
    for i in range(n):
        logits = x[i] @ params[i, : c * d].reshape(c, d).T + params[i, c * d :]
        logz = np.log(np.exp(logits).sum(axis=1))
        hand = np.mean(logz - logits[np.arange(m), labels[i]])
        assert got[i] == pytest.approx(hand, rel=1e-12)
    # nn.Linear(d, c) flattens as (weight row by row, bias): the same layout
    linear = from_module(torch.nn.Linear(d, c), cross_entropy)
    same = client_losses(linear, _torch(params), _torch(x), _torch(labels)).numpy()
    np.testing.assert_allclose(same, got, rtol=1e-12)
    # from_module init = the module's parameters; loss by hand with the module itself
    module, model = _mlp_model()
    y = rng.standard_normal((n, m))
    init = model.initial_params(dtype=torch.float64)
    loss = client_losses(model, init, _torch(x), _torch(y)).numpy()
    with torch.no_grad():
        hand = [
            float(((module(_torch(x[i])).squeeze(-1) - _torch(y[i])) ** 2).mean()) for i in range(n)
        ]
    np.testing.assert_allclose(loss, hand, rtol=1e-12)


def test_losses_of_models_is_every_client_under_every_model():
    rng = np.random.default_rng(12)
    counts = [4, 6, 2]
    x, y = _linear_clients(rng, 3, 6, 2, counts=counts)
    data = ClientData.from_arrays(x, y, counts, dtype=torch.float64)
    model = linear_regression(2, bias=True)
    models = _torch(rng.standard_normal((4, 3)))
    table = losses_of_models(model, models, data.features, data.targets, data.sample_weights)
    assert table.shape == (3, 4)
    for j in range(4):
        col = client_losses(model, models[j], data.features, data.targets, data.sample_weights)
        torch.testing.assert_close(table[:, j], col)
    i, j = 1, 2
    xi, yi = x[i, : counts[i]], y[i, : counts[i]]
    hand = np.mean((xi @ models[j, :2].numpy() + models[j, 2].item() - yi) ** 2)
    assert table[i, j].item() == pytest.approx(hand, rel=1e-12)


def test_client_data_constructors():
    rng = np.random.default_rng(13)
    node = NodeData(rng.standard_normal((3, 4, 2)), rng.standard_normal((3, 4)))
    data = ClientData.from_node_data(node, dtype=torch.float64)
    assert data.features.dtype == torch.float64 and data.weight_per_node.tolist() == [4.0] * 3
    ragged = ClientData.from_client_arrays(
        [rng.standard_normal((k, 2)) for k in (1, 4, 2)], [np.arange(k) for k in (1, 4, 2)], dtype=torch.float64
    )
    assert ragged.max_samples == 4 and ragged.counts.tolist() == [1, 4, 2]
    assert ragged.targets.dtype == torch.int64  # integer labels stay integer
    assert ragged.pooled()[0].shape == (7, 2)


# ---------------------------------------------------------------- local SGD kernel


def test_local_sgd_partial_batches_and_padding():
    """ceil(n_i / B) steps per epoch for each client; padding values are irrelevant."""
    a, b = np.array([1.0, 2.0]), np.array([-0.5, 1.0])
    x = np.zeros((2, 10, 2))
    y = np.zeros((2, 10))
    x[0, :3], y[0, :3] = a, 3.0  # 3 identical samples: 2 steps per epoch with B = 2
    x[1, :], y[1, :] = b, -1.0  # 10 identical samples: 5 steps per epoch
    counts = [3, 10]
    model = linear_regression(2)
    start = torch.zeros(2, 2, dtype=torch.float64)
    out = local_sgd(
        model,
        start,
        ClientData.from_arrays(x, y, counts, dtype=torch.float64),
        epochs=2,
        batch_size=2,
        lr=0.05,
        seed=torch.Generator().manual_seed(0),
    )
    expected = []
    for xi, yi, steps in ((a, 3.0, 4), (b, -1.0, 10)):
        w = np.zeros(2)
        for _ in range(steps):
            w = w - 0.05 * 2 * xi * (xi @ w - yi)
        expected.append(w)
    np.testing.assert_allclose(out.numpy(), np.array(expected), rtol=1e-12)
    # the padding's values do not matter (same random orders: same seed, same shapes)
    rng = np.random.default_rng(14)
    x2, y2 = _linear_clients(rng, 3, 9, 2, counts=[5, 9, 2])
    kw = dict(epochs=3, batch_size=2, lr=0.05)
    runs = []
    for fill in (0.0, 1e6):
        xf, yf = x2.copy(), y2.copy()
        pad = np.arange(9)[None, :] >= np.array([5, 9, 2])[:, None]
        xf[pad], yf[pad] = fill, fill
        runs.append(
            local_sgd(
                model,
                torch.zeros(3, 2, dtype=torch.float64),
                ClientData.from_arrays(xf, yf, [5, 9, 2], dtype=torch.float64),
                **kw,
                seed=torch.Generator().manual_seed(3),
            )
        )
    torch.testing.assert_close(runs[0], runs[1], rtol=0, atol=0)


def test_minibatches_without_a_seed_draw_fresh_entropy():
    """``seed=None`` runs (numpy's convention: fresh entropy); an int seed reproduces."""
    data = ClientData.from_arrays(np.arange(20.0).reshape(2, 5, 2), np.arange(10.0).reshape(2, 5), dtype=torch.float64)

    def run(seed):
        return local_sgd(linear_regression(2), torch.zeros(2, 2, dtype=torch.float64), data,
                         epochs=1, batch_size=2, lr=0.01, seed=seed)

    assert torch.isfinite(run(None)).all()
    torch.testing.assert_close(run(3), run(3), rtol=0, atol=0)
    assert not torch.equal(run(3), run(4))


# ---------------------------------------------------------------- determinism


def test_same_seed_same_result_other_seed_other_batches():
    rng = np.random.default_rng(15)
    counts = rng.integers(4, 13, 8)
    x, y = _linear_clients(rng, 8, 12, 3, counts=counts)
    data = ClientData.from_arrays(x, y, counts, dtype=torch.float64)
    model = linear_regression(3)

    def run(seed):
        return fedavg(
            model,
            data,
            n_rounds=3,
            local_epochs=2,
            batch_size=3,
            lr=0.05,
            client_fraction=0.5,
            seed=seed,
        )

    first, again, other = run(torch.Generator().manual_seed(4)), run(4), run(5)
    torch.testing.assert_close(first.client_params, again.client_params, rtol=0, atol=0)
    assert first.history == again.history and first.log == again.log
    assert not torch.equal(first.client_params, other.client_params)
    np_a = run(np.random.default_rng(99))
    np_b = run(np.random.default_rng(99))
    torch.testing.assert_close(np_a.client_params, np_b.client_params, rtol=0, atol=0)
    # the mini-batch orders differ between seeds
    g4, g5 = torch.Generator().manual_seed(4), torch.Generator().manual_seed(5)
    start = torch.zeros(8, 3, dtype=torch.float64)
    a = local_sgd(model, start, data, epochs=1, batch_size=3, lr=0.05, seed=g4)
    b = local_sgd(model, start, data, epochs=1, batch_size=3, lr=0.05, seed=g5)
    assert not torch.equal(a, b)
    # local training epoch by epoch = one local_sgd call with all epochs
    loc = local_training(model, data, n_rounds=3, local_epochs=1, batch_size=3, lr=0.05, seed=7)
    ref = local_sgd(
        model,
        start,
        data,
        epochs=3,
        batch_size=3,
        lr=0.05,
        seed=torch.Generator().manual_seed(7),
    )
    torch.testing.assert_close(loc.client_params, ref, rtol=0, atol=0)
    assert loc.history[-1]["messages_total"] == 0


def test_decentralized_fedavg_rejects_a_graph_with_an_isolated_client():
    from networkedfl.graphs import GraphError

    rng = np.random.default_rng(0)
    data = ClientData.from_arrays(rng.standard_normal((3, 4, 2)), rng.standard_normal((3, 4)), dtype=torch.float64)
    graph = EmpiricalGraph(3, np.array([[0, 1]]), np.array([1.0]))
    with pytest.raises(GraphError, match="decentralized_fedavg: .*isolated nodes.*2"):
        decentralized_fedavg(linear_regression(2), data, graph, n_rounds=1, lr=0.1, local_epochs=1, batch_size=2)


@pytest.mark.parametrize("field", ["features", "targets"])
def test_client_data_with_nan_or_inf_names_the_clients(field):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 5, 2)), rng.standard_normal((4, 5))
    (x if field == "features" else y)[2, 1, ...] = np.nan
    (x if field == "features" else y)[3, 0, ...] = np.inf
    with pytest.raises(ValueError, match=rf"{field} contain NaN or inf \(clients \[2, 3\]\)"):
        ClientData.from_arrays(x, y, dtype=torch.float64)
