"""Iterative Federated Clustering Algorithm (IFCA; Ghosh et al. 2020, Algorithm 1).

The baseline ``IFCA [12]`` of the GTV paper (Table I, Fig. 2).  The server keeps ``k``
cluster models ``theta_1 .. theta_k``.  In every round each selected client

1. estimates its cluster ``j_hat_i = argmin_j F_i(theta_j)`` (smallest local loss;
   :func:`~networkedfl.nn.losses_of_models` evaluates all clients under all models in
   one call),
2. runs local training from ``theta_{j_hat_i}``
   (:func:`~networkedfl.algorithms.local_sgd.local_sgd`) and sends the result back,

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
(``aggregation="all_clients"``; EXPERIMENTS.md §8 item 10, the ``published`` variant).  A
cluster with few clients then barely moves, its clients drift to the large cluster, and
IFCA collapses to (almost) one model.
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
    losses_of_models,
    make_generator,
)
from ._result import (
    Callback,
    FederatedResult,
    _check_participants,
    _check_positive_int,
    _itemsize,
    _Recorder,
)
from .fedavg import _check_fraction, group_average, sample_clients
from .local_sgd import local_sgd

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
                f"init='random' drew identical cluster models from {model.name}'s init; use a "
                "random initialiser (e.g. linear_regression(..., init='bernoulli')) or pass "
                f"init as a ({k}, {model.n_params}) tensor"
            )
        return models
    t = init if isinstance(init, Tensor) else torch.as_tensor(np.asarray(init))
    if t.shape != (k, model.n_params):
        raise ValueError(f"init must have shape ({k}, {model.n_params}), got {tuple(t.shape)}")
    return t.to(dtype=dtype, device=device).clone()


def ifca(
    model: FlatModel,
    data: ClientData,
    *,
    n_clusters: int,
    n_rounds: int,
    local_epochs: int = 1,
    batch_size: int | None = None,
    lr: float,
    init: str | Tensor | np.ndarray = "random",
    aggregation: str = "cluster",
    initial_assignment: Any = None,
    client_fraction: float = 1.0,
    participants: Any = None,
    seed: GeneratorLike | None = None,
    callback: Callback | None = None,
    device: DeviceLike = "cpu",
    dtype: torch.dtype = torch.float64,
) -> FederatedResult:
    """IFCA with ``n_clusters`` cluster models (Ghosh et al. 2020, Algorithm 1).

    Parameters
    ----------
    model, data
        Model and local datasets.
    n_clusters
        Number ``k`` of cluster models.
    n_rounds
        Rounds ``T``.
    local_epochs, batch_size, lr
        Local training of each client (defaults: one full-batch gradient step).
    init
        ``"random"``: ``k`` independent draws of ``model.init`` with the generator (they
        must differ); or a ``(k, P)`` tensor.
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
        notebook does, EXPERIMENTS.md §8 item 10); min-loss from round 2 on.
    client_fraction, participants
        Client selection per round, as in :func:`~networkedfl.algorithms.fedavg.fedavg`
        (no groups).
    seed, callback, device, dtype
        As in :func:`~networkedfl.algorithms.fedavg.fedavg`.  History rows also hold
        ``cluster_sizes``: how many selected clients chose each cluster.

    Returns
    -------
    FederatedResult
        ``global_params`` ``(k, P)`` the cluster models; ``assignment`` ``(n,)`` the final
        cluster estimate of every client (argmin of its local loss under the returned
        models, also for clients that never trained); ``client_params`` the chosen models.
        The log counts ``|S_t|`` messages of ``k * P`` floats down (all cluster models)
        and ``|S_t|`` messages of ``P`` floats up per round.
    """
    device = torch.device(device)
    k = _check_positive_int(n_clusters, "n_clusters", allow_zero=False)
    n_rounds = _check_positive_int(n_rounds, "n_rounds")
    _check_fraction(client_fraction)
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    data = data.to(dtype, device)
    n = data.n_clients
    gen = make_generator(seed)
    allowed = _check_participants(participants, n, device)
    clusters = _initial_clusters(model, init, k, gen, dtype, device)
    first = None
    if initial_assignment is not None:
        first = torch.as_tensor(np.asarray(initial_assignment), device=device)
        if first.shape != (n,) or first.is_floating_point() or int(first.min()) < 0 or int(first.max()) >= k:
            raise ValueError(f"initial_assignment must be {n} cluster indices in [0, {k}), got "
                             f"shape {tuple(first.shape)}")
        first = first.to(torch.int64)
    no_groups = torch.zeros(n, dtype=torch.int64, device=device)
    assignment = torch.full((n,), -1, dtype=torch.int64, device=device)
    n_local = data.n_samples
    rec = _Recorder(callback, _itemsize(dtype))
    p = model.n_params
    for t in range(1, n_rounds + 1):
        selected = sample_clients(no_groups, 1, client_fraction, allowed, gen)
        idx = torch.nonzero(selected).squeeze(1)
        part = data if idx.numel() == n else data.subset(idx)
        losses = losses_of_models(model, clusters, part.features, part.targets, part.sample_weights)
        chosen = torch.argmin(losses, dim=1) if (t > 1 or first is None) else first[idx]
        assignment = assignment.index_put((idx,), chosen)
        local = local_sgd(
            model,
            clusters[chosen],
            part,
            epochs=local_epochs,
            batch_size=batch_size,
            lr=lr,
            seed=gen,
        )
        averaged = group_average(local, n_local[idx], chosen, clusters)
        if aggregation == "all_clients":
            weights = n_local[idx].to(dtype)
            share = torch.zeros(k, dtype=dtype, device=device).index_add_(0, chosen, weights) / weights.sum()
            averaged = clusters + share[:, None] * (averaged - clusters)
        clusters = averaged
        s = int(idx.numel())
        known = assignment.clamp_min(0)
        rec.record(
            t,
            upload="models",
            download="models",
            clients=s,
            messages_up=s,
            messages_down=s,
            floats_up=s * p,
            floats_down=s * k * p,
            client_params=clusters[known],
            global_params=clusters,
            selected=selected,
            assignment=assignment,
            extra={"cluster_sizes": torch.bincount(chosen, minlength=k).tolist()},
        )
    final = torch.argmin(
        losses_of_models(model, clusters, data.features, data.targets, data.sample_weights), dim=1
    )
    return FederatedResult(clusters[final], clusters, final, rec.history, rec.log)
