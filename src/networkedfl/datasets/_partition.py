"""Seeded non-i.i.d. partitions of one labelled dataset over clients.

The partitioners most asked for in the issue trackers of PFLlib, FedLab and Flower, each
returning one array of sample indices per client (disjoint, ascending), and
:func:`client_data` / :func:`node_data` turning a partition into the containers the
algorithms take.

* :func:`dirichlet_label_skew`: for every class, the shares of its samples over the clients
  are drawn from ``Dir(alpha 1_n)`` (Hsu, Qi & Brown 2019, "Measuring the effects of
  non-identical data distribution for federated visual classification"; the NIID-Bench
  scheme of Li et al. 2022).  Small ``alpha``: few classes per client; large: i.i.d.
* :func:`shards`: sort by label, cut into ``n * shards_per_client`` equal shards and deal
  each client ``shards_per_client`` of them at random (McMahan et al. 2017,
  "Communication-efficient learning of deep networks from decentralized data").
* :func:`quantity_skew`: client sizes from ``Dir(alpha 1_n)``, samples otherwise i.i.d.
* :func:`mixture`: FedRelax Algorithm 3 (Sarcheshmehpour et al.): client ``i`` draws
  ``s_i ~ N(0, I_K)`` and takes ``m rho_i^(k)`` samples (largest-remainder rounding) of
  source ``k``, with ``rho_i = softmax(s_i)``.

Every partitioner takes ``seed``: ``None`` (fresh entropy), an ``int`` or a
:class:`numpy.random.Generator` (used as it is, so its state advances); see
:mod:`networkedfl.seeding`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._nodedata import NodeData
from ..fedrelax import largest_remainder, softmax
from ..seeding import Seed, as_rng

if TYPE_CHECKING:
    from ..nn import ClientBuckets, ClientData, DeviceLike

__all__ = [
    "client_data",
    "dirichlet_label_skew",
    "mixture",
    "node_data",
    "quantity_skew",
    "shards",
]


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _labels(labels: Any) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"labels must be a non-empty 1-d array, got shape {y.shape}")
    return y


def _split(order: np.ndarray, owner: np.ndarray, n_clients: int) -> list[np.ndarray]:
    """Indices ``order`` grouped by ``owner`` (client of each), each group ascending."""
    by_client = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[by_client], np.arange(n_clients + 1))
    return [np.sort(order[by_client[bounds[c]: bounds[c + 1]]]) for c in range(n_clients)]


def dirichlet_label_skew(labels: Any, n_clients: int, alpha: float, *, seed: Seed = None,
                         min_size: int = 1, max_tries: int = 100) -> list[np.ndarray]:
    """Label-skewed partition: for every class ``k``, ``p_k ~ Dir(alpha 1_n)`` and the
    class's samples (shuffled) are cut into consecutive runs of sizes ``round(p_k n_k)``.

    Draws are repeated (at most ``max_tries`` times) until every client holds at least
    ``min_size`` samples, as in NIID-Bench; an error says when that does not happen.
    """
    y = _labels(labels)
    n = _positive(n_clients, "n_clients")
    if not np.isfinite(alpha) or alpha <= 0:
        raise ValueError(f"alpha must be positive, got {alpha}")
    rng = as_rng(seed)
    classes = np.unique(y)
    for _ in range(_positive(max_tries, "max_tries")):
        owner = np.empty(y.size, dtype=np.int64)
        for k in classes:  # one Dirichlet draw per class (a handful), no loop over samples
            members = rng.permutation(np.flatnonzero(y == k))
            share = rng.dirichlet(np.full(n, float(alpha)))
            owner[members] = np.repeat(np.arange(n), largest_remainder(len(members), share)[0])
        parts = _split(np.arange(y.size), owner, n)
        if min(len(p) for p in parts) >= min_size:
            return parts
    raise ValueError(f"no Dirichlet(alpha={alpha}) label partition gave every one of {n} clients "
                     f"{min_size} samples in {max_tries} draws: raise alpha or lower min_size")


def shards(labels: Any, n_clients: int, shards_per_client: int, *, seed: Seed = None) -> list[np.ndarray]:
    """Pathological non-i.i.d. partition: the samples sorted by label (ties in a random
    order) are cut into ``n * shards_per_client`` shards of equal size (the remainder of the
    division is left out) and every client gets ``shards_per_client`` random shards."""
    y = _labels(labels)
    n, s = _positive(n_clients, "n_clients"), _positive(shards_per_client, "shards_per_client")
    size = y.size // (n * s)
    if size < 1:
        raise ValueError(f"{y.size} samples cannot fill {n * s} shards")
    rng = as_rng(seed)
    shuffled = rng.permutation(y.size)
    order = shuffled[np.argsort(y[shuffled], kind="stable")][: n * s * size]
    dealt = rng.permutation(n * s).reshape(n, s)  # shard ids of every client
    owner = np.empty(n * s, dtype=np.int64)
    owner[dealt.ravel()] = np.repeat(np.arange(n), s)
    return _split(order, np.repeat(owner, size), n)


def quantity_skew(n_samples: int, n_clients: int, alpha: float, *, seed: Seed = None,
                  min_size: int = 1) -> list[np.ndarray]:
    """Size-skewed partition of ``range(n_samples)``: every client first gets ``min_size``
    samples, the other ``n_samples - n_clients min_size`` are shared out by client shares
    ``p ~ Dir(alpha 1_n)`` (largest-remainder rounding); samples are drawn at random.

    Guaranteeing ``min_size`` this way never fails (a redraw-until-large-enough loop does,
    for some seeds, at small ``alpha`` or many clients)."""
    total, n = _positive(n_samples, "n_samples"), _positive(n_clients, "n_clients")
    if not np.isfinite(alpha) or alpha <= 0:
        raise ValueError(f"alpha must be positive, got {alpha}")
    if isinstance(min_size, bool) or not isinstance(min_size, int | np.integer) or min_size < 0:
        raise ValueError(f"min_size must be a non-negative integer, got {min_size!r}")
    if n * min_size > total:
        raise ValueError(f"cannot give each of {n} clients min_size={min_size} samples: only {total}")
    rng = as_rng(seed)
    rest = total - n * int(min_size)
    sizes = int(min_size) + largest_remainder(rest, rng.dirichlet(np.full(n, float(alpha))))[0]
    return _split(rng.permutation(total), np.repeat(np.arange(n), sizes), n)


def mixture(sources: Any, n_clients: int, samples_per_client: int, *, seed: Seed = None) -> list[np.ndarray]:
    """FedRelax Algorithm 3 over a pool: ``sources[j]`` is the source (cluster, class,
    domain) of sample ``j``; client ``i`` takes ``m rho_i^(k)`` samples of source ``k``
    without replacement, ``rho_i = softmax(s_i)``, ``s_i ~ N(0, I_K)`` (sources in sorted
    order).  A client's mixing weights are its source counts over ``m``."""
    src = _labels(sources)
    n, m = _positive(n_clients, "n_clients"), _positive(samples_per_client, "samples_per_client")
    rng = as_rng(seed)
    kinds = np.unique(src)
    counts = largest_remainder(m, softmax(rng.standard_normal((n, kinds.size))))  # (n, K)
    owner = np.full(src.size, -1, dtype=np.int64)
    for k, kind in enumerate(kinds):
        pool = rng.permutation(np.flatnonzero(src == kind))
        need = int(counts[:, k].sum())
        if need > pool.size:
            raise ValueError(f"source {kind.item()!r} has {pool.size} samples but the clients' mixtures "
                             f"ask for {need}: lower samples_per_client or n_clients")
        owner[pool[:need]] = np.repeat(np.arange(n), counts[:, k])
    taken = np.flatnonzero(owner >= 0)
    return _split(taken, owner[taken], n)


