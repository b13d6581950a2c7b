"""To and from plain PyTorch: per-client ``torch.utils.data`` datasets and loaders as the
clients' data, and a trained flat parameter vector back into the ``nn.Module`` it came from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, TensorDataset

__all__ = ["load_into"]


def _pair(item: Any, client: int, where: str) -> tuple[Tensor, Tensor]:
    if not (isinstance(item, list | tuple) and len(item) == 2):
        size = f" of {len(item)}" if isinstance(item, list | tuple) else ""
        raise ValueError(f"client {client}: {where} is not a (features, target) pair, got a "
                         f"{type(item).__name__}{size}")
    return torch.as_tensor(item[0]), torch.as_tensor(item[1])


def _read_one(source: Any, client: int) -> tuple[Tensor, Tensor]:
    """All ``(features (m, ...), targets (m,))`` of one client's dataset or loader (a loader's
    batches in the order it yields them)."""
    if isinstance(source, TensorDataset) and len(source.tensors) == 2:
        return source.tensors[0], source.tensors[1]
    if isinstance(source, DataLoader):
        pairs = [_pair(b, client, f"batch {i} of its DataLoader") for i, b in enumerate(source)]
        if not pairs:
            return torch.empty(0), torch.empty(0, dtype=torch.int64)
        return torch.cat([p[0] for p in pairs]), torch.cat([p[1].reshape(-1) for p in pairs])
    pairs = [_pair(source[i], client, f"item {i} of its Dataset") for i in range(len(source))]
    if not pairs:
        return torch.empty(0), torch.empty(0, dtype=torch.int64)
    return torch.stack([p[0] for p in pairs]), torch.stack([p[1].reshape(()) for p in pairs])


def _read_clients(clients: Sequence[Any]) -> tuple[list[Tensor], list[Tensor]]:
    """The features and targets of every client from its ``torch.utils.data`` ``Dataset``
    (``TensorDataset(features, targets)`` read at once, any other read item by item, each
    item a ``(features, target)`` pair) or ``DataLoader`` (its batches concatenated)."""
    xs, ys = [], []
    for i, source in enumerate(clients):  # data assembly, once, not training
        if not isinstance(source, Dataset | DataLoader):
            raise TypeError(f"client {i}: expected a torch.utils.data Dataset or DataLoader, "
                            f"got {type(source).__name__}")
        x, y = _read_one(source, i)
        xs.append(x)
        ys.append(y)
    return xs, ys


def load_into(module: torch.nn.Module, params: Any) -> torch.nn.Module:
    """Write a flat parameter vector ``(P,)`` (a row of a result's ``global_params`` or
    ``client_params``) into ``module``, the network given to
    :func:`~networkedfl.nn.from_module`, in place, and return it.

    The vector is cut in ``module.named_parameters()`` order, the order of ``from_module``,
    so that ``module(x)`` equals ``model.forward(params, x)``; buffers are left as they are
    (``from_module`` copied them when it wrapped the module).
    """
    named = list(module.named_parameters())
    total = sum(p.numel() for _, p in named)
    vector = params if isinstance(params, Tensor) else torch.as_tensor(np.asarray(params))
    if vector.shape != (total,):
        raise ValueError(f"params must have shape ({total},) (the {len(named)} parameters of "
                         f"{type(module).__name__}), got {tuple(vector.shape)}")
    with torch.no_grad():
        start = 0
        for _, p in named:
            p.copy_(vector[start: start + p.numel()].reshape(p.shape))
            start += p.numel()
    return module
