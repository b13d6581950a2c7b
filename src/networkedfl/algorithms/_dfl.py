"""Decentralised federated learning: DFL-SGD and DFL-GT (the chapter, Sec. 10.2, Algorithm 1).

``n`` clients on a communication graph hold models ``theta_i`` (the rows of one ``(n, P)``
matrix) and minimise ``(1/n) sum_i f_i`` subject to consensus, problem (P1), eq. (10.1).
Every iteration ``t`` each client draws a mini-batch and computes ``g_i^t =
grad_hat f_i(theta_i^t)``, eq. (10.2); every ``tau`` iterations (``mod(t, tau) = 0``) the
clients also average with their neighbours through a doubly stochastic mixing matrix ``W``
(:func:`~networkedfl.algorithms.mixing_matrix`).

DFL-SGD, eqs. (10.3)-(10.4) (``order="dsgd"``, the chapter's form)::

    theta^{t+1} = W theta^t - alpha^t g^t      if mod(t, tau) = 0
    theta^{t+1} =   theta^t - alpha^t g^t      otherwise

``order="atc"`` (adapt-then-combine) mixes after the gradient step instead,
``theta^{t+1} = W (theta^t - alpha^t g^t)`` when ``mod(t + 1, tau) = 0``: with ``W =
11^T/n`` a round of ``tau`` steps is then exactly one FedAvg round of ``tau`` local steps
(the literal form (10.4) evaluates the gradient at the un-mixed ``theta_i^t`` and is not).

DFL-GT, gradient tracking, eqs. (10.5)-(10.6)::

    theta^{t+1} = W theta^t - alpha^t v^t                       (plain theta^t off rounds)
    v^{t+1}     = W v^t + g^{t+1} - g^t                          (plain v^t off rounds)

where ``v`` is the tracker (the chapter's ``vartheta``).  The chapter initialises the tracker
at 0; with the gradient before the first iteration also taken as 0, the recursion's first
update gives ``v^0 = 0 + g^0 - 0 = g^0``, which is what is run.  Then, ``W`` being doubly
stochastic, ``mean_i v_i^t = mean_i g_i^t`` at every step (the tracker follows the network's
average stochastic gradient).  (Starting the recursion from ``v^0 = 0`` with ``g^{-1} = g^0``
would keep ``mean v^t = mean g^t - mean g^0`` forever, i.e. the method would stop where the
average gradient returns to its initial value.)

Everything is batched over clients: one ``vmap(grad(...))`` call per step and one sparse
product with ``W`` per gossip (``W`` is never densified: memory and time ``O(n P + nnz(W))``,
so a 10^6-node ring fits in a few GiB).  A per-client mask freezes parameters
(:func:`~networkedfl.nn.freeze`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from .._validation import check_int, renamed_keywords
from ..graphs import EmpiricalGraph, as_graph, is_networkx_graph
from ..nn import (
    DEFAULT_DTYPE,
    DeviceLike,
    FlatModel,
    GeneratorLike,
    StepSize,
    batch_gradients,
    freeze,
    make_generator,
    step_size,
)
from ._gossip import _as_scipy_matrix, mixing_matrix, to_torch_sparse
from .aggregate import mix
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = [
    "DFLState",
    "check_doubly_stochastic",
    "dfl_gt",
    "dfl_iterates",
    "dfl_sgd",
    "mix",
    "mixing_operator",
]

Method = Literal["sgd", "gt"]
Order = Literal["dsgd", "atc"]


def check_doubly_stochastic(matrix: Any, atol: float = 1e-10) -> None:
    """Raise ``ValueError`` unless ``matrix`` is square, finite, non-negative, ``W 1 = 1``
    and ``1^T W = 1^T`` (the chapter's conditions on the mixing matrix, Sec. 10.2).

    ``matrix`` is scipy sparse, a numpy array or a torch tensor (strided or sparse).  The
    check is sparse (row and column sums of the stored entries), so an ``(n, n)`` matrix
    with ``nnz`` entries costs ``O(n + nnz)`` memory; the error names the first offending
    entry, row or column.  Sums are compared with ``numpy.isclose(sums, 1, atol=atol)``.
    """
    _checked_mixing_matrix(matrix, atol)


def _checked_mixing_matrix(matrix: Any, atol: float = 1e-10) -> sp.csr_matrix:
    """``matrix`` as a float64 scipy CSR matrix, checked by :func:`check_doubly_stochastic`."""
    w = _as_scipy_matrix(matrix, name="the mixing matrix")
    if w.shape[0] != w.shape[1]:
        raise ValueError(f"the mixing matrix must be square, got shape {w.shape}")
    coo = w.tocoo()
    bad = ~np.isfinite(coo.data)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"the mixing matrix has entries that are not finite, e.g. "
                         f"W[{coo.row[k]}, {coo.col[k]}] = {coo.data[k]}")
    bad = coo.data < -atol
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"the mixing matrix has negative entries, e.g. ({coo.row[k]}, {coo.col[k]}): "
                         f"{coo.data[k]:.6g}")
    wrong = []
    for kind, axis in (("row", 1), ("column", 0)):
        sums = np.asarray(w.sum(axis=axis)).ravel()
        off = ~np.isclose(sums, 1.0, atol=atol)
        if off.any():
            i = int(np.argmax(off))
            wrong.append(f"{kind} {i} sums to {sums[i]:.6g} ({int(off.sum())} {kind}s off)")
    if wrong:
        raise ValueError("the mixing matrix must be doubly stochastic (W 1 = 1 and 1^T W = 1^T): "
                         + "; ".join(wrong))
    return w


def mixing_operator(
    graph: EmpiricalGraph | sp.spmatrix | np.ndarray | Tensor,
    *,
    rule: str = "metropolis",
    dtype: torch.dtype = DEFAULT_DTYPE,
    device: DeviceLike = "cpu",
) -> tuple[Tensor, int]:
    """The mixing matrix as a sparse torch tensor and the number of messages of one gossip.

    ``graph`` is a communication graph (then ``W = mixing_matrix(graph, rule)``) or an
    explicit ``(n, n)`` matrix (scipy sparse, numpy or torch), checked to be doubly
    stochastic.  Every form becomes a coalesced sparse COO tensor (:func:`to_torch_sparse`),
    so a gossip costs ``O(nnz(W) P)``, never ``O(n^2 P)``.  One gossip sends a model along
    every non-zero off-diagonal entry: that count is returned.
    """
    if is_networkx_graph(graph):  # a matrix here is W itself, not an adjacency
        graph = as_graph(graph, name="graph")
    if isinstance(graph, EmpiricalGraph):
        # consensus needs a connected graph; the Laplacian rule mixes by weight
        graph.check(purpose="DFL", require_connected=True, allow_zero_weights=rule != "laplacian")
        graph = mixing_matrix(graph, rule)
    w = _checked_mixing_matrix(graph)
    coo = w.tocoo()
    messages = int(np.count_nonzero((coo.row != coo.col) & (coo.data != 0)))
    return to_torch_sparse(w, dtype=dtype, device=device), messages


@dataclass(frozen=True, eq=False)
class DFLState:
    """State after iteration ``t - 1`` (i.e. at ``t``): ``params`` ``theta^t``, the latest
    mini-batch gradients ``g^t`` at ``theta^t`` (DFL-GT; for DFL-SGD the gradients used in
    the step that produced ``theta^t``), and the tracker ``v^t`` (DFL-GT, else ``None``)."""

    t: int
    params: Tensor
    gradients: Tensor
    tracker: Tensor | None


def dfl_iterates(
    model: FlatModel,
    data: Any,
    mixing: Tensor,
    *,
    n_steps: int,
    local_steps: int,
    lr: StepSize,
    batch_size: int | None,
    method: Method = "sgd",
    order: Order = "dsgd",
    mask: Tensor | None = None,
    params: Tensor,
    seed: GeneratorLike | None = None,
    mask_average: bool = False,
) -> Iterator[DFLState]:
    """The iterations of DFL-SGD or DFL-GT, one :class:`DFLState` per step.

    Low-level: ``data`` must be a :class:`~.client_batches.BatchSource` in the dtype and
    on the device of ``params`` ``(n, P)``; ``mixing`` a tensor (:func:`mixing_operator`);
    ``mask`` ``(n, P)`` or ``None``.  Use :func:`dfl_sgd` / :func:`dfl_gt` for the
    recorded, round-based runs.  ``mask_average``: see :func:`dfl_sgd`.
    """
    if method not in ("sgd", "gt"):
        raise ValueError(f"method must be 'sgd' or 'gt', got {method!r}")
    if order not in ("dsgd", "atc"):
        raise ValueError(f"order must be 'dsgd' or 'atc', got {order!r}")
    tau = check_int(local_steps, "local_steps", minimum=1)
    gradients = batch_gradients(model)
    gen = make_generator(seed)

    def sample_gradient(theta: Tensor) -> Tensor:
        x, y, w = data.sample(batch_size, gen)
        g = gradients(theta, x, y, w)
        return g if mask is None else g * mask

    if mask is not None and mask_average:
        holders = mix(mixing, mask)  # sum_j W_ij m_j, fixed

        def combine(values: Tensor) -> Tensor:
            mixed = mix(mixing, values * mask) / holders.clamp_min(torch.finfo(values.dtype).tiny)
            return torch.where(holders > 0, mixed, values)
    else:

        def combine(values: Tensor) -> Tensor:
            return mix(mixing, values)

    keep = None if mask is None else mask > 0  # freeze's boolean mask, once
    theta = params.clone()
    if method == "sgd":
        for t in range(int(n_steps)):
            alpha = step_size(lr, t)
            g = sample_gradient(theta)
            if order == "dsgd":
                base = combine(theta) if t % tau == 0 else theta
                new = base - alpha * g
            else:
                new = theta - alpha * g
                if (t + 1) % tau == 0:
                    new = combine(new)
            theta = freeze(new, theta, keep)
            yield DFLState(t + 1, theta, g, None)
        return

    g = sample_gradient(theta)
    tracker = g.clone()  # v^0 = 0 + g^0 - 0 (tracker started at 0, previous gradient 0)
    for t in range(int(n_steps)):
        alpha = step_size(lr, t)
        gossip = t % tau == 0
        new = (combine(theta) if gossip else theta) - alpha * tracker
        theta = freeze(new, theta, keep)
        g_new = sample_gradient(theta)
        tracker = (combine(tracker) if gossip else tracker) + g_new - g
        g = g_new
        yield DFLState(t + 1, theta, g, tracker)


def _run(method: Method, model: FlatModel, data: Any, graph: Any,
         options: TrainingOptions | None, overrides: dict[str, Any], *, rule: str, order: Order,
         mask: Any, mask_average: bool) -> FederatedResult:
    run = start_run(model, data, options, overrides, f"dfl_{method}",
                    required=("n_rounds", "local_steps", "lr", "batch_size"), batches=True)
    opts, n, tau = run.options, run.n_clients, run.options.local_steps
    w_mix, messages_per_gossip = mixing_operator(graph, rule=rule, dtype=run.dtype, device=run.device)
    if w_mix.shape != (n, n):
        raise ValueError(f"the mixing matrix is {tuple(w_mix.shape)} but there are {n} clients")
    mask_t = run.mask(mask)
    params = run.initial_rows(n, "client")
    steps = dfl_iterates(
        model, run.data, w_mix, n_steps=opts.n_rounds * tau, local_steps=tau, lr=opts.lr,
        batch_size=opts.batch_size, method=method, order=order, mask=mask_t, params=params,
        seed=run.seed, mask_average=mask_average,
    )
    for r in run.rounds():
        for _ in range(tau):
            state = next(steps)
        params = state.params
        # DFL-GT gossips the model and the tracker
        run.record_gossip(r, params, messages_per_gossip, upload="models" if method == "sgd" else
                          "models+trackers", vectors=2 if method == "gt" else 1, extra={"step": r * tau})
    return run.result(params, params.mean(dim=0, keepdim=True), run.zeros)


@renamed_keywords(mixing="graph")
def dfl_sgd(
    model: FlatModel,
    data: Any,
    graph: EmpiricalGraph | sp.spmatrix | np.ndarray | Tensor,
    options: TrainingOptions | None = None,
    *,
    rule: str = "metropolis",
    order: Order = "dsgd",
    mask: Any = None,
    mask_average: bool = False,
    **overrides: Any,
) -> FederatedResult:
    """DFL-SGD (the chapter, eqs. (10.3)-(10.4), Algorithm 1): local SGD with gossip every
    ``tau`` steps.

    Parameters
    ----------
    model
        Model as a function of a flat parameter vector (e.g. :func:`~networkedfl.nn.from_module`).
    data
        A :class:`~networkedfl.nn.ClientData`, a :class:`~networkedfl.nn.ClientBatches`
        or any :class:`~networkedfl.nn.BatchSource` (per-client mini-batch sampler).
    graph
        Communication graph (:data:`~networkedfl.graphs.GraphLike`: mixing by ``rule``) or
        an explicit doubly stochastic ``(n, n)`` mixing matrix (scipy sparse, numpy or
        torch; kept sparse, so 10^6 nodes fit: :func:`mixing_operator`).  The name of the
        graph argument everywhere in the package (:func:`decentralized_fedavg`,
        :func:`bigfl`, :class:`~networkedfl.gtv.GTVRegressor`, FedRelax); its former keyword
        ``mixing=`` still works and warns (``FutureWarning``,
        :func:`~networkedfl._validation.renamed_keywords`).
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`.  Required: ``n_rounds``
        (communication rounds; the run has ``n_rounds * local_steps`` iterations ``t``),
        ``local_steps`` (``tau``: gossip at ``mod(t, tau) = 0``), ``lr`` (``alpha^t``: a
        number or a schedule ``t -> alpha^t``, e.g. :func:`~networkedfl.nn.inverse_sqrt`)
        and ``batch_size`` (``m`` of eq. (10.2); ``None``: full local datasets).
        Optional: ``init`` (``(P,)`` common start or ``(n, P)``), ``seed``, ``callback``
        (runs after every round of ``tau`` iterations), ``device``, ``dtype``, ``progress``.
    rule
        Mixing rule when ``graph`` is a graph (:data:`~.gossip.MIXING_RULES`).
    order
        ``"dsgd"``: eq. (10.4) as written; ``"atc"``: gradient step, then mixing (equals
        FedAvg with ``tau`` local steps when ``W = 11^T/n``), see the module docstring.
    mask
        Optional ``(n, P)`` (or ``(P,)``) 0/1 mask: frozen coordinates never change.
    mask_average
        With a mask: a gossip averages every trainable coordinate of client ``i`` over the
        neighbours that train it, ``sum_j W_ij m_j theta_j / sum_j W_ij m_j`` (the same for
        the tracker of DFL-GT), so frozen coordinates (e.g. the zero embedding rows of words
        a neighbour never sees, Sec. 10.5.2) do not drag the average.  ``False``: ``W theta``.

    Returns
    -------
    FederatedResult
        ``client_params`` ``(n, P)``; ``global_params`` the network average; history rows
        with ``consensus_distance`` and ``step`` (iterations so far).
    """
    return _run("sgd", model, data, graph, options, overrides, rule=rule, order=order, mask=mask,
                mask_average=mask_average)


@renamed_keywords(mixing="graph")
def dfl_gt(
    model: FlatModel,
    data: Any,
    graph: EmpiricalGraph | sp.spmatrix | np.ndarray | Tensor,
    options: TrainingOptions | None = None,
    *,
    rule: str = "metropolis",
    mask: Any = None,
    mask_average: bool = False,
    **overrides: Any,
) -> FederatedResult:
    """DFL-GT (the chapter, eqs. (10.5)-(10.6), Algorithm 1): gradient tracking with the
    model and the tracker gossiped every ``tau`` steps.

    Parameters as :func:`dfl_sgd` (there is no ``order``: eq. (10.6) is run as written;
    ``mixing=`` is the former keyword name of ``graph``, still accepted with a warning).
    Each gossip sends the model and the tracker (``upload="models+trackers"``, twice the
    floats of DFL-SGD).
    """
    return _run("gt", model, data, graph, options, overrides, rule=rule, order="dsgd", mask=mask,
                mask_average=mask_average)
