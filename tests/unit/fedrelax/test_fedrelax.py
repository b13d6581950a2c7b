"""FedRelax (Abdurakhmanova et al. 2024): Algorithms 1 and 2, data of Algorithm 3, bound (25)."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import LinearRegression
from sklearn.neighbors import KNeighborsRegressor
from sklearn.tree import DecisionTreeRegressor

from networkedfl.fedrelax import (
    FedRelax,
    accepts_sample_weight,
    algebraic_connectivity,
    clustered_data,
    error_tolerance,
    fedrelax,
    fedrelax_linear,
    fixed_point,
    initial_weights,
    largest_remainder,
    linear_problem,
    mixture_similarity,
    node_gradients,
    node_objectives,
    noniid_data,
    predict_nodes,
    softmax,
    validation_mse,
    variation,
    variation_bound,
    weight_mse,
)
from networkedfl.graphs import EmpiricalGraph, ring, stochastic_block_model


def _small(n_clusters=2, size=4, d=3, m=10, sigma=0.1, seed=0, p_out=0.3):
    return clustered_data([size] * n_clusters, 1.0, p_out, d, m, 15, 12, sigma,
                          np.random.default_rng(seed))


# ---------------------------------------------------------------------------------------- data


def test_clustered_data_follows_the_linear_model():
    data = _small(sigma=0.5)
    assert data.features.shape == (8, 10, 3) and data.public.shape == (8, 12, 3)
    assert data.val_features.shape == (8, 15, 3)
    np.testing.assert_allclose(
        data.labels, np.einsum("nmd,nd->nm", data.features, data.true_weights) + data.noise)
    for c in range(2):  # one true weight vector per cluster
        block = data.true_weights[data.graph.clusters == c]
        assert np.all(block == block[0])
    assert not np.allclose(data.true_weights[0], data.true_weights[-1])


def test_largest_remainder_rounds_to_the_total():
    rho = np.array([[0.55, 0.25, 0.2], [1 / 3, 1 / 3, 1 / 3], [0.06, 0.47, 0.47]])
    counts = largest_remainder(10, rho)
    assert counts.tolist() == [[6, 2, 2], [4, 3, 3], [0, 5, 5]]
    rng = np.random.default_rng(3)
    rho = softmax(rng.standard_normal((200, 4)))
    counts = largest_remainder(13, rho)
    assert np.all(counts.sum(axis=1) == 13)
    assert np.all(np.abs(counts - 13 * rho) < 1)  # never off by a whole unit


def test_mixture_similarity_is_the_overlap_of_eq_21():
    rho = np.array([[0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.2, 0.3, 0.5]])
    a = mixture_similarity(rho)
    np.testing.assert_allclose(a, a.T)
    np.testing.assert_allclose(np.diag(a), 1.0)
    assert a[0, 1] == pytest.approx(0.5) and a[1, 2] == pytest.approx(0.7)
    assert a[0, 2] == pytest.approx(0.2 + 0.3)


def test_noniid_data_mixes_components_as_algorithm_3():
    data = noniid_data(30, 3, 4, 10, 20, 5, 0.0, np.random.default_rng(1))
    assert data.graph.n_edges == 30 * 29 // 2
    assert np.all((data.graph.weights > 0) & (data.graph.weights <= 1))
    counts = largest_remainder(10, data.mixing)
    # noiseless: each label is exactly one component's x^T w_bar^(k), in the counts of rho_i
    fits = np.einsum("nmd,kd->nmk", data.features, data.component_weights)
    hit = np.isclose(fits, data.labels[:, :, None])
    assert np.all(hit.any(axis=2))
    comp = hit.argmax(axis=2)
    assert np.array_equal(np.stack([np.bincount(c, minlength=3) for c in comp]), counts)


# ------------------------------------------------------------------------------------ analysis


def test_variation_bound_pieces():
    k5 = EmpiricalGraph(5, np.array([(i, j) for i in range(5) for j in range(i + 1, 5)]), np.ones(10))
    assert algebraic_connectivity(k5) == pytest.approx(5.0)  # complete graph K_n: lambda_2 = n
    assert algebraic_connectivity(ring(6)) == pytest.approx(2 - 2 * np.cos(2 * np.pi / 6))
    two = EmpiricalGraph(4, np.array([[0, 1], [2, 3]]), np.ones(2))
    assert algebraic_connectivity(two) == pytest.approx(0.0, abs=1e-12)
    assert variation_bound(two, np.ones((4, 2)), 0.1) == np.inf
    w = np.array([[1.0, 0.0], [3.0, 0.0], [2.0, 3.0]])
    assert variation(w) == pytest.approx(1 + 1 + 0 + 1 + 1 + 4)
    assert variation(np.stack([w, w + 5.0])).tolist() == pytest.approx([8.0, 8.0])
    assert variation(w, nodes=[0, 1]) == pytest.approx(2.0)
    noise = np.array([[1.0, -1.0], [2.0, 0.0]])
    assert error_tolerance(noise) == pytest.approx(1.0 + 2.0)
    assert variation_bound(k5, np.ones((5, 3)), 0.5) == pytest.approx(5.0 / (0.5 * 5.0))


def test_error_tolerance_is_the_loss_of_the_true_weights():
    data = clustered_data([12], 0.9, 0.0, 4, 6, 3, 5, 0.7, np.random.default_rng(2))
    resid = data.labels - np.einsum("nmd,nd->nm", data.features, data.true_weights)
    assert error_tolerance(data.noise) == pytest.approx(np.sum(np.mean(resid**2, axis=1)))
    assert weight_mse(data.true_weights, data.true_weights) == 0.0
    assert validation_mse(data.val_labels, data.val_labels) == 0.0


# --------------------------------------------------------------------------- Algorithm 2 (linear)


def _problem(data):
    return linear_problem(data.graph, data.features, data.labels, data.public)


def test_gradients_are_those_of_the_node_objectives():
    data = _small()
    problem = _problem(data)
    rng = np.random.default_rng(0)
    w = torch.as_tensor(rng.standard_normal((8, 3)))
    nb = torch.as_tensor(rng.standard_normal((8, 3)))
    alpha = torch.as_tensor(rng.uniform(0, 1, size=8))
    w_var = w.clone().requires_grad_(True)
    local, disc = node_objectives(problem, w_var, alpha, nb)
    (local + alpha * disc).sum().backward()
    np.testing.assert_allclose(node_gradients(problem, w, alpha, nb), w_var.grad, rtol=1e-10)
    # the objective written from predictions on the public data, as in (14)
    i = 0
    nbrs = data.graph.adjacency[i].indices
    a = data.graph.adjacency[i].data
    xi, yi = data.features[i], data.labels[i]
    direct_local = np.mean((xi @ w[i].numpy() - yi) ** 2)
    direct_disc = sum(aj * np.mean((data.public[j] @ (w[i].numpy() - nb[j].numpy())) ** 2)
                      for j, aj in zip(nbrs, a, strict=True))
    assert float(local[i].detach()) == pytest.approx(direct_local)
    assert float(disc[i].detach()) == pytest.approx(direct_disc)


def _reference_rmsprop(data, alpha, init, n_iter, lr, options=None):
    """Per-node reference: one nn.Linear, one RMSprop and autograd per node, predictions shared."""
    n, d = init.shape
    models = []
    for i in range(n):
        lin = torch.nn.Linear(d, 1, bias=False).double()
        with torch.no_grad():
            lin.weight.copy_(init[i][None])
        models.append((lin, torch.optim.RMSprop(lin.parameters(), lr=lr, **(options or {}))))
    adj = data.graph.adjacency
    x = [torch.as_tensor(v) for v in data.features]
    y = [torch.as_tensor(v) for v in data.labels]
    pub = [torch.as_tensor(v) for v in data.public]
    for _ in range(n_iter):
        with torch.no_grad():  # step 3: every node shares its predictions on its public data
            shared = [models[j][0](pub[j]).squeeze(-1) for j in range(n)]
        for i in range(n):
            lin, opt = models[i]
            opt.zero_grad()
            loss = torch.mean((lin(x[i]).squeeze(-1) - y[i]) ** 2)
            for j, a in zip(adj[i].indices, adj[i].data, strict=True):
                loss = loss + alpha * a * torch.mean((lin(pub[j]).squeeze(-1) - shared[j]) ** 2)
            loss.backward()
            opt.step()
    return torch.stack([lin.weight.detach()[0] for lin, _ in models])


def test_batched_rmsprop_equals_a_per_node_reference_loop():
    data = _small(size=3, d=4, m=6, p_out=0.5, seed=5)
    init = initial_weights(6, 4, "uniform", 11)
    for alpha in (0.0, 0.3):
        ref = _reference_rmsprop(data, alpha, init, n_iter=15, lr=0.01)
        got = fedrelax_linear(_problem(data), alpha, n_iter=15, lr=0.01, init=init).weights
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
        assert not torch.allclose(got, init)
    # the written-out RMSprop follows torch.optim.RMSprop's options too
    options = {"alpha": 0.9, "eps": 1e-6, "weight_decay": 0.1, "momentum": 0.5, "centered": True}
    ref = _reference_rmsprop(data, 0.3, init, n_iter=15, lr=0.01, options=options)
    got = fedrelax_linear(_problem(data), 0.3, n_iter=15, lr=0.01, init=init,
                          rmsprop_options=options).weights
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="unsupported RMSprop options"):
        fedrelax_linear(_problem(data), 0.3, n_iter=1, init=init, rmsprop_options={"nesterov": True})


def test_alpha_zero_is_independent_local_training():
    data = _small(p_out=0.6)
    init = initial_weights(8, 3, "uniform", 4)
    coupled = fedrelax_linear(_problem(data), 0.0, n_iter=40, init=init).weights
    empty = EmpiricalGraph(8, np.empty((0, 2), int), np.empty(0))
    alone = linear_problem(empty, data.features, data.labels, data.public)
    np.testing.assert_array_equal(coupled, fedrelax_linear(alone, 0.5, n_iter=40, init=init).weights)
    # the exact solver at alpha = 0 is the local least-squares fit in one step
    exact = fedrelax_linear(_problem(data), 0.0, n_iter=1, solver="exact", init=init).weights
    lstsq = np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(data.features, data.labels, strict=True)])
    np.testing.assert_allclose(exact, lstsq, atol=1e-10)


def test_algorithm_1_at_alpha_zero_is_independent_local_training():
    data = _small(d=3, m=12)
    factory = lambda i: DecisionTreeRegressor(max_depth=3, random_state=i)  # noqa: E731
    result = fedrelax(data.graph, data.features, data.labels, data.public, factory,
                      alpha=0.0, n_iter=3)
    for i in range(data.n_nodes):
        local = factory(i).fit(data.features[i], data.labels[i])
        np.testing.assert_array_equal(result.estimators[i].predict(data.val_features[i]),
                                      local.predict(data.val_features[i]))


def test_identical_data_and_large_alpha_make_the_models_agree():
    rng = np.random.default_rng(7)
    graph = stochastic_block_model([10], 0.4, 0.0, rng)
    assert graph.is_connected()
    public = rng.standard_normal((10, 30, 3))
    init = initial_weights(10, 3, "uniform", 1) * 10

    def spread(w):
        w = np.asarray(w)
        return np.max(np.linalg.norm(w - w.mean(axis=0), axis=1))

    # two points per node in d = 3: the local data cannot pin w down, only the coupling can
    x = np.broadcast_to(rng.standard_normal((2, 3)), (10, 2, 3)).copy()
    y = np.broadcast_to(rng.standard_normal(2), (10, 2)).copy()
    problem = linear_problem(graph, x, y, public)
    start = spread(init)
    assert start > 5.0
    local = spread(fedrelax_linear(problem, 0.0, n_iter=3000, init=init).weights)
    assert local > 1.0  # RMSprop alone keeps (part of) the spread of the initial models
    for solver, n_iter in (("exact", 300), ("rmsprop", 3000)):
        coupled = fedrelax_linear(problem, 50.0, n_iter=n_iter, solver=solver, init=init).weights
        assert spread(coupled) < 0.01 * start, (solver, spread(coupled))
    # with enough points the fixed point is the common least-squares fit, whatever alpha
    x = np.broadcast_to(rng.standard_normal((20, 3)), (10, 20, 3)).copy()
    y = np.broadcast_to(rng.standard_normal(20), (10, 20)).copy()
    problem = linear_problem(graph, x, y, public)
    lstsq = np.linalg.lstsq(x[0], y[0], rcond=None)[0]
    for alpha in (0.0, 50.0):
        np.testing.assert_allclose(fixed_point(problem, alpha), np.broadcast_to(lstsq, (10, 3)), atol=1e-9)


def test_exact_solver_and_rmsprop_reach_the_same_fixed_point():
    data = _small(d=3, m=10, sigma=0.3, seed=9)
    problem = _problem(data)
    alpha = 0.2
    target = fixed_point(problem, alpha)
    exact = fedrelax_linear(problem, alpha, n_iter=400, solver="exact", init="zeros").weights
    np.testing.assert_allclose(exact, target, atol=1e-9)
    rms = fedrelax_linear(problem, alpha, n_iter=6000, lr=0.001, seed=0).weights
    np.testing.assert_allclose(rms, target, atol=5e-3)
    # the fixed point zeroes every node's gradient of (16) with its neighbours at the fixed point
    np.testing.assert_allclose(node_gradients(problem, target, alpha), 0.0, atol=1e-9)


def test_algorithm_1_with_least_squares_is_the_closed_form_step_of_algorithm_2():
    data = _small(d=3, m=10, sigma=0.2, seed=4)
    est = LinearRegression(fit_intercept=False)
    alpha = 0.3
    one = fedrelax(data.graph, data.features, data.labels, data.public, est, alpha=alpha,
                   n_iter=1, weighting="objective")
    w_alg1 = np.stack([m.coef_ for m in one.estimators])
    w0 = np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(data.features, data.labels, strict=True)])
    w_alg2 = fedrelax_linear(_problem(data), alpha, n_iter=1, solver="exact", init=w0).weights
    np.testing.assert_allclose(w_alg1, w_alg2, atol=1e-8)


def test_a_network_mixing_tree_linear_and_knn_models_runs():
    data = _small(n_clusters=3, size=3, d=2, m=12, seed=6)
    kinds = [DecisionTreeRegressor(max_depth=3, random_state=0), LinearRegression(),
             KNeighborsRegressor(n_neighbors=3)]
    models = [kinds[i % 3] for i in range(9)]
    assert not accepts_sample_weight(models[2]) and accepts_sample_weight(models[0])
    history = []
    model = FedRelax(models, data.graph, alpha=0.1, n_iter=3, self_distillation=10, random_state=2,
                     callback=lambda k, est: history.append(k) or {"k": k})
    model.fit(data.features, data.labels, public=data.public)
    assert history == [0, 1, 2, 3] and [h["k"] for h in model.history_] == [0, 1, 2, 3]
    assert [type(e) for e in model.estimators_] == [type(m) for m in models]
    assert models[0] is not model.estimators_[0]  # templates are cloned, not fitted in place
    pred = model.predict(data.val_features)
    assert pred.shape == data.val_labels.shape and np.all(np.isfinite(pred))
    np.testing.assert_array_equal(model.predict_node(4, data.val_features[4]), pred[4])
    # resampling for the k-NN nodes is seeded: the same random_state gives the same models
    again = FedRelax(models, data.graph, alpha=0.1, n_iter=3, self_distillation=10, random_state=2)
    again.fit(data.features, data.labels, public=data.public)
    np.testing.assert_array_equal(again.predict(data.val_features), pred)


def test_coupling_helps_trees_on_clustered_data():
    """Sec. IV-A2 in miniature: pooling pseudo-labels of the cluster beats 10 local points."""
    data = clustered_data([15, 15], 0.9, 0.0, 2, 6, 50, 40, 0.0, np.random.default_rng(8))
    factory = lambda i: DecisionTreeRegressor(max_depth=3, random_state=i)  # noqa: E731
    errs = {}
    for alpha in (0.0, 0.05):
        res = fedrelax(data.graph, data.features, data.labels, data.public, factory, alpha=alpha,
                       n_iter=3, self_distillation=20, seed=np.random.default_rng(0))
        errs[alpha] = validation_mse(predict_nodes(res.estimators, data.val_features), data.val_labels)
    assert errs[0.05] < 0.8 * errs[0.0]


class _CheckedTree(DecisionTreeRegressor):
    """A tree whose fit and predict are not the library's own: FedRelax validates its inputs."""

    def fit(self, X, y, sample_weight=None):
        return super().fit(X, y, sample_weight=sample_weight)

    def predict(self, X):
        return super().predict(X)


