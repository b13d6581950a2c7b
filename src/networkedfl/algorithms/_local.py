"""Local training without communication: every client fits its own data alone.

The "no collaboration" baseline: ``ClientUpdate`` of FedAvg (McMahan et al. 2017,
Algorithm 1; :func:`~networkedfl.algorithms.local_sgd`) from the initial model, with no
averaging, on FedAvg's schedule: ``n_rounds`` rounds of ``local_epochs`` epochs, one
history/log row (and callback) per round.
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
        Model and local datasets (a :class:`~networkedfl.nn.ClientData`, a
        :class:`~networkedfl.nn.ClientBuckets` or per-client torch datasets, as
        :func:`~networkedfl.algorithms.fedavg`).
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`.  Required:
        ``local_epochs`` (epochs per round), ``batch_size`` (``None``: full-batch gradient
        descent) and ``lr``.  Optional: ``n_rounds`` (default 1: the run is ``n_rounds *
        local_epochs`` epochs, the callback runs after every round, as in FedAvg but
        without communication), ``init`` (``(P,)`` common start or ``(n, P)``), ``seed``,
        ``callback``, ``progress``, ``device``, ``dtype``.

    Returns
    -------
    FederatedResult
        ``client_params`` ``(n, P)``; ``global_params`` the same (every client is its own
        group); ``assignment = arange(n)``; ``log`` rows with ``upload="none"`` and no
        messages.  Running round by round draws the same random orders as one call of
        ``local_sgd(..., epochs=n_rounds * local_epochs)``, so the result is identical to it.
    """
    run = start_run(model, data, options, overrides, "local_training",
                    required=("local_epochs", "batch_size", "lr"), defaults={"n_rounds": 1},
                    ragged=True)
    opts = run.options
    params = run.initial_rows(run.n_clients, "client")
    for t in run.rounds():
        params = local_sgd(model, params, run.data, epochs=opts.local_epochs,
                           batch_size=opts.batch_size, lr=opts.lr, seed=run.seed)
        run.record_alone(t, params)
    return run.result(params, params, run.own)
