"""Local training with momentum SGD: every client fits its own data alone.

The "local SGD" curve of the GTV paper's MNIST figures (6, 7): independent mini-batch SGD
with heavy-ball momentum on each node's training set, no communication.  The update is
PyTorch's ``torch.optim.SGD(lr, momentum)`` (dampening 0, no Nesterov)::

    b <- g                  (first step)
    b <- momentum * b + g   (later steps)
    w <- w - lr * b

for every client at once (one :func:`~networkedfl.nn.batch_gradients` call per step:
``vmap(grad(...))`` or the model's closed form).  Each epoch visits every
client's samples once in a fresh random order, in batches of ``batch_size``; a client's
last batch may be smaller, and a client with fewer samples than the largest skips the
steps that reach beyond its data.  With ``momentum = 0`` this equals
:func:`~networkedfl.algorithms.local_training`.
"""

from __future__ import annotations

from typing import Any

from .._validation import check_int
from ..nn import ClientData, FlatModel, batch_gradients, heavy_ball_step
from ._local_sgd import epoch_batches
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = ["local_momentum_sgd"]


def local_momentum_sgd(model: FlatModel, data: ClientData, options: TrainingOptions | None = None,
                       *, momentum: float = 0.0, **overrides: Any) -> FederatedResult:
    """Independent momentum SGD on every client (no communication), all clients at once.

    Parameters
    ----------
    model, data
        Model and local datasets (padding carries weight 0).
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`, as for
        :func:`~networkedfl.algorithms.local_training` (``n_rounds``, default 1, of
        ``local_epochs`` epochs, ``batch_size``, ``lr``; ``init``, ``seed``, ``callback``,
        ``progress``, ``device``, ``dtype``), except that ``batch_size`` must be a number.
        The momentum buffer carries over from round to round.
    momentum
        Heavy-ball momentum in ``[0, 1)``.

    Returns
    -------
    FederatedResult
        As :func:`~networkedfl.algorithms.local_training` (no messages).
    """
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    run = start_run(model, data, options, overrides, "local_momentum_sgd",
                    required=("local_epochs", "batch_size", "lr"), defaults={"n_rounds": 1})
    opts = run.options
    batch_size = check_int(opts.batch_size, "batch_size", minimum=1)
    params = run.initial_rows(run.n_clients, "client")
    step_grad = batch_gradients(model)
    buf = None
    for t in run.rounds():
        for _ in range(opts.local_epochs):
            for xb, yb, wb in epoch_batches(run.data, batch_size, run.seed):
                # a client whose block holds only padding takes no step (its buffer waits)
                active = (wb.sum(dim=1) > 0)[:, None]
                params, buf = heavy_ball_step(params, step_grad(params, xb, yb, wb), buf, opts.lr,
                                              momentum, active)
        run.record_alone(t, params)
    return run.result(params, params, run.own)
