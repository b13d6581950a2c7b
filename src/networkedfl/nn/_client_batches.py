"""Per-step mini-batches of all clients at once, masks and step-size schedules.

Shared by the graph-aware algorithms of Lu, Xing & Yu, "Graph-aware federated learning"
(the chapter): :func:`~networkedfl.algorithms.dfl_sgd` (DFL-SGD, DFL-GT),
:func:`~networkedfl.algorithms.fedavg_steps`, :func:`~networkedfl.algorithms.fesem` and
:func:`~networkedfl.algorithms.bigfl`.  Their iterations are counted in *steps*: each step
every client draws a fresh mini-batch of ``m`` samples (Algorithm 1, line 3: "randomly
sample m data points locally") and evaluates the mini-batch gradient of eq. (10.2),

    grad_hat f_i(theta) = (1/m) sum_{k=1}^m grad F_i(theta; xi_ik),

for all clients in one ``vmap(grad(...))`` call.

A data source is anything with ``n_nodes`` and ``sample(batch_size, generator) ->
(features, targets, weights)`` returning tensors of shapes ``(n, B, ...)``, ``(n, B, ...)``
and ``(n, B)`` (:class:`BatchSource`).  :class:`ClientBatches` is the standard one: padded
per-client datasets whose targets may be vectors (e.g. the 8-dimensional outputs of the
chapter's synthetic task) or token sequences; a :class:`~networkedfl.nn.ClientData`
is converted by :func:`as_batches`.

A *mask* ``(n, P)`` of zeros and ones freezes parameters per client (e.g. embedding rows
of words a client never sees, Sec. 10.5.2): gradients are multiplied by the mask, and every
update, including averaging and gossip, leaves a frozen coordinate at its current value
(:func:`freeze`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import Tensor
from torch.func import grad, vjp, vmap

from .._validation import warn_renamed
from ._models import DEFAULT_DTYPE, ClientData, DeviceLike, FlatModel, PaddedClients

__all__ = [
    "BatchSource",
    "ClientBatches",
    "StepSize",
    "as_batches",
    "batch_gradients",
    "batch_hessian_products",
    "check_mask",
    "freeze",
    "inverse_sqrt",
    "step_size",
]

#: A constant step size or a schedule ``t -> alpha^t`` of the iteration ``t = 0, 1, ...``.
StepSize = float | Callable[[int], float]


@runtime_checkable
class BatchSource(Protocol):
    """Anything that yields one mini-batch per client per call."""

    @property
    def n_nodes(self) -> int: ...

    def sample(
        self, batch_size: int | None, generator: torch.Generator | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """``(features (n, B, ...), targets (n, B, ...), weights (n, B))``."""
        ...


@dataclass(frozen=True, eq=False)
class ClientBatches(PaddedClients):
    """Local datasets of ``n`` clients padded to a common length ``m``.

    Attributes
    ----------
    features
        ``(n, m, ...)``.
    targets
        ``(n, m, ...)``: scalars, vectors (multi-output regression) or sequences.
    sample_weights
        ``(n, m)`` non-negative, 0 on padding (a client's loss is the weighted mean of its
        sample losses, :meth:`~networkedfl.nn.FlatModel.loss`).
    """

    features: Tensor
    targets: Tensor
    sample_weights: Tensor

    def __post_init__(self) -> None:
        self._check_layout(vector_targets=True)

    @classmethod
    def from_arrays(
        cls,
        features: Any,
        targets: Any,
        weights: Any = None,
        *,
        dtype: torch.dtype = DEFAULT_DTYPE,
        device: DeviceLike = "cpu",
    ) -> ClientBatches:
        """From arrays ``(n, m, ...)``; floating arrays are cast to ``dtype``, integer
        arrays (class labels, token ids) are kept as ``int64``; ``weights=None``: all 1."""
        x, y = _tensor(features, dtype, device), _tensor(targets, dtype, device)
        if weights is None:
            w = torch.ones(x.shape[:2], dtype=dtype, device=device)
        else:
            w = torch.as_tensor(np.asarray(weights)).to(dtype=dtype, device=device)
        return cls(x, y, w)

    @classmethod
    def from_client_data(cls, data: ClientData) -> ClientBatches:
        return cls(data.features, data.targets, data.sample_weights)

    def to(self, dtype: torch.dtype | None = None, device: DeviceLike | None = None) -> ClientBatches:
        """Floating tensors cast to ``dtype``, everything moved to ``device``."""

        def cast(t: Tensor) -> Tensor:
            return t.to(dtype=dtype if dtype is not None and t.is_floating_point() else t.dtype,
                        device=device if device is not None else t.device)

        return ClientBatches(cast(self.features), cast(self.targets), cast(self.sample_weights))

    def subset(self, clients: Tensor) -> ClientBatches:
        return ClientBatches(
            self.features[clients], self.targets[clients], self.sample_weights[clients]
        )

    def sample(
        self, batch_size: int | None, generator: torch.Generator | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """One mini-batch of ``B`` samples per client, drawn without replacement.

        Every client draws uniformly among its real samples (positive weight); a client
        with fewer than ``B`` real samples gets them all, padded with weight-0 entries.
        ``batch_size=None`` or ``B >= m``: the full local datasets (no random draw).  One
        ``(n, m)`` block of uniform keys is drawn on the CPU with ``generator`` and the
        ``B`` smallest keys of each row are kept.
        """
        if batch_size is None or batch_size >= self.max_samples:
            return self.features, self.targets, self.sample_weights
        if generator is None:
            raise ValueError("mini-batch sampling is random: pass a generator")
        n, m = self.sample_weights.shape
        keys = torch.rand((n, m), generator=generator, dtype=torch.float64)
        keys = keys.to(self.sample_weights.device).masked_fill(self.sample_weights <= 0, 2.0)
        idx = torch.topk(keys, int(batch_size), dim=1, largest=False, sorted=True).indices
        rows = torch.arange(n, device=idx.device)[:, None]
        return self.features[rows, idx], self.targets[rows, idx], self.sample_weights[rows, idx]


def _tensor(values: Any, dtype: torch.dtype, device: DeviceLike) -> Tensor:
    t = values if isinstance(values, Tensor) else torch.as_tensor(np.asarray(values))
    if t.is_floating_point():
        return t.to(dtype=dtype, device=device)
    return t.to(dtype=torch.int64, device=device)


def as_batches(data: Any, dtype: torch.dtype, device: DeviceLike) -> BatchSource:
    """A :class:`BatchSource` from a :class:`~networkedfl.nn.ClientData`, a
    :class:`ClientBatches` (both cast to ``dtype`` and moved to ``device``) or any other
    object with ``n_nodes`` and ``sample`` (returned as it is; one written before the rename,
    with ``n_clients``, is wrapped and warns)."""
    if isinstance(data, ClientData):
        return ClientBatches.from_client_data(data.to(dtype, device))
    if isinstance(data, ClientBatches):
        return data.to(dtype, device)
    if not isinstance(data, BatchSource) and hasattr(data, "n_clients") and callable(getattr(data, "sample", None)):
        warn_renamed(f"{type(data).__name__}.n_clients is deprecated: a batch source names its number of "
                     "clients n_nodes (networkedfl.nn.BatchSource)", stacklevel=3)
        data = _RenamedSource(data)
    if isinstance(data, BatchSource):
        if data.n_nodes < 1:
            raise ValueError(f"data holds no client (n_nodes = {data.n_nodes}): need at least one")
        return data
    raise TypeError(
        "data must be a ClientData, a ClientBatches or an object with n_nodes and "
        f"sample(batch_size, generator), got {type(data).__name__}"
    )


class _RenamedSource:
    """A batch source written against the old protocol (``n_clients``), seen as a
    :class:`BatchSource`: every other attribute is the wrapped source's."""

    def __init__(self, source: Any) -> None:
        self._source = source

    @property
    def n_nodes(self) -> int:
        return int(self._source.n_clients)

    def sample(self, batch_size: int | None, generator: torch.Generator | None) -> tuple[Tensor, Tensor, Tensor]:
        return self._source.sample(batch_size, generator)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._source, name)


