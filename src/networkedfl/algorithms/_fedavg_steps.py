"""FedAvg with ``tau`` local mini-batch SGD steps per round (the chapter's FedAvg baseline).

McMahan et al. 2017 (the chapter's [18]) as compared in Figs. 10.1, 10.3 and 10.4 of Lu,
Xing & Yu, "Graph-aware federated learning": every round all clients start from the
global model, take ``tau`` steps ``theta_i <- theta_i - alpha^t grad_hat f_i(theta_i)``
(eq. (10.3), mini-batch gradients (10.2)) and the server averages,

    theta_bar <- sum_i p_i theta_i,      p_i = 1/n (default) or n_i / sum_j n_j.

The step size ``alpha^t`` follows the global iteration count ``t``, as in DFL, so FedAvg,
DFL-SGD and DFL-GT can share a schedule.  With uniform weights a round equals ``tau``
iterations of DFL-SGD in adapt-then-combine order with ``W = 11^T/n``
(:func:`~networkedfl.algorithms.dfl_sgd`, ``order="atc"``).

Differences from :func:`~networkedfl.algorithms.fedavg`: local work counted in
steps rather than epochs, step-size schedules, any per-client mini-batch source (vector or
sequence targets), and a per-client parameter mask (a client's frozen coordinates keep its
own value when the global model arrives; the server averages all clients' values).

Two hooks make the extra baselines step-counted (issue 42): ``correction`` adds a term to
every local gradient (the :data:`~networkedfl.algorithms.Correction` of
:func:`~networkedfl.algorithms.local_sgd`; FedProx's proximal term with the round's start as
anchor, Li et al. 2020, eq. (2)) and ``server_step`` replaces the server's average by a step
from it (FedAdam / FedYogi, Reddi et al. 2021, Algorithm 2); ``round_end`` sees every
round's start and end models (SCAFFOLD's control variates, Karimireddy et al. 2020,
Algorithm 1, line 12).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..nn import FlatModel, batch_gradients, freeze
from ._local_sgd import Correction, local_steps
from .contract import FederatedResult, Run, TrainingOptions, start_run

__all__ = ["fedavg_steps"]

#: The options every method counted in local steps requires.
STEP_OPTIONS = ("n_rounds", "local_steps", "lr", "batch_size")


def fedavg_steps(
    model: FlatModel,
    data: Any,
    options: TrainingOptions | None = None,
    *,
    client_weights: Any = None,
    mask: Any = None,
    mask_average: bool = False,
    groups: Any = None,
    correction: Callable[[Tensor], Correction] | None = None,
    server_step: Callable[[Tensor, Tensor], Tensor] | None = None,
    round_end: Callable[[Tensor, Tensor], None] | None = None,
    **overrides: Any,
) -> FederatedResult:
    """FedAvg: ``tau`` local SGD steps on every client, then the server average.

    Parameters
    ----------
    model, data, options, **overrides
        As in :func:`~networkedfl.algorithms.dfl_sgd` (the same options), except
        ``init``: the starting global model ``(P,)``, or ``(n, P)`` starting models of the
        clients (their frozen coordinates keep these values; the global model starts as
        their average).
    client_weights
        ``(n,)`` non-negative averaging weights (normalised); ``None``: uniform ``1/n``
        (the objective (1/n) sum_i f_i of (P1)); ``"samples"``: local sample counts.
    mask
        Optional ``(n, P)`` 0/1 mask of trainable coordinates per client.
    mask_average
        With a mask: the server averages every coordinate over the clients that train it
        (their weights renormalised; a coordinate no client trains keeps its global value),
        so frozen coordinates, e.g. the zero embedding rows of the words a client never sees
        (Sec. 10.5.2), do not drag the average.  ``False``: all clients' values.
    groups
        Optional ``(n,)`` integer group of every client: the server averages within each
        group (its clients' weights renormalised) and sends each client its group's model.
        The true clusters give the cluster oracle (FedAvg on each cluster's pooled data);
        ``arange(n)`` gives local training (each client alone).  ``None``: one group.
    correction
        ``correction(start) -> Correction``: from the round's starting models ``(n, P)``, a
        term added to every local gradient of the round (``local_sgd``'s ``correction``;
        :func:`~networkedfl.algorithms.proximal_term` ``(mu, start)``: FedProx counted in
        steps, ``mu = 0`` FedAvg bit for bit).  ``None``: plain SGD.
    server_step
        ``server_step(previous, average) -> new``: the global model(s) ``(K, P)`` after a
        round from the previous ones and the (masked) average of the clients
        (:func:`~networkedfl.algorithms.server_optimizer_rule`: FedAdam / FedYogi).
        ``None``: the average (FedAvg).
    round_end
        ``round_end(start, end)``: called with the clients' models ``(n, P)`` at the start
        and the end of every round's local steps, before the server's step (SCAFFOLD's
        control variates).

    Returns
    -------
    FederatedResult
        ``client_params`` every client's copy of the final global model (frozen coordinates
        its own), ``global_params`` ``(1, P)`` (``(K, P)`` with ``K`` groups), ``assignment``
        zeros (the groups with ``groups``).
    """
    run = start_run(model, data, options, overrides, "fedavg_steps", required=STEP_OPTIONS, batches=True)
    return _step_rounds(model, run, client_weights=client_weights, mask=mask, mask_average=mask_average,
                       groups=groups, correction=correction, server_step=server_step, round_end=round_end)


def _step_rounds(model: FlatModel, run: Run, *, client_weights: Any = None, mask: Any = None,
                mask_average: bool = False, groups: Any = None,
                correction: Callable[[Tensor], Correction] | None = None,
                server_step: Callable[[Tensor, Tensor], Tensor] | None = None,
                round_end: Callable[[Tensor, Tensor], None] | None = None,
                personal: Callable[[Tensor], Correction] | None = None,
                personal_steps: int = 0) -> FederatedResult:
    """The rounds of :func:`fedavg_steps` on a started ``run`` (its parameters), and Ditto's
    personal models (:func:`~networkedfl.algorithms.ditto_steps`): with ``personal``, every
    client also keeps a model ``v_i`` that takes ``personal_steps`` steps after the round's
    local steps, on the same schedule positions, fresh mini-batches of the same stream and
    the same mask, with the gradient term ``personal(start)`` (the round's starting models);
    ``client_params`` (result and callback) are then the ``v_i``."""
    opts, source, gen = run.options, run.data, run.seed
    n, p, dtype, device = run.n_clients, run.n_params, run.dtype, run.device
    mask_t = run.mask(mask)
    weights = _client_weights(client_weights, source, n, dtype, device)
    member, group_of = _groups(groups, n, dtype, device)

    def average(theta: Tensor, previous: Tensor | None) -> Tensor:
        if member is not None:  # per-group weighted means, (K, P)
            plain = member.T @ (weights[:, None] * theta) / (member.T @ weights)[:, None]
            if mask_t is None or not mask_average:
                return plain
            mass = member.T @ (weights[:, None] * mask_t)
            held = member.T @ (weights[:, None] * mask_t * theta)
            return torch.where(mass > 0, held / mass.clamp_min(torch.finfo(dtype).tiny),
                               plain if previous is None else previous)
        plain = (weights[:, None] * theta).sum(dim=0, keepdim=True)
        if mask_t is None or not mask_average:
            return plain
        mass = (weights[:, None] * mask_t).sum(dim=0, keepdim=True)
        held = (weights[:, None] * mask_t * theta).sum(dim=0, keepdim=True)
        return torch.where(mass > 0, held / mass.clamp_min(torch.finfo(dtype).tiny),
                           plain if previous is None else previous)

    init = opts.init
    if init is not None and n > 1 and tuple(np.shape(init)) == (n, p):
        clients = run.initial_rows(n, "client")
        glob = average(clients, None)
    else:
        glob = run.initial_rows(1, "server")
        clients = glob.expand(n, -1).clone()
        if member is not None:
            glob = glob.expand(member.shape[1], -1).clone()
    own = clients.clone() if personal is not None else None
    plain_gradients = batch_gradients(model)
    zeros = run.zeros if group_of is None else group_of
    t = 0
    for r in run.rounds():
        start = freeze(glob.expand(n, -1) if member is None else glob[group_of], clients, mask_t)
        gradients = _corrected(plain_gradients, None if correction is None else correction(start), n)
        first = t
        theta, t = local_steps(gradients, start, source,
                               steps=opts.local_steps, batch_size=opts.batch_size, lr=opts.lr,
                               start=t, seed=gen, mask=mask_t)
        if own is not None:  # Ditto: the personal models, from the round's first step position
            own, _ = local_steps(_corrected(plain_gradients, personal(start), n), own, source,
                                 steps=personal_steps, batch_size=opts.batch_size, lr=opts.lr,
                                 start=first, seed=gen, mask=mask_t)
        if round_end is not None:
            round_end(start, theta)
        glob = average(theta, glob) if server_step is None else server_step(glob, average(theta, glob))
        clients = freeze(glob.expand(n, -1) if member is None else glob[group_of], theta, mask_t)
        run.record_exchange(r, clients if own is None else own, glob, zeros, extra={"step": t})
    return run.result(clients if own is None else own, glob, zeros)


def _corrected(gradients: Callable[..., Tensor], correction: Correction | None,
               n: int) -> Callable[[Tensor, tuple[Tensor, ...]], Tensor]:
    """The local gradient of every client, plus ``correction`` of all ``n`` clients if given."""
    if correction is None:
        return lambda th, batch: gradients(th, *batch)
    rows = slice(0, n)
    return lambda th, batch: gradients(th, *batch) + correction(th, rows)


def _groups(spec: Any, n: int, dtype: torch.dtype,
            device: torch.device) -> tuple[Tensor | None, Tensor | None]:
    """One-hot ``(n, K)`` membership and ``(n,)`` group index, or ``(None, None)``."""
    if spec is None:
        return None, None
    g = np.asarray(spec)
    if g.shape != (n,) or not np.issubdtype(g.dtype, np.integer) or (g < 0).any():
        raise ValueError(f"groups must be {n} non-negative integers (one per client), got shape {g.shape}"
                         f" and dtype {g.dtype}")
    _, index = np.unique(g, return_inverse=True)
    group_of = torch.as_tensor(index, dtype=torch.int64, device=device)
    member = torch.nn.functional.one_hot(group_of, int(index.max()) + 1).to(dtype)
    return member, group_of


def _client_weights(
    spec: Any, source: Any, n: int, dtype: torch.dtype, device: torch.device
) -> Tensor:
    if spec is None:
        return torch.full((n,), 1.0 / n, dtype=dtype, device=device)
    if isinstance(spec, str):
        if spec != "samples" or not hasattr(source, "weight_per_node"):
            raise ValueError("client_weights must be None, 'samples' (for datasets) or (n,) weights")
        w = source.weight_per_node.to(dtype=dtype, device=device)
    else:
        w = torch.as_tensor(np.asarray(spec, dtype=float)).to(dtype=dtype, device=device)
    if w.shape != (n,) or bool(torch.any(w < 0)) or not float(w.sum()) > 0:
        raise ValueError(f"client_weights must be {n} non-negative numbers with a positive sum")
    return w / w.sum()
