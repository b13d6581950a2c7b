"""Local training with momentum SGD: every client fits its own data alone.

The "local SGD" curve of the GTV paper's MNIST figures (6, 7): independent mini-batch SGD
with heavy-ball momentum on each node's training set, no communication.  The update is
PyTorch's ``torch.optim.SGD(lr, momentum)`` (dampening 0, no Nesterov)::

    b <- g                  (first step)
    b <- momentum * b + g   (later steps)
    w <- w - lr * b

for every client at once (one ``vmap(grad(...))`` call per step).  Each epoch visits every
client's samples once in a fresh random order, in batches of ``batch_size``; a client's
last batch may be smaller, and a client with fewer samples than the largest skips the
steps that reach beyond its data.  With ``momentum = 0`` this equals
:func:`~networkedfl.algorithms.local.local_training`.
"""

from __future__ import annotations

import math

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
    _check_positive_int,
    _initial_rows,
    _itemsize,
    _Recorder,
)
from .local_sgd import epoch_order

__all__ = ["local_momentum_sgd"]


def local_momentum_sgd(
    model: FlatModel,
    data: ClientData,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    momentum: float = 0.0,
    init: Tensor | np.ndarray | None = None,
    seed: GeneratorLike | None = None,
    callback: Callback | None = None,
    device: DeviceLike = "cpu",
    dtype: torch.dtype = torch.float64,
) -> FederatedResult:
    """Independent momentum SGD on every client (no communication), all clients at once.

    Parameters
    ----------
    model, data
        Model and local datasets (padding carries weight 0).
    epochs, batch_size, lr, momentum
        Local training: ``epochs`` passes over the data in mini-batches of ``batch_size``.
    init
        ``(P,)`` common start or ``(n, P)``; ``None``: one draw of ``model.init``.
    seed, callback, device, dtype
        As in :func:`~networkedfl.algorithms.local.local_training`; the callback runs after
        every epoch.

    Returns
    -------
    FederatedResult
        As :func:`~networkedfl.algorithms.local.local_training` (no messages).
    """
    device = torch.device(device)
    epochs = _check_positive_int(epochs, "epochs")
    batch_size = _check_positive_int(batch_size, "batch_size", allow_zero=False)
    if not lr > 0 or not 0 <= momentum < 1:
        raise ValueError(f"need lr > 0 and 0 <= momentum < 1, got {lr!r}, {momentum!r}")
    data = data.to(dtype, device)
    n = data.n_clients
    gen = make_generator(seed)
    params = _initial_rows(model, init, n, gen, dtype, device, "client")
    step_grad = vmap(grad(model.loss))
    x, y, w = data.features, data.targets, data.sample_weights
    n_steps = math.ceil(int(data.counts.max()) / batch_size) if n else 0
    rows = torch.arange(n, device=device)[:, None]
    buf: Tensor | None = None
    rec = _Recorder(callback, _itemsize(dtype))
    everyone = torch.ones(n, dtype=torch.bool, device=device)
    own = torch.arange(n, device=device)
    for e in range(1, epochs + 1):
        order = epoch_order(w, gen)
        xs, ys, ws = x[rows, order], y[rows, order], w[rows, order]
        for s in range(n_steps):
            block = slice(s * batch_size, (s + 1) * batch_size)
            g = step_grad(params, xs[:, block], ys[:, block], ws[:, block])
            # a client whose block holds only padding takes no step (its buffer waits)
            active = (ws[:, block].sum(dim=1) > 0)[:, None]
            buf = g if buf is None else torch.where(active, momentum * buf + g, buf)
            params = torch.where(active, params - lr * buf, params)
        rec.record(
            e, upload="none", download="none", clients=n, messages_up=0, messages_down=0,
            floats_up=0, floats_down=0, client_params=params, global_params=params,
            selected=everyone, assignment=own,
        )
    return FederatedResult(params, params, own, rec.history, rec.log)
