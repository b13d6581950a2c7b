"""FedSGD: federated gradient averaging (the lecture's "FedSGD (prior to FedAvg)").

Each round (Tham, lecture 9, FedSGD steps 1-4; McMahan et al. 2017, "FedSGD")::

    1. every selected client i computes g_i = grad F_i(w_bar(t))   (one full-batch gradient)
    2. the clients send g_i to the server
    3. w_bar(t+1) = w_bar(t) - eta * sum_{i in S_t} (n_i / n_S) g_i
    4. the server sends the updated model to the clients

With all clients selected and weights ``n_i`` this is exactly full-batch gradient descent
on the pooled data, since ``sum_i (n_i / n) grad F_i = grad (1/n) sum_{all samples} f_j``.
``groups`` gives one model per group, as in :func:`~networkedfl.algorithms.fedavg.fedavg`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..nn import (
    ClientData,
    DeviceLike,
    FlatModel,
    GeneratorLike,
    client_gradients,
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
from .fedavg import _check_fraction, group_average, sample_clients

__all__ = ["fedsgd"]


def fedsgd(
    model: FlatModel,
    data: ClientData,
    *,
    n_rounds: int,
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
    """FedSGD: one weighted gradient-averaging step per round.

    Parameters
    ----------
    model, data
        Model and local datasets, as for :func:`~networkedfl.algorithms.fedavg.fedavg`.
    n_rounds
        Communication rounds ``T`` (= gradient steps).
    lr
        Server step size ``gamma``.
    client_fraction, groups, participants, init, seed, callback, device, dtype
        As for :func:`~networkedfl.algorithms.fedavg.fedavg`.

    Returns
    -------
    FederatedResult
        As FedAvg, with ``upload="gradients"`` in the log: per round ``|S_t|`` gradients of
        ``P`` floats up and ``|S_t|`` models down.
    """
    device = torch.device(device)
    n_rounds = _check_positive_int(n_rounds, "n_rounds")
    _check_fraction(client_fraction)
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
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
        grads = client_gradients(
            model, global_params[group_of[idx]], part.features, part.targets, part.sample_weights
        )
        mean_grad = group_average(
            grads, n_local[idx], group_of[idx], torch.zeros_like(global_params)
        )
        global_params = global_params - lr * mean_grad
        rec.record_server_round(
            t, upload="gradients", global_params=global_params, group_of=group_of, selected=selected
        )
    return rec.server_result(global_params, group_of)
