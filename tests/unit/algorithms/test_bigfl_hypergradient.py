"""BiG-FL's hyper-gradient (10.20) against the upper-level objective (10.12a)/(10.14).

The reference is ``l(phi) = f(phi, theta*(phi))``: the UL loss (10.14) evaluated THROUGH the
lower-level Nash equilibrium (10.16), ``theta*(phi)`` solved to machine precision by Newton
steps on the stacked LL gradients.  The instance is tiny (5 clients on a ring, the Fig. 10.3
model family: a sigmoid MLP without biases, ``P = 6``), in float64.  All non-neighbours are
negatives (``n_negatives >= n``), so the negative term is the exact expectation over
``P_i`` and ``l`` is deterministic.
"""

import dataclasses
import functools
import itertools

import numpy as np
import pytest
import torch

from networkedfl.algorithms import (
    ColumnProjection,
    Embedding,
    all_negatives,
    bigfl,
    hypergradient,
    lower_gradients,
    negative_samples,
    normalized_adjacency,
    upper_loss,
)
from networkedfl.experiments.gfl.synthetic import mlp
from networkedfl.graphs import ring
from networkedfl.nn import ClientBatches, NextWordBatches, NPLMLayout, nplm

DT = torch.float64
N, M = 5, 6                      # clients, samples per client
LAM, KAPPA, LAM_UPPER = 0.5, 0.1, 0.1


class Problem:
    """A tiny BiG-FL instance with its LL equilibrium map ``theta*(phi)`` and ``l(phi)``."""

    def __init__(self, projection: bool) -> None:
        self.model = mlp([2, 2, 1], activation="sigmoid", bias=False, loss="half_squared_norm")
        p = self.model.n_params
        rng = np.random.default_rng(0)
        x = rng.uniform(-2, 2, (N, M, 2))
        y = rng.standard_normal((N, M))
        self.data = ClientBatches.from_arrays(x, y, dtype=DT)
        self.batch = (self.data.features, self.data.targets, self.data.sample_weights)
        self.graph = ring(N)
        self.prop = normalized_adjacency(self.graph, dtype=torch.float64)
        self.neighbours = torch.as_tensor(self.graph.adjacency.toarray() > 0).to(DT)
        self.negatives = negative_samples(self.neighbours, N, torch.Generator().manual_seed(0))
        # identity (d = P) or a fixed (P, 4) projection, the Fig. 10.4 kind of embedding
        matrix = (0.5 * torch.randn(p, 4, generator=torch.Generator().manual_seed(1), dtype=DT)
                  if projection else None)
        self.emb = Embedding(matrix, p, DT, torch.device("cpu"))
        self.p, self.d = p, self.emb.dim
        self.kw = dict(lam=LAM, kappa=KAPPA, lam_upper=LAM_UPPER, embedding=self.emb)
        gen = torch.Generator().manual_seed(2)
        self.phi0 = torch.eye(self.d, dtype=DT) + 0.2 * torch.randn(self.d, self.d, generator=gen, dtype=DT)
        self.theta0 = self.solve(self.phi0, 0.5 * torch.randn(N, p, generator=gen, dtype=DT), warm=True)

    def game(self, theta, phi):
        """The stacked LL gradients F(theta, phi) of (10.17); the equilibrium is F = 0."""
        return lower_gradients(self.model, theta, phi, self.prop, self.batch, lam=LAM, kappa=KAPPA,
                               embedding=self.emb)

    def solve(self, phi, start=None, warm=False):
        """theta*(phi) (10.16) from ``start`` (default theta*(phi0)): gradient play to get
        close (``warm``), chord steps with the Jacobian at (theta*(phi0), phi0) (enough for
        the finite differences' small moves of phi), then Newton steps if still needed."""
        theta = self.theta0 if start is None else start
        if warm:
            for _ in range(1000):
                theta = theta - 0.4 * self.game(theta, phi)
        size = N * self.p

        def residual(th):
            return float(self.game(th, phi).abs().max())

        if not warm:
            for _ in range(6):
                step = torch.linalg.lu_solve(*self.lu, self.game(theta, phi).reshape(-1, 1))
                theta = theta - step.reshape(N, self.p)
        for _ in range(8):
            if residual(theta) < 1e-14:
                break
            jac = torch.func.jacrev(lambda th: self.game(th, phi))(theta).reshape(size, size)
            theta = theta - torch.linalg.solve(jac, self.game(theta, phi).reshape(-1)).reshape(N, self.p)
        assert residual(theta) < 1e-12, f"LL equilibrium not reached: max |F| = {residual(theta):.3g}"
        if warm:  # a strongly monotone game: the equilibrium is isolated, theta*(phi) smooth
            jac = torch.func.jacrev(lambda th: self.game(th, phi))(theta).reshape(size, size)
            assert float(torch.linalg.eigvals(jac).real.min()) > 0
            self.lu = torch.linalg.lu_factor(jac)
        return theta

    def ell(self, phi):
        """The UL objective (10.12a): f(phi, theta*(phi)) with f the UL loss (10.14)."""
        return float(upper_loss(phi, self.emb(self.solve(phi)), self.prop, self.neighbours,
                                *self.negatives, LAM_UPPER))

    def finite_differences(self, phi, h=1e-6):
        """Central differences of l, entry by entry of phi."""
        fd = torch.zeros(self.d, self.d, dtype=DT)
        for a in range(self.d):
            for b in range(self.d):
                e = torch.zeros(self.d, self.d, dtype=DT)
                e[a, b] = h
                fd[a, b] = (self.ell(phi + e) - self.ell(phi - e)) / (2 * h)
        return fd

    def hyper(self, theta, phi, **options):
        return hypergradient(self.model, theta, phi, self.prop, self.neighbours, self.negatives,
                             self.batch, **self.kw, **options)


