"""BiG-FL, bilevel optimisation enhanced graph-aided FL (the chapter, Sec. 10.4, Algorithm 4).

Problem (P3), eq. (10.12): the upper level (UL, the server) learns a GCN-style layer
``phi`` (``d x d``, initialised to ``I``) by link prediction on the clients' graph; the
lower level (LL, the clients) is the game of eq. (10.16) whose players fit their data
while staying near their graph embedding.

Notation (``n`` clients, flat models ``theta_i`` of length ``P``, ``Theta`` their ``(n, P)``
stack):

* embeddings ``U = E(Theta)`` ``(n, d)``: a fixed linear map of every client's parameters
  (default the identity, ``d = P``: "each uploaded LL weight ... flattened", Sec. 10.5.1);
* propagation ``L = D~^{-1/2} (A + I) D~^{-1/2}`` (:func:`normalized_adjacency`, the GCN
  matrix of eq. (10.13)) and node embeddings ``H = L U phi`` (eq. (10.13));
* UL loss, eq. (10.14) (:func:`upper_loss`)::

      f = (1/n) sum_i sum_{j in N_i} (1 - cos(H_i, H_j))
          + (1/n) sum_i mean_{j in P_i} max(0, cos(H_i, H_j)) + (lam_UL/2) ||phi - I||_F^2

  where ``P_i`` is a fresh draw of ``n_negatives`` non-neighbours of ``i`` (without
  replacement) every round (:func:`negative_samples`);
* LL loss of client ``i``, eq. (10.17): ``f_i(theta_i) + (lam/2) R_i + (kappa/2)
  ||theta_i||^2`` with ``f_i`` the model's local loss (``model.loss``; the chapter's
  ``(1/2) E ||Y - h(X)||^2`` for a half-squared-error sample loss) and, eq. (10.18),

      R_i = || sum_{j != i} L_ij u_j phi + L_ii u_i phi - u_i ||^2 = || (L U phi - U)_i ||^2.

  Its gradient in ``u_i`` (the neighbours' part held fixed) is
  ``2 (L_ii r_i phi^T - r_i)`` with ``r_i = (L U phi - U)_i``, mapped back to ``theta_i`` by
  ``E^T`` (:func:`lower_gradients`).

Algorithm 4, every round ``t``: the server sends each client ``(L_i,: - L_ii) U^t phi^t``
(fixed during the round) and ``L_ii``; each client takes ``tau`` mini-batch SGD steps (10.19)
with step ``beta``; the server forms ``H`` from the new models and updates ``phi`` with the
hyper-gradient of eq. (10.20) and step ``alpha`` (:func:`hypergradient`).

Hyper-gradient (10.20).  With ``F(Theta, phi)`` the stacked LL gradients ``grad_{theta_i}
g_i`` (the neighbours' models live, so ``dF/dTheta`` is the Jacobian of the game, not only
its block diagonal), the implicit function theorem gives

    grad l(phi) = grad_phi f - (dF/dphi)^T (dF/dTheta)^{-T} grad_Theta f,

eq. (10.20) with the chapter's ``grad^2_{phi theta} G`` = ``(dF/dphi)^T`` and
``grad^2_{theta theta} G`` = ``dF/dTheta``, evaluated at the new LL iterate (an approximate
LL solution) on a fresh mini-batch.  **Inverse-Hessian approximation**: the product
``(dF/dTheta)^{-T} v`` is replaced by the truncated Neumann series

    (dF/dTheta)^{-T} v  ~  eta sum_{k=0}^{K-1} (I - eta (dF/dTheta)^T)^k v

(Ghadimi & Wang 2018, the chapter's [5]) with ``K = neumann_terms`` and ``eta =
neumann_scale`` (default the LL step ``beta``), computed with ``K`` vector-Jacobian products
and no Hessian in memory.  It converges to the exact product when the eigenvalues of
``eta dF/dTheta`` lie in ``(0, 2)`` (strongly convex LL problems with ``eta`` below ``2 /
smoothness``, the chapter's assumption "kappa sufficiently large").  ``inverse="exact"``
solves the linear system densely instead (tiny problems and tests only).

A per-client mask freezes coordinates in the LL steps and restricts the implicit system to
the trainable coordinates.

**The recorded UL loss is not the UL objective.**  The history's ``upper_loss`` is
``f(phi^t, Theta^{t+1})``: the loss (10.14) at the round's LL *iterate*, with the round's
negative samples.  The objective that the ``phi`` steps descend is (10.12a),
``l(phi) = f(phi, Theta*(phi))``, with the LL equilibrium (10.16) in place of the iterate;
the two agree only once the iterate has converged.  From a common start every ``H_i`` is
parallel (``cos = 1`` for every pair), so ``f = 1`` exactly (positive term 0, negative term
1); as the LL steps spread the models the positive term grows and ``f`` moves, whatever
``phi`` does.  In Fig. 10.3 (seed 0, float64, ``beta = 10^-3``) it rises from 1.0000002
to 1.00032 in 200 rounds, and to 1.00014-1.00017 in 50 rounds for every stable ``alpha``
in ``[10^-3, 10]`` and ``lam`` in ``{0.01, 0.1, 1}`` (the spread over ``alpha`` is
``< 10^-5``): the LL iterate stays in its spreading phase.  With ``beta = 10^-2`` it peaks
near round 20 and then falls below 1 (0.990-0.995 at round 200 for ``lam`` in ``{0.1, 1}``,
0.9947 with ``phi`` frozen), as the graph term of (10.17) pulls neighbours together.
``alpha lam_UL >= 2`` diverges (the regulariser's step overshoots ``I``).

Diagnostics in the history, all at the round's LL models ``Theta^{t+1}`` and in float64
(one UL step moves ``f`` by ``~ alpha ||grad||^2``, ``10^-15`` to ``10^-7`` in Fig. 10.3,
below float32's resolution of ``f ~ 1``):

* ``upper_step_decrease``: ``f(phi^t, Theta^{t+1}) - f(phi^{t+1}, Theta^{t+1})`` with the
  round's negative samples, what the round's ``phi`` step gains on the loss it
  differentiates.  To first order ``alpha <grad_phi f, (10.20)>``: positive when the
  implicit term of (10.20) is small (in Fig. 10.3 the 5-term Neumann series with
  ``eta = beta = 10^-3`` changes the partial gradient by ~0.1 %);
* ``upper_loss_full``: ``f(phi^{t+1}, Theta^{t+1})`` with every non-neighbour as a negative
  (:func:`all_negatives`), the expectation of the sampled loss over the draws: no sampling
  noise (in Fig. 10.3 the sampled loss differs from it by a standard deviation of ``8
  10^-7`` at ``beta = 10^-3``, ``8 10^-6`` at ``10^-2``, against a drift of ``3 10^-4``);
* ``upper_loss_identity``: the same with ``phi = I`` (no UL learning), so
  ``upper_loss_full - upper_loss_identity`` is what the ``phi`` learned so far is worth at
  the current models, with the LL drift removed (it decreases over the rounds in Fig. 10.3);
* ``hypergradient_norm``: the Frobenius norm of (10.20) (``~10^-4`` in Fig. 10.3).

The Fig. 10.3 LL game is not strongly monotone at its iterates with ``kappa = 0.01`` (the
symmetric part of ``dF/dTheta`` has eigenvalues from about ``-0.2`` to ``4.6`` at round 50),
so the chapter's assumption fails there and the Neumann series diverges as ``K`` grows; the
``K = 5`` truncation stays bounded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor
from torch.func import vjp

from .._validation import check_finite, check_int
from ..graphs import EmpiricalGraph, as_graph, is_networkx_graph
from ..nn import (
    DEFAULT_DTYPE,
    DeviceLike,
    FlatModel,
    GeneratorLike,
    StepSize,
    batch_gradients,
    batch_hessian_products,
    make_generator,
    step_size,
)
from ._local_sgd import local_steps
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = [
    "BiGFLResult",
    "ColumnProjection",
    "Embedding",
    "all_negatives",
    "bigfl",
    "hypergradient",
    "lower_gradients",
    "negative_samples",
    "normalized_adjacency",
    "upper_loss",
]

Inverse = Literal["neumann", "exact"]


@dataclass(frozen=True, eq=False)
class BiGFLResult(FederatedResult):
    """:class:`FederatedResult` of BiG-FL plus the final UL layer ``phi`` ``(d, d)``.

    ``client_params`` are the clients' LL models, ``global_params`` the same rows (every
    client its own model), ``assignment`` ``arange(n)``.
    """

    phi: Tensor


@dataclass(frozen=True, eq=False)
class ColumnProjection:
    """A linear map of a block of coordinates of every client's parameters: ``U =
    Theta[:, columns] M`` with ``M`` ``(columns length, d)`` (e.g. a random projection of one
    layer, Fig. 10.4's hidden layer).  The same map as the ``(P, d)`` matrix that is ``M`` on
    those rows and 0 elsewhere, without that matrix: ``E^T`` writes only the block."""

    columns: slice
    matrix: Tensor | np.ndarray


class Embedding:
    """The fixed linear map ``E``: ``(n, P)`` parameters to ``(n, d)`` UL inputs.

    ``None``: identity (``d = P``); a ``(P, d)`` tensor ``M``: ``U = Theta M``; a
    :class:`ColumnProjection`: ``U = Theta[:, columns] M``; a callable: any linear torch
    function of the ``(n, P)`` stack (its transpose is taken by :func:`torch.func.vjp`).
    """

    def __init__(self, spec: None | Tensor | ColumnProjection | Callable[[Tensor], Tensor], n_params: int,
                 dtype: torch.dtype, device: torch.device) -> None:
        self.matrix: Tensor | None = None
        self.fn: Callable[[Tensor], Tensor] | None = None
        self.columns: slice | None = None
        self.n_params = int(n_params)
        if spec is None:
            self.dim = n_params
        elif isinstance(spec, ColumnProjection):
            start, stop, step = spec.columns.indices(self.n_params)
            m = torch.as_tensor(spec.matrix).to(dtype=dtype, device=device)
            if step != 1 or stop <= start:
                raise ValueError(f"ColumnProjection.columns must be a non-empty contiguous slice of "
                                 f"the {n_params} parameters, got {spec.columns}")
            if m.ndim != 2 or m.shape[0] != stop - start:
                raise ValueError(f"ColumnProjection.matrix must be ({stop - start}, d) for columns "
                                 f"{start}:{stop}, got {tuple(m.shape)}")
            self.columns, self.matrix, self.dim = slice(start, stop), m, int(m.shape[1])
        elif callable(spec) and not isinstance(spec, Tensor):
            self.fn = spec
            self.dim = int(spec(torch.zeros(1, n_params, dtype=dtype, device=device)).shape[1])
        else:
            m = spec if isinstance(spec, Tensor) else torch.as_tensor(np.asarray(spec))
            m = m.to(dtype=dtype, device=device)
            if m.ndim != 2 or m.shape[0] != n_params:
                raise ValueError(f"embedding matrix must be ({n_params}, d), got {tuple(m.shape)}")
            self.matrix, self.dim = m, int(m.shape[1])

    @functools.cached_property
    def _matrix_t(self) -> Tensor:
        """``M^T`` as a contiguous ``(d, rows)`` copy, made once: ``E^T`` reads it as rows
        (a product with the transposed view of ``M`` runs about 25 % slower at Fig. 10.4's
        ``(20,200 x 512)``, the same numbers: ``tests/unit/algorithms/test_bigfl_hypergradient.py``)."""
        return self.matrix.T.contiguous()  # type: ignore[union-attr]  (only where matrix is set)

    def __call__(self, theta: Tensor) -> Tensor:
        if self.columns is not None:
            return theta[:, self.columns] @ self.matrix
        if self.matrix is not None:
            return theta @ self.matrix
        if self.fn is not None:
            return self.fn(theta)
        return theta

    def transpose(self, grad_u: Tensor, theta: Tensor) -> Tensor:
        """``E^T`` applied to a ``(n, d)`` gradient: the gradient in ``Theta``."""
        if self.columns is not None:
            block = grad_u @ self._matrix_t
            return torch.nn.functional.pad(block, (self.columns.start, self.n_params - self.columns.stop))
        if self.matrix is not None:
            return grad_u @ self._matrix_t
        if self.fn is not None:
            return vjp(self.fn, theta)[1](grad_u)[0]
        return grad_u

    def add_transpose_(self, out: Tensor, grad_u: Tensor, theta: Tensor) -> Tensor:
        """``out += E^T grad_u`` in place (only the block of a :class:`ColumnProjection`)."""
        if self.columns is not None:
            out[:, self.columns] += grad_u @ self._matrix_t
            return out
        return out.add_(self.transpose(grad_u, theta))


def normalized_adjacency(
    graph: EmpiricalGraph | np.ndarray | Tensor, *, dtype: torch.dtype = DEFAULT_DTYPE,
    device: DeviceLike = "cpu",
) -> Tensor:
    """``D~^{-1/2} (A + I) D~^{-1/2}`` with ``D~_ii = sum_j (A + I)_ij`` (eq. (10.13); Kipf &
    Welling 2017), dense ``(n, n)``.  ``graph`` is an :class:`EmpiricalGraph` (edge weights
    as ``A``), a networkx graph or an adjacency matrix."""
    if is_networkx_graph(graph):
        graph = as_graph(graph)
    if isinstance(graph, EmpiricalGraph):
        # every client needs a linked neighbour (the positive pairs of (10.14))
        graph.check(purpose="BiG-FL")
        a = torch.as_tensor(graph.adjacency.toarray())
    else:
        a = graph if isinstance(graph, Tensor) else torch.as_tensor(np.asarray(graph, dtype=float))
    a = a.to(dtype=dtype, device=device)
    a_tilde = a + torch.eye(a.shape[0], dtype=dtype, device=device)
    d = a_tilde.sum(dim=1).rsqrt()
    return d[:, None] * a_tilde * d[None, :]


def negative_samples(
    neighbours: Tensor, n_negatives: int, seed: GeneratorLike
) -> tuple[Tensor, Tensor]:
    """``n_negatives`` tail nodes per head node among its non-neighbours (self excluded),
    drawn uniformly without replacement: indices ``(n, k)`` and weights ``(n, k)`` (1, or 0
    where a node has fewer than ``k`` non-neighbours)."""
    n = neighbours.shape[0]
    k = min(int(n_negatives), n)
    keys = torch.rand((n, n), generator=make_generator(seed), dtype=torch.float64).to(neighbours.device)
    blocked = neighbours.bool() | torch.eye(n, dtype=torch.bool, device=neighbours.device)
    keys = keys.masked_fill(blocked, 2.0)
    vals, idx = torch.topk(keys, k, dim=1, largest=False)
    return idx, (vals < 2.0).to(torch.float64)


def all_negatives(neighbours: Tensor) -> tuple[Tensor, Tensor]:
    """Every non-neighbour of every node as a negative (self excluded): indices ``(n, n)``
    and 0/1 weights ``(n, n)``.  With these :func:`upper_loss`'s negative term is the mean
    over all non-neighbours, the expectation over the uniform draws of
    :func:`negative_samples` (of any size): the UL loss (10.14) without sampling noise."""
    n = neighbours.shape[0]
    blocked = neighbours.bool() | torch.eye(n, dtype=torch.bool, device=neighbours.device)
    idx = torch.arange(n, device=neighbours.device).expand(n, n)
    return idx, (~blocked).to(torch.float64)


def _cosine_matrix(h: Tensor, eps: float = 1e-12) -> Tensor:
    hn = h / h.norm(dim=1, keepdim=True).clamp_min(eps)
    return hn @ hn.T


def upper_loss(
    phi: Tensor, u: Tensor, prop: Tensor, neighbours: Tensor, neg_idx: Tensor, neg_w: Tensor,
    lam_upper: float,
) -> Tensor:
    """The UL objective (10.14) at ``phi`` for embeddings ``u`` ``(n, d)``.

    ``neighbours`` ``(n, n)`` 0/1 adjacency (the sum over ``N_i``), ``neg_idx``/``neg_w`` the
    negative samples (the expectation over ``P_i`` as their weighted mean).
    """
    n = u.shape[0]
    h = prop @ (u @ phi)
    cos = _cosine_matrix(h)
    positive = (neighbours * (1.0 - cos)).sum() / n
    neg_cos = torch.gather(cos, 1, neg_idx).clamp_min(0.0)
    w = neg_w.to(cos.dtype)
    negative = ((w * neg_cos).sum(dim=1) / w.sum(dim=1).clamp_min(1.0)).sum() / n
    eye = torch.eye(phi.shape[0], dtype=phi.dtype, device=phi.device)
    return positive + negative + 0.5 * lam_upper * ((phi - eye) ** 2).sum()


def lower_gradients(
    model: FlatModel,
    theta: Tensor,
    phi: Tensor,
    prop: Tensor,
    batch: tuple[Tensor, Tensor, Tensor],
    *,
    lam: float,
    kappa: float,
    embedding: Embedding,
    anchor: Tensor | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """Stacked mini-batch LL gradients ``grad_{theta_i} g_i`` of eq. (10.17), ``(n, P)``.

    ``anchor`` ``(n, d)``: the server's fixed ``(L_i,: - L_ii) U phi`` (Algorithm 4, line 4);
    ``None``: computed from ``theta`` itself (the game map whose Jacobian enters (10.20)).
    """
    x, y, w = batch
    data = batch_gradients(model)(theta, x, y, w)
    if theta.requires_grad:  # differentiated (BiG-FL's exact inverse): no in-place updates
        g = data + _graph_term(theta, phi, prop, lam=lam, embedding=embedding, anchor=anchor) + kappa * theta
        return g if mask is None else g * mask
    grad_u = _graph_gradient(theta, phi, prop, lam=lam, embedding=embedding, anchor=anchor)
    g = embedding.add_transpose_(data, grad_u, theta).add_(kappa * theta)  # data is a fresh tensor
    return g if mask is None else g.mul_(mask)


def _graph_term(theta: Tensor, phi: Tensor, prop: Tensor, *, lam: float, embedding: Embedding,
                anchor: Tensor | None) -> Tensor:
    """The gradient of ``(lam/2) R_i`` (10.18) in ``theta_i``, stacked ``(n, P)``: ``E^T`` of
    :func:`_graph_gradient`."""
    return embedding.transpose(_graph_gradient(theta, phi, prop, lam=lam, embedding=embedding,
                                               anchor=anchor), theta)


def _graph_gradient(theta: Tensor, phi: Tensor, prop: Tensor, *, lam: float, embedding: Embedding,
                    anchor: Tensor | None) -> Tensor:
    """The gradient of ``(lam/2) R_i`` (10.18) in ``u_i``, stacked ``(n, d)``: ``lam (L_ii
    r_i phi^T - r_i)`` with ``r = L U phi - U`` (``anchor``: the neighbours' part
    ``(L_i,: - L_ii) U phi`` held fixed)."""
    u = embedding(theta)
    diag = torch.diagonal(prop)
    if anchor is None:
        r = prop @ (u @ phi) - u
    else:
        r = anchor + diag[:, None] * (u @ phi) - u
    return lam * (diag[:, None] * (r @ phi.T) - r)      # (lam/2) * dR_i/du_i


def _graph_term_adjoints(theta: Tensor, phi: Tensor, prop: Tensor, *, lam: float, embedding: Embedding
                         ) -> tuple[Callable[[Tensor], Tensor], Callable[[Tensor], Tensor]]:
    """The transposed Jacobians of the graph term :func:`_graph_term` (``anchor=None``), in
    closed form: it is ``E^T G(E Theta; phi)`` with ``E`` the (linear) embedding and

        G(U; phi) = lam (D L U phi phi^T - D U phi^T - L U phi + U),   D = diag(L),

    linear in ``U``, so with ``V = E v``, ``W = E w`` and ``A = D L U``::

        (dG/dU)^T V    = lam (L^T D V phi phi^T - D V phi - L^T V phi^T + V),
        (dG/dphi)^T W  = lam (A^T W phi + W^T A phi - W^T D U - U^T L^T W).

    Returns ``(theta_adjoint, phi_adjoint)``: ``v (n, P) -> (n, P)`` and ``w (n, P) -> (d, d)``,
    the products that ``torch.func.vjp`` of the graph term gives (tested against it),
    without its autograd graph (about 2.5x less time per product)."""
    diag = torch.diagonal(prop)[:, None]
    prop_t = prop.T

    def theta_adjoint(v: Tensor) -> Tensor:
        vv = embedding(v)
        dv_phi = (diag * vv) @ phi
        return embedding.transpose(lam * (prop_t @ ((dv_phi - vv) @ phi.T) - dv_phi + vv), theta)

    def phi_adjoint(w: Tensor) -> Tensor:
        ww, u = embedding(w), embedding(theta)
        a = diag * (prop @ u)
        # every product (d, n) @ (n, d): n d^2 operations, none d^3
        return lam * (a.T @ (ww @ phi) + ww.T @ (a @ phi) - ww.T @ (diag * u) - u.T @ (prop_t @ ww))

    return theta_adjoint, phi_adjoint


def hypergradient(
    model: FlatModel,
    theta: Tensor,
    phi: Tensor,
    prop: Tensor,
    neighbours: Tensor,
    negatives: tuple[Tensor, Tensor],
    batch: tuple[Tensor, Tensor, Tensor],
    *,
    lam: float,
    kappa: float,
    lam_upper: float,
    embedding: Embedding,
    neumann_terms: int = 5,
    neumann_scale: float = 1e-3,
    inverse: Inverse = "neumann",
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """The hyper-gradient of eq. (10.20) at ``(theta, phi)`` and the UL loss there.

    See the module docstring for the formula and the inverse-Hessian approximation
    (``inverse="neumann"``: ``neumann_terms`` terms with scale ``neumann_scale``;
    ``"exact"``: a dense solve of the ``nP x nP`` system, for tiny problems).

    Returns
    -------
    (Tensor, Tensor)
        ``(d, d)`` hyper-gradient and the scalar UL loss ``f(phi, theta)``.
    """
    neg_idx, neg_w = negatives

    def ul(ph: Tensor, th: Tensor) -> Tensor:
        return upper_loss(ph, embedding(th), prop, neighbours, neg_idx, neg_w, lam_upper)

    loss, ul_vjp = vjp(ul, phi, theta)
    g_phi, g_theta = ul_vjp(torch.ones_like(loss))
    if mask is not None:
        g_theta = g_theta * mask

    # F = mask * (data gradients + graph term + kappa theta); only the graph term depends
    # on phi, and the data part's Jacobian is every client's Hessian (symmetric), applied
    # by the model's closed form where it has one (nn.batch_hessian_products)
    hessian = batch_hessian_products(model, theta, *batch)
    graph_theta_t, graph_phi_t = _graph_term_adjoints(theta, phi, prop, lam=lam, embedding=embedding)

    def masked(v: Tensor) -> Tensor:
        return v if mask is None else v * mask

    if inverse == "neumann":
        terms = check_int(neumann_terms, "neumann_terms", minimum=1)
        # v_0 = g_theta and every v_k are masked already, so (dF/dTheta)^T v_k =
        # mask * (H v_k + (graph term)'^T v_k + kappa v_k); in place on fresh tensors
        v = g_theta.clone()
        acc = v.clone()
        for _ in range(terms - 1):
            jt_v = hessian(v).add_(graph_theta_t(v)).add_(kappa * v)
            if mask is not None:
                jt_v.mul_(mask)
            v.sub_(jt_v.mul_(neumann_scale))
            acc.add_(v)
        w = acc.mul_(neumann_scale)
    elif inverse == "exact":
        def game(th: Tensor, ph: Tensor) -> Tensor:
            return lower_gradients(model, th, ph, prop, batch, lam=lam, kappa=kappa,
                                   embedding=embedding, mask=mask)

        w = _exact_solve(game, theta, phi, g_theta, mask)
    else:
        raise ValueError(f"inverse must be 'neumann' or 'exact', got {inverse!r}")
    return g_phi - graph_phi_t(masked(w)), loss.detach()  # (dF/dphi)^T w


def _exact_solve(game: Callable[[Tensor, Tensor], Tensor], theta: Tensor, phi: Tensor,
                 rhs: Tensor, mask: Tensor | None) -> Tensor:
    """``w`` with ``(dF/dTheta)^T w = rhs`` on the trainable coordinates (dense Jacobian)."""
    jac = torch.func.jacrev(lambda th: game(th, phi))(theta)
    size = theta.numel()
    jac = jac.reshape(size, size)
    free = torch.ones(size, dtype=torch.bool, device=theta.device) if mask is None else mask.reshape(-1) > 0
    sub = jac[free][:, free]
    sol = torch.linalg.solve(sub.T, rhs.reshape(-1)[free])
    w = torch.zeros(size, dtype=theta.dtype, device=theta.device)
    w[free] = sol
    return w.reshape(theta.shape)


def _diagnostics(phi_old: Tensor, phi: Tensor, u: Tensor, prop: Tensor, neighbours: Tensor,
                 negatives: tuple[Tensor, Tensor], everything: tuple[Tensor, Tensor],
                 lam_upper: float) -> dict[str, float]:
    """The history's UL diagnostics (module docstring), in float64: one UL step changes
    ``f`` by ``~ alpha ||grad||^2``, far below float32's resolution of ``f ~ 1``."""
    phi_old, phi, u, prop, neighbours = (
        x.to(torch.float64) for x in (phi_old, phi, u, prop, neighbours))
    eye = torch.eye(phi.shape[0], dtype=torch.float64, device=phi.device)

    def f(ph: Tensor, negs: tuple[Tensor, Tensor]) -> float:
        return float(upper_loss(ph, u, prop, neighbours, *negs, lam_upper))

    with torch.no_grad():
        return {"upper_step_decrease": f(phi_old, negatives) - f(phi, negatives),
                "upper_loss_full": f(phi, everything),
                "upper_loss_identity": f(eye, everything)}


def bigfl(
    model: FlatModel,
    data: Any,
    graph: EmpiricalGraph | np.ndarray | Tensor,
    options: TrainingOptions | None = None,
    *,
    lr_upper: StepSize,
    lam: float,
    kappa: float,
    lam_upper: float | None = None,
    n_negatives: int = 10,
    neumann_terms: int = 5,
    neumann_scale: float | None = None,
    inverse: Inverse = "neumann",
    embedding: None | Tensor | ColumnProjection | Callable[[Tensor], Tensor] = None,
    mask: Any = None,
    diagnostics: bool = True,
    **overrides: Any,
) -> BiGFLResult:
    """BiG-FL (the chapter, Algorithm 4, eqs. (10.12)-(10.20)).

    Parameters
    ----------
    model, data
        As in :func:`~networkedfl.algorithms.dfl_sgd`; ``model.loss`` is the data term
        of the LL loss (10.17).
    graph
        The clients' graph (:class:`EmpiricalGraph` or adjacency matrix): ``N_i`` in (10.14)
        and ``A`` in ``L``.
    options, **overrides
        As in :func:`~networkedfl.algorithms.dfl_sgd` (the same options), for the LL:
        ``local_steps`` LL steps ``tau`` per round, ``lr`` their step ``beta``, ``batch_size`` their mini-batch (also that of the Jacobians in (10.20));
        ``seed`` also draws the negative samples.
    lr_upper
        ``alpha``: number or schedule of the round.
    lam, kappa
        ``lambda`` and ``kappa`` of the LL loss (10.17).
    lam_upper
        ``lambda`` of the UL loss (10.14) (default ``lam``).
    n_negatives
        Negative tails per head node per round.
    neumann_terms, neumann_scale, inverse
        Inverse-Hessian approximation (module docstring); ``neumann_scale`` defaults to
        ``beta`` at the round's first LL step.
    embedding
        The linear map ``E`` (:class:`Embedding`): ``None`` (identity), ``(P, d)`` matrix,
        :class:`ColumnProjection` or linear callable; ``phi`` is ``d x d``.
    mask
        Optional ``(n, P)`` 0/1 mask of trainable coordinates per client.
    diagnostics
        Record the UL diagnostics every round (three float64 evaluations of (10.14), two
        over every non-neighbour); ``False`` leaves them out of the history and changes
        nothing else (the tuning runs, which read only the final validation loss).

    Returns
    -------
    BiGFLResult
        The LL models, ``phi``, history rows with ``upper_loss`` (``f(phi^t, Theta^{t+1})``:
        the UL loss (10.14) at the round's new LL iterate and negative samples, before the
        ``phi`` step; not the UL objective ``l(phi^t) = f(phi^t, Theta*(phi^t))`` of
        (10.12a), see the module docstring), the diagnostics ``upper_step_decrease``,
        ``upper_loss_full``, ``upper_loss_identity`` and ``hypergradient_norm`` (module
        docstring), ``phi_distance`` ``||phi - I||_F`` after the step and ``step``.
    """
    for name, value in (("lam", lam), ("kappa", kappa), ("lam_upper", lam_upper), ("lr_upper", lr_upper),
                        ("neumann_scale", neumann_scale)):  # 0: no UL step, no Neumann terms
        if value is not None and not callable(value):
            check_finite(value, name, sign="non-negative")
    lam_upper = float(lam if lam_upper is None else lam_upper)
    run = start_run(model, data, options, overrides, "bigfl",
                    required=("n_rounds", "local_steps", "lr", "batch_size"), batches=True)
    opts, source, gen = run.options, run.data, run.seed
    n, p, dtype, device = run.n_clients, run.n_params, run.dtype, run.device
    lr_lower, batch_size = opts.lr, opts.batch_size
    mask_t = run.mask(mask)
    emb = Embedding(embedding, p, dtype, device)
    prop = normalized_adjacency(graph, dtype=dtype, device=device)
    if prop.shape != (n, n):
        raise ValueError(f"the graph has {prop.shape[0]} nodes but there are {n} clients")
    neighbours = (prop > 0).to(dtype) * (1 - torch.eye(n, dtype=dtype, device=device))
    diag = torch.diagonal(prop)
    everything = all_negatives(neighbours)
    theta = run.initial_rows(n, "client")
    phi = torch.eye(emb.dim, dtype=dtype, device=device)
    d = emb.dim
    t = 0
    for r in run.rounds():
        # server -> clients: (L_i,: - L_ii) U^t phi^t, phi^t and L_ii (Algorithm 4, line 4)
        u_phi = emb(theta) @ phi
        anchor = prop @ u_phi - diag[:, None] * u_phi
        eta = step_size(lr_lower, t) if neumann_scale is None else float(neumann_scale)
        # LL steps (10.19); local_steps freezes the masked coordinates itself, so the
        # gradients need not be masked first (the same step, bit for bit)
        theta, t = local_steps(
            lambda th, batch, phi=phi, anchor=anchor: lower_gradients(
                model, th, phi, prop, batch, lam=lam, kappa=kappa, embedding=emb, anchor=anchor),
            theta, source, steps=opts.local_steps, batch_size=batch_size, lr=lr_lower, start=t,
            seed=gen, mask=mask_t)
        # UL step with the hyper-gradient (10.20) at the new models
        negatives = negative_samples(neighbours, n_negatives, gen)
        hyper, f_value = hypergradient(
            model, theta, phi, prop, neighbours, negatives, source.sample(batch_size, gen),
            lam=lam, kappa=kappa, lam_upper=lam_upper, embedding=emb,
            neumann_terms=neumann_terms, neumann_scale=eta, inverse=inverse, mask=mask_t,
        )
        phi_old, phi = phi, phi - step_size(lr_upper, r - 1) * hyper
        eye = torch.eye(d, dtype=dtype, device=device)
        checks = _diagnostics(phi_old, phi, emb(theta), prop, neighbours, negatives, everything,
                              lam_upper) if diagnostics else {}
        run.record_exchange(
            r, theta, theta, run.own, download="embeddings+phi", floats_down=n * (d + d * d + 1),
            extra={"upper_loss": float(f_value), **checks,
                   "hypergradient_norm": float(torch.linalg.norm(hyper)),
                   "phi_distance": float(torch.linalg.norm(phi - eye)), "step": t},
        )
    run.recorder.close()
    return BiGFLResult(theta, theta, run.own, run.recorder.history, run.recorder.log, phi)
