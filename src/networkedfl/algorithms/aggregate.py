"""Aggregation kernels shared by the torch methods: client sampling, averaging, mixing.

Pure functions of tensors (no state, no recording), imported by the methods that need them,
as Flower's ``aggregate`` module is by its strategies:

* :func:`sample_clients`: the server's random selection of a round (McMahan et al. 2017,
  ``max(C * K, 1)`` clients), within every group at once;
* :func:`group_average`: the weighted average within each group (FedAvg's server step, also
  FedSGD's and IFCA's), ``sum_i n_i w_i / sum_i n_i`` over a group's clients;
* :func:`mix`: one gossip product ``W @ values`` with a sparse or dense mixing matrix
  (decentralised FedAvg, DFL-SGD, DFL-GT) and :func:`consensus_distance`, the spread that
  gossip contracts.
"""

from __future__ import annotations

import math

from .._lazy import missing_extra

try:
    import torch
    from torch import Tensor
except ModuleNotFoundError as _error:
    raise (missing_extra(_error, "networkedfl.algorithms.aggregate") or _error) from _error

from ..nn import GeneratorLike, make_generator

__all__ = ["check_fraction", "consensus_distance", "group_average", "mix", "sample_clients"]


def check_fraction(client_fraction: float) -> float:
    """The client fraction ``C`` as a float in ``(0, 1]``; else a ValueError naming it."""
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
    client_fraction = check_fraction(client_fraction)
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


def mix(w: Tensor, values: Tensor) -> Tensor:
    """``W @ values`` for a sparse or dense ``W``."""
    return torch.sparse.mm(w, values) if w.is_sparse else w @ values


def consensus_distance(params: Tensor) -> float:
    """``(1/n) sum_k ||w_k - w_bar||^2`` of the rows of ``params`` ``(n, P)``."""
    centred = params - params.mean(dim=0, keepdim=True)
    return float((centred**2).sum(dim=1).mean())
