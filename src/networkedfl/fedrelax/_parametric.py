"""FedRelax for linear models: Algorithm 2 of Abdurakhmanova et al. (2024), batched over nodes.

Node ``i`` holds a linear model ``h(x) = x^T w_i`` (no bias, eq. (13)), a local dataset
``(X_i, y_i)`` with the average squared error ``L_i(w) = (1/m_i) ||y_i - X_i w||^2`` and a
public dataset ``P^(i)`` (rows ``x``).  Iteration ``k`` of Algorithm 2 updates every node,
with its neighbours' models fixed at ``w_hat_k`` (eq. (16))::

    w_hat_{k+1}^(i) in argmin_w  L_i(w) + alpha sum_{i' in N(i)} A_ii' (1/m') sum_{x in P^(i')}
                                                   (w^T x - (w_hat_k^(i'))^T x)^2

The discrepancy with neighbour ``i'`` is measured on the neighbour's public data
``P^(i')`` (eq. (14)): node ``i'`` shares its predictions on ``P^(i')``.  With the Gram
matrices ``H_i = X_i^T X_i / m_i``, ``b_i = X_i^T y_i / m_i``, ``G_i = P_i^T P_i / m'`` and
``S_i = sum_i' A_ii' G_i'`` the node objective is the quadratic
``w^T (H_i + alpha S_i) w - 2 w^T (b_i + alpha sum_i' A_ii' G_i' w_hat_i') + const``,
whose gradient for all nodes at once is::

    grad = 2 (bmm(H + alpha S, W) - b - alpha A @ bmm(G, W))

two batched ``(n, d, d)`` mat-vecs and one sparse product with the adjacency ``A``: the
whole network is one ``(n, d)`` weight tensor and no Python loop runs over nodes.

Solvers (:func:`fedrelax_linear`):

* ``"rmsprop"`` (the paper's experiments): one RMSprop step (lr 0.01; the arithmetic of
  :class:`torch.optim.RMSprop`, written out) on the whole tensor per iteration.  RMSprop
  acts elementwise, so this is exactly every node running its own RMSprop on its own
  objective (16).
* ``"exact"``: the closed-form minimiser of (16) with the neighbours fixed,
  ``w_{k+1}^(i) = (H_i + alpha S_i)^+ (b_i + alpha sum_i' A_ii' G_i' w_k^(i'))`` (the
  pseudo-inverse gives the minimum-norm minimiser when the system is singular, e.g.
  ``alpha = 0`` and ``d > m_i``): block-Jacobi block-coordinate minimisation.

Both have the same fixed points: the solutions of the coupled stationarity system of (16),
``(H_i + alpha S_i) w_i - alpha sum_i' A_ii' G_i' w_i' = b_i`` for all ``i``, which
:func:`fixed_point` solves directly.  (They differ from the minimiser of GTVMin (15)
unless all public datasets coincide, because (16) keeps only node ``i``'s own
discrepancy terms; Sec. III.)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.sparse.linalg as spla
import torch
from torch import Tensor

from .._validation import check_finite
from ..graphs import EmpiricalGraph, GraphLike, as_graph
from ..nn import DeviceLike, GeneratorLike, RMSprop
from ..progress import show_progress, tqdm
from ..seeding import make_generator

__all__ = [
    "LinearFedRelaxResult",
    "LinearProblem",
    "fedrelax_linear",
    "fixed_point",
    "adjacency_tensor",
    "initial_weights",
    "linear_problem",
    "node_gradients",
    "node_objectives",
]

#: ``callback(iteration, weights (n, d)) -> dict | None``: entries of a history row.
LinearCallback = Callable[[int, Tensor], Mapping[str, Any] | None]


@dataclass(frozen=True, eq=False)
class LinearProblem:
    """Quadratic forms of the local losses and public discrepancies of all nodes.

    Attributes
    ----------
    local_gram
        ``(n, d, d)``: ``H_i = sum_r s_r x_r x_r^T / sum_r s_r`` (sample weights ``s``;
        ``X_i^T X_i / m_i`` for unweighted data).
    local_moment
        ``(n, d)``: ``b_i = sum_r s_r y_r x_r / sum_r s_r``.
    label_energy
        ``(n,)``: ``c_i = sum_r s_r y_r^2 / sum_r s_r``, so ``L_i(w) = w^T H_i w - 2 b_i^T w + c_i``.
    public_gram
        ``(n, d, d)``: ``G_i = P_i^T P_i / m'_i`` of node ``i``'s public data.
    adjacency
        ``(n, n)`` sparse CSR tensor of the edge weights ``A_ii'`` (symmetric).
    neighbour_gram
        ``(n, d, d)``: ``S_i = sum_i' A_ii' G_i'``.
    """

    local_gram: Tensor
    local_moment: Tensor
    label_energy: Tensor
    public_gram: Tensor
    adjacency: Tensor
    neighbour_gram: Tensor

    @property
    def n_nodes(self) -> int:
        return int(self.local_gram.shape[0])

    @property
    def dim(self) -> int:
        return int(self.local_gram.shape[-1])

    @property
    def dtype(self) -> torch.dtype:
        return self.local_gram.dtype

    @property
    def device(self) -> torch.device:
        return self.local_gram.device


@dataclass(frozen=True, eq=False)
class LinearFedRelaxResult:
    """Output of :func:`fedrelax_linear`: final weights ``(n, d)`` and the history rows."""

    weights: Tensor
    history: list[dict[str, Any]] = field(default_factory=list)


# --------------------------------------------------------------------------- problem set-up


def _padded(
    arrays: Any, weights: Any, dtype: torch.dtype, device: torch.device, what: str
) -> tuple[Tensor, Tensor]:
    """Stacked ``(n, m, ...)`` tensor and ``(n, m)`` weights from a stack or a ragged list."""
    if isinstance(arrays, Tensor | np.ndarray):
        t = torch.as_tensor(np.asarray(arrays) if isinstance(arrays, np.ndarray) else arrays)
        t = t.to(dtype=dtype, device=device)
        w = torch.ones(t.shape[:2], dtype=dtype, device=device)
    else:
        parts = [torch.as_tensor(np.asarray(a), dtype=dtype) for a in arrays]
        if not parts:
            raise ValueError(f"{what}: need one array per node")
        m = max(int(p.shape[0]) for p in parts)
        t = torch.zeros((len(parts), m, *parts[0].shape[1:]), dtype=dtype)
        w = torch.zeros((len(parts), m), dtype=dtype)
        for i, p in enumerate(parts):  # data assembly, once
            t[i, : p.shape[0]] = p
            w[i, : p.shape[0]] = 1.0
        t, w = t.to(device), w.to(device)
    if weights is not None:
        w = w * torch.as_tensor(np.asarray(weights), dtype=dtype, device=device).reshape(w.shape)
    return t, w


#: Graphs with at most this many nodes and at least this edge density keep ``A`` dense.
_DENSE_NODES, _DENSE_DENSITY = 2048, 0.05


def adjacency_tensor(graph: EmpiricalGraph, dtype: torch.dtype, device: DeviceLike) -> Tensor:
    """The weighted adjacency ``A`` as a torch tensor: dense for small dense graphs, else CSR."""
    a = graph.adjacency.tocsr()
    n = graph.n_nodes
    if n <= _DENSE_NODES and a.nnz >= _DENSE_DENSITY * n * n:
        return torch.as_tensor(a.toarray(), dtype=dtype, device=device)
    a.sort_indices()
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            torch.as_tensor(a.indptr, dtype=torch.int64),
            torch.as_tensor(a.indices, dtype=torch.int64),
            torch.as_tensor(a.data, dtype=dtype),
            size=a.shape,
            check_invariants=False,
        ).to(device)


def linear_problem(
    graph: GraphLike,
    features: Any,
    labels: Any,
    public: Any,
    *,
    sample_weights: Any = None,
    dtype: torch.dtype = torch.float64,
    device: DeviceLike = "cpu",
) -> LinearProblem:
    """The quadratic forms of Algorithm 2 for a graph, local data and public datasets.

    Parameters
    ----------
    graph
        FL network with edge weights ``A_ii'``.
    features, labels
        Local datasets: stacked ``(n, m, d)`` / ``(n, m)`` arrays or tensors, or sequences
        of per-node arrays ``(m_i, d)`` / ``(m_i,)`` of different lengths.
    public
        Public datasets ``P^(i)``: ``(n, m', d)`` or a sequence of ``(m'_i, d)`` arrays.
    sample_weights
        Optional non-negative weights of the local samples (same layout as ``labels``,
        stacked); the local loss is their weighted mean squared error.
    dtype, device
        Precision and device of the returned tensors.
    """
    graph = as_graph(graph)  # an EmpiricalGraph, a networkx graph or an adjacency matrix
    device = torch.device(device)
    x, s = _padded(features, sample_weights, dtype, device, "features")
    if isinstance(labels, Tensor | np.ndarray):
        y = torch.as_tensor(np.asarray(labels) if isinstance(labels, np.ndarray) else labels)
        y = y.to(dtype=dtype, device=device)
    else:
        y, _ = _padded([np.asarray(v, float)[:, None] for v in labels], None, dtype, device, "labels")
        y = y[..., 0]
    p, pw = _padded(public, None, dtype, device, "public")
    n = graph.n_nodes
    if x.ndim != 3 or x.shape[0] != n or y.shape != x.shape[:2]:
        raise ValueError(
            f"features must be (n={n}, m, d) and labels (n, m); got {tuple(x.shape)}, {tuple(y.shape)}"
        )
    if p.ndim != 3 or p.shape[0] != n or p.shape[2] != x.shape[2]:
        raise ValueError(f"public must be (n={n}, m', d={x.shape[2]}), got {tuple(p.shape)}")
    total = s.sum(dim=1)
    if bool(torch.any(total <= 0)) or bool(torch.any(pw.sum(dim=1) <= 0)):
        raise ValueError("every node needs at least one local sample and one public point")
    h = torch.einsum("nm,nmd,nme->nde", s, x, x) / total[:, None, None]
    b = torch.einsum("nm,nmd,nm->nd", s, x, y) / total[:, None]
    c = torch.einsum("nm,nm->n", s, y * y) / total
    g = torch.einsum("nm,nmd,nme->nde", pw, p, p) / pw.sum(dim=1)[:, None, None]
    adj = adjacency_tensor(graph, dtype, device)
    d = x.shape[2]
    s_nb = (adj @ g.reshape(n, d * d)).reshape(n, d, d)
    return LinearProblem(h, b, c, g, adj, s_nb)


def _alpha(alpha: float | Sequence[float] | np.ndarray | Tensor, problem: LinearProblem) -> Tensor:
    """``alpha`` as an ``(n, 1)`` tensor (a scalar, or one value per node)."""
    a = torch.as_tensor(np.asarray(alpha) if not isinstance(alpha, Tensor) else alpha)
    a = a.to(dtype=problem.dtype, device=problem.device)
    if a.ndim == 0:
        a = a.expand(problem.n_nodes)
    if a.shape != (problem.n_nodes,):
        raise ValueError(f"alpha must be a scalar or have one value per node, got {tuple(a.shape)}")
    if bool(torch.any(a < 0)) or not bool(torch.all(torch.isfinite(a))):
        raise ValueError("alpha must be finite and non-negative")
    return a[:, None]


def _matvec(mats: Tensor, vecs: Tensor) -> Tensor:
    """``mats_i @ vecs_i`` for SYMMETRIC ``mats`` ``(n, d, d)`` (or ``[M_i | G_i]`` stacks
    ``(n, d, k d)`` of symmetric blocks), computed as the row vector ``vecs_i^T mats_i``:
    with one right-hand side this bmm layout is several times faster on the CPU."""
    return torch.bmm(vecs.unsqueeze(1), mats).squeeze(1)


def _coupling(problem: LinearProblem, neighbours: Tensor) -> Tensor:
    """``sum_i' A_ii' G_i' w_i'`` for every node ``i``, ``(n, d)``."""
    return problem.adjacency @ _matvec(problem.public_gram, neighbours)


def node_gradients(
    problem: LinearProblem, weights: Tensor, alpha: Any, neighbours: Tensor | None = None
) -> Tensor:
    """Gradient of every node's objective (16) at its own ``w_i``, ``(n, d)``.

    The neighbours' models are ``neighbours`` (default: ``weights``, i.e. ``w_hat_k``):
    ``2 (H_i w_i - b_i) + 2 alpha sum_i' A_ii' G_i' (w_i - w_i')``.
    """
    a = _alpha(alpha, problem)
    nb = weights if neighbours is None else neighbours
    local = _matvec(problem.local_gram, weights) - problem.local_moment
    disc = _matvec(problem.neighbour_gram, weights) - _coupling(problem, nb)
    return 2.0 * (local + a * disc)


def node_objectives(
    problem: LinearProblem, weights: Tensor, alpha: Any, neighbours: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Local loss ``L_i(w_i)`` and weighted discrepancy of every node, two ``(n,)`` tensors.

    The discrepancy is ``sum_i' A_ii' (1/m') sum_{x in P^(i')} (x^T (w_i - w_i'))^2`` with
    the neighbours at ``neighbours`` (default ``weights``); node ``i``'s objective (16) is
    ``local + alpha * discrepancy`` and GTVMin (15) is the sum of these over the nodes.
    """
    _alpha(alpha, problem)  # validates
    nb = weights if neighbours is None else neighbours
    w = weights
    local = (
        torch.einsum("nd,nd->n", w, _matvec(problem.local_gram, w))
        - 2.0 * torch.einsum("nd,nd->n", w, problem.local_moment)
        + problem.label_energy
    )
    q = torch.einsum("nd,nd->n", nb, _matvec(problem.public_gram, nb))
    disc = (
        torch.einsum("nd,nd->n", w, _matvec(problem.neighbour_gram, w))
        - 2.0 * torch.einsum("nd,nd->n", w, _coupling(problem, nb))
        + problem.adjacency @ q
    )
    return local, disc