def test_trees_skip_their_input_checks_and_fit_the_same_trees(monkeypatch):
    """The fast path (check_input=False on float32 inputs) gives the trees the checked path
    gives, split for split, on the augmented datasets and the self-distillation points."""
    data = clustered_data([8, 8], 0.9, 0.3, 3, 6, 20, 15, 0.1, np.random.default_rng(3))
    seen = []
    original = DecisionTreeRegressor.fit

    def spy(self, X, y, sample_weight=None, check_input=True):
        seen.append((X.dtype, check_input))
        return original(self, X, y, sample_weight=sample_weight, check_input=check_input)

    monkeypatch.setattr(DecisionTreeRegressor, "fit", spy)
    kw = dict(alpha=0.1, n_iter=3, self_distillation=7, public_subsample=5)
    fast = fedrelax(data.graph, data.features, data.labels, data.public,
                    lambda i: DecisionTreeRegressor(max_depth=4, random_state=i), seed=0, **kw)
    monkeypatch.setattr(DecisionTreeRegressor, "fit", original)
    assert seen and all(dtype == np.float32 and not check for dtype, check in seen)
    checked = fedrelax(data.graph, data.features, data.labels, data.public,
                       lambda i: _CheckedTree(max_depth=4, random_state=i), seed=0, **kw)
    for a, b in zip(fast.estimators, checked.estimators, strict=True):
        for attr in ("feature", "threshold", "value", "children_left", "n_node_samples"):
            np.testing.assert_array_equal(getattr(a.tree_, attr), getattr(b.tree_, attr))
    np.testing.assert_array_equal(predict_nodes(fast.estimators, data.val_features),
                                  predict_nodes(checked.estimators, data.val_features))