@functools.cache
def make_problem(projection: bool) -> Problem:
    return Problem(projection)


@pytest.fixture(params=[False, True], ids=["identity-embedding", "projection-embedding"])
def problem(request):
    return make_problem(request.param)


def test_exact_and_neumann_hypergradients_match_finite_differences_of_the_ul_objective(problem):
    """d l / d phi by central differences through theta*(phi) = the code's (10.20)."""
    fd = problem.finite_differences(problem.phi0)
    exact, loss = problem.hyper(problem.theta0, problem.phi0, inverse="exact")
    assert float(loss) == pytest.approx(problem.ell(problem.phi0), rel=1e-13)
    torch.testing.assert_close(exact, fd, rtol=1e-6, atol=1e-8)
    # the truncated Neumann series of the module docstring, with enough terms to converge
    jac = torch.func.jacrev(lambda th: problem.game(th, problem.phi0))(problem.theta0)
    eig = torch.linalg.eigvals(jac.reshape(N * problem.p, N * problem.p)).real
    eta = 1.0 / float(eig.max())                       # eta * eigenvalues in (0, 1]
    terms = int(np.ceil(np.log(1e-9) / np.log(1.0 - eta * float(eig.min()))))
    neumann, _ = problem.hyper(problem.theta0, problem.phi0, neumann_terms=terms, neumann_scale=eta)
    torch.testing.assert_close(neumann, fd, rtol=1e-4, atol=1e-6)
    # the implicit term is not negligible here: the partial gradient alone is far from d l / d phi
    partial, _ = problem.hyper(problem.theta0, problem.phi0, neumann_terms=1, neumann_scale=0.0)
    assert float((partial - fd).norm()) > 0.05 * float(fd.norm())