def initial_weights(
    n_nodes: int,
    dim: int,
    init: str | Tensor | np.ndarray = "uniform",
    seed: GeneratorLike | None = None,
    *,
    dtype: torch.dtype = torch.float64,
    device: DeviceLike = "cpu",
) -> Tensor:
    """Starting weights ``(n, d)``.

    ``"uniform"``: entries i.i.d. ``U(-1/sqrt(d), 1/sqrt(d))``, the default initialisation of
    a PyTorch ``nn.Linear(d, 1)`` (FedRelax Sec. IV-A: ``U(-sqrt(1/d), sqrt(1/d))``), one
    independent draw per node (drawn from ``seed``; drawn on the CPU); ``"zeros"``; or an
    array ``(n, d)`` or ``(d,)`` (shared by all nodes).
    """
    if isinstance(init, str):
        if init == "zeros":
            return torch.zeros((n_nodes, dim), dtype=dtype, device=device)
        if init != "uniform":
            raise ValueError(f"unknown init {init!r}; expected 'uniform', 'zeros' or an array")
        gen = make_generator(seed)
        bound = 1.0 / np.sqrt(dim)
        u = torch.rand((n_nodes, dim), generator=gen, dtype=torch.float64)
        return ((2.0 * u - 1.0) * bound).to(dtype=dtype, device=device)
    t = torch.as_tensor(np.asarray(init) if not isinstance(init, Tensor) else init)
    t = t.to(dtype=dtype, device=device)
    if t.shape == (dim,):
        t = t.expand(n_nodes, dim)
    if t.shape != (n_nodes, dim):
        raise ValueError(f"init must be ({n_nodes}, {dim}) or ({dim},), got {tuple(t.shape)}")
    return t.clone()