def client_data(features: Any, targets: Any, parts: Sequence[np.ndarray], *, dtype: Any = None,
                device: DeviceLike = "cpu", layout: str = "padded") -> ClientData | ClientBuckets:
    """The clients' datasets of a partition in ``dtype`` (a torch dtype or its name; default
    :data:`~networkedfl.nn.DEFAULT_DTYPE`, float32), padding with sample weight 0.

    ``layout="padded"`` (default): one :class:`~networkedfl.nn.ClientData` padded to the
    largest client, which every torch method takes.  ``"buckets"``: a
    :class:`~networkedfl.nn.ClientBuckets`, clients grouped by size and padded within their
    bucket, storing at most twice the data however skewed the sizes (e.g.
    ``quantity_skew(200000, 2000, 0.1)``: ~50x the data padded, at most 2x in buckets);
    :func:`~networkedfl.algorithms.fedavg` and ``local_training`` take it."""
    from ..nn import ClientBuckets, ClientData, as_dtype

    if layout not in ("padded", "buckets"):
        raise ValueError(f"layout must be 'padded' or 'buckets', got {layout!r}")
    if layout == "buckets":
        if not len(parts) or min(len(p) for p in parts) < 1:
            raise ValueError("every client needs at least one sample")
        return ClientBuckets.from_parts(features, targets, parts, dtype=as_dtype(dtype), device=device)
    x, y = np.asarray(features), np.asarray(targets)
    counts = np.array([len(p) for p in parts], dtype=np.int64)
    if counts.size == 0 or counts.min() < 1:
        raise ValueError("every client needs at least one sample")
    width = int(counts.max())
    index = np.zeros((counts.size, width), dtype=np.int64)
    real = np.arange(width)[None, :] < counts[:, None]
    index[real] = np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])
    return ClientData.from_arrays(x[index], y[index], counts, dtype=as_dtype(dtype), device=device)


def node_data(features: Any, labels: Any, parts: Sequence[np.ndarray]) -> NodeData:
    """The nodes' datasets of a partition as a (ragged) :class:`~networkedfl.gtv.NodeData`
    for GTV (``features`` ``(N, d)``, real-valued ``labels`` ``(N,)``)."""
    x, y = np.asarray(features, float), np.asarray(labels, float)
    return NodeData.from_ragged([x[p] for p in parts], [y[p] for p in parts])