@pytest.mark.parametrize("inverse", ["exact", "neumann"])
def test_hypergradient_matches_directional_finite_differences_of_the_ul_objective(problem, inverse):
    """<(10.20), V> = d/ds l(phi0 + s V) at s = 0 (central differences through theta*) along
    random directions V, for the dense inverse and for a converged Neumann series."""
    if inverse == "exact":
        grad, _ = problem.hyper(problem.theta0, problem.phi0, inverse="exact")
    else:
        jac = torch.func.jacrev(lambda th: problem.game(th, problem.phi0))(problem.theta0)
        eig = torch.linalg.eigvals(jac.reshape(N * problem.p, N * problem.p)).real
        eta = 1.0 / float(eig.max())
        terms = int(np.ceil(np.log(1e-10) / np.log(1.0 - eta * float(eig.min()))))
        grad, _ = problem.hyper(problem.theta0, problem.phi0, neumann_terms=terms, neumann_scale=eta)
    gen = torch.Generator().manual_seed(7)
    h = 1e-5
    for _ in range(3):
        v = torch.randn(problem.d, problem.d, generator=gen, dtype=DT)
        v /= v.norm()
        fd = (problem.ell(problem.phi0 + h * v) - problem.ell(problem.phi0 - h * v)) / (2 * h)
        assert float((grad * v).sum()) == pytest.approx(fd, rel=1e-5, abs=1e-9)


def test_one_upper_level_step_decreases_the_ul_objective(problem):
    """phi - alpha * (10.20) at the LL equilibrium lowers l(phi) by ~ alpha ||grad l||^2."""
    grad, _ = problem.hyper(problem.theta0, problem.phi0, inverse="exact")
    before = problem.ell(problem.phi0)
    for alpha in (1e-2, 1e-3):
        after = problem.ell(problem.phi0 - alpha * grad)
        predicted = alpha * float((grad ** 2).sum())
        assert after < before
        assert before - after == pytest.approx(predicted, rel=0.02)


@pytest.mark.parametrize("options", [{"inverse": "exact"}, {"neumann_terms": 400, "neumann_scale": 0.5}],
                         ids=["exact", "neumann"])
def test_bigfl_round_from_the_equilibrium_descends_the_ul_objective(options):
    """Algorithm 4, one round started at theta*(I): the LL steps keep the equilibrium (F = 0),
    the UL step is phi^1 = I - alpha (10.20); l(phi^1) < l(I)."""
    prob = make_problem(False)
    eye = torch.eye(prob.d, dtype=DT)
    start = prob.solve(eye, prob.theta0)
    before = prob.ell(eye)
    grad, _ = prob.hyper(start, eye, inverse="exact")
    alpha = 1e-2
    res = bigfl(prob.model, prob.data, prob.graph, n_rounds=1, local_steps=2, lr=0.1,
                lr_upper=alpha, batch_size=None, lam=LAM, kappa=KAPPA, lam_upper=LAM_UPPER,
                n_negatives=N, init=start, seed=0, **options)
    torch.testing.assert_close(res.client_params, start, rtol=0, atol=1e-12)
    torch.testing.assert_close(res.phi, eye - alpha * grad, rtol=1e-4, atol=1e-8)
    assert prob.ell(res.phi) < before


def test_recorded_upper_loss_is_the_ul_loss_at_the_lower_level_iterate():
    """History ``upper_loss`` = f(phi^t, theta^{t+1}) (10.14) at the round's LL models, not
    l(phi^t) = f(phi^t, theta*(phi^t)): from a common start every H_i is parallel (positive
    term 0, negative term 1, f = 1), and f then moves with the LL models even when phi is
    frozen (alpha ~ 0), while l(phi) stays put."""
    prob = make_problem(False)
    init = prob.model.initial_params(torch.Generator().manual_seed(3), dtype=DT)
    res = bigfl(prob.model, prob.data, prob.graph, n_rounds=40, local_steps=5, lr=0.1,
                lr_upper=1e-12, batch_size=None, lam=LAM, kappa=KAPPA, lam_upper=LAM_UPPER,
                n_negatives=N, init=init, seed=0)
    recorded = np.array([row["upper_loss"] for row in res.history])
    eye = torch.eye(prob.d, dtype=DT)
    at_start = float(upper_loss(eye, init.expand(N, -1), prob.prop, prob.neighbours, *prob.negatives, LAM_UPPER))
    assert at_start == pytest.approx(1.0, abs=1e-12)
    at_end = float(upper_loss(res.phi, res.client_params, prob.prop, prob.neighbours, *prob.negatives, LAM_UPPER))
    assert recorded[-1] == pytest.approx(at_end, abs=1e-9)   # phi^39 = phi^40 up to 1e-12 steps
    assert float(np.ptp(recorded)) > 1e-2                     # it moves with theta^t ...
    assert float(torch.linalg.norm(res.phi - eye)) < 1e-9     # ... while phi (and l(phi)) stays