def batch_gradients(model: FlatModel) -> Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]:
    """``(params (n, P), x, y, w) -> (n, P)``: the mini-batch gradients (10.2) of all clients,
    one ``vmap(grad(model.loss))`` call (floating inputs must already have the dtype of
    ``params``), or the model's closed-form :attr:`~networkedfl.nn.FlatModel.batch_gradient`
    where it provides one for the batch."""
    generic = vmap(grad(model.loss))
    own = model.batch_gradient
    if own is None:
        return generic

    def gradients(params: Tensor, x: Tensor, y: Tensor, w: Tensor) -> Tensor:
        g = own(params, x, y, w)
        return generic(params, x, y, w) if g is None else g

    return gradients


def batch_hessian_products(model: FlatModel, params: Tensor, x: Tensor, y: Tensor,
                           w: Tensor) -> Callable[[Tensor], Tensor]:
    """``v (n, P) -> (n, P)``: every client's Hessian of its mini-batch loss at its row of
    ``params``, times its row of ``v`` (the blocks of the stacked gradients' Jacobian).

    The model's closed-form :attr:`~networkedfl.nn.FlatModel.batch_hessian` where it
    provides one for the batch, else the vector-Jacobian product of
    :func:`batch_gradients` (a Hessian is symmetric), linearised once at ``params``.
    """
    own = model.batch_hessian
    products = None if own is None else own(params, x, y, w)
    if products is not None:
        return products
    _, pullback = vjp(lambda th: vmap(grad(model.loss))(th, x, y, w), params)
    return lambda v: pullback(v)[0]