def fedrelax_linear(
    problem: LinearProblem,
    alpha: Any,
    *,
    n_iter: int = 500,
    lr: float = 0.01,
    solver: Literal["rmsprop", "exact"] = "rmsprop",
    init: str | Tensor | np.ndarray = "uniform",
    seed: GeneratorLike | None = None,
    rmsprop_options: Mapping[str, Any] | None = None,
    callback: LinearCallback | None = None,
    record_every: int = 1,
    progress: bool | None = None,
) -> LinearFedRelaxResult:
    """FedRelax Algorithm 2 for linear models, all nodes in one tensor.

    Parameters
    ----------
    problem
        From :func:`linear_problem` (computations run in its dtype and on its device).
    alpha
        GTV parameter ``alpha`` (a scalar, or one value per node, e.g. to run several
        values at once on a disjoint union of copies of a graph).
    n_iter
        Number ``K`` of iterations (the paper: 500).
    lr
        RMSprop learning rate (the paper: 0.01).
    solver
        ``"rmsprop"``: one RMSprop step (the arithmetic of :class:`torch.optim.RMSprop`)
        on the node objectives (16) per iteration (the paper's PyTorch implementation); ``"exact"``: their closed-form
        minimisers (block Jacobi), see the module docstring.
    init
        Starting weights, see :func:`initial_weights` (default the ``nn.Linear`` uniform draw).
    seed
        Randomness of ``init="uniform"`` (torch or numpy Generator, or int seed).
    rmsprop_options
        RMSprop options as in :class:`torch.optim.RMSprop`: ``alpha`` (0.99), ``eps``
        (1e-8), ``weight_decay`` (0), ``momentum`` (0), ``centered`` (False).
    callback
        ``callback(k, W) -> dict | None`` at ``k = 0`` (the initial weights), every
        ``record_every`` iterations and after the last; the entries form ``history`` rows
        (with ``"iteration": k``).  ``W`` must not be modified.
    record_every
        Spacing of the callback calls.
    progress
        tqdm progress bar (``None``: :func:`networkedfl.progress.show_progress` decides).

    Returns
    -------
    LinearFedRelaxResult
        ``weights`` ``(n, d)`` after ``n_iter`` iterations and the ``history``.
    """
    if isinstance(n_iter, bool) or int(n_iter) != n_iter or n_iter < 0:
        raise ValueError(f"n_iter must be a non-negative integer, got {n_iter!r}")
    if int(record_every) < 1:
        raise ValueError(f"record_every must be positive, got {record_every!r}")
    if solver not in ("rmsprop", "exact"):
        raise ValueError(f"unknown solver {solver!r}; expected 'rmsprop' or 'exact'")
    if solver == "rmsprop":
        check_finite(lr, "lr", sign="positive")
    a = _alpha(alpha, problem)
    w = initial_weights(problem.n_nodes, problem.dim, init, seed,
                        dtype=problem.dtype, device=problem.device)
    system = problem.local_gram + a[:, :, None] * problem.neighbour_gram  # H_i + alpha_i S_i
    history: list[dict[str, Any]] = []

    def record(k: int) -> None:
        if callback is not None:
            history.append({"iteration": k, **dict(callback(k, w) or {})})

    record(0)
    with torch.no_grad():
        if solver == "rmsprop":
            optimiser = RMSprop(w, lr, rmsprop_options)  # torch.optim.RMSprop arithmetic, every node's own
            b = problem.local_moment
            stacked = torch.cat([system, problem.public_gram], dim=2)  # [M_i | G_i], (n, d, 2d)
            d = problem.dim
            for k in tqdm(range(1, int(n_iter) + 1), desc="FedRelax (RMSprop)", leave=False,
                          disable=not show_progress(progress)):
                mg = _matvec(stacked, w)  # M_i w_i and G_i w_i in one batched product
                optimiser.step_(w, 2.0 * (mg[:, :d] - b - a * (problem.adjacency @ mg[:, d:])))
                if k % record_every == 0 or k == n_iter:
                    record(k)
        else:
            inverse = torch.linalg.pinv(system, hermitian=True)
            for k in tqdm(range(1, int(n_iter) + 1), desc="FedRelax (exact)", leave=False,
                          disable=not show_progress(progress)):
                w = _matvec(inverse, problem.local_moment + a * _coupling(problem, w))
                if k % record_every == 0 or k == n_iter:
                    record(k)
    return LinearFedRelaxResult(w.detach().clone(), history)


