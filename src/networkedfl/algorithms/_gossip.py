"""Gossip averaging and peer-to-peer (serverless) FedAvg over an empirical graph.

The lecture's peer-to-peer architecture (Tham, "Federated Learning: Peer-to-Peer
Model", steps 1-4): there is no coordinator; every participant trains its local model,
sends it to its neighbours and aggregates what it receives.  The aggregation is one
step of linear gossip averaging ``W <- W_mix @ W`` with a symmetric, doubly stochastic
mixing matrix supported on the graph (Xiao & Boyd 2004, "Fast linear iterations for
distributed averaging"; the local-SGD-then-gossip round is decentralised parallel SGD,
Lian et al. 2017).

A symmetric, doubly stochastic ``W_mix`` preserves the network average
``w_bar = (1/n) sum_k w_k`` exactly (``1^T W_mix = 1^T``) and, on a connected graph with
positive diagonal, contracts every other eigen-direction, so repeated gossip converges
to ``w_bar``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from .._validation import check_int
from ..graphs import GraphLike, as_graph
from ..nn import DEFAULT_DTYPE, ClientData, DeviceLike, FlatModel
from ._local_sgd import local_sgd
from .aggregate import consensus_distance, mix
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = [
    "MIXING_RULES",
    "consensus_distance",
    "decentralized_fedavg",
    "gossip_average",
    "mixing_matrix",
    "to_torch_sparse",
]
# consensus_distance lives in .aggregate (shared with DFL); importable from here as before

MIXING_RULES = ("metropolis", "max_degree", "laplacian")


def _symmetric_offdiagonal(n: int, edges: np.ndarray, values: np.ndarray) -> sp.csr_matrix:
    i, j = edges[:, 0], edges[:, 1]
    return sp.csr_matrix(
        (np.concatenate([values, values]), (np.concatenate([i, j]), np.concatenate([j, i]))),
        shape=(n, n),
    )


def mixing_matrix(
    graph: GraphLike, rule: str = "metropolis", alpha: float | None = None
) -> sp.csr_matrix:
    """Symmetric, doubly stochastic gossip matrix supported on the graph's edges.

    Off-diagonal entries (on edges ``{i, j}``; every other pair is 0):

    * ``"metropolis"`` (Metropolis-Hastings): ``W_ij = 1 / (1 + max(deg_i, deg_j))``;
    * ``"max_degree"``: ``W_ij = 1 / (1 + max_k deg_k)``;
    * ``"laplacian"``: ``W = I - alpha L`` with the weighted Laplacian ``L``, i.e.
      ``W_ij = alpha A_ij``; default ``alpha = 1 / (max_k d_k + 1)`` with the weighted
      degrees ``d_k``.

    The diagonal fills each row to 1: ``W_ii = 1 - sum_{j != i} W_ij``, which is positive
    for the first two rules and non-negative for the third.  Degrees are unweighted for the
    first two rules (an edge of weight 0 still is a communication link); for the Laplacian
    rule an edge of weight 0 carries no weight and counts as a non-edge.

    Parameters
    ----------
    graph
        The communication graph.
    rule
        One of :data:`MIXING_RULES`.
    alpha
        Step of the Laplacian rule; must satisfy ``0 < alpha <= 1 / max_k d_k`` so that
        ``W`` is non-negative.  Only allowed with ``rule="laplacian"``.

    Returns
    -------
    scipy.sparse.csr_matrix
        ``(n, n)`` without explicit zeros.
    """
    graph = as_graph(graph)  # an EmpiricalGraph, a networkx graph or an adjacency matrix
    if rule not in MIXING_RULES:
        raise ValueError(f"unknown mixing rule {rule!r}; expected one of {', '.join(MIXING_RULES)}")
    if alpha is not None and rule != "laplacian":
        raise ValueError(f"alpha is a parameter of the 'laplacian' rule, not of {rule!r}")
    n = graph.n_nodes
    if rule == "laplacian":
        wdeg = graph.weighted_degrees
        top = float(wdeg.max()) if n else 0.0
        if alpha is None:
            alpha = 1.0 / (top + 1.0)
        elif not (np.isfinite(alpha) and alpha > 0 and alpha * top <= 1.0 + 1e-12):
            raise ValueError(
                f"laplacian rule: alpha must lie in (0, 1/max weighted degree = "
                f"{1.0 / top if top > 0 else float('inf')}], got {alpha}"
            )
        keep = graph.weights > 0
        off = _symmetric_offdiagonal(n, graph.edges[keep], float(alpha) * graph.weights[keep])
    else:
        deg = graph.degrees
        i, j = graph.edges[:, 0], graph.edges[:, 1]
        if rule == "metropolis":
            values = 1.0 / (1.0 + np.maximum(deg[i], deg[j]))
        else:
            values = np.full(graph.n_edges, 1.0 / (1.0 + (deg.max() if n else 0.0)))
        off = _symmetric_offdiagonal(n, graph.edges, values)
    diag = 1.0 - np.asarray(off.sum(axis=1)).ravel()
    w = (off + sp.diags(diag)).tocsr()
    w.eliminate_zeros()
    w.sort_indices()
    return w


def to_torch_sparse(
    matrix: sp.spmatrix, *, dtype: torch.dtype = DEFAULT_DTYPE, device: DeviceLike = "cpu"
) -> Tensor:
    """A scipy sparse matrix as a coalesced torch COO tensor."""
    coo = sp.coo_matrix(matrix)
    indices = torch.as_tensor(np.stack([coo.row, coo.col]).astype(np.int64))
    values = torch.as_tensor(coo.data)
    out = torch.sparse_coo_tensor(
        indices, values, coo.shape, dtype=dtype, device=device, check_invariants=True
    )
    return out.coalesce()


def _as_scipy_matrix(matrix: Any, *, name: str = "matrix") -> sp.csr_matrix:
    """A 2-D scipy sparse matrix, numpy array or torch tensor (strided or sparse) as a
    float64 scipy CSR matrix.  A sparse tensor stays sparse on the way (its stored entries
    only); a dense input is already ``(n, n)`` and is compressed."""
    if isinstance(matrix, Tensor):
        t = matrix.detach().cpu()
        if t.layout != torch.strided:
            if t.dim() != 2:
                raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
            t = t.to_sparse_coo().coalesce()
            rows, cols = t.indices().numpy()
            return sp.csr_matrix((t.values().double().numpy(), (rows, cols)), shape=tuple(t.shape))
        matrix = t.double().numpy()
    if sp.issparse(matrix):
        return sp.csr_matrix(matrix, dtype=np.float64)
    dense = np.asarray(matrix, dtype=np.float64)
    if dense.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {dense.shape}")
    return sp.csr_matrix(dense)


def gossip_average(
    values: Tensor | np.ndarray, mixing: sp.spmatrix | Tensor, n_steps: int
) -> Tensor | np.ndarray:
    """``n_steps`` synchronous gossip steps ``x <- W x`` on values ``(n, ...)``.

    Returns the same type as ``values`` (a numpy array is mixed with scipy, a tensor with
    a torch sparse product; ``mixing`` may be either kind).  Every step preserves the
    average over the first axis when ``W`` is doubly stochastic.
    """
    n_steps = check_int(n_steps, "n_steps", minimum=0)
    if isinstance(values, Tensor):
        w = (
            mixing
            if isinstance(mixing, Tensor)
            else to_torch_sparse(mixing, dtype=values.dtype, device=values.device)
        )
        flat = values.reshape(values.shape[0], -1)
        for _ in range(n_steps):
            flat = mix(w, flat)
        return flat.reshape(values.shape)
    arr = np.asarray(values, dtype=float)
    mixing = mixing if sp.issparse(mixing) else _as_scipy_matrix(mixing, name="mixing")
    flat = arr.reshape(arr.shape[0], -1)
    for _ in range(n_steps):
        flat = mixing @ flat
    return np.asarray(flat).reshape(arr.shape)


def decentralized_fedavg(
    model: FlatModel,
    data: ClientData,
    graph: GraphLike,
    options: TrainingOptions | None = None,
    *,
    rule: str = "metropolis",
    alpha: float | None = None,
    gossip_steps: int = 1,
    **overrides: Any,
) -> FederatedResult:
    """Peer-to-peer FedAvg: local SGD, then gossip with the neighbours, every round.

    Round ``t`` (lecture, peer-to-peer steps 2-4)::

        w_k <- ClientUpdate(k, w_k)              for all clients k (local_sgd)
        W   <- W_mix^s @ W                       s = gossip_steps, W = (w_1; ...; w_n)

    Parameters
    ----------
    model, data
        Model and local datasets of the ``graph.n_nodes`` clients.
    graph
        Communication graph: client ``k`` exchanges models with its neighbours only.
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`.  Required: ``n_rounds``,
        ``local_epochs``, ``batch_size``, ``lr`` (rounds and local training, as in
        :func:`~networkedfl.algorithms.fedavg`).  Optional: ``init`` (``(P,)``
        common start or ``(n, P)``), ``seed``, ``callback``, ``device``, ``dtype``.
    rule, alpha
        Mixing matrix (:func:`mixing_matrix`).
    gossip_steps
        Gossip exchanges per round.

    Returns
    -------
    FederatedResult
        ``client_params`` ``(n, P)`` every client's own model; ``global_params`` the
        network average ``(1, P)``; ``assignment`` zeros.  Each gossip step sends one model
        along each direction of every edge with a non-zero mixing weight (``2 E``
        messages of ``P`` floats, counted in ``messages_up``; there is no download).
        History rows hold ``consensus_distance`` after the round's gossip.
    """
    graph = as_graph(graph)  # an EmpiricalGraph, a networkx graph or an adjacency matrix
    gossip_steps = check_int(gossip_steps, "gossip_steps", minimum=0)
    run = start_run(model, data, options, overrides, "decentralized_fedavg",
                    required=("n_rounds", "local_epochs", "batch_size", "lr"))
    opts, n = run.options, run.n_clients
    if graph.n_nodes != n:
        raise ValueError(f"the graph has {graph.n_nodes} nodes but there are {n} clients")
    # gossip reaches consensus only on a connected graph; the Laplacian rule mixes by weight
    graph.check(purpose="decentralized_fedavg", require_connected=True, allow_zero_weights=rule != "laplacian")
    w_mix = mixing_matrix(graph, rule, alpha)
    messages_per_step = int(w_mix.nnz - np.count_nonzero(w_mix.diagonal()))
    w_torch = to_torch_sparse(w_mix, dtype=run.dtype, device=run.device)
    params = run.initial_rows(n, "client")
    for t in run.rounds():
        params = local_sgd(model, params, run.data, epochs=opts.local_epochs,
                           batch_size=opts.batch_size, lr=opts.lr, seed=run.seed)
        for _ in range(gossip_steps):
            params = mix(w_torch, params)
        run.record_gossip(t, params, messages_per_step * gossip_steps)
    return run.result(params, params.mean(dim=0, keepdim=True), run.zeros)
