"""Federated Averaging (FedAvg) with local SGD, and its cluster-oracle variant FedAvgC.

McMahan et al. 2017, Algorithm 1 (``FederatedAveraging``), as in the lecture (Tham,
"Federated Averaging (FedAvg)" and "FedAvg with local SGD"): in round ``t`` the server

1. selects ``max(1, round(C * N))`` clients at random (``C``: client fraction),
2. sends them the global model ``w_bar(t)``; every selected client ``k`` runs
   ``ClientUpdate``: ``E`` epochs of SGD with batch size ``B`` and step ``eta`` from
   ``w_bar(t)`` (:func:`~networkedfl.algorithms.local_sgd`),
3. averages the returned models weighted by the local sample counts (lecture, "update
   global weights")::

       w_bar(t+1) = sum_{k in S_t} (n_k / n_S) w_k(t+1),   n_S = sum_{k in S_t} n_k.

With ``groups`` (one label per client) each group has its own global model and the
selection and averaging happen within groups: with the true clusters as groups this is
FedAvgC, the oracle benchmark of the GTV paper (Sec. VI-A2, Fig. 2).  All selected
clients of all groups train in one batched call (or in chunks of ``client_chunk_size``
clients, with the same result).  A round's cost follows the selected clients: only their
data are gathered and trained, and the ``(n, P)`` models of all clients are built once, for
the result (and for a callback, every round).

This is the SGD form of FedAvg.  The proximal form used in the GTV paper's own
comparisons is :func:`~networkedfl.gtv.fedavg_proximal`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import Tensor

from ..nn import ClientBuckets, ClientData, FlatModel
from ._local_sgd import Correction, local_sgd
from .aggregate import group_average, sample_clients
from .contract import FederatedResult, Run, TrainingOptions, start_run

__all__ = ["fedavg", "group_average", "sample_clients"]

#: The options FedAvg and the methods on its rounds require, and those they take (with
#: ``groups`` where a server model per group makes sense: FedAvg, FedProx).
ROUND_OPTIONS = ("n_rounds", "local_epochs", "batch_size", "lr")
SAMPLING_OPTIONS = ("client_fraction", "client_chunk_size", "participants")


def fedavg(model: FlatModel, data: ClientData | ClientBuckets, options: TrainingOptions | None = None,
           **overrides: Any) -> FederatedResult:
    """FedAvg (McMahan et al. 2017, Algorithm 1); FedAvgC when ``groups`` are given.

    Parameters
    ----------
    model
        Model as a function of a flat parameter vector.
    data
        Local datasets of the ``n`` clients (padding carries weight 0): a padded
        :class:`~networkedfl.nn.ClientData`, clients in size buckets
        (:class:`~networkedfl.nn.ClientBuckets`, memory at most twice the data, each bucket
        trained in one batched call) or one ``torch.utils.data`` dataset or loader per client
        (:func:`~networkedfl.algorithms.contract.as_client_input`).
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`, as one object and/or
        keywords.  Required: ``n_rounds`` (``T``), ``local_epochs``, ``batch_size`` and
        ``lr`` (``E``, ``B`` and ``eta`` of ``ClientUpdate``).  Optional:
        ``client_fraction`` (the clients sampled per round), ``client_chunk_size`` (clients
        per batched call), ``groups`` (one global model per group: FedAvgC with the true
        clusters), ``participants`` (at least one), ``init`` (``(P,)`` for all groups or
        ``(G, P)``), ``seed``, ``callback``, ``device``, ``dtype``.

    Returns
    -------
    FederatedResult
        ``client_params`` (each client's group model; with one group a stride-0 view of
        ``global_params``, no copy), ``global_params`` ``(G, P)``,
        ``assignment`` (the groups), ``history``, and ``log`` with ``upload="models"``:
        per round ``|S_t|`` messages down (the global model) and ``|S_t|`` up (the local
        models), ``|S_t| * P`` floats each way.
    """
    run = start_run(model, data, options, overrides, "fedavg", required=ROUND_OPTIONS,
                    optional=(*SAMPLING_OPTIONS, "groups"), ragged=True)
    return _averaging_rounds(model, run)


def _client_update(model: FlatModel, run: Run, start: Tensor, part: ClientData | ClientBuckets,
                  correction: Correction | None = None, epochs: int | None = None) -> Tensor:
    """``ClientUpdate`` of the selected clients ``part`` from their models ``start``: the
    run's ``local_epochs`` (or ``epochs``) of :func:`~networkedfl.algorithms.local_sgd`
    with its ``batch_size``, ``lr``, generator and chunks, and the gradient ``correction``."""
    opts = run.options
    return local_sgd(model, start, part, epochs=opts.local_epochs if epochs is None else epochs,
                     batch_size=opts.batch_size, lr=opts.lr, seed=run.seed,
                     chunk_size=run.chunk_size, correction=correction)


def _averaging_rounds(model: FlatModel, run: Run, *,
                     correction: Callable[[Tensor], Correction] | None = None,
                     server_step: Callable[[Tensor, Tensor], Tensor] | None = None) -> FederatedResult:
    """The rounds of FedAvg: sample, :func:`_client_update` from the group's model, average.

    ``correction(start)`` gives the gradient correction of the round's local training from
    the selected clients' starting models (FedProx's proximal term); ``server_step(previous,
    average)`` the new server models from the ``(G, P)`` weighted averages (FedOpt's
    optimiser; default: the averages themselves).
    """
    group_of, n_groups, allowed, global_params = run.server_models()
    n_local = run.data.weight_per_node
    for t, selected, idx, part in run.server_rounds(group_of, n_groups, allowed):
        start = global_params[group_of[idx]]
        local = _client_update(model, run, start, part, None if correction is None else correction(start))
        average = group_average(local, n_local[idx], group_of[idx], global_params)
        global_params = average if server_step is None else server_step(global_params, average)
        run.record_server_round(t, upload="models", global_params=global_params, group_of=group_of,
                                selected=selected)
    return run.result(run.client_models(global_params, group_of), global_params, group_of)
