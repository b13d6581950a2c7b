"""The chapter's NPLM as a flat model: shapes, equivalence with torch layers, learning on a
tiny corpus, frozen embedding rows in every algorithm, masked aggregation, evaluation."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch

from networkedfl.algorithms import (
    assign_nearest,
    bigfl,
    cluster_means,
    dfl_gt,
    dfl_sgd,
    fedavg_steps,
    fesem,
)
from networkedfl.experiments.gfl.claims import review_nlp_claims
from networkedfl.experiments.gfl.reviews_nlp import _Evaluator
from networkedfl.graphs import ring
from networkedfl.nn import (
    ClientBatches,
    NextWordBatches,
    NPLMLayout,
    WordPairCounts,
    batch_gradients,
    batch_hessian_products,
    client_token_losses,
    linear_regression,
    next_word_cross_entropy,
    nplm,
)


def test_layout_flattening_and_frozen_rows_mask():
    lay = NPLMLayout(vocab_size=5, embed_dim=3, hidden_dim=4)
    assert lay.n_params == 5 * 3 + 3 * 4 + 4 + 4 * 5 + 5
    assert lay.hidden_layer == slice(15, 15 + 12 + 4)
    parts = {k: torch.arange(np.prod(s), dtype=torch.float64).reshape(s) + 100 * i + 1
             for i, (k, s) in enumerate(lay.shapes.items())}
    flat = lay.flatten(parts)
    for k, v in lay.unflatten(flat).items():
        assert torch.equal(v, parts[k])
    present = np.array([[1, 1, 0, 1, 0], [1, 0, 1, 1, 1]], dtype=bool)
    mask = lay.frozen_rows_mask(present)
    emb = mask[:, :15].reshape(2, 5, 3)
    np.testing.assert_array_equal(emb, np.repeat(present[:, :, None], 3, axis=2))
    assert np.all(mask[:, 15:] == 1)
    rows = lay.zero_absent_rows(flat, present)
    assert torch.equal(rows[:, :15].reshape(2, 5, 3) == 0, torch.as_tensor(~present)[:, :, None].expand(-1, -1, 3))
    assert torch.equal(rows[:, 15:], flat[15:].expand(2, -1))


def test_forward_equals_torch_layers_and_loss_is_token_cross_entropy():
    lay = NPLMLayout(7, 3, 5)
    model = nplm(lay)
    params = model.initial_params(torch.Generator().manual_seed(0), dtype=torch.float64)
    p = lay.unflatten(params)
    emb = torch.nn.Embedding(7, 3).double()
    hidden = torch.nn.Linear(3, 5).double()
    decoder = torch.nn.Linear(5, 7).double()
    with torch.no_grad():
        emb.weight.copy_(p["embedding"])
        hidden.weight.copy_(p["w1"].T)
        hidden.bias.copy_(p["b1"])
        decoder.weight.copy_(p["w2"].T)
        decoder.bias.copy_(p["b2"])
    ids = torch.tensor([[0, 3, 6, 2], [1, 1, 5, 4]])
    targets = torch.tensor([[3, 6, 2, 0], [1, 5, 4, 4]])
    expected = decoder(torch.tanh(hidden(emb(ids))))
    torch.testing.assert_close(model.forward(params, ids), expected)
    torch.testing.assert_close(model.forward(params, ids.double()), expected)  # float ids
    per_window = torch.nn.functional.cross_entropy(expected.transpose(1, 2), targets, reduction="none").mean(1)
    torch.testing.assert_close(model.sample_loss(expected, targets), per_window)
    assert model.initial_params(None, dtype=torch.float64).shape == (model.n_params,)  # seed=None: fresh entropy
    with pytest.raises(ValueError, match="needs a torch.Generator"):  # the protocol itself
        model.init(None, torch.float64, torch.device("cpu"))


def _cyclic_corpus(n_clients: int, vocab: int, length: int, windows: int, offsets) -> ClientBatches:
    """Client i reads the words 0..vocab-1 cyclically with step offsets[i]: the next word
    is a deterministic function of the current one (a perfect model has zero loss)."""
    streams = [np.arange(windows * length + 1) * offsets[i] % vocab for i in range(n_clients)]
    blocks = np.stack([np.stack([s[k * length: k * length + length + 1] for k in range(windows)])
                       for s in streams])
    return ClientBatches.from_arrays(blocks[:, :, :-1], blocks[:, :, 1:], dtype=torch.float64)


def test_loss_decreases_on_a_tiny_corpus():
    lay = NPLMLayout(6, 4, 8)
    model = nplm(lay)
    data = _cyclic_corpus(1, 6, 5, 8, [1])
    params = model.initial_params(torch.Generator().manual_seed(1), dtype=torch.float64)[None]
    first = float(client_token_losses(model, params, data.features, data.targets, data.sample_weights)[0])
    assert first == pytest.approx(math.log(6), abs=0.3)  # near uniform at the start
    result = fedavg_steps(model, data, n_rounds=40, local_steps=10, lr=0.5, batch_size=4, seed=0)
    last = float(client_token_losses(model, result.client_params, data.features, data.targets,
                                     data.sample_weights)[0])
    assert last < 0.25 * first


@pytest.fixture(scope="module")
def masked_problem():
    """Three clients over 6 words: client 0 never sees words 4, 5; client 2 never sees 0."""
    lay = NPLMLayout(6, 3, 4)
    data = _cyclic_corpus(3, 6, 4, 6, [1, 5, 1])
    present = np.ones((3, 6), dtype=bool)
    present[0, 4:] = False
    present[2, 0] = False
    # client 0 reads 0..3 only, client 2 everything but 0: rewrite their streams accordingly
    x, y = data.features.clone(), data.targets.clone()
    x[0], y[0] = x[0] % 4, (x[0] % 4 + 1) % 4
    x[2], y[2] = 1 + x[2] % 5, 1 + (x[2] + 1) % 5
    data = ClientBatches(x, y, data.sample_weights)
    for i in range(3):
        assert set(torch.unique(torch.cat([x[i].ravel(), y[i].ravel()])).tolist()) == set(np.flatnonzero(present[i]))
    model = nplm(lay)
    start = model.initial_params(torch.Generator().manual_seed(2), dtype=torch.float64)
    return lay, model, data, present, lay.zero_absent_rows(start, present)


@pytest.mark.parametrize("method", ["fedavg", "fedavg_plain", "dfl_sgd", "dfl_gt", "fesem", "bigfl"])
def test_frozen_rows_stay_zero_after_training(masked_problem, method):
    lay, model, data, present, init = masked_problem
    mask = torch.as_tensor(lay.frozen_rows_mask(present), dtype=torch.float64)
    kw = dict(n_rounds=3, local_steps=3, batch_size=3, mask=mask, init=init, seed=4)
    held = method != "fedavg_plain"
    if method.startswith("fedavg"):
        res = fedavg_steps(model, data, lr=0.3, mask_average=held, **kw)
    elif method.startswith("dfl"):
        res = (dfl_sgd if method == "dfl_sgd" else dfl_gt)(model, data, ring(3), lr=0.3,
                                                          mask_average=True, **kw)
    elif method == "fesem":
        res = fesem(model, data, n_clusters=2, lr=0.3, lam=0.1, mask_average=True, **kw)
    else:
        hidden = lay.hidden_layer
        proj = torch.randn(hidden.stop - hidden.start, 4, generator=torch.Generator().manual_seed(0),
                           dtype=torch.float64)
        res = bigfl(model, data, ring(3), lr=0.3, lr_upper=0.01, lam=0.1, kappa=0.01,
                    n_negatives=1, embedding=lambda th: th[:, hidden] @ proj, **kw)
    emb = res.client_params[:, lay.slices["embedding"]].reshape(3, 6, 3)
    absent = torch.as_tensor(~present)
    assert torch.all(emb[absent] == 0), method
    assert torch.all(emb[~absent].abs().sum(-1) > 0), method
    moved = (emb - init[:, lay.slices["embedding"]].reshape(3, 6, 3))[~absent]
    assert moved.abs().max() > 1e-4, method  # the trainable rows did train


def test_mask_average_of_fedavg_by_hand():
    """Two clients, one full-batch step per round: with mask_average the global value of a
    coordinate is the (weighted) mean over the clients that train it."""
    model = linear_regression(2)
    x = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]], dtype=torch.float64)
    y = torch.tensor([[2.0], [3.0]], dtype=torch.float64)
    data = ClientBatches(x, y, torch.ones(2, 1, dtype=torch.float64))
    mask = torch.tensor([[1.0, 1.0], [0.0, 1.0]], dtype=torch.float64)  # client 1 freezes w_0
    init = torch.tensor([[0.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    lr = 0.25
    res = fedavg_steps(model, data, n_rounds=1, local_steps=1, lr=lr, batch_size=None, mask=mask,
                       init=init, mask_average=True)
    # client 0: grad of (x.w - 2)^2 at 0 is (-4, 0) -> w = (1, 0); client 1: (0, -6) -> (0, 1.5)
    torch.testing.assert_close(res.global_params[0], torch.tensor([1.0, 0.75], dtype=torch.float64))
    torch.testing.assert_close(res.client_params[1], torch.tensor([0.0, 0.75], dtype=torch.float64))
    plain = fedavg_steps(model, data, n_rounds=1, local_steps=1, lr=lr, batch_size=None, mask=mask,
                         init=init)
    torch.testing.assert_close(plain.global_params[0], torch.tensor([0.5, 0.75], dtype=torch.float64))
    # DFL with W = 11^T/2 in adapt-then-combine order mixes the same way
    w = torch.full((2, 2), 0.5, dtype=torch.float64)
    dfl = dfl_sgd(model, data, w, n_rounds=1, local_steps=1, lr=lr, batch_size=None, mask=mask,
                  init=init, order="atc", mask_average=True)
    torch.testing.assert_close(dfl.client_params, res.client_params)


def test_masked_fesem_steps_by_hand():
    params = torch.tensor([[1.0, 0.0], [3.0, 5.0], [10.0, 10.0]])
    mask = torch.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    previous = torch.tensor([[7.0, 7.0], [0.0, 0.0]])
    means = cluster_means(params, torch.tensor([0, 0, 1]), previous, mask)
    torch.testing.assert_close(means, torch.tensor([[2.0, 5.0], [10.0, 10.0]]))
    centres = torch.tensor([[1.0, 9.0], [2.0, 0.0]])
    # row 0 only counts its first coordinate: nearest is centre 0 (distance 0, not 81)
    assert assign_nearest(params, centres, mask).tolist()[0] == 0
    assert assign_nearest(params, centres).tolist()[0] == 1


def test_evaluation_is_chunk_invariant_and_skips_padding():
    lay = NPLMLayout(6, 3, 4)
    model = nplm(lay)
    params = model.initial_params(torch.Generator().manual_seed(5), dtype=torch.float32).expand(2, -1).clone()
    rng = np.random.default_rng(0)
    test = [rng.integers(0, 6, (5, 4)), rng.integers(0, 6, (2, 4))]
    direct = []
    for i, windows in enumerate(test):
        logits = model.forward(params[i], torch.as_tensor(windows[:, :-1]))
        direct.append(float(torch.nn.functional.cross_entropy(
            logits.reshape(-1, 6), torch.as_tensor(windows[:, 1:]).reshape(-1))))
    for chunk in (1, 2, 16):
        got = _Evaluator(model, test, 6, torch.float32, "cpu", chunk=chunk)(params)
        np.testing.assert_allclose(got, direct, rtol=1e-5)
        padded = torch.zeros(2, 5, 4, dtype=torch.int64)
        weights = torch.zeros(2, 5)
        for i, windows in enumerate(test):
            padded[i, : len(windows)] = torch.as_tensor(windows)
            weights[i, : len(windows)] = 1
        again = client_token_losses(model, params, padded[:, :, :-1], padded[:, :, 1:], weights, chunk=chunk)
        np.testing.assert_allclose(again.numpy(), direct, rtol=1e-5)


def _random_windows(seed: int, n: int = 3, m: int = 6, length: int = 5, vocab: int = 9):
    rng = np.random.default_rng(seed)
    blocks = torch.as_tensor(rng.integers(0, vocab, (n, m, length + 1)))
    weights = torch.as_tensor(rng.integers(0, 3, (n, m)).astype(np.float64))  # 0: padding
    weights[0, 0] = 1.0
    return blocks[:, :, :-1], blocks[:, :, 1:], weights


def test_word_pair_counts_are_the_windows_bigram_counts():
    ids, targets, weights = _random_windows(0)
    counts = WordPairCounts.from_windows(ids, targets, weights, 9)
    dense = counts.distributions() * counts.row_weights[:, :, None]
    length = ids.shape[2]
    for i in range(ids.shape[0]):
        expected = np.zeros((9, 9))
        for k in range(ids.shape[1]):
            for a, b in zip(ids[i, k].tolist(), targets[i, k].tolist(), strict=True):
                expected[a, b] += float(weights[i, k]) / length
        words = np.flatnonzero(expected.sum(axis=1) > 0)
        n_rows = len(words)
        assert counts.rows[i, :n_rows].tolist() == words.tolist()  # distinct words, ascending
        np.testing.assert_allclose(dense[i, :n_rows].numpy(), expected[words])
        assert float(counts.row_weights[i, n_rows:].abs().sum()) == 0  # padding rows
        np.testing.assert_allclose(float(counts.row_weights[i].sum()), float(weights[i].sum()))
    with pytest.raises(ValueError, match=r"word ids must lie in \[0, 9\)"):
        WordPairCounts.from_windows(ids + 5, targets, weights, 9)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_distributions_are_the_dense_counts_divided_by_the_row_weights_bit_for_bit(dtype):
    """Each pair's quotient is placed directly (one (n, U, V) pass less): the very floats of
    summing the pairs into a dense array and dividing it by the row weights."""
    ids, targets, weights = _random_windows(4, n=4, m=9, length=7, vocab=11)
    counts = WordPairCounts.from_windows(ids, targets, (weights / 3).to(dtype), 11)
    n, width = counts.rows.shape
    dense = torch.zeros((n * width * 11,), dtype=dtype)
    dense.index_add_(0, (counts.client * width + counts.row) * 11 + counts.target, counts.weight)
    norm = torch.where(counts.row_weights > 0, counts.row_weights, torch.ones_like(counts.row_weights))
    expected = dense.reshape(n, width, 11) / norm[:, :, None]
    got = counts.distributions()
    assert got.dtype == dtype and torch.equal(got, expected)
    assert float(got[counts.row_weights == 0].abs().sum()) == 0.0  # padding rows stay 0


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_collapsed_loss_and_gradient_equal_the_windows(dtype):
    """The NPLM's loss on (distinct word, next-word distribution) rows is its loss on the
    windows, and so is its gradient (every algorithm sees the same updates)."""
    model = nplm(NPLMLayout(9, 3, 4))
    params = model.initial_params(torch.Generator().manual_seed(2), dtype=dtype)
    ids, targets, weights = _random_windows(1)
    counts = WordPairCounts.from_windows(ids, targets, weights.to(dtype), 9)
    tol = {"rtol": 1e-12, "atol": 1e-12} if dtype == torch.float64 else {"rtol": 1e-5, "atol": 1e-6}
    for i in range(ids.shape[0]):
        def windows_loss(p, i=i):
            return model.loss(p, ids[i], targets[i], weights[i].to(dtype))

        def rows_loss(p, i=i):
            return model.loss(p, counts.rows[i], counts.distributions()[i], counts.row_weights[i])

        torch.testing.assert_close(rows_loss(params), windows_loss(params), **tol)
        torch.testing.assert_close(torch.func.grad(rows_loss)(params), torch.func.grad(windows_loss)(params), **tol)
    direct = torch.stack([model.loss(params, ids[i], targets[i], weights[i].to(dtype)) for i in range(3)])
    for chunk in (1, 2, 256):
        torch.testing.assert_close(counts.losses(model, params.expand(3, -1), chunk=chunk).to(dtype), direct, **tol)
    # next_word_cross_entropy: integer targets are windows, distributions are rows
    z = model.forward(params, ids[0])
    torch.testing.assert_close(next_word_cross_entropy(z, targets[0]), model.sample_loss(z, targets[0]))


def _generic(model):
    """The same model without its closed forms: torch.func differentiates it."""
    return dataclasses.replace(model, batch_gradient=None, batch_hessian=None)


def test_closed_form_gradients_and_hessian_products_equal_autograd():
    """The NPLM's closed-form batch gradients and Hessian-vector products on next-word
    distributions equal vmap(grad) and its vector-Jacobian product (float64, padding rows
    and a client whose batch is all padding included); the products also equal central
    differences of the gradients."""
    model = nplm(NPLMLayout(9, 3, 4))
    ids, targets, weights = _random_windows(4, n=4)
    weights[3] = 0.0  # a client with no real window: loss 0, gradient 0
    batch = NextWordBatches(ClientBatches(ids, targets, weights), 9).sample(None, torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(5)
    theta = 0.5 * torch.randn(4, model.n_params, generator=gen, dtype=torch.float64)
    vector = torch.randn(theta.shape, generator=gen, dtype=torch.float64)
    closed = model.batch_gradient(theta, *batch)
    reference = torch.func.vmap(torch.func.grad(model.loss))(theta, *batch)
    torch.testing.assert_close(closed, reference, rtol=1e-12, atol=1e-14)
    assert float(closed[3].abs().max()) == 0.0
    torch.testing.assert_close(batch_gradients(model)(theta, *batch), reference, rtol=1e-12, atol=1e-14)
    products = batch_hessian_products(model, theta, *batch)
    generic = batch_hessian_products(_generic(model), theta, *batch)
    torch.testing.assert_close(products(vector), generic(vector), rtol=1e-10, atol=1e-13)
    h = 1e-6
    central = (model.batch_gradient(theta + h * vector, *batch)
               - model.batch_gradient(theta - h * vector, *batch)) / (2 * h)
    torch.testing.assert_close(products(vector), central, rtol=1e-6, atol=1e-8)
    # a Hessian is symmetric: <a, H b> = <H a, b>
    other = torch.randn(theta.shape, generator=gen, dtype=torch.float64)
    np.testing.assert_allclose(float((other * products(vector)).sum()), float((products(other) * vector).sum()),
                               rtol=1e-10)


def test_closed_forms_step_aside_where_they_do_not_apply():
    """Windows (integer targets) and parameters tracked by autograd take the generic path."""
    model = nplm(NPLMLayout(9, 3, 4))
    ids, targets, weights = _random_windows(6)
    theta = model.initial_params(torch.Generator().manual_seed(0), dtype=torch.float64).expand(3, -1).clone()
    assert model.batch_gradient(theta, ids, targets, weights) is None
    assert model.batch_hessian(theta, ids, targets, weights) is None
    torch.testing.assert_close(batch_gradients(model)(theta, ids, targets, weights),
                               torch.func.vmap(torch.func.grad(model.loss))(theta, ids, targets, weights))
    rows = NextWordBatches(ClientBatches(ids, targets, weights), 9).sample(None, torch.Generator().manual_seed(0))
    assert model.batch_gradient(theta.requires_grad_(), *rows) is None
    # differentiating through batch_gradients (BiG-FL's exact inverse does) still works
    jac = torch.func.jacrev(lambda th: batch_gradients(model)(th, *rows)[0].sum())(theta.detach())
    assert jac.shape == theta.shape and bool(torch.isfinite(jac).all())


def test_generic_hessian_products_of_least_squares_are_the_gram_matrix():
    """Without a closed form, batch_hessian_products is the exact Hessian: for the weighted
    mean squared error of a linear model, 2 X^T W X / sum(w) times v."""
    model = linear_regression(3, bias=False)
    rng = np.random.default_rng(0)
    x = torch.as_tensor(rng.standard_normal((2, 5, 3)))
    y = torch.as_tensor(rng.standard_normal((2, 5)))
    w = torch.as_tensor(rng.integers(0, 3, (2, 5)).astype(float))
    w[:, 0] = 1.0
    theta = torch.as_tensor(rng.standard_normal((2, 3)))
    vector = torch.as_tensor(rng.standard_normal((2, 3)))
    gram = torch.einsum("nm,nmi,nmj->nij", w, x, x) * 2 / w.sum(dim=1)[:, None, None]
    torch.testing.assert_close(batch_hessian_products(model, theta, x, y, w)(vector),
                               torch.einsum("nij,nj->ni", gram, vector))


def test_next_word_batches_draw_the_windows_of_the_wrapped_source():
    ids, targets, weights = _random_windows(3, m=8)
    windows = ClientBatches(ids, targets, weights)
    source = NextWordBatches(windows, 9)
    assert source.n_nodes == 3
    rows, dist, row_weights = source.sample(3, torch.Generator().manual_seed(7))
    x, y, w = windows.sample(3, torch.Generator().manual_seed(7))
    expected = WordPairCounts.from_windows(x, y, w, 9)
    assert torch.equal(rows, expected.rows)
    torch.testing.assert_close(dist, expected.distributions())
    torch.testing.assert_close(row_weights, expected.row_weights)
    # and FedAvg from either source takes the same steps
    model = nplm(NPLMLayout(9, 3, 4))
    init = model.initial_params(torch.Generator().manual_seed(0), dtype=torch.float64)
    runs = [fedavg_steps(model, data, n_rounds=2, local_steps=2, lr=0.5, batch_size=3, init=init,
                         seed=torch.Generator().manual_seed(1)) for data in (windows, source)]
    torch.testing.assert_close(runs[0].client_params, runs[1].client_params)


def test_nlp_claims_read_the_table():
    rows = []
    finals = {"BiG-FL": 5.0, "FeSEM": 5.2, "FedAvg": 5.4, "DFL-SGD": 5.5, "DFL-GT": 5.6}
    for method, final in finals.items():
        for seed in (0, 1):
            rows += [{"method": method, "round": 0, "metric": "test_loss", "value": 6.9, "seed": seed},
                     {"method": method, "round": 5, "metric": "test_loss", "value": final, "seed": seed}]
    table = pd.DataFrame(rows)
    assert all(c.passed for c in review_nlp_claims(table, {}))
    worse = table.copy()
    worse.loc[(worse["method"] == "BiG-FL") & (worse["round"] == 5), "value"] = 7.0
    verdict = {c.claim: c.passed for c in review_nlp_claims(worse, {})}
    assert not verdict["every method ends below its round-0 test loss"]
    assert not verdict["BiG-FL ends lowest"]
    assert verdict["FeSEM ends below FedAvg and DFL"]
