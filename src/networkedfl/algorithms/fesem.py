"""FeSEM, federated stochastic expectation maximisation (the chapter, Sec. 10.3).

Multi-center FL (Xie et al. 2020, the chapter's [24]), problem (P2), eq. (10.7)::

    min  (1/n) sum_i f_i(theta_i) + (lam/n) sum_k sum_i r_ik dist(theta_i, theta_bar_k)

solved by Algorithm 2, every round ``t``:

* E-step, eq. (10.8): ``r_i = argmin_k dist(theta_i, theta_bar_k)`` (nearest centre);
* M-step, eq. (10.9): ``theta_bar_k = mean of the theta_i with r_i = k``;
* local update (Algorithm 3 for eq. (10.10)): client ``i`` starts from its centre
  ``theta_bar_{r_i}`` and takes ``tau`` mini-batch SGD steps on
  ``f_i(theta) + lam * dist(theta, theta_bar_{r_i})``.

``dist`` is the squared Euclidean distance ``||theta - theta_bar||^2`` (its minimiser over
``theta_bar`` is the mean, so the M-step (10.9) is exact for (10.7)); the penalty's
gradient is ``2 lam (theta - theta_bar_k)``.

Initialisation (Algorithm 2, line 1, leaves it open): round 1 is a warm-up, every client
trains ``tau`` unpenalised local steps from the common start and the ``K`` centres are the
k-means centres of those local models (k-means++ seeding with the run's generator, then
Lloyd iterations, :func:`kmeans_centres`; the public FeSEM code also clusters the clients'
weights with k-means); rounds
``2..T`` are the EM rounds above, so every round costs ``tau`` local steps.  A centre left
without members by the E-step keeps its previous value.

Everything is batched over clients (one ``vmap(grad(...))`` per step; distances are one
``(n, K)`` ``cdist``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from ..models import DeviceLike, FlatModel, GeneratorLike, make_generator, require_generator
from ._result import (
    Callback,
    FederatedResult,
    _check_positive_int,
    _initial_rows,
    _itemsize,
    _Recorder,
)
from .client_batches import StepSize, as_batches, batch_gradients, check_mask, freeze, step_size

__all__ = ["assign_nearest", "cluster_means", "fesem", "kmeans_centres", "kmeanspp_centres"]


def assign_nearest(params: Tensor, centres: Tensor, mask: Tensor | None = None) -> Tensor:
    """E-step (10.8): index of the nearest centre (squared Euclidean) of every row, ``(n,)``.

    With a mask ``(n, P)`` the distance of row ``i`` counts its trainable coordinates only.
    """
    if mask is None:
        return torch.cdist(params, centres).argmin(dim=1)
    d2 = torch.stack([(((params - c) ** 2) * mask).sum(dim=1) for c in centres], dim=1)
    return d2.argmin(dim=1)


def cluster_means(
    params: Tensor, assignment: Tensor, previous: Tensor, mask: Tensor | None = None
) -> Tensor:
    """M-step (10.9): mean of the members of every cluster; empty clusters keep ``previous``.

    With a mask ``(n, P)`` every coordinate is averaged over the members that train it (a
    coordinate no member trains keeps ``previous``).
    """
    k = previous.shape[0]
    if mask is not None:
        sums = torch.zeros_like(previous).index_add_(0, assignment, params * mask)
        mass = torch.zeros_like(previous).index_add_(0, assignment, mask)
        return torch.where(mass > 0, sums / mass.clamp_min(torch.finfo(mass.dtype).tiny), previous)
    sums = torch.zeros_like(previous).index_add_(0, assignment, params)
    counts = torch.bincount(assignment, minlength=k).to(params.dtype)
    safe = torch.where(counts > 0, counts, torch.ones_like(counts))
    return torch.where(counts[:, None] > 0, sums / safe[:, None], previous)


def kmeanspp_centres(params: Tensor, k: int, generator: torch.Generator) -> Tensor:
    """``k`` rows of ``params`` chosen by k-means++ seeding (Arthur & Vassilvitskii 2007).

    The first uniformly, each next one with probability proportional to the squared
    distance to the nearest centre chosen so far (uniformly among the rest if all distances
    are 0).  Draws on the CPU with ``generator``.
    """
    n = params.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n_clients = {n}, got k = {k}")
    chosen = [int(torch.randint(n, (1,), generator=generator))]
    d2 = ((params - params[chosen[0]]) ** 2).sum(dim=1)
    for _ in range(1, k):
        weights = d2.detach().double().cpu()
        weights[chosen] = 0.0
        if float(weights.sum()) <= 0:
            weights = torch.ones(n, dtype=torch.float64)
            weights[chosen] = 0.0
        nxt = int(torch.multinomial(weights, 1, generator=generator))
        chosen.append(nxt)
        d2 = torch.minimum(d2, ((params - params[nxt]) ** 2).sum(dim=1))
    return params[chosen].clone()


def kmeans_centres(params: Tensor, k: int, generator: torch.Generator, max_iter: int = 100) -> Tensor:
    """k-means centres of the rows of ``params``: k-means++ seeding (:func:`kmeanspp_centres`),
    then Lloyd iterations (nearest centre, cluster means; an emptied cluster keeps its centre)
    until the assignment no longer changes or ``max_iter`` iterations."""
    centres = kmeanspp_centres(params, k, generator)
    assignment = assign_nearest(params, centres)
    for _ in range(max_iter):
        centres = cluster_means(params, assignment, centres)
        new = assign_nearest(params, centres)
        if torch.equal(new, assignment):
            break
        assignment = new
    return centres


def fesem(
    model: FlatModel,
    data: Any,
    *,
    n_clusters: int,
    n_rounds: int,
    local_steps: int,
    lr: StepSize,
    batch_size: int | None,
    lam: float,
    mask: Any = None,
    init: Tensor | np.ndarray | None = None,
    init_centres: Tensor | np.ndarray | None = None,
    generator: GeneratorLike | None = None,
    callback: Callback | None = None,
    device: DeviceLike = "cpu",
    dtype: torch.dtype = torch.float64,
    progress: bool = False,
    mask_average: bool = False,
) -> FederatedResult:
    """FeSEM (the chapter, Algorithms 2-3, eqs. (10.7)-(10.10)).

    Parameters
    ----------
    model, data
        As in :func:`~networkedfl.algorithms.dfl.dfl_sgd`.
    n_clusters
        ``K``.
    n_rounds, local_steps, lr, batch_size
        Rounds ``T``, local steps ``tau`` per round, step size (number or schedule of the
        global iteration), mini-batch size.
    lam
        ``lambda`` of eq. (10.10): weight of ``||theta_i - theta_bar_k||^2``.
    mask
        Optional ``(n, P)`` 0/1 mask of trainable coordinates per client.
    init
        Common start ``(P,)`` (or ``(n, P)``); ``None``: one draw of ``model.init``.
    init_centres
        ``(K, P)`` initial centres (every round is then an EM round); ``None``: round 1 is
        the warm-up and k-means initialisation of the module docstring (needs a generator and
        ``n_rounds >= 1``).
    generator, callback, device, dtype, progress
        As in :func:`~networkedfl.algorithms.dfl.dfl_sgd`.
    mask_average
        With a mask: E-step distances over each client's trainable coordinates and M-step
        means over the members that train a coordinate (:func:`assign_nearest`,
        :func:`cluster_means`), so frozen coordinates (e.g. the zero embedding rows of words
        a client never sees, Sec. 10.5.2) do not drag the centres.  ``False``: all coordinates.

    Returns
    -------
    FederatedResult
        ``client_params`` the personalised models after the last local update,
        ``global_params`` the ``K`` centres of the last M-step, ``assignment`` the last
        E-step.  History rows hold ``cluster_sizes`` (a list) and ``step``.
    """
    device = torch.device(device)
    n_rounds = _check_positive_int(n_rounds, "n_rounds", allow_zero=init_centres is not None)
    tau = _check_positive_int(local_steps, "local_steps", allow_zero=False)
    k = _check_positive_int(n_clusters, "n_clusters", allow_zero=False)
    if not lam >= 0:
        raise ValueError(f"lam must be non-negative, got {lam}")
    source = as_batches(data, dtype, device)
    n, p = source.n_clients, model.n_params
    gen = make_generator(generator)
    mask_t = check_mask(mask, n, p, dtype, device)
    theta = _initial_rows(model, init, n, gen, dtype, device, "client")
    gradients = batch_gradients(model)
    t = 0

    def local_update(start: Tensor, anchor: Tensor | None, weight: float) -> Tensor:
        nonlocal t
        th = start
        for _ in range(tau):
            x, y, w = source.sample(batch_size, gen)
            g = gradients(th, x, y, w)
            if anchor is not None and weight > 0:
                g = g + 2.0 * weight * (th - anchor)
            if mask_t is not None:
                g = g * mask_t
            th = freeze(th - step_size(lr, t) * g, th, mask_t)
            t += 1
        return th

    warm_up = init_centres is None
    if not warm_up:
        centres = torch.as_tensor(np.asarray(init_centres) if not isinstance(init_centres, Tensor)
                                  else init_centres).to(dtype=dtype, device=device)
        if centres.shape != (k, p):
            raise ValueError(f"init_centres must be ({k}, {p}), got {tuple(centres.shape)}")
    rec = _Recorder(callback, _itemsize(dtype))
    everyone = torch.ones(n, dtype=torch.bool, device=device)
    assignment = torch.zeros(n, dtype=torch.int64, device=device)
    held = mask_t if mask_average else None
    for r in tqdm(range(1, n_rounds + 1), desc="FeSEM", disable=not progress):
        if warm_up and r == 1:  # tau unpenalised local steps, then k-means of the models
            theta = local_update(theta, None, 0.0)
            centres = kmeans_centres(theta, k, require_generator(gen, "k-means++ seeding"))
            assignment = assign_nearest(theta, centres, held)
        else:
            assignment = assign_nearest(theta, centres, held)       # E-step (10.8)
            centres = cluster_means(theta, assignment, centres, held)  # M-step (10.9)
            anchor = centres[assignment]
            theta = local_update(freeze(anchor, theta, mask_t), anchor, float(lam))  # Alg. 3
        rec.record(
            r, upload="models", download="models", clients=n, messages_up=n, messages_down=n,
            floats_up=n * p, floats_down=n * p, client_params=theta, global_params=centres,
            selected=everyone, assignment=assignment,
            extra={"cluster_sizes": torch.bincount(assignment, minlength=k).tolist(), "step": t},
        )
    return FederatedResult(theta, centres, assignment, rec.history, rec.log)
