"""Local training without communication: every client fits its own data alone.

The "no collaboration" baseline: ``ClientUpdate`` of FedAvg (McMahan et al. 2017,
Algorithm 1; :func:`~networkedfl.algorithms.local_sgd.local_sgd`) run for ``epochs``
epochs from the initial model, with no averaging.  One history/log row per epoch.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from ..nn import ClientData, DeviceLike, FlatModel, GeneratorLike, make_generator
from ._result import (
    Callback,
    FederatedResult,
    _check_positive_int,
    _initial_rows,
    _itemsize,
    _Recorder,
)
from .local_sgd import local_sgd

__all__ = ["local_training"]


def local_training(
    model: FlatModel,
    data: ClientData,
    *,
    epochs: int,
    batch_size: int | None,
    lr: float,
    init: Tensor | np.ndarray | None = None,
    seed: GeneratorLike | None = None,
    callback: Callback | None = None,
    device: DeviceLike = "cpu",
    dtype: torch.dtype = torch.float64,
) -> FederatedResult:
    """Independent local SGD on every client (no communication).

    Parameters
    ----------
    model, data
        Model and local datasets.
    epochs, batch_size, lr
        Local training (``batch_size=None``: full-batch gradient descent).
    init
        ``(P,)`` common start or ``(n, P)``; ``None``: one draw of ``model.init``.
    seed, callback, device, dtype
        As in :func:`~networkedfl.algorithms.fedavg.fedavg`; the callback runs after
        every epoch (``RoundState.round`` is the epoch).

    Returns
    -------
    FederatedResult
        ``client_params`` ``(n, P)``; ``global_params`` the same (every client is its own
        group); ``assignment = arange(n)``; ``log`` rows with ``upload="none"`` and no
        messages.  Running epoch by epoch draws the same random orders as one call of
        ``local_sgd(..., epochs=epochs)``, so the result is identical to it.
    """
    device = torch.device(device)
    epochs = _check_positive_int(epochs, "epochs")
    data = data.to(dtype, device)
    n = data.n_clients
    gen = make_generator(seed)
    params = _initial_rows(model, init, n, gen, dtype, device, "client")
    rec = _Recorder(callback, _itemsize(dtype))
    everyone = torch.ones(n, dtype=torch.bool, device=device)
    own = torch.arange(n, device=device)
    for e in range(1, epochs + 1):
        params = local_sgd(
            model, params, data, epochs=1, batch_size=batch_size, lr=lr, seed=gen
        )
        rec.record(
            e,
            upload="none",
            download="none",
            clients=n,
            messages_up=0,
            messages_down=0,
            floats_up=0,
            floats_down=0,
            client_params=params,
            global_params=params,
            selected=everyone,
            assignment=own,
        )
    return FederatedResult(params, params, own, rec.history, rec.log)