def fixed_point(
    problem: LinearProblem,
    alpha: Any,
    *,
    rtol: float = 1e-12,
    max_iter: int = 10_000,
) -> Tensor:
    """The common fixed point of both solvers: the coupled stationarity system of (16).

    Solves ``(H_i + alpha S_i) w_i - alpha sum_i' A_ii' G_i' w_i' = b_i`` for all nodes at
    once, an ``(n d) x (n d)`` block system (non-symmetric: block ``(i, i')`` is
    ``-alpha A_ii' G_i'``), matrix-free with GMRES and the block-Jacobi preconditioner
    ``(H_i + alpha S_i)^+``.  Returns ``(n, d)``.  Raises ``RuntimeError`` when GMRES does
    not reach ``rtol``; the system is singular when, e.g., ``alpha = 0`` and ``d > m_i``.
    """
    a = _alpha(alpha, problem)
    n, d = problem.n_nodes, problem.dim
    system = problem.local_gram + a[:, :, None] * problem.neighbour_gram
    precond = torch.linalg.pinv(system, hermitian=True)

    def as_t(v: np.ndarray) -> Tensor:
        return torch.as_tensor(np.asarray(v, float).reshape(n, d), dtype=problem.dtype,
                               device=problem.device)

    def matvec(v: np.ndarray) -> np.ndarray:
        w = as_t(v)
        out = _matvec(system, w) - a * _coupling(problem, w)
        return out.reshape(-1).cpu().numpy().astype(float)

    def psolve(v: np.ndarray) -> np.ndarray:
        return _matvec(precond, as_t(v)).reshape(-1).cpu().numpy().astype(float)

    op = spla.LinearOperator((n * d, n * d), matvec=matvec, dtype=float)
    pre = spla.LinearOperator((n * d, n * d), matvec=psolve, dtype=float)
    rhs = problem.local_moment.reshape(-1).cpu().numpy().astype(float)
    x0 = psolve(rhs)
    sol, info = spla.gmres(op, rhs, x0=x0, M=pre, rtol=rtol, atol=0.0, restart=min(n * d, 200),
                           maxiter=max_iter)
    if info != 0:
        raise RuntimeError(f"GMRES did not converge (info={info}); the system may be singular")
    return as_t(sol)