def check_mask(mask: Any, n: int, p: int, dtype: torch.dtype, device: torch.device) -> Tensor | None:
    """The per-client parameter mask as a ``(n, P)`` tensor of zeros and ones (or ``None``)."""
    if mask is None:
        return None
    m = mask if isinstance(mask, Tensor) else torch.as_tensor(np.asarray(mask))
    m = m.to(dtype=dtype, device=device)
    if m.ndim == 1 and m.shape[0] == p:
        m = m.expand(n, p)
    if m.shape != (n, p):
        raise ValueError(f"mask must have shape ({n}, {p}) or ({p},), got {tuple(m.shape)}")
    if not bool(torch.all((m == 0) | (m == 1))):
        raise ValueError("mask entries must be 0 (frozen) or 1 (trainable)")
    return m


def freeze(new: Tensor, old: Tensor, mask: Tensor | None) -> Tensor:
    """``new`` with every frozen coordinate (mask 0, or ``False`` in a boolean mask) reset
    to its value in ``old``.  A loop that freezes at every step passes ``mask > 0`` once
    (one pass over the ``(n, P)`` mask less per step)."""
    if mask is None:
        return new
    return torch.where(mask if mask.dtype == torch.bool else mask > 0, new, old)


def step_size(lr: StepSize, t: int) -> float:
    """``alpha^t``: ``lr`` itself if it is a number, else ``lr(t)``."""
    value = float(lr(t)) if callable(lr) else float(lr)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"step size at iteration {t} must be positive and finite, got {value}")
    return value


def inverse_sqrt(scale: float) -> Callable[[int], float]:
    """The schedule ``alpha^t = scale / sqrt(t + 1)`` (the chapter's ``15/sqrt(t)`` with the
    iterations counted from 1)."""
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")

    def schedule(t: int) -> float:
        return scale / math.sqrt(t + 1)

    return schedule
