"""FedSGD: federated gradient averaging (the lecture's "FedSGD (prior to FedAvg)").

Each round (Tham, lecture 9, FedSGD steps 1-4; McMahan et al. 2017, "FedSGD")::

    1. every selected client i computes g_i = grad F_i(w_bar(t))   (one full-batch gradient)
    2. the clients send g_i to the server
    3. w_bar(t+1) = w_bar(t) - eta * sum_{i in S_t} (n_i / n_S) g_i
    4. the server sends the updated model to the clients

With all clients selected and weights ``n_i`` this is exactly full-batch gradient descent
on the pooled data, since ``sum_i (n_i / n) grad F_i = grad (1/n) sum_{all samples} f_j``.
``groups`` gives one model per group, as in :func:`~networkedfl.algorithms.fedavg`.  Clients
of very different sizes may come in size buckets (:class:`~networkedfl.nn.ClientBuckets`,
memory at most twice the data): the gradients are then taken one bucket at a time.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from torch import Tensor

from ..nn import ClientBuckets, ClientData, FlatModel, client_gradients
from ._local_sgd import in_client_chunks
from .aggregate import group_average
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = ["fedsgd"]


def fedsgd(model: FlatModel, data: ClientData | ClientBuckets, options: TrainingOptions | None = None,
           **overrides: Any) -> FederatedResult:
    """FedSGD: one weighted gradient-averaging step per round.

    Parameters
    ----------
    model, data
        Model and local datasets, as for :func:`~networkedfl.algorithms.fedavg` (a padded
        :class:`~networkedfl.nn.ClientData`, :class:`~networkedfl.nn.ClientBuckets` or
        per-client torch datasets).
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`.  Required: ``n_rounds``
        (``T`` = gradient steps) and ``lr`` (the server step size ``gamma``).  Optional:
        ``client_fraction``, ``client_chunk_size``, ``groups``, ``participants``, ``init``,
        ``seed``, ``callback``, ``device``, ``dtype``, as for :func:`~networkedfl.algorithms.fedavg`.

    Returns
    -------
    FederatedResult
        As FedAvg, with ``upload="gradients"`` in the log: per round ``|S_t|`` gradients of
        ``P`` floats up and ``|S_t|`` models down.
    """
    run = start_run(model, data, options, overrides, "fedsgd", required=("n_rounds", "lr"),
                    optional=("client_fraction", "client_chunk_size", "groups", "participants"),
                    ragged=True)
    opts, data = run.options, run.data
    group_of, n_groups, allowed, global_params = run.server_models()
    n_local = data.weight_per_node
    for t, selected, idx, part in run.server_rounds(group_of, n_groups, allowed):
        grads = _gradients(model, global_params[group_of[idx]], part, run.chunk_size)
        mean_grad = group_average(
            grads, n_local[idx], group_of[idx], torch.zeros_like(global_params)
        )
        global_params = global_params - opts.lr * mean_grad
        run.record_server_round(t, upload="gradients", global_params=global_params,
                                group_of=group_of, selected=selected)
    return run.result(run.client_models(global_params, group_of), global_params, group_of)


def _gradients(model: FlatModel, params: Tensor, data: ClientData | ClientBuckets,
               chunk_size: int | None) -> Tensor:
    """Every client's full-batch gradient ``grad F_i`` at its row of ``params``, ``chunk_size``
    clients at a time; with buckets one bucket after the other (a loop over buckets, not
    clients)."""
    if isinstance(data, ClientBuckets):
        out = torch.empty_like(params)
        for part, rows in zip(data.buckets, data.clients, strict=True):
            out[rows] = _gradients(model, params[rows], part, chunk_size)
        return out
    return in_client_chunks(partial(client_gradients, model), chunk_size, params,
                            data.features, data.targets, data.sample_weights)
