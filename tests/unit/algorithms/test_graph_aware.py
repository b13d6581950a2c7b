"""Graph-aware FL algorithms (the chapter): DFL-SGD, DFL-GT, FedAvg steps, FeSEM, BiG-FL."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from networkedfl.algorithms import (
    MIXING_RULES,
    Embedding,
    bigfl,
    check_doubly_stochastic,
    dfl_gt,
    dfl_iterates,
    dfl_sgd,
    fedavg,
    fedavg_steps,
    fesem,
    hypergradient,
    lower_gradients,
    mixing_matrix,
    mixing_operator,
    negative_samples,
    normalized_adjacency,
    upper_loss,
)
from networkedfl.graphs import EmpiricalGraph, ring, star, stochastic_block_model
from networkedfl.nn import (
    ClientBatches,
    ClientData,
    from_module,
    inverse_sqrt,
    linear_regression,
    squared_error,
)


def complete_graph(n: int) -> EmpiricalGraph:
    i, j = np.triu_indices(n, 1)
    return EmpiricalGraph(n, np.stack([i, j], 1), np.ones(i.size))


def regression_data(n=6, m=12, d=3, seed=0, clusters=None, noise=0.1):
    rng = np.random.default_rng(seed)
    truth = rng.standard_normal((n, d)) if clusters is None else clusters
    x = rng.standard_normal((n, m, d))
    y = np.einsum("nmd,nd->nm", x, truth) + noise * rng.standard_normal((n, m))
    return ClientData.from_arrays(x, y, dtype=torch.float64), truth


def small_mlp(d_in=3, hidden=4, seed=0):
    torch.manual_seed(seed)  # module construction only; the algorithms never seed
    net = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1),
                              torch.nn.Flatten(0)).double()
    return from_module(net, squared_error, init="module")  # the module as constructed


# ----------------------------------------------------------------------- mixing matrices

@pytest.mark.parametrize("rule", MIXING_RULES)
def test_mixing_matrices_are_doubly_stochastic(rule):
    graphs = [ring(7), star(6), complete_graph(5),
              stochastic_block_model([6, 6], 0.7, 0.1, np.random.default_rng(3))]
    for g in graphs:
        w = mixing_matrix(g, rule)
        check_doubly_stochastic(w)
        dense = w.toarray()
        assert np.all(dense >= 0) and np.allclose(dense, dense.T)
        # supported on the edges (plus the diagonal)
        off = (dense > 0) & ~np.eye(g.n_nodes, dtype=bool)
        assert np.array_equal(off, g.adjacency.toarray() > 0)
    with pytest.raises(ValueError, match="doubly stochastic"):
        check_doubly_stochastic(np.array([[0.5, 0.5], [0.2, 0.8]]))
    with pytest.raises(ValueError, match="negative"):
        check_doubly_stochastic(np.array([[1.5, -0.5], [-0.5, 1.5]]))


def test_complete_graph_metropolis_is_uniform_averaging():
    w, messages = mixing_operator(complete_graph(5), dtype=torch.float64)
    np.testing.assert_allclose(w.to_dense().numpy(), np.full((5, 5), 0.2), atol=1e-15)
    assert messages == 20


# ------------------------------------------------------------------- DFL-SGD and FedAvg

def _history_params(record):
    def callback(state):
        record.append(state.client_params.clone())
    return callback


def test_dfl_sgd_on_complete_graph_equals_fedavg_full_batch():
    """DFL-SGD (adapt-then-combine) with W = 11^T/n = the baselines' FedAvg, tau GD steps."""
    data, _ = regression_data()
    model = small_mlp()
    tau, lr, rounds = 3, 0.05, 4
    a, b = [], []
    dfl = dfl_sgd(model, data, complete_graph(6), n_rounds=rounds, local_steps=tau, lr=lr,
                  batch_size=None, order="atc", callback=_history_params(a))
    ref = fedavg(model, data, n_rounds=rounds, local_epochs=tau, batch_size=None, lr=lr,
                 callback=_history_params(b))
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=1e-12)
    torch.testing.assert_close(dfl.client_params, ref.client_params, rtol=0, atol=1e-12)
    assert not torch.allclose(a[0], a[-1])  # it trained


def test_dfl_sgd_on_complete_graph_equals_fedavg_steps_minibatch_schedule_and_mask():
    data, _ = regression_data(m=20)
    model = small_mlp()
    mask = (torch.rand(6, model.n_params, generator=torch.Generator().manual_seed(1)) > 0.3).double()
    kw = dict(n_rounds=5, local_steps=4, lr=inverse_sqrt(0.2), batch_size=5, mask=mask)
    a, b = [], []
    dfl_sgd(model, data, complete_graph(6), order="atc", seed=7, callback=_history_params(a), **kw)
    fedavg_steps(model, data, seed=7, callback=_history_params(b), **kw)
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=1e-12)
    init = model.initial_params(dtype=torch.float64)
    frozen = mask == 0
    assert torch.equal(a[-1][frozen], init.expand(6, -1)[frozen])