def test_threads_give_the_same_models_as_node_order(monkeypatch):
    """``n_jobs`` threads grow the trees of an iteration in parallel: the same trees split for
    split and the same predictions as one thread, also in a network mixing trees with
    k-NN nodes (resampled from the shared generator, in node order) and linear models; the
    workers see the caller's scikit-learn configuration; a bad ``n_jobs`` is named."""
    import sklearn

    data = _small(n_clusters=3, size=4, d=2, m=12, seed=4)
    kinds = [lambda i: DecisionTreeRegressor(max_depth=4, random_state=i), lambda i: LinearRegression(),
             lambda i: KNeighborsRegressor(n_neighbors=3), lambda i: DecisionTreeRegressor(max_depth=2, random_state=i)]
    kw = dict(alpha=0.1, n_iter=3, self_distillation=9, public_subsample=4, seed=5)
    seen = []
    original = DecisionTreeRegressor.fit

    def spy(self, *args, **kwargs):
        seen.append(sklearn.get_config()["assume_finite"])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(DecisionTreeRegressor, "fit", spy)
    for factory in (kinds[0], lambda i: kinds[i % 4](i)):
        one = fedrelax(data.graph, data.features, data.labels, data.public, factory, **kw)
        with sklearn.config_context(assume_finite=True):
            three = fedrelax(data.graph, data.features, data.labels, data.public, factory, n_jobs=3, **kw)
        assert seen and all(seen[len(seen) // 2:])  # the threaded run's fits saw the context
        seen.clear()
        for a, b in zip(one.estimators, three.estimators, strict=True):
            if isinstance(a, DecisionTreeRegressor):
                for attr in ("feature", "threshold", "value", "children_left"):
                    np.testing.assert_array_equal(getattr(a.tree_, attr), getattr(b.tree_, attr))
        np.testing.assert_array_equal(predict_nodes(one.estimators, data.val_features),
                                      predict_nodes(three.estimators, data.val_features))
    with pytest.raises(ValueError, match="n_jobs"):
        fedrelax(data.graph, data.features, data.labels, data.public, kinds[0], n_jobs=0, **kw)


def test_a_sampler_returning_nan_is_named_with_its_iteration():
    data = clustered_data([4, 4], 0.9, 0.3, 2, 6, 10, 5, 0.1, np.random.default_rng(3))
    with pytest.raises(ValueError, match="iteration 1: the distillation sampler"):
        fedrelax(data.graph, data.features, data.labels, data.public, DecisionTreeRegressor(max_depth=2),
                 alpha=0.1, n_iter=2, self_distillation=3, seed=0,
                 distillation_sampler=lambda rng, n, r, d: np.full((n, r, d), np.nan))


def test_public_subsample_keeps_the_objective_when_it_shares_everything():
    data = _small(d=3, m=10, seed=12)
    est = LinearRegression(fit_intercept=False)
    full = fedrelax(data.graph, data.features, data.labels, data.public, est, alpha=0.2, n_iter=2)
    every = fedrelax(data.graph, data.features, data.labels, data.public, est, alpha=0.2, n_iter=2,
                     public_subsample=data.public.shape[1], seed=np.random.default_rng(0))
    some = fedrelax(data.graph, data.features, data.labels, data.public, est, alpha=0.2, n_iter=2,
                    public_subsample=3, seed=np.random.default_rng(0))
    coef = lambda r: np.stack([m.coef_ for m in r.estimators])  # noqa: E731
    np.testing.assert_allclose(coef(every), coef(full), atol=1e-10)
    assert not np.allclose(coef(some), coef(full))


def test_bad_inputs_are_named():
    data = _small()
    with pytest.raises(ValueError, match="one estimator per node"):
        fedrelax(data.graph, data.features, data.labels, data.public, [LinearRegression()] * 3,
                 alpha=0.1, n_iter=1)
    with pytest.raises(TypeError, match="seed must be"):
        fedrelax(data.graph, data.features, data.labels, data.public, LinearRegression(),
                 alpha=0.1, n_iter=1, self_distillation=5, seed=0.5)
    with pytest.raises(ValueError, match="alpha"):
        fedrelax_linear(_problem(data), -1.0, n_iter=1, init="zeros")
    with pytest.raises(TypeError, match="seed must be"):
        fedrelax_linear(_problem(data), 0.1, n_iter=1, seed="0")


# ----------------------------------------------------------------------------- experiments


def test_baselines_tuning_run_scores_fedrelax_on_validation_points_and_never_reads_true_weights(
        test_config, monkeypatch):
    """A tuning run of Fig. 1c (the target's own tuning parameters: FedRelax only, one grid
    point's alpha, validation_fraction) records only FedRelax's ``validation_loss`` per
    recorded iteration; the value does not move when the true weights (what the figure
    plots against) are replaced by NaN, while the plotted path does read them."""
    import dataclasses

    import networkedfl.experiments.fedrelax.runs as fr
    from networkedfl.experiments.tuning import final_value, grid_points, tuning_params

    target = "fedrelax_fig01c_baselines"
    params = test_config["experiments"][target]
    point = len(grid_points(params, "all")) - 1
    run = tuning_params(params, "all", point)
    first = fr.run_baselines(run, "all", 0, 3, experiment_id=target)
    assert set(first["metric"]) == {"validation_loss"} and set(first["method"]) == {"fedrelax"}
    assert set(first["alpha"]) == {grid_points(params, "all")[point]["alpha"]}
    assert list(first["iteration"]) == list(range(0, params["n_iter"] + 1, params["record_every"]))
    assert np.isfinite(first["value"]).all() and first["value"].iloc[-1] < first["value"].iloc[0]
    assert final_value(first) == first["value"].iloc[-1]  # the protocol reads the last iteration

    original = fr.make_data
    monkeypatch.setattr(fr, "make_data", lambda *a, **k: dataclasses.replace(
        original(*a, **k), true_weights=original(*a, **k).true_weights * np.nan))
    again = fr.run_baselines(run, "all", 0, 3, experiment_id=target)
    np.testing.assert_array_equal(first["value"].to_numpy(), again["value"].to_numpy())
    plotted = fr.run_baselines({k: v for k, v in run.items() if k != "validation_fraction"}, "all", 0, 3,
                               experiment_id=target)
    assert set(plotted["metric"]) == {"weight_mse"} and plotted["value"].isna().all()


def test_baselines_predict_the_mean_reference_is_the_zero_model(test_config):
    """Fig. 1c's predict-the-mean reference: w = 0, whose MSE(w) (18) is the mean square of
    the true weights; recorded at the first and last iteration, and every method must end
    below it ([reference] claim)."""
    import networkedfl.experiments.fedrelax.runs as fr

    target = "fedrelax_fig01c_baselines"
    params = {**test_config["experiments"][target], "methods": ["mean", "local"]}
    params.pop("tuning", None)
    table = fr.run_baselines(params, "all", 0, 3, experiment_id=target)
    mean = table[table["method"] == "mean"]
    (d, sigma), = fr._points_of(params, "all")[:1]
    truth = fr.make_data(params, d, sigma, fr.rng_for(3, target, 0, fr._key(d, sigma))).true_weights
    np.testing.assert_allclose(mean["value"], np.mean(truth ** 2), rtol=1e-12)
    assert list(mean["iteration"]) == [0, params["n_iter"]]
    last = table["iteration"].max()
    final = table[table["iteration"] == last].groupby("method")["value"].mean()
    assert final["local"] < final["mean"]