def test_all_negatives_give_the_expectation_of_the_sampled_ul_loss():
    """upper_loss with :func:`all_negatives` = the mean of upper_loss over every draw of
    ``negative_samples`` (uniform k-subsets of the non-neighbours, independent per node)."""
    n, k = 6, 2
    graph = ring(n)
    prop = normalized_adjacency(graph, dtype=torch.float64)
    neighbours = torch.as_tensor(graph.adjacency.toarray() > 0).to(DT)
    gen = torch.Generator().manual_seed(4)
    u = torch.randn(n, 3, generator=gen, dtype=DT)
    phi = torch.eye(3, dtype=DT) + 0.3 * torch.randn(3, 3, generator=gen, dtype=DT)
    idx, w = all_negatives(neighbours)
    assert torch.equal(w, 1.0 - neighbours - torch.eye(n, dtype=DT))
    subsets = [list(itertools.combinations(np.flatnonzero(w[i].numpy()), k)) for i in range(n)]
    draws = [upper_loss(phi, u, prop, neighbours, torch.tensor(choice), torch.ones(n, k, dtype=DT), 0.3)
             for choice in itertools.product(*subsets)]
    expected = float(torch.stack(draws).mean())
    assert float(upper_loss(phi, u, prop, neighbours, idx, w, 0.3)) == pytest.approx(expected, rel=1e-13)
    assert float(torch.stack(draws).std()) > 1e-3          # the draws differ: sampling noise


def test_bigfl_history_diagnostics_isolate_the_upper_level_step():
    """``upper_step_decrease`` = f(phi^t, theta^{t+1}) - f(phi^{t+1}, theta^{t+1}) with the
    round's negatives: with the partial gradient as (10.20) (``neumann_scale=0``) it is
    alpha ||grad||^2 to first order, positive every round; ``upper_loss_full`` and
    ``upper_loss_identity`` are (10.14) at phi^{t+1} and at I with every non-neighbour a
    negative."""
    prob = make_problem(False)
    init = prob.model.initial_params(torch.Generator().manual_seed(3), dtype=DT)
    alpha = 1e-3
    res = bigfl(prob.model, prob.data, prob.graph, n_rounds=6, local_steps=3, lr=0.1,
                lr_upper=alpha, batch_size=4, lam=LAM, kappa=KAPPA, lam_upper=LAM_UPPER,
                n_negatives=1, neumann_scale=0.0, init=init, seed=0)
    h = {key: np.array([row[key] for row in res.history])
         for key in ("upper_loss", "upper_step_decrease", "upper_loss_full", "upper_loss_identity",
                     "hypergradient_norm", "phi_distance")}
    assert h["phi_distance"][0] == pytest.approx(alpha * h["hypergradient_norm"][0], rel=1e-12)
    assert np.all(h["upper_step_decrease"] > 0)
    np.testing.assert_allclose(h["upper_step_decrease"], alpha * h["hypergradient_norm"] ** 2, rtol=2e-2)
    everything = all_negatives(prob.neighbours)
    last = res.client_params
    assert h["upper_loss_full"][-1] == pytest.approx(
        float(upper_loss(res.phi, last, prob.prop, prob.neighbours, *everything, LAM_UPPER)), rel=1e-13)
    eye = torch.eye(prob.d, dtype=DT)
    assert h["upper_loss_identity"][-1] == pytest.approx(
        float(upper_loss(eye, last, prob.prop, prob.neighbours, *everything, LAM_UPPER)), rel=1e-13)
    # one sampled non-neighbour of two: the recorded loss carries sampling noise the full one has not
    assert not np.allclose(h["upper_loss"], h["upper_loss_full"], rtol=0, atol=1e-6)
    # without the diagnostics (tuning runs): the same run, only those three entries missing
    plain = bigfl(prob.model, prob.data, prob.graph, n_rounds=6, local_steps=3, lr=0.1,
                  lr_upper=alpha, batch_size=4, lam=LAM, kappa=KAPPA, lam_upper=LAM_UPPER,
                  n_negatives=1, neumann_scale=0.0, init=init, seed=0, diagnostics=False)
    assert torch.equal(plain.client_params, res.client_params) and torch.equal(plain.phi, res.phi)
    checks = {"upper_step_decrease", "upper_loss_full", "upper_loss_identity"}
    for with_, without in zip(res.history, plain.history, strict=True):
        assert not checks & set(without) and {k: v for k, v in with_.items() if k not in checks} == without


