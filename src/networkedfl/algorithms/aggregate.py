"""Aggregation kernels shared by the torch methods: client sampling, averaging, mixing.

Pure functions of tensors (no state, no recording), imported by the methods that need them,
as Flower's ``aggregate`` module is by its strategies:

* :func:`sample_clients`: the server's random selection of a round (McMahan et al. 2017,
  ``max(C * K, 1)`` clients), within every group at once;
* :func:`group_average`: the weighted average within each group (FedAvg's server step, also
  FedSGD's and IFCA's), ``sum_i n_i w_i / sum_i n_i`` over a group's clients;
* :func:`mix`: one gossip product ``W @ values`` with a sparse or dense mixing matrix
  (decentralised FedAvg, DFL-SGD, DFL-GT) and :func:`consensus_distance`, the spread that
  gossip contracts;
* :func:`scaffold_controls`: SCAFFOLD's new client control variates (Karimireddy et al.
  2020, Algorithm 1, option II);
* :func:`server_optimizer_step`: the adaptive server step of FedAdagrad, FedAdam and FedYogi
  (Reddi et al. 2021, Algorithm 2) on the pseudo-gradient ``mean(w_i) - w``, and plain server
  SGD.
"""

from __future__ import annotations

import math

from .._lazy import missing_extra

try:
    import torch
    from torch import Tensor
except ModuleNotFoundError as _error:
    raise (missing_extra(_error, "networkedfl.algorithms.aggregate") or _error) from _error

from ..nn import GeneratorLike
from ..seeding import make_generator

__all__ = ["SERVER_OPTIMIZERS", "check_fraction", "consensus_distance", "group_average", "mix",
           "sample_clients", "scaffold_controls", "server_optimizer_step"]

#: The server optimisers of :func:`server_optimizer_step` (FedOpt, Reddi et al. 2021).
SERVER_OPTIMIZERS = ("sgd", "adagrad", "adam", "yogi")


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


def scaffold_controls(client: Tensor, server: Tensor, start: Tensor, end: Tensor, steps: Tensor,
                      lr: float) -> Tensor:
    """SCAFFOLD's updated client control variates, option II of Karimireddy et al. 2020
    (Algorithm 1, line 12)::

        c_i+ = c_i - c + (x - y_i) / (K_i eta_l)

    ``client`` ``(k, P)`` the ``c_i``, ``server`` ``(P,)`` the ``c``, ``start`` the model ``x``
    the clients started from (``(P,)`` or ``(k, P)``), ``end`` ``(k, P)`` their models ``y_i``
    after ``steps`` ``(k,)`` local steps ``K_i`` of size ``lr``.  A client that took no step
    keeps its ``c_i``.
    """
    k = steps.to(end.dtype)[:, None]
    updated = client - server + (start - end) / (torch.where(k > 0, k, torch.ones_like(k)) * lr)
    return torch.where(k > 0, updated, client)


def server_optimizer_step(params: Tensor, delta: Tensor, m: Tensor, v: Tensor, *, optimizer: str,
                          lr: float, beta1: float, beta2: float,
                          tau: float) -> tuple[Tensor, Tensor, Tensor]:
    """One server step of FedOpt on the pseudo-gradient ``delta = mean_i(w_i) - w``:
    ``(params, m, v)`` after it.

    Reddi et al. 2021, "Adaptive Federated Optimization", Algorithm 2::

        m_t = beta1 m_{t-1} + (1 - beta1) delta
        v_t = v_{t-1} + delta^2                                         (FedAdagrad)
        v_t = beta2 v_{t-1} + (1 - beta2) delta^2                       (FedAdam)
        v_t = v_{t-1} - (1 - beta2) delta^2 sign(v_{t-1} - delta^2)     (FedYogi)
        w_{t+1} = w_t + eta m_t / (sqrt(v_t) + tau)

    (no bias correction, as in the paper); ``optimizer="sgd"``: ``w + eta delta`` (FedAvg
    for ``eta = 1``), ``m`` and ``v`` unchanged.
    """
    if optimizer == "sgd":
        return params + lr * delta, m, v
    square = delta * delta
    m = beta1 * m + (1.0 - beta1) * delta
    if optimizer == "adagrad":
        v = v + square
    elif optimizer == "adam":
        v = beta2 * v + (1.0 - beta2) * square
    elif optimizer == "yogi":
        v = v - (1.0 - beta2) * square * torch.sign(v - square)
    else:
        raise ValueError(f"unknown server optimizer {optimizer!r}; expected one of {SERVER_OPTIMIZERS}")
    return params + lr * m / (torch.sqrt(v) + tau), m, v
