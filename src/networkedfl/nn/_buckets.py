"""Clients of very different sizes in memory proportional to their data: buckets of clients of
similar sizes, each padded only to its own largest client.

A :class:`~networkedfl.nn.ClientData` pads every client to the largest one: with the
quantity-skewed partitions of federated benchmarks (client sizes drawn from a Dirichlet
distribution, :func:`~networkedfl.datasets.quantity_skew`) that stores tens of times the
data.  :class:`ClientBuckets` groups the clients by size, bucket ``k`` holding those with
``2^(k-1) < m_i <= 2^k`` samples, and pads within a bucket: every client is padded to less
than twice its own size, so the buckets store at most twice the data (plus one row per
client without data).  The methods that take buckets (:func:`~networkedfl.algorithms.fedavg`,
:func:`~networkedfl.algorithms.local_training`, the methods on FedAvg's rounds and
:func:`~networkedfl.algorithms.ifca`) train each bucket in one batched
``vmap(grad(...))`` call, as they train a padded ``ClientData`` (a loop over the buckets,
at most ``log2`` of the largest size of them, never over clients).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .._validation import renamed
from ._models import DEFAULT_DTYPE, ClientData, DeviceLike

__all__ = ["ClientBuckets"]


def _size_classes(sizes: np.ndarray) -> np.ndarray:
    """Bucket of every client: ``k`` with ``2^(k-1) < m_i <= 2^k`` (0 for 0 or 1 sample)."""
    return np.ceil(np.log2(np.maximum(sizes, 1))).astype(np.int64)


@dataclass(frozen=True, eq=False)
class ClientBuckets:
    """Local datasets of ``n`` clients in buckets of similar sizes (padding bounded by 2x).

    Attributes
    ----------
    buckets
        One :class:`~networkedfl.nn.ClientData` per bucket, padded to its largest client.
    clients
        ``clients[k]``: int64 indices ``(n_k,)`` of the clients in ``buckets[k]``, row by row;
        together a permutation of ``range(n)``.
    """

    buckets: tuple[ClientData, ...]
    clients: tuple[Tensor, ...]

    def __post_init__(self) -> None:
        if not self.buckets or len(self.buckets) != len(self.clients):
            raise ValueError("ClientBuckets needs at least one bucket and one index tensor per bucket")
        for k, (data, rows) in enumerate(zip(self.buckets, self.clients, strict=True)):
            if not isinstance(data, ClientData) or rows.shape != (data.n_nodes,):
                raise ValueError(f"bucket {k}: a ClientData and the indices of its {data.n_nodes} clients")
        every = torch.sort(torch.cat([c.cpu() for c in self.clients])).values
        if not torch.equal(every, torch.arange(every.numel())):
            raise ValueError("the clients of the buckets must be a permutation of range(n_nodes)")
        if len({(d.dtype, d.device) for d in self.buckets}) != 1:
            raise ValueError("all buckets must have one dtype and one device")

    @property
    def n_nodes(self) -> int:
        """Number of clients (nodes) ``n``, over all buckets."""
        return sum(int(c.numel()) for c in self.clients)

    n_clients = renamed("n_nodes", "n_clients")

    @property
    def dtype(self) -> torch.dtype:
        return self.buckets[0].dtype

    @property
    def device(self) -> torch.device:
        return self.buckets[0].device

    @property
    def max_samples(self) -> int:
        """The largest padded length of a bucket."""
        return max(d.max_samples for d in self.buckets)

    def _per_client(self, values: Sequence[Tensor]) -> Tensor:
        out = torch.empty(self.n_nodes, dtype=values[0].dtype, device=self.device)
        for rows, v in zip(self.clients, values, strict=True):
            out[rows] = v
        return out

    @property
    def weight_per_node(self) -> Tensor:
        """Total sample weight per client ``(n,)`` (the FedAvg averaging weights)."""
        return self._per_client([d.weight_per_node for d in self.buckets])

    n_samples = renamed("weight_per_node", "n_samples")

    @property
    def samples_per_node(self) -> Tensor:
        """Number of samples with positive weight per client, int64 ``(n,)``."""
        return self._per_client([d.samples_per_node for d in self.buckets])

    @property
    def counts(self) -> Tensor:
        """:attr:`samples_per_node` (the name of :class:`~networkedfl.nn.ClientData`'s)."""
        return self.samples_per_node

    @cached_property
    def _where(self) -> tuple[Tensor, Tensor]:
        """Bucket and row of every client, int64 ``(n,)`` each."""
        bucket = torch.cat([torch.full_like(c, k) for k, c in enumerate(self.clients)])
        row = torch.cat([torch.arange(c.numel(), device=c.device) for c in self.clients])
        order = torch.cat(list(self.clients))
        return torch.empty_like(bucket).index_put_((order,), bucket), \
            torch.empty_like(row).index_put_((order,), row)

    def to(self, dtype: torch.dtype | None = None, device: DeviceLike | None = None) -> ClientBuckets:
        """Every bucket in ``dtype`` on ``device`` (:meth:`ClientData.to`)."""
        device = None if device is None else torch.device(device)
        return ClientBuckets(tuple(d.to(dtype, device) for d in self.buckets),
                             tuple(c if device is None else c.to(device) for c in self.clients))

    def subset(self, clients: Tensor | np.ndarray | Sequence[int]) -> ClientBuckets:
        """The clients ``clients`` (indices), numbered in that order."""
        idx = torch.as_tensor(np.asarray(clients) if not isinstance(clients, Tensor) else clients)
        idx = idx.to(dtype=torch.int64, device=self.device)
        bucket_of, row_of = self._where
        b, r = bucket_of[idx], row_of[idx]
        parts, rows = [], []
        for k, data in enumerate(self.buckets):  # a loop over the buckets, not the clients
            chosen = torch.nonzero(b == k).squeeze(1)
            if chosen.numel():
                parts.append(data.subset(r[chosen]))
                rows.append(chosen)
        return ClientBuckets(tuple(parts), tuple(rows))

    def padded(self) -> ClientData:
        """All clients in one :class:`~networkedfl.nn.ClientData` padded to the largest."""
        n, m, first = self.n_nodes, self.max_samples, self.buckets[0]
        x = first.features.new_zeros((n, m, *first.features.shape[2:]))
        y = first.targets.new_zeros((n, m, *first.targets.shape[2:]))
        w = first.sample_weights.new_zeros((n, m))
        for data, rows in zip(self.buckets, self.clients, strict=True):
            width = data.max_samples
            x[rows, :width], y[rows, :width], w[rows, :width] = data.features, data.targets, data.sample_weights
        return ClientData(x, y, w)

    @classmethod
    def from_parts(cls, features: Any, targets: Any, parts: Sequence[Any], *,
                   dtype: torch.dtype = DEFAULT_DTYPE, device: DeviceLike = "cpu") -> ClientBuckets:
        """Client ``i`` holds the samples ``parts[i]`` (indices) of the pooled ``features``
        ``(N, ...)`` and ``targets`` ``(N,)``; clients grouped by size, each bucket padded
        to its largest client (padding weight 0)."""
        x, y = np.asarray(features), np.asarray(targets)
        index = [np.asarray(p, dtype=np.int64).reshape(-1) for p in parts]
        if not index:
            raise ValueError("need at least one client")
        sizes = np.array([p.size for p in index], dtype=np.int64)
        size_class = _size_classes(sizes)
        buckets, clients = [], []
        for k in np.unique(size_class):
            members = np.flatnonzero(size_class == k)
            counts = sizes[members]
            width = max(int(counts.max()), 1)
            gather = np.zeros((members.size, width), dtype=np.int64)
            real = np.arange(width)[None, :] < counts[:, None]
            gather[real] = np.concatenate([index[c] for c in members])
            xb, yb = x[gather], y[gather]
            xb[~real], yb[~real] = 0, 0  # padding holds zeros, as ClientData.from_client_arrays
            buckets.append(ClientData.from_arrays(xb, yb, counts, dtype=dtype, device=device))
            clients.append(torch.as_tensor(members, device=device))
        return cls(tuple(buckets), tuple(clients))

    @classmethod
    def from_client_arrays(cls, features: Sequence[Any], targets: Sequence[Any], *,
                           dtype: torch.dtype = DEFAULT_DTYPE, device: DeviceLike = "cpu") -> ClientBuckets:
        """From per-client arrays ``features[i]`` ``(m_i, ...)`` and ``targets[i]`` ``(m_i,)``
        (as :meth:`ClientData.from_client_arrays`, without padding to the largest)."""
        if len(features) != len(targets) or not features:
            raise ValueError("need one features and one targets array per client (at least one)")
        xs, ys = [np.asarray(f) for f in features], [np.asarray(t) for t in targets]
        sizes = [x.shape[0] for x in xs]
        if any(y.shape != (s,) for y, s in zip(ys, sizes, strict=True)):
            raise ValueError("targets[i] must have shape (m_i,) matching features[i]")
        ends = np.cumsum(sizes)
        parts = [np.arange(e - s, e) for s, e in zip(sizes, ends, strict=True)]
        return cls.from_parts(np.concatenate(xs), np.concatenate(ys), parts, dtype=dtype, device=device)
