"""FeSEM, federated stochastic expectation maximisation (the chapter, Sec. 10.3).

Multi-center FL (Xie et al. 2020, the chapter's [24]), problem (P2), eq. (10.7)::

    min  (1/n) sum_i f_i(theta_i) + (lam/n) sum_k sum_i r_ik dist(theta_i, theta_bar_k)

solved by Algorithm 2, every round ``t``:

* E-step, eq. (10.8): ``r_i = argmin_k dist(theta_i^t, theta_bar_k^t)`` (nearest center);
* M-step, eq. (10.9): ``theta_bar_k^t = mean of the theta_i^t with r_i = k``;
* local update (Algorithm 3 for eq. (10.10)): client ``i`` starts from its center
  ``theta_bar_{r_i}`` and takes ``tau`` mini-batch SGD steps on
  ``f_i(theta) + lam * dist(theta, theta_bar_{r_i})``.

``dist`` is the squared Euclidean distance ``||theta - theta_bar||^2`` (its minimiser over
``theta_bar`` is the mean, so the M-step (10.9) is exact for (10.7)); the penalty's
gradient is ``2 lam (theta - theta_bar_k)``.

The centers the E-step compares with (``theta_bar_k^t``, "the existing centers") are those of
the current models ``theta_i^t``: the M-step (10.9) of the previous assignment applied to the
models the clients just uploaded, so models and centers belong to the same iteration ``t``.
Comparing ``theta_i^t`` with the centers of ``theta^{t-1}`` instead (the centers before the
local update) lets the part of a round's local move that all clients share decide the
assignment: every client is then nearest to the center lying furthest along that common
direction, and all clients fall into one cluster by construction (Fig. 10.3, seed 0: the
common move of round 2 is 3x the gaps between the k-means centers and all 50 clients join
one cluster at round 3).  With the centers of ``theta^t`` the common move cancels and only
the differences between the clusters' moves remain.  The extra M-step is the exact
minimiser of (10.7) over the centers for the previous assignment, so the round remains a
block-coordinate descent step on (10.7).

Initialisation (Algorithm 2, line 1, leaves it open): round 1 is a warm-up, every client
trains ``tau`` unpenalised local steps from the common start and the ``K`` centers are the
k-means centers of those local models (k-means++ seeding with the run's generator, then
Lloyd iterations, with the same distances as the E-step; of ``kmeans_restarts`` = 10 such
runs the one of lowest inertia, :func:`kmeans`; the public FeSEM code also clusters the
clients' weights with k-means); rounds ``2..T`` are the EM rounds above, so every round
costs ``tau`` local steps.  A center left without members by the E-step keeps its previous
value (and, with a mask, its previous support).

Masks (frozen coordinates, ``mask_average``): ``dist(theta_i, theta_bar_k)`` sums over the
coordinates that client ``i`` trains *and* some member of cluster ``k`` trains (the center's
*support*).  A center coordinate that no member trains does not enter (10.7): it is free, and
the M-step would set it to ``theta_i``'s value were ``i`` to join, so it costs 0.  Counting
it at its stale value instead (e.g. the zero rows that k-means averaged in from clients
that never see a word) lets the center whose members train the most coordinates win every
E-step: in Fig. 10.4 (default configuration, seed 0), 99.98 % of the squared distance
between two warm-up models lies in coordinates that only one of them trains, and the
warm-up k-means on all coordinates gave clusters of 13, 2 and 1 that became one of 16 at
round 3.

Everything is batched over clients (one ``vmap(grad(...))`` per step; distances are ``K``
vectorised ``(n, P)`` reductions).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from .._validation import check_finite, check_int, renamed_function, renamed_keywords
from ..nn import FlatModel, GeneratorLike, batch_gradients, freeze
from ..seeding import make_generator
from ._local_sgd import local_steps
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = [
    "assign_nearest",
    "center_distances",
    "centre_distances",
    "cluster_means",
    "cluster_support",
    "fesem",
    "kmeans",
    "kmeans_centers",
    "kmeans_centres",
    "kmeanspp_centers",
    "kmeanspp_centres",
]


@renamed_keywords(centres="centers")
def center_distances(
    params: Tensor, centers: Tensor, mask: Tensor | None = None, support: Tensor | None = None
) -> Tensor:
    """``dist(theta_i, theta_bar_k)`` of eq. (10.8) for every row and center, ``(n, K)``.

    The squared Euclidean distance, summed from the coordinate differences (not the
    ``|a|^2 + |b|^2 - 2 a.b`` expansion of ``torch.cdist``'s matrix-product mode, whose
    float32 cancellation can swamp the small gaps between models grown from one start).
    With ``mask`` ``(n, P)`` and/or ``support`` ``(K, P)`` (0/1) the sum runs over the
    coordinates that row ``i`` trains and center ``k`` holds (see the module docstring).
    """
    if params.ndim != 2 or centers.ndim != 2 or centers.shape[1] != params.shape[1]:
        raise ValueError("params (n, P) and centers (K, P) must share P, got "
                         f"{tuple(params.shape)} and {tuple(centers.shape)}")
    if mask is not None and mask.shape != params.shape:
        raise ValueError(f"mask must be {tuple(params.shape)} like params, got {tuple(mask.shape)}")
    if support is not None and support.shape != centers.shape:
        raise ValueError(f"support must be {tuple(centers.shape)} like centers, "
                         f"got {tuple(support.shape)}")
    columns = []
    for k in range(centers.shape[0]):  # K reductions over (n, P); K is small
        sq = params - centers[k]
        sq.mul_(sq)  # in place on the fresh difference: the values of ** 2 and * mask
        if support is not None:
            sq.mul_(support[k])
        if mask is not None:
            sq.mul_(mask)
        columns.append(sq.sum(dim=1))
    return torch.stack(columns, dim=1)


@renamed_keywords(centres="centers")
def assign_nearest(
    params: Tensor, centers: Tensor, mask: Tensor | None = None, support: Tensor | None = None
) -> Tensor:
    """E-step (10.8): index of the nearest center of every row, ``(n,)``.

    Distances as in :func:`center_distances` (with a mask ``(n, P)`` the distance of row
    ``i`` counts its trainable coordinates only; with a ``support`` ``(K, P)`` only those
    the center holds).  An exact tie goes to the lower center index.
    """
    return center_distances(params, centers, mask, support).argmin(dim=1)


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


def cluster_support(assignment: Tensor, mask: Tensor, previous: Tensor) -> Tensor:
    """Support ``(K, P)`` of the centers: 1 where some member of the cluster trains the
    coordinate (``mask`` ``(n, P)``); a cluster without members keeps ``previous``, so that
    an emptied center, which keeps its value (:func:`cluster_means`), is not given an empty
    support (distance 0 to every client)."""
    k = previous.shape[0]
    mass = torch.zeros_like(previous).index_add_(0, assignment, mask)
    members = torch.bincount(assignment, minlength=k) > 0
    return torch.where(members[:, None], (mass > 0).to(previous.dtype), previous)


def _kmeanspp_indices(params: Tensor, k: int, generator: torch.Generator,
                      mask: Tensor | None) -> list[int]:
    n = params.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n_clients = {n}, got k = {k}")

    def to(j: int) -> Tensor:
        return center_distances(params, params[j:j + 1], mask,
                                None if mask is None else mask[j:j + 1])[:, 0]

    chosen = [int(torch.randint(n, (1,), generator=generator))]
    d2 = to(chosen[0])
    for _ in range(1, k):
        weights = d2.detach().double().cpu()
        weights[chosen] = 0.0
        if float(weights.sum()) <= 0:
            weights = torch.ones(n, dtype=torch.float64)
            weights[chosen] = 0.0
        nxt = int(torch.multinomial(weights, 1, generator=generator))
        chosen.append(nxt)
        d2 = torch.minimum(d2, to(nxt))
    return chosen


def kmeanspp_centers(params: Tensor, k: int, seed: GeneratorLike,
                     mask: Tensor | None = None) -> Tensor:
    """``k`` distinct rows of ``params`` chosen by k-means++ seeding (Arthur & Vassilvitskii 2007).

    The first uniformly, each next one with probability proportional to the squared
    distance (:func:`center_distances`; with a mask over the coordinates both rows train)
    to the nearest row chosen so far (uniformly among the rest if all distances are 0).
    Draws on the CPU with the generator made from ``seed``.
    """
    return params[_kmeanspp_indices(params, k, make_generator(seed), mask)].clone()


def kmeans(params: Tensor, k: int, seed: GeneratorLike, *, mask: Tensor | None = None,
           max_iter: int = 100, n_init: int = 10) -> tuple[Tensor, Tensor, Tensor | None]:
    """k-means of the rows of ``params`` with FeSEM's own distances and means.

    ``n_init`` runs, each a k-means++ seeding (:func:`kmeanspp_centers`) followed by Lloyd
    iterations (E-step :func:`assign_nearest`, M-step :func:`cluster_means`; an emptied
    cluster keeps its center) until the assignment no longer changes or ``max_iter``
    iterations; the run with the lowest inertia (the penalty of (10.7),
    ``sum_i dist(theta_i, theta_bar_{r_i})``) is kept, the first one on ties (as
    scikit-learn's ``KMeans(n_init=10)``: one k-means++ run often stops in a local optimum).
    With a mask ``(n, P)`` distances and means are those of ``mask_average`` (module
    docstring).

    Returns the centers ``(K, P)``, the assignment ``(n,)`` (the E-step of the returned
    centers) and the centers' support ``(K, P)`` (``None`` without a mask).
    """
    n_init = check_int(n_init, "n_init", minimum=1)
    gen = make_generator(seed)  # once: the restarts continue one stream
    best: tuple[float, Tensor, Tensor, Tensor | None] | None = None
    for _ in range(n_init):  # restarts, not clients
        chosen = _kmeanspp_indices(params, k, gen, mask)
        centers = params[chosen].clone()
        support = None if mask is None else mask[chosen].clone()
        assignment = assign_nearest(params, centers, mask, support)
        for _ in range(max_iter):
            centers = cluster_means(params, assignment, centers, mask)
            if mask is not None:
                support = cluster_support(assignment, mask, support)
            new = assign_nearest(params, centers, mask, support)
            if torch.equal(new, assignment):
                break
            assignment = new
        inertia = float(center_distances(params, centers, mask, support)
                        .gather(1, assignment[:, None]).sum())
        if best is None or inertia < best[0]:
            best = (inertia, centers, assignment, support)
    assert best is not None
    return best[1], best[2], best[3]


def kmeans_centers(params: Tensor, k: int, seed: GeneratorLike, max_iter: int = 100,
                   mask: Tensor | None = None, n_init: int = 10) -> Tensor:
    """The centers of :func:`kmeans`."""
    return kmeans(params, k, seed, mask=mask, max_iter=max_iter, n_init=n_init)[0]


@renamed_keywords(init_centres="init_centers")
def fesem(
    model: FlatModel,
    data: Any,
    options: TrainingOptions | None = None,
    *,
    n_clusters: int,
    lam: float,
    mask: Any = None,
    init_centers: Tensor | np.ndarray | None = None,
    mask_average: bool = False,
    kmeans_restarts: int = 10,
    **overrides: Any,
) -> FederatedResult:
    """FeSEM (the chapter, Algorithms 2-3, eqs. (10.7)-(10.10)).

    Parameters
    ----------
    model, data, options, **overrides
        As in :func:`~networkedfl.algorithms.dfl_sgd` (the same options; ``n_rounds``
        at least 1 without ``init_centers``).
    n_clusters
        ``K``.
    lam
        ``lambda`` of eq. (10.10): weight of ``||theta_i - theta_bar_k||^2``.
    mask
        Optional ``(n, P)`` 0/1 mask of trainable coordinates per client.
    init_centers
        ``(K, P)`` initial centers (every round is then an EM round; the first E-step
        compares the start with these centers); ``None``: round 1 is the warm-up and
        k-means initialisation of the module docstring (draws from ``seed``).
    mask_average
        With a mask: E-step distances over the coordinates that the client trains and the
        center's cluster trains, M-step means over the members that train a coordinate
        (:func:`center_distances`, :func:`cluster_means`, :func:`cluster_support`; the
        warm-up k-means too), so frozen coordinates (e.g. the zero embedding rows of words a
        client never sees, Sec. 10.5.2) neither drag the centers nor decide the assignment.
        ``False``: all coordinates.
    kmeans_restarts
        k-means++ restarts of the warm-up k-means (:func:`kmeans`'s ``n_init``; the run of
        lowest inertia is kept).

    Returns
    -------
    FederatedResult
        ``client_params`` the personalised models after the last local update,
        ``global_params`` the ``K`` centers of the last M-step, ``assignment`` the last
        E-step.  History rows hold ``cluster_sizes`` (a list) and ``step``.
    """
    k = check_int(n_clusters, "n_clusters", minimum=1)
    restarts = check_int(kmeans_restarts, "kmeans_restarts", minimum=1)
    check_finite(lam, "lam", sign="non-negative")
    run = start_run(model, data, options, overrides, "fesem",
                    required=("n_rounds", "local_steps", "lr", "batch_size"), batches=True)
    opts, gen, p, dtype, device = run.options, run.seed, run.n_params, run.dtype, run.device
    check_int(opts.n_rounds, "n_rounds", minimum=0 if init_centers is not None else 1)
    mask_t = run.mask(mask)
    theta = run.initial_rows(run.n_clients, "client")
    gradients = batch_gradients(model)
    t = 0

    def local_update(start: Tensor, anchor: Tensor | None, weight: float) -> Tensor:
        nonlocal t

        def gradient(th: Tensor, batch: tuple[Tensor, Tensor, Tensor]) -> Tensor:
            g = gradients(th, *batch)
            return g + 2.0 * weight * (th - anchor) if anchor is not None and weight > 0 else g

        th, t = local_steps(gradient, start, run.data, steps=opts.local_steps,
                            batch_size=opts.batch_size, lr=opts.lr, start=t, seed=gen, mask=mask_t)
        return th

    warm_up = init_centers is None
    held = mask_t if mask_average else None
    if not warm_up:
        centers = torch.as_tensor(np.asarray(init_centers) if not isinstance(init_centers, Tensor)
                                  else init_centers).to(dtype=dtype, device=device)
        if centers.shape != (k, p):
            raise ValueError(f"init_centers must be ({k}, {p}), got {tuple(centers.shape)}")
    # support of the centers (mask_average): given centers hold every coordinate
    support = None if held is None else torch.ones((k, p), dtype=dtype, device=device)
    assignment = run.zeros
    assigned = False  # whether `assignment` is an E-step of earlier models (not the placeholder)

    def m_step(models: Tensor, r_: Tensor, centers_: Tensor,
               support_: Tensor | None) -> tuple[Tensor, Tensor | None]:
        new = cluster_means(models, r_, centers_, held)  # (10.9)
        return new, (None if held is None else cluster_support(r_, held, support_))

    for r in run.rounds():
        if warm_up and r == 1:  # tau unpenalised local steps, then k-means of the models
            theta = local_update(theta, None, 0.0)
            centers, assignment, support = kmeans(
                theta, k, gen, mask=held, n_init=restarts)
        else:
            if assigned:  # the existing centers theta_bar^t: (10.9) at theta^t, previous r
                centers, support = m_step(theta, assignment, centers, support)
            assignment = assign_nearest(theta, centers, held, support)   # E-step (10.8)
            centers, support = m_step(theta, assignment, centers, support)  # M-step (10.9)
            anchor = centers[assignment]
            theta = local_update(freeze(anchor, theta, mask_t), anchor, float(lam))  # Alg. 3
        assigned = True
        run.record_exchange(r, theta, centers, assignment,
                            extra={"cluster_sizes": torch.bincount(assignment, minlength=k).tolist(),
                                   "step": t})
    return run.result(theta, centers, assignment)


# the British spellings of issue 43 item 5 (one spelling, -ize/-er as scikit-learn's): warn
centre_distances = renamed_function(center_distances, "centre_distances")
kmeans_centres = renamed_function(kmeans_centers, "kmeans_centres")
kmeanspp_centres = renamed_function(kmeanspp_centers, "kmeanspp_centres")
