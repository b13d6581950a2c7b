"""Federated Averaging (FedAvg) with local SGD, and its cluster-oracle variant FedAvgC.

McMahan et al. 2017, Algorithm 1 (``FederatedAveraging``), as in the lecture (Tham,
"Federated Averaging (FedAvg)" and "FedAvg with local SGD"): in round ``t`` the server

1. selects ``max(1, round(C * N))`` clients at random (``C``: client fraction),
2. sends them the global model ``w_bar(t)``; every selected client ``k`` runs
   ``ClientUpdate``: ``E`` epochs of SGD with batch size ``B`` and step ``eta`` from
   ``w_bar(t)`` (:func:`~networkedfl.algorithms.local_sgd.local_sgd`),
3. averages the returned models weighted by the local sample counts (lecture, "update
   global weights")::

       w_bar(t+1) = sum_{k in S_t} (n_k / n_S) w_k(t+1),   n_S = sum_{k in S_t} n_k.

With ``groups`` (one label per client) each group has its own global model and the
selection and averaging happen within groups: with the true clusters as groups this is
FedAvgC, the oracle benchmark of the GTV paper (Sec. VI-A2, Fig. 2).  All selected
clients of all groups train in one batched call.

This is the SGD form of FedAvg.  The proximal form used in the GTV paper's own
comparisons is :func:`~networkedfl.gtv.fedavg_proximal`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..nn import (
    ClientData,
    DeviceLike,
    FlatModel,
    GeneratorLike,
    make_generator,
)
from ._result import (
    Callback,
    FederatedResult,
    _check_groups,
    _check_participants,
    _check_positive_int,
    _initial_rows,
    _itemsize,
    _Recorder,
)
from .local_sgd import local_sgd

__all__ = ["fedavg", "group_average", "sample_clients"]


def _check_fraction(client_fraction: float) -> float:
    if not 0.0 < client_fraction <= 1.0:
        raise ValueError(f"client_fraction C must be in (0, 1], got {client_fraction!r}")
    return float(client_fraction)


def sample_clients(
    groups: Tensor,
    n_groups: int,
    client_fraction: float,
    participants: Tensor,
    seed: GeneratorLike | None,
) -> Tensor:
    """Boolean mask ``(n,)`` of the clients selected for one round.

    In every group ``g`` with ``p_g`` participating clients, ``k_g = min(p_g, max(1,
    round(C * p_g)))`` of them are drawn uniformly without replacement (``round`` half
    up); McMahan et al. 2017 select ``max(C * K, 1)`` clients per round.  With ``C = 1``
    every participant is selected and nothing is drawn.  Vectorised: one uniform key per
    client, sorted by (group, key), and the first ``k_g`` of each group kept.
    """
    client_fraction = _check_fraction(client_fraction)
    if client_fraction == 1.0:
        return participants.clone()
    gen = make_generator(seed)
    n = groups.shape[0]
    device = groups.device
    keys = torch.rand(n, generator=gen, dtype=torch.float64).to(device)
    keys = keys.masked_fill(~participants, math.inf)
    by_key = torch.argsort(keys)
    order = by_key[torch.sort(groups[by_key], stable=True).indices]
    n_part = torch.bincount(groups[participants], minlength=n_groups)
    take = torch.clamp(torch.floor(client_fraction * n_part + 0.5).to(torch.int64), min=1)
    take = torch.minimum(take, n_part)
    sizes = torch.bincount(groups, minlength=n_groups)
    starts = torch.cumsum(sizes, 0) - sizes
    rank = torch.empty(n, dtype=torch.int64, device=device)
    rank[order] = torch.arange(n, device=device) - starts[groups[order]]
    return (rank < take[groups]) & participants


def group_average(values: Tensor, weights: Tensor, groups: Tensor, previous: Tensor) -> Tensor:
    """Weighted average of ``values`` within each group; empty groups keep ``previous``.

    Returns ``(G, P)`` with row ``g`` equal to ``sum_{i: groups_i = g} weights_i values_i /
    sum_{i: groups_i = g} weights_i`` (the server step of FedAvg, IFCA and FedSGD), or
    ``previous[g]`` when the group's total weight is zero.
    """
    n_groups = previous.shape[0]
    num = torch.zeros_like(previous).index_add_(0, groups, values * weights[:, None])
    den = torch.zeros(n_groups, dtype=previous.dtype, device=previous.device)
    den = den.index_add_(0, groups, weights)
    safe = torch.where(den > 0, den, torch.ones_like(den))
    return torch.where(den[:, None] > 0, num / safe[:, None], previous)


def fedavg(
    model: FlatModel,
    data: ClientData,
    *,
    n_rounds: int,
    local_epochs: int,
    batch_size: int | None,
    lr: float,
    client_fraction: float = 1.0,
    groups: Any = None,
    participants: Any = None,
    init: Tensor | np.ndarray | None = None,
    seed: GeneratorLike | None = None,
    callback: Callback | None = None,
    device: DeviceLike = "cpu",
    dtype: torch.dtype = torch.float64,
) -> FederatedResult:
    """FedAvg (McMahan et al. 2017, Algorithm 1); FedAvgC when ``groups`` are given.

    Parameters
    ----------
    model
        Model as a function of a flat parameter vector.
    data
        Local datasets of the ``n`` clients (padding carries weight 0).
    n_rounds
        Communication rounds ``T``.
    local_epochs, batch_size, lr
        ``E``, ``B`` (``None``: full batch) and ``eta`` of ``ClientUpdate``.
    client_fraction
        ``C``: each round ``max(1, round(C * n_g))`` clients of every group are selected.
    groups
        Optional integer label per client ``(n,)``: one global model per group (FedAvgC
        with the true clusters).  ``None``: a single global model.
    participants
        Optional boolean mask ``(n,)`` of clients that may be selected (e.g. the sampling
        set ``M`` of the GTV experiments; ``n_g`` counts participants only; at least one).
        The others never train but still receive their group's final model.
    init
        Starting global model: ``(P,)`` for all groups or ``(G, P)``; ``None``: one draw
        of ``model.init``.
    seed
        Randomness for client sampling, mini-batch orders and a random ``model.init``
        (torch or numpy Generator, or int seed).  Needed only when something is random.
    callback
        ``callback(RoundState) -> dict | None`` after each round; its entries are added to
        the round's ``history`` row.
    device, dtype
        Where and in which precision to compute (default CPU, float64).

    Returns
    -------
    FederatedResult
        ``client_params`` (each client's group model), ``global_params`` ``(G, P)``,
        ``assignment`` (the groups), ``history``, and ``log`` with ``upload="models"``:
        per round ``|S_t|`` messages down (the global model) and ``|S_t|`` up (the local
        models), ``|S_t| * P`` floats each way.
    """
    device = torch.device(device)
    n_rounds = _check_positive_int(n_rounds, "n_rounds")
    _check_fraction(client_fraction)
    data = data.to(dtype, device)
    n = data.n_clients
    gen = make_generator(seed)
    group_of, n_groups = _check_groups(groups, n, device)
    allowed = _check_participants(participants, n, device)
    global_params = _initial_rows(model, init, n_groups, gen, dtype, device, "group")
    n_local = data.n_samples
    rec = _Recorder(callback, _itemsize(dtype))
    for t in range(1, n_rounds + 1):
        selected = sample_clients(group_of, n_groups, client_fraction, allowed, gen)
        idx = torch.nonzero(selected).squeeze(1)
        part = data if idx.numel() == n else data.subset(idx)
        local = local_sgd(
            model,
            global_params[group_of[idx]],
            part,
            epochs=local_epochs,
            batch_size=batch_size,
            lr=lr,
            seed=gen,
        )
        global_params = group_average(local, n_local[idx], group_of[idx], global_params)
        rec.record_server_round(
            t, upload="models", global_params=global_params, group_of=group_of, selected=selected
        )
    return rec.server_result(global_params, group_of)
