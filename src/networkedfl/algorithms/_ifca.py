"""Iterative Federated Clustering Algorithm (IFCA; Ghosh et al. 2020, Algorithm 1).

The baseline ``IFCA [12]`` of the GTV paper (Table I, Fig. 2).  The server keeps ``k``
cluster models ``theta_1 .. theta_k``.  In every round each selected client

1. estimates its cluster ``j_hat_i = argmin_j F_i(theta_j)`` (smallest local loss;
   :func:`~networkedfl.nn.losses_of_models` evaluates all clients under all models in
   one call),
2. runs local training from ``theta_{j_hat_i}``
   (:func:`~networkedfl.algorithms.local_sgd`) and sends the result back,

and the server averages within each estimated cluster, weighted by the sample counts
``n_i`` ("model averaging" variant); a cluster that no client chose keeps its model.  With
one full-batch local epoch the averaged update equals ``theta_j - eta * sum_i (n_i / n_j)
grad F_i(theta_j)``, the "gradient averaging" variant.  The number of clusters ``k`` is an
input: the "correct" and "incorrect" IFCA of the experiments are the same code.

GTV settings (``SBM_experiment_ifca``): linear models without bias, Bernoulli(0.5)
initialisation (:func:`~networkedfl.nn.linear_regression` with ``init="bernoulli"``),
full-batch gradient descent with ``lr = 0.1`` for 300 rounds.

The authors' notebook divides each cluster's summed gradient by the number of *all*
clients, not by the cluster's: ``theta_j -= lr * (1/m) sum_{i in j} grad F_i(theta_j)``
(``aggregation="all_clients"``; docs/variants.md §8.10, the ``published`` variant).  A
cluster with few clients then barely moves, its clients drift to the large cluster, and
IFCA collapses to (almost) one model.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .._validation import check_int
from ..nn import ClientBuckets, ClientData, FlatModel, losses_of_models
from ._local_sgd import in_client_chunks, local_sgd
from .aggregate import group_average
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = ["AGGREGATIONS", "ifca"]

#: Server steps of :func:`ifca`: ``"cluster"`` averages within each cluster (Ghosh et al.),
#: ``"all_clients"`` shrinks each cluster's step by its share of all selected clients'
#: samples (the GTV authors' notebook).
AGGREGATIONS = ("cluster", "all_clients")


def _initial_clusters(
    model: FlatModel,
    init: str | Tensor | np.ndarray,
    k: int,
    generator: torch.Generator | None,
    dtype: torch.dtype,
    device: torch.device,
) -> Tensor:
    if isinstance(init, str):
        if init != "random":
            raise ValueError(f"unknown IFCA init {init!r}; expected 'random' or a (k, P) tensor")
        models = torch.stack(
            [model.initial_params(generator, dtype=dtype, device=device) for _ in range(k)]
        )
        if k > 1 and torch.unique(models, dim=0).shape[0] < k:
            raise ValueError(
                f"IFCA drew its {k} cluster models from {model.name}'s init and they are identical: "
                "the initialiser does not draw (zeros, or from_module(..., init='module')); use one "
                "that does (from_module(module, loss) draws as the module's reset_parameters(), "
                f"linear_regression(..., init='bernoulli')) or pass init as a ({k}, {model.n_params}) "
                "tensor"
            )
        return models
    t = init if isinstance(init, Tensor) else torch.as_tensor(np.asarray(init))
    if t.shape != (k, model.n_params):
        raise ValueError(f"init must have shape ({k}, {model.n_params}), got {tuple(t.shape)}")
    return t.to(dtype=dtype, device=device).clone()


def _cluster_losses(model: FlatModel, models: Tensor, data: ClientData | ClientBuckets,
                    chunk: int | None) -> Tensor:
    """``(n, k)`` local losses ``F_i(theta_j)`` of every client of ``data`` under each of the
    ``k`` cluster ``models`` (the ``argmin_j`` of Algorithm 1, line 5): all ``k`` models in one
    :func:`~networkedfl.nn.losses_of_models` pass per chunk of ``chunk`` clients, and with
    :class:`~networkedfl.nn.ClientBuckets` bucket by bucket (a loop over the buckets, never
    the clients), each bucket's rows written to its clients' rows."""
    def padded(part: ClientData) -> Tensor:
        return in_client_chunks(partial(losses_of_models, model, models), chunk,
                                part.features, part.targets, part.sample_weights)

    if not isinstance(data, ClientBuckets):
        return padded(data)
    out = models.new_empty((data.n_nodes, models.shape[0]))
    for part, rows in zip(data.buckets, data.clients, strict=True):
        out[rows] = padded(part)
    return out


def ifca(
    model: FlatModel,
    data: ClientData | ClientBuckets,
    options: TrainingOptions | None = None,
    *,
    n_clusters: int,
    aggregation: str = "cluster",
    initial_assignment: Any = None,
    **overrides: Any,
) -> FederatedResult:
    """IFCA with ``n_clusters`` cluster models (Ghosh et al. 2020, Algorithm 1).

    Parameters
    ----------
    model, data
        Model and local datasets: a padded :class:`~networkedfl.nn.ClientData`, clients in
        size buckets (:class:`~networkedfl.nn.ClientBuckets`, memory at most twice the data:
        the losses and the local training run one bucket at a time, the same models as the
        padded layout with full-batch local steps) or one ``torch.utils.data`` dataset or
        loader per client, as :func:`~networkedfl.algorithms.fedavg` takes them.
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`.  Required: ``n_rounds``
        (``T``) and ``lr``.  ``local_epochs`` (default 1) and ``batch_size`` (default
        ``None``): local training of each client (default one full-batch gradient step).
        ``init``: ``None`` or ``"random"``: ``k`` independent draws of ``model.init`` with
        the generator (they must differ); or a ``(k, P)`` tensor.  ``client_fraction``,
        ``participants``: client selection per round, as in
        :func:`~networkedfl.algorithms.fedavg` (no groups); ``client_chunk_size``:
        clients per batched call of the losses and the local training; ``seed``, ``callback``
        (history rows also hold ``cluster_sizes``: how many selected clients chose each
        cluster), ``device``, ``dtype``.
    n_clusters
        Number ``k`` of cluster models.
    aggregation
        ``"cluster"`` (default): the server averages the returned models within each
        estimated cluster.  ``"all_clients"``: it moves cluster ``j`` by ``s_j`` times that
        average's change, ``s_j`` = the cluster's share of the selected clients' samples;
        with one full-batch local step this is ``theta_j - lr * sum_{i in j} n_i grad_i /
        sum_i n_i``, the GTV authors' notebook update.
    initial_assignment
        ``None`` (default): every round, also the first, assigns each client to the model
        of least local loss.  An ``(n,)`` array of cluster indices: the clusters of round 1
        (e.g. all zeros: every client starts in cluster 0, as the GTV authors' MNIST
        notebook does, docs/variants.md §8.10); min-loss from round 2 on.

    Returns
    -------
    FederatedResult
        ``global_params`` ``(k, P)`` the cluster models; ``assignment`` ``(n,)`` the final
        cluster estimate of every client (argmin of its local loss under the returned
        models, also for clients that never trained); ``client_params`` the chosen models.
        The log counts ``|S_t|`` messages of ``k * P`` floats down (all cluster models)
        and ``|S_t|`` messages of ``P`` floats up per round.
    """
    k = check_int(n_clusters, "n_clusters", minimum=1)
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    run = start_run(model, data, options, overrides, "ifca", required=("n_rounds", "lr"),
                    optional=("client_fraction", "client_chunk_size", "participants"),
                    defaults={"local_epochs": 1, "batch_size": None}, ragged=True)
    opts, data, gen = run.options, run.data, run.seed
    n, dtype, device = run.n_clients, run.dtype, run.device
    allowed = run.participants()
    clusters = _initial_clusters(model, "random" if opts.init is None else opts.init, k, gen,
                                 dtype, device)
    first = None
    if initial_assignment is not None:
        first = torch.as_tensor(np.asarray(initial_assignment), device=device)
        if first.shape != (n,) or first.is_floating_point() or int(first.min()) < 0 or int(first.max()) >= k:
            raise ValueError(f"initial_assignment must be {n} cluster indices in [0, {k}), got "
                             f"shape {tuple(first.shape)}")
        first = first.to(torch.int64)
    assignment = torch.full((n,), -1, dtype=torch.int64, device=device)
    n_local = data.weight_per_node
    p = model.n_params
    chunk = run.chunk_size

    for t, selected, idx, part in run.server_rounds(run.zeros, 1, allowed):
        losses = _cluster_losses(model, clusters, part, chunk)
        chosen = torch.argmin(losses, dim=1) if (t > 1 or first is None) else first[idx]
        assignment = assignment.index_put((idx,), chosen)
        local = local_sgd(model, clusters[chosen], part, epochs=opts.local_epochs,
                          batch_size=opts.batch_size, lr=opts.lr, seed=gen, chunk_size=chunk)
        averaged = group_average(local, n_local[idx], chosen, clusters)
        if aggregation == "all_clients":
            weights = n_local[idx].to(dtype)
            share = torch.zeros(k, dtype=dtype, device=device).index_add_(0, chosen, weights) / weights.sum()
            averaged = clusters + share[:, None] * (averaged - clusters)
        clusters = averaged
        run.record_server_round(  # every selected client downloads all k cluster models
            t, upload="models", global_params=clusters, group_of=assignment, selected=selected,
            client_params=partial(torch.index_select, clusters, 0, assignment.clamp_min(0)),
            floats_down=int(idx.numel()) * k * p,
            extra={"cluster_sizes": torch.bincount(chosen, minlength=k).tolist()},
        )
    final = torch.argmin(_cluster_losses(model, clusters, data, chunk), dim=1)
    return run.result(clusters[final], clusters, final)
