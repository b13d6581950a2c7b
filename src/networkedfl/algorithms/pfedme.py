"""pFedMe: personalised federated learning with Moreau envelopes (Dinh, Tran & Nguyen 2020).

The personalised-FL baseline of the GTV paper's MNIST comparison (Fig. 6).  Every client
``i`` keeps a personalised model ``theta_i`` tied to a local copy ``w_i`` of the global
model by the Moreau envelope

    F_i(w) = min_theta  f_i(theta) + (lam / 2) ||theta - w||^2        (pFedMe eq. (2)-(3)).

Algorithm 1 of the paper, for all clients at once: in round ``t`` the server sends ``w^t``;
every client sets ``w_i = w^t`` and repeats ``R`` times (its "local rounds")

1. draw a mini-batch ``D_i`` of ``|D|`` samples;
2. approximately solve ``theta_i = argmin_theta f_i(theta; D_i) + (lam/2)||theta - w_i||^2``
   by ``K`` gradient steps ``theta <- theta - p_lr (grad f_i(theta; D_i) + lam (theta - w_i))``
   (continuing from the previous ``theta_i``, as in the authors' implementation);
3. ``w_i <- w_i - eta lam (w_i - theta_i)``;

then the server averages the returned ``w_i`` of the selected clients (weighted by their
sample counts) and moves ``w^{t+1} = (1 - beta) w^t + beta * average``.  The personalised
models ``theta_i`` are the ones evaluated.  The steps are single ``vmap(grad(...))`` calls
over all clients; the Python loops run over rounds, local rounds and inner steps.

Defaults of the authors' repository (``CharlieDinh/pFedMe``, README, MNIST): batch 20,
``eta = 0.005``, ``p_lr = 0.09``, ``beta = 1``, ``lam = 15``, ``R = 20``, ``K = 5``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.func import grad, vmap

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
    _check_participants,
    _check_positive_int,
    _initial_rows,
    _itemsize,
    _Recorder,
)
from .fedavg import _check_fraction, sample_clients
from .local_sgd import epoch_order

__all__ = ["pfedme", "personalised_steps"]


def personalised_steps(
    model: FlatModel,
    theta: Tensor,
    anchor: Tensor,
    features: Tensor,
    targets: Tensor,
    weights: Tensor,
    *,
    lam: float,
    lr: float,
    steps: int,
) -> Tensor:
    """``steps`` gradient steps on ``f_i(theta; batch) + (lam/2)||theta - anchor_i||^2``, all clients.

    This is the inner solver of pFedMe (its eq. (7)); with a convex quadratic ``f_i`` and
    enough steps it converges to the exact proximal point.
    """
    step_grad = vmap(grad(model.loss))
    for _ in range(int(steps)):
        theta = theta - lr * (step_grad(theta, features, targets, weights) + lam * (theta - anchor))
    return theta


def pfedme(
    model: FlatModel,
    data: ClientData,
    *,
    n_rounds: int,
    local_rounds: int = 20,
    inner_steps: int = 5,
    batch_size: int = 20,
    lr: float = 0.005,
    personal_lr: float = 0.09,
    lam: float = 15.0,
    beta: float = 1.0,
    client_fraction: float = 1.0,
    participants: Any = None,
    init: Tensor | np.ndarray | None = None,
    seed: GeneratorLike | None = None,
    callback: Callback | None = None,
    device: DeviceLike = "cpu",
    dtype: torch.dtype = torch.float64,
) -> FederatedResult:
    """pFedMe (Dinh et al. 2020, Algorithm 1) for all clients at once.

    Parameters
    ----------
    model, data
        Model and local datasets (padding carries weight 0).
    n_rounds
        Global rounds ``T``.
    local_rounds
        ``R``: mini-batches (local updates of ``w_i``) per round.
    inner_steps
        ``K``: gradient steps of the personalised problem per mini-batch.
    batch_size
        ``|D|``: samples per mini-batch (drawn without replacement, a fresh draw each
        local round).
    lr, personal_lr
        ``eta`` (local update of ``w_i``) and the personalised step size.
    lam
        Regularisation ``lambda`` of the Moreau envelope.
    beta
        Server mixing parameter (1: plain averaging).
    client_fraction, participants
        Clients aggregated per round, as in :func:`~networkedfl.algorithms.fedavg.fedavg`
        (every participant trains; the server averages a random subset).
    init
        Starting global model ``(P,)``; ``None``: one draw of ``model.init``.
    seed, callback, device, dtype
        As in :func:`~networkedfl.algorithms.fedavg.fedavg`; ``RoundState.client_params``
        are the personalised models ``theta_i``.

    Returns
    -------
    FederatedResult
        ``client_params`` the personalised models ``theta_i``; ``global_params`` ``(1, P)``
        the global model; ``assignment`` zeros.  The log counts ``|S_t|`` model uploads and
        one download per participating client per round.
    """
    device = torch.device(device)
    n_rounds = _check_positive_int(n_rounds, "n_rounds")
    local_rounds = _check_positive_int(local_rounds, "local_rounds", allow_zero=False)
    inner_steps = _check_positive_int(inner_steps, "inner_steps", allow_zero=False)
    batch_size = _check_positive_int(batch_size, "batch_size", allow_zero=False)
    _check_fraction(client_fraction)
    for name, value in (("lr", lr), ("personal_lr", personal_lr), ("lam", lam)):
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value!r}")
    if not 0 < beta <= 2:
        raise ValueError(f"beta must be in (0, 2], got {beta!r}")
    data = data.to(dtype, device)
    n = data.n_clients
    gen = make_generator(seed)
    allowed = _check_participants(participants, n, device, allow_none=True)
    global_w = _initial_rows(model, init, 1, gen, dtype, device, "server")[0]
    theta = global_w.expand(n, -1).clone()
    groups = torch.zeros(n, dtype=torch.int64, device=device)
    rows = torch.arange(n, device=device)[:, None]
    x, y, w = data.features, data.targets, data.sample_weights
    n_local = data.n_samples
    take = min(batch_size, data.max_samples)
    rec = _Recorder(callback, _itemsize(dtype))
    p = model.n_params
    trains = allowed
    for t in range(1, n_rounds + 1):
        local_w = global_w.expand(n, -1).clone()
        theta = torch.where(trains[:, None], global_w.expand(n, -1), theta)
        for _ in range(local_rounds):
            order = epoch_order(w, gen)[:, :take]
            xb, yb, wb = x[rows, order], y[rows, order], w[rows, order]
            theta_new = personalised_steps(
                model, theta, local_w, xb, yb, wb, lam=lam, lr=personal_lr, steps=inner_steps
            )
            theta = torch.where(trains[:, None], theta_new, theta)
            local_w = local_w - lr * lam * (local_w - theta)
        selected = sample_clients(groups, 1, client_fraction, allowed, gen)
        weights = torch.where(selected, n_local, torch.zeros_like(n_local))
        total = weights.sum()
        if total > 0:
            average = (weights[:, None] * local_w).sum(dim=0) / total
            global_w = (1.0 - beta) * global_w + beta * average
        s, r = int(selected.sum()), int(trains.sum())
        rec.record(
            t,
            upload="models",
            download="models",
            clients=r,
            messages_up=s,
            messages_down=r,
            floats_up=s * p,
            floats_down=r * p,
            client_params=theta,
            global_params=global_w[None],
            selected=selected,
            assignment=groups,
        )
    return FederatedResult(theta, global_w[None], groups, rec.history, rec.log)