def test_column_projection_is_the_zero_padded_matrix():
    """``ColumnProjection(columns, M)`` is the ``(P, d)`` matrix that is ``M`` on those rows
    and 0 elsewhere: the same embeddings, transpose and in-place transpose, and the same
    LL gradients and hyper-gradient; malformed blocks are errors naming the problem."""
    prob = make_problem(False)
    p = prob.model.n_params
    block = slice(1, 5)
    m = torch.randn(4, 3, generator=torch.Generator().manual_seed(7), dtype=DT)
    full = torch.zeros(p, 3, dtype=DT)
    full[block] = m
    cpu = torch.device("cpu")
    column, dense = Embedding(ColumnProjection(block, m), p, DT, cpu), Embedding(full, p, DT, cpu)
    theta = torch.randn(N, p, generator=torch.Generator().manual_seed(8), dtype=DT)
    grad_u = torch.randn(N, 3, generator=torch.Generator().manual_seed(9), dtype=DT)
    torch.testing.assert_close(column(theta), dense(theta), rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(column.transpose(grad_u, theta), dense.transpose(grad_u, theta), rtol=1e-14, atol=1e-14)
    out = theta.clone()
    torch.testing.assert_close(column.add_transpose_(out, grad_u, theta), theta + dense.transpose(grad_u, theta))
    phi = torch.eye(3, dtype=DT) + 0.1 * torch.randn(3, 3, generator=torch.Generator().manual_seed(10), dtype=DT)
    kw = dict(lam=LAM, kappa=KAPPA)
    torch.testing.assert_close(
        lower_gradients(prob.model, theta, phi, prob.prop, prob.batch, embedding=column, **kw),
        lower_gradients(prob.model, theta, phi, prob.prop, prob.batch, embedding=dense, **kw))
    hyper = [hypergradient(prob.model, theta, phi, prob.prop, prob.neighbours, prob.negatives, prob.batch,
                           lam_upper=LAM_UPPER, embedding=emb, neumann_terms=4, neumann_scale=0.1, **kw)[0]
             for emb in (column, dense)]
    torch.testing.assert_close(hyper[0], hyper[1], rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match=r"contiguous slice"):
        Embedding(ColumnProjection(slice(0, 6, 2), m[:3]), p, DT, cpu)
    with pytest.raises(ValueError, match=r"must be \(4, d\) for columns 1:5"):
        Embedding(ColumnProjection(block, m[:3]), p, DT, cpu)


def test_column_projection_transposes_with_its_contiguous_copy_give_the_transposed_views_numbers():
    """E^T reads a contiguous copy of M^T (faster at Fig. 10.4's (20,200 x 512) projection of
    the hidden layer); its products are those of the transposed view of M, bit for bit, so
    the tables do not change (float32 as the target, 16 clients)."""
    gen = torch.Generator().manual_seed(3)
    rows, dim, p = 20_200, 512, 20_300
    m = torch.randn(rows, dim, generator=gen) / dim ** 0.5
    emb = Embedding(ColumnProjection(slice(50, 50 + rows), m), p, torch.float32, torch.device("cpu"))
    theta = torch.randn(16, p, generator=gen)
    grad_u = torch.randn(16, dim, generator=gen)
    view = grad_u @ m.T
    assert torch.equal(emb.transpose(grad_u, theta)[:, 50:50 + rows], view)
    assert torch.equal(emb.add_transpose_(theta.clone(), grad_u, theta)[:, 50:50 + rows], theta[:, 50:50 + rows] + view)


def test_nplm_hypergradient_with_closed_forms_equals_autograd():
    """On the NPLM, the hyper-gradient through the model's closed-form Hessian-vector
    products equals the one through torch.func (the model without its closed forms), with
    a masked embedding and a column projection of the hidden layer (Fig. 10.4's set-up)."""
    layout = NPLMLayout(9, 3, 4)
    model = nplm(layout)
    generic = dataclasses.replace(model, batch_gradient=None, batch_hessian=None)
    rng = np.random.default_rng(3)
    blocks = torch.as_tensor(rng.integers(0, 9, (N, 4, 6)))
    weights = torch.ones(N, 4, dtype=DT)
    source = NextWordBatches(ClientBatches(blocks[:, :, :-1], blocks[:, :, 1:], weights), 9)
    batch = source.sample(None, torch.Generator().manual_seed(0))
    present = rng.random((N, 9)) < 0.7
    mask = torch.as_tensor(layout.frozen_rows_mask(present)).to(DT)
    theta = layout.zero_absent_rows(model.initial_params(torch.Generator().manual_seed(1), dtype=torch.float64), present)
    graph = ring(N)
    prop = normalized_adjacency(graph, dtype=torch.float64)
    neighbours = torch.as_tensor(graph.adjacency.toarray() > 0).to(DT)
    negatives = negative_samples(neighbours, 2, torch.Generator().manual_seed(2))
    hidden = layout.hidden_layer
    projection = torch.randn(hidden.stop - hidden.start, 5, generator=torch.Generator().manual_seed(3), dtype=DT)
    emb = Embedding(ColumnProjection(hidden, projection), layout.n_params, DT, torch.device("cpu"))
    phi = torch.eye(5, dtype=DT)
    results = [hypergradient(m, theta, phi, prop, neighbours, negatives, batch, lam=0.1, kappa=0.01,
                             lam_upper=0.1, embedding=emb, neumann_terms=5, neumann_scale=0.5, mask=mask)
               for m in (model, generic)]
    torch.testing.assert_close(results[0][0], results[1][0], rtol=1e-9, atol=1e-12)
    assert float(results[0][0].abs().max()) > 0


@pytest.mark.parametrize("kind", ["identity", "matrix", "columns", "callable"])
def test_graph_term_adjoints_equal_the_vjp_of_the_graph_term(kind):
    """The closed-form transposed Jacobians of the LL graph term (in ``Theta`` and in ``phi``)
    that the hyper-gradient applies equal ``torch.func.vjp`` of the term, for every kind of
    embedding and a propagation matrix that is not symmetric (so every ``L^T`` is tested)."""
    from torch.func import vjp

    from networkedfl.algorithms._bigfl import _graph_term, _graph_term_adjoints

    g = torch.Generator().manual_seed(11)
    n, p, cpu = 5, 7, torch.device("cpu")
    m = torch.randn(p, 3, generator=g, dtype=DT)
    spec = {"identity": None, "matrix": m, "columns": ColumnProjection(slice(2, 6), m[:4]),
            "callable": lambda th: th[:, ::2] * 2.0}[kind]
    emb = Embedding(spec, p, DT, cpu)
    theta, v, w = (torch.randn(n, p, generator=g, dtype=DT) for _ in range(3))
    phi = torch.eye(emb.dim, dtype=DT) + 0.3 * torch.randn(emb.dim, emb.dim, generator=g, dtype=DT)
    prop = torch.rand(n, n, generator=g, dtype=DT)  # not symmetric
    _, pullback = vjp(lambda th, ph: _graph_term(th, ph, prop, lam=0.7, embedding=emb, anchor=None), theta, phi)
    theta_t, phi_t = _graph_term_adjoints(theta, phi, prop, lam=0.7, embedding=emb)
    torch.testing.assert_close(theta_t(v), pullback(v)[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(phi_t(w), pullback(w)[1], rtol=1e-12, atol=1e-12)
    assert phi_t(w).shape == phi.shape and float(phi_t(w).abs().max()) > 0