def test_dfl_sgd_chapter_order_is_mix_plus_gradient_at_the_unmixed_point():
    """Eq. (10.4): theta^{t+1} = W theta^t - alpha grad f_i(theta_i^t) on gossip steps."""
    data, _ = regression_data()
    model = linear_regression(3)
    g = ring(6)
    w, _ = mixing_operator(g, dtype=torch.float64)
    params = torch.randn(6, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    batches = ClientBatches.from_client_data(data)
    it = dfl_iterates(model, batches, w, n_steps=3, local_steps=2, lr=0.1, batch_size=None,
                      params=params)
    from networkedfl.nn import client_gradients
    theta = params
    for t, state in enumerate(it):
        grad = client_gradients(model, theta, data.features, data.targets, data.sample_weights)
        expect = (torch.sparse.mm(w, theta) if t % 2 == 0 else theta) - 0.1 * grad
        torch.testing.assert_close(state.params, expect, rtol=0, atol=1e-13)
        theta = state.params


# ------------------------------------------------------------------------------ DFL-GT

@pytest.mark.parametrize("tau", [1, 3])
def test_gradient_tracker_average_equals_average_gradient_every_step(tau):
    data, _ = regression_data(n=7, m=30)
    model = small_mlp()
    g = stochastic_block_model([4, 3], 0.9, 0.3, np.random.default_rng(0))
    w, _ = mixing_operator(g, dtype=torch.float64)
    params = model.initial_params(dtype=torch.float64).expand(7, -1).clone()
    batches = ClientBatches.from_client_data(data)
    states = list(dfl_iterates(model, batches, w, n_steps=25, local_steps=tau, lr=inverse_sqrt(0.3),
                               batch_size=8, method="gt", params=params,
                               seed=torch.Generator().manual_seed(3)))
    for s in states:
        torch.testing.assert_close(s.tracker.mean(0), s.gradients.mean(0), rtol=0, atol=1e-12)
    # the tracker is not simply the local gradient (it mixes across clients)
    assert not torch.allclose(states[-1].tracker, states[-1].gradients)


def test_dfl_gt_converges_to_the_consensus_least_squares_solution():
    """Full-batch GT on heterogeneous linear clients reaches the minimiser of (1/n) sum f_i."""
    data, _ = regression_data(n=5, m=15, noise=0.5)
    model = linear_regression(3)
    res = dfl_gt(model, data, ring(5), n_rounds=400, local_steps=2, lr=0.05, batch_size=None)
    x = data.features.reshape(-1, 3)
    y = data.targets.reshape(-1)
    pooled = torch.linalg.lstsq(x, y[:, None]).solution.squeeze(1)
    torch.testing.assert_close(res.client_params, pooled.expand(5, -1), rtol=0, atol=1e-6)
    # DFL-SGD with local steps does not (client drift under heterogeneity)
    sgd = dfl_sgd(model, data, ring(5), n_rounds=400, local_steps=2, lr=0.05, batch_size=None)
    assert float((sgd.client_params - pooled).abs().max()) > 1e-3


# ------------------------------------------------------------------------------- FeSEM

def test_fesem_recovers_three_well_separated_centres():
    truth = np.repeat(np.array([[4.0, 0.0], [-4.0, 0.0], [0.0, 4.0]]), 5, axis=0)
    data, _ = regression_data(n=15, m=25, d=2, clusters=truth, noise=0.05, seed=2)
    res = fesem(linear_regression(2), data, n_clusters=3, n_rounds=30, local_steps=5, lr=0.1,
                batch_size=None, lam=0.1, seed=np.random.default_rng(0))
    labels = res.assignment.numpy()
    true_labels = np.repeat([0, 1, 2], 5)
    # the same partition (up to relabelling)
    for c in range(3):
        assert len(set(labels[true_labels == c])) == 1
    assert len(set(labels)) == 3
    centres = res.global_params.numpy()
    for c in range(3):
        np.testing.assert_allclose(centres[labels[true_labels == c][0]], truth[5 * c], atol=0.1)
    assert res.history[-1]["cluster_sizes"] == [5, 5, 5]


# ------------------------------------------------------------------------------ BiG-FL

def _bigfl_problem(seed=0, n=5, d=3):
    data, _ = regression_data(n=n, m=10, d=d, seed=seed)
    g = ring(n)
    prop = normalized_adjacency(g, dtype=torch.float64)
    neighbours = torch.as_tensor(g.adjacency.toarray() > 0).double()
    return data, g, prop, neighbours


def test_normalized_adjacency_is_the_gcn_matrix():
    g = star(4)
    p = normalized_adjacency(g, dtype=torch.float64).numpy()
    deg = np.array([4.0, 2, 2, 2])  # degrees of A + I
    a = g.adjacency.toarray() + np.eye(4)
    np.testing.assert_allclose(p, a / np.sqrt(np.outer(deg, deg)))
    assert np.max(np.abs(np.linalg.eigvalsh(p))) <= 1 + 1e-12


def test_lower_gradient_matches_autograd_of_regulariser():
    """The LL gradient (10.17)-(10.18) in theta_i with the neighbours' part fixed."""
    data, g, prop, _ = _bigfl_problem()
    model = linear_regression(3)
    gen = torch.Generator().manual_seed(0)
    theta = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    phi = torch.eye(3, dtype=torch.float64) + 0.2 * torch.randn(3, 3, generator=gen, dtype=torch.float64)
    lam, kappa = 0.3, 0.05
    batch = (data.features, data.targets, data.sample_weights)
    emb = Embedding(None, 3, torch.float64, torch.device("cpu"))
    got = lower_gradients(model, theta, phi, prop, batch, lam=lam, kappa=kappa, embedding=emb)
    for i in range(5):
        def g_i(th_i, i=i):
            full = theta.clone()
            full[i] = th_i
            r = prop[i] @ (theta @ phi) - prop[i, i] * (theta[i] @ phi) + prop[i, i] * (th_i @ phi) - th_i
            loss = model.loss(th_i, data.features[i], data.targets[i])
            return loss + lam / 2 * (r ** 2).sum() + kappa / 2 * (th_i ** 2).sum()
        expect = torch.func.grad(g_i)(theta[i])
        torch.testing.assert_close(got[i], expect, rtol=1e-12, atol=1e-12)
    # the server's fixed anchor gives the same gradient at the round's start point
    u_phi = theta @ phi
    anchor = prop @ u_phi - torch.diagonal(prop)[:, None] * u_phi
    again = lower_gradients(model, theta, phi, prop, batch, lam=lam, kappa=kappa, embedding=emb, anchor=anchor)
    torch.testing.assert_close(again, got, rtol=0, atol=1e-13)


def test_hypergradient_matches_finite_differences_on_a_tiny_problem():
    data, g, prop, neighbours = _bigfl_problem(seed=1)
    model = linear_regression(3)
    lam, kappa, lam_upper = 0.5, 0.1, 0.2
    batch = (data.features, data.targets, data.sample_weights)
    emb = Embedding(None, 3, torch.float64, torch.device("cpu"))
    negatives = negative_samples(neighbours, 2, torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(5)
    phi0 = torch.eye(3, dtype=torch.float64) + 0.3 * torch.randn(3, 3, generator=gen, dtype=torch.float64)

    def game(th, ph):
        return lower_gradients(model, th, ph, prop, batch, lam=lam, kappa=kappa, embedding=emb)

    def solve(ph):
        """The LL Nash equilibrium: F(theta, phi) = 0 (affine in theta: Newton steps)."""
        th = torch.zeros(5, 3, dtype=torch.float64)
        for _ in range(3):
            jac = torch.func.jacrev(lambda t: game(t, ph))(th).reshape(15, 15)
            th = th - torch.linalg.solve(jac, game(th, ph).reshape(-1)).reshape(5, 3)
        assert float(game(th, ph).abs().max()) < 1e-12
        return th

    def ell(ph):
        return float(upper_loss(ph, solve(ph), prop, neighbours, *negatives, lam_upper))

    h = 1e-6
    fd = torch.zeros(3, 3, dtype=torch.float64)
    for a in range(3):
        for b in range(3):
            e = torch.zeros(3, 3, dtype=torch.float64)
            e[a, b] = h
            fd[a, b] = (ell(phi0 + e) - ell(phi0 - e)) / (2 * h)
    theta_star = solve(phi0)
    common = dict(lam=lam, kappa=kappa, lam_upper=lam_upper, embedding=emb)
    exact, _ = hypergradient(model, theta_star, phi0, prop, neighbours, negatives, batch,
                             inverse="exact", **common)
    torch.testing.assert_close(exact, fd, rtol=1e-6, atol=1e-7)
    neumann, _ = hypergradient(model, theta_star, phi0, prop, neighbours, negatives, batch,
                               neumann_terms=800, neumann_scale=0.1, **common)
    torch.testing.assert_close(neumann, fd, rtol=1e-5, atol=1e-6)
    # the implicit term matters: the partial gradient alone is different
    partial, _ = hypergradient(model, theta_star, phi0, prop, neighbours, negatives, batch,
                               neumann_terms=1, neumann_scale=0.0, **common)
    assert float((partial - fd).abs().max()) > 1e-3


def test_bigfl_runs_batched_with_mask_and_projection():
    data, g, _, _ = _bigfl_problem(n=6)
    model = small_mlp()
    mask = torch.ones(6, model.n_params, dtype=torch.float64)
    mask[:, :3] = 0.0  # freeze the first three weights of every client
    proj = torch.randn(model.n_params, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    seen = []
    res = bigfl(model, data, ring(6), n_rounds=3, local_steps=2, lr=0.05, lr_upper=0.05,
                batch_size=4, lam=0.1, kappa=0.01, n_negatives=2, embedding=proj, mask=mask,
                seed=0, callback=lambda s: seen.append(s.round) or {"custom": 1})
    assert res.phi.shape == (4, 4) and not torch.allclose(res.phi, torch.eye(4, dtype=torch.float64))
    init = model.initial_params(dtype=torch.float64)
    assert torch.equal(res.client_params[:, :3], init[:3].expand(6, -1))
    assert not torch.allclose(res.client_params[:, 3:], init[3:].expand(6, -1))
    assert seen == [1, 2, 3] and res.history[-1]["custom"] == 1
    assert {"upper_loss", "phi_distance"} <= set(res.history[0])


def test_negative_samples_avoid_neighbours_and_self():
    g = ring(8)
    nb = torch.as_tensor(g.adjacency.toarray() > 0)
    idx, w = negative_samples(nb, 10, torch.Generator().manual_seed(0))
    assert idx.shape == (8, 8)
    for i in range(8):
        tails = idx[i][w[i] > 0].tolist()
        assert len(tails) == 5 and len(set(tails)) == 5
        assert i not in tails and not any(nb[i, j] for j in tails)


# ----------------------------------------------------------------------- masks, all algorithms

def test_frozen_coordinates_never_change_in_any_algorithm():
    data, _ = regression_data(n=4, m=10)
    model = small_mlp()
    mask = torch.ones(4, model.n_params, dtype=torch.float64)
    mask[0, :5] = 0.0
    mask[2, -3:] = 0.0
    init = model.initial_params(dtype=torch.float64)
    kw = dict(n_rounds=2, local_steps=2, batch_size=5, mask=mask, seed=1)
    runs = {
        "fedavg": fedavg_steps(model, data, lr=0.1, **kw),
        "dfl_sgd": dfl_sgd(model, data, ring(4), lr=0.1, **kw),
        "dfl_gt": dfl_gt(model, data, ring(4), lr=0.1, **kw),
        "fesem": fesem(model, data, n_clusters=2, lr=0.1, lam=0.1, **kw),
        "bigfl": bigfl(model, data, ring(4), lr=0.1, lr_upper=0.1, lam=0.1, kappa=0.01,
                       n_negatives=1, **kw),
    }
    for name, res in runs.items():
        frozen = mask == 0
        assert torch.equal(res.client_params[frozen], init.expand(4, -1)[frozen]), name
        assert not torch.allclose(res.client_params[mask > 0], init.expand(4, -1)[mask > 0]), name


def test_vector_targets_and_sparse_mixing_matrix_are_accepted():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6, 2))
    y = rng.standard_normal((4, 6, 3))
    batches = ClientBatches.from_arrays(x, y, dtype=torch.float64)
    torch.manual_seed(0)
    net = torch.nn.Linear(2, 3, bias=False).double()
    model = from_module(net, lambda out, tgt: ((out - tgt) ** 2).mean(-1))
    w = sp.csr_matrix(mixing_matrix(ring(4)))
    res = dfl_sgd(model, batches, w, n_rounds=2, local_steps=2, lr=0.1, batch_size=3, seed=0)
    assert res.client_params.shape == (4, 6) and len(res.history) == 2
    assert res.log[0]["messages_up"] == 8


def test_disconnected_or_isolated_graphs_are_rejected_at_entry():
    from networkedfl.graphs import GraphError

    data, _ = regression_data(n=4, m=5)
    two_pairs = EmpiricalGraph(4, np.array([[0, 1], [2, 3]]), np.ones(2))
    with pytest.raises(GraphError):
        dfl_sgd(linear_regression(3), data, two_pairs, n_rounds=1, local_steps=1, lr=0.1, batch_size=None)
    isolated = EmpiricalGraph(4, np.array([[0, 1], [1, 2]]), np.ones(2))
    with pytest.raises(GraphError):
        normalized_adjacency(isolated, dtype=torch.float64)
