"""Local training without communication: every client fits its own data alone.

The "no collaboration" baseline: ``ClientUpdate`` of FedAvg (McMahan et al. 2017,
Algorithm 1; :func:`~networkedfl.algorithms.local_sgd`) run for ``epochs``
epochs from the initial model, with no averaging.  One history/log row per epoch.
"""

from __future__ import annotations

from typing import Any

from ..nn import ClientData, FlatModel
from ._local_sgd import local_sgd
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = ["local_training"]


def local_training(model: FlatModel, data: ClientData, options: TrainingOptions | None = None,
                   **overrides: Any) -> FederatedResult:
    """Independent local SGD on every client (no communication).

    Parameters
    ----------
    model, data
        Model and local datasets.
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`.  Required:
        ``local_epochs`` (or ``epochs=``: the epochs of the run; the callback runs after
        every epoch, ``RoundState.round`` is the epoch), ``batch_size`` (``None``:
        full-batch gradient descent) and ``lr``.  Optional: ``init`` (``(P,)`` common start
        or ``(n, P)``), ``seed``, ``callback``, ``device``, ``dtype``.

    Returns
    -------
    FederatedResult
        ``client_params`` ``(n, P)``; ``global_params`` the same (every client is its own
        group); ``assignment = arange(n)``; ``log`` rows with ``upload="none"`` and no
        messages.  Running epoch by epoch draws the same random orders as one call of
        ``local_sgd(..., epochs=epochs)``, so the result is identical to it.
    """
    run = start_run(model, data, options, overrides, "local_training",
                    required=("local_epochs", "batch_size", "lr"), aliases={"epochs": "local_epochs"})
    opts = run.options
    params = run.initial_rows(run.n_clients, "client")
    for e in range(1, opts.local_epochs + 1):
        params = local_sgd(model, params, run.data, epochs=1, batch_size=opts.batch_size, lr=opts.lr,
                           seed=run.seed)
        run.record_alone(e, params)
    return run.result(params, params, run.own)
