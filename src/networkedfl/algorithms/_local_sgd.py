"""Local training of all clients at once: the ``ClientUpdate`` of FedAvg.

This is the client side of FedAvg (McMahan et al. 2017, Algorithm 1, ``ClientUpdate``;
the lecture's "FedAvg with local SGD", lines 10-18)::

    for each epoch e = 1..E:
        split D_k into batches of size B (a fresh random order every epoch)
        for each batch b:  w <- w - eta * grad F_k(w; b)

run for every client simultaneously: the parameters of all clients are the rows of one
``(n, P)`` matrix and each step is a single :func:`~networkedfl.nn.batch_gradients` call
(``vmap(grad(...))``, or the model's closed form where it has one).  The Python loops
run over epochs and mini-batch steps only, never over clients.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import torch
from torch import Tensor

from ..nn import (
    BatchSource,
    ClientData,
    FlatModel,
    GeneratorLike,
    StepSize,
    batch_gradients,
    make_generator,
    sgd_step,
    step_size,
)

__all__ = ["epoch_batches", "epoch_order", "local_sgd", "local_steps"]


def epoch_order(sample_weights: Tensor, seed: GeneratorLike) -> Tensor:
    """Per-client random order of the samples for one epoch, ``int64`` of shape ``(n, m)``.

    Each row lists the client's real samples (positive weight) in a uniformly random order
    followed by its padding.  One ``(n, m)`` block of uniform keys is drawn on the CPU
    with the generator made from ``seed`` and sorted row by row.
    """
    n, m = sample_weights.shape
    keys = torch.rand((n, m), generator=make_generator(seed), dtype=torch.float64)
    keys = keys.to(sample_weights.device).masked_fill(sample_weights <= 0, 2.0)
    return torch.argsort(keys, dim=1)


def epoch_batches(data: ClientData, batch_size: int, seed: GeneratorLike) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
    """The mini-batches of one epoch of every client, ``(features, targets, weights)`` of
    shapes ``(n, B, ...)``, ``(n, B)``, ``(n, B)``.

    Every client's samples in a fresh random order (:func:`epoch_order`, drawn when the
    first batch is taken), cut into ``ceil(m_max / B)`` consecutive blocks, ``m_max`` the
    largest client's number of real samples; a client's last block may be smaller than
    ``B`` and a client with fewer samples gets blocks of padding only (weight 0).
    """
    n = data.n_clients
    n_steps = math.ceil(int(data.counts.max()) / batch_size) if n else 0
    rows = torch.arange(n, device=data.device)[:, None]
    x, y, w = data.features, data.targets, data.sample_weights
    order = epoch_order(w, seed)
    xs, ys, ws = x[rows, order], y[rows, order], w[rows, order]
    for s in range(n_steps):
        block = slice(s * batch_size, (s + 1) * batch_size)
        yield xs[:, block], ys[:, block], ws[:, block]


def local_sgd(
    model: FlatModel,
    params: Tensor,
    data: ClientData,
    *,
    epochs: int,
    batch_size: int | None,
    lr: float,
    seed: GeneratorLike | None = None,
) -> Tensor:
    """``epochs`` epochs of mini-batch SGD on every client's own data, all clients at once.

    Parameters
    ----------
    model
        The model.
    params
        ``(n, P)`` starting parameters of the ``n`` clients of ``data`` (not modified).
    data
        Local datasets, possibly padded (padding samples have weight 0).
    epochs
        Local epochs ``E`` (0 returns a copy of ``params``).
    batch_size
        Mini-batch size ``B``.  ``None`` (or any ``B`` at least the largest client's
        number of samples): full-batch gradient descent, one step per epoch, without a
        random draw.
    lr
        Step size ``eta``.
    seed
        Source of the per-epoch random orders (required for mini-batches).

    Returns
    -------
    Tensor
        ``(n, P)`` parameters after local training.

    Notes
    -----
    Client ``i`` with ``n_i`` real samples takes ``ceil(n_i / B)`` steps per epoch on the
    consecutive blocks of its shuffled samples; the last block may be smaller than ``B``.
    Each step uses the weighted mean loss of the batch.  Steps are taken in lock-step
    across clients; a client whose block at a step contains only padding has zero
    gradient there (its model does not move), so the result is exactly that of running
    each client alone.  The gradient of one step is one call of
    :func:`~networkedfl.nn.batch_gradients` (``vmap(grad(F))``, or the model's closed form)
    over ``(n, B, ...)`` gathered batches.
    """
    if isinstance(epochs, bool) or int(epochs) != epochs or epochs < 0:
        raise ValueError(f"epochs must be a non-negative integer, got {epochs!r}")
    if batch_size is not None and (int(batch_size) != batch_size or batch_size < 1):
        raise ValueError(f"batch_size must be a positive integer or None, got {batch_size!r}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    n = data.n_clients
    if params.shape != (n, model.n_params):
        raise ValueError(
            f"params must be ({n}, {model.n_params}) for {n} clients, got {tuple(params.shape)}"
        )
    step_grad = batch_gradients(model)
    x, y, w = data.features, data.targets, data.sample_weights
    params = params.clone()
    largest = int(data.counts.max()) if n else 0
    if batch_size is None or batch_size >= largest:
        for _ in range(int(epochs)):
            params = sgd_step(params, step_grad(params, x, y, w), lr)
        return params

    gen = make_generator(seed)
    for _ in range(int(epochs)):
        for xb, yb, wb in epoch_batches(data, batch_size, gen):
            params = sgd_step(params, step_grad(params, xb, yb, wb), lr)
    return params


def local_steps(
    gradient: Callable[[Tensor, tuple[Tensor, Tensor, Tensor]], Tensor],
    params: Tensor,
    source: BatchSource,
    *,
    steps: int,
    batch_size: int | None,
    lr: StepSize,
    start: int,
    seed: torch.Generator,
    mask: Tensor | None = None,
) -> tuple[Tensor, int]:
    """``steps`` local mini-batch SGD steps of every client (the chapter's eq. (10.3)).

    Step ``t = start, start + 1, ...`` draws a fresh mini-batch of every client
    (``source.sample(batch_size, seed)``, eq. (10.2)), evaluates ``gradient(params,
    batch)`` ``(n, P)`` and moves ``params <- params - alpha^t g`` on the trainable
    coordinates (:func:`~networkedfl.nn.sgd_step`, ``alpha^t`` of the schedule ``lr``); the
    frozen ones (``mask`` 0) keep their values, as with ``g`` zeroed there.  Returns the
    parameters and the next iteration count.
    """
    t = start
    keep = None if mask is None else mask > 0  # once, not at every step
    for _ in range(steps):
        # frozen coordinates keep their value whatever g holds there (also inf or NaN), so
        # g needs no masking first: the step is that of the masked gradient, bit for bit
        params = sgd_step(params, gradient(params, source.sample(batch_size, seed)), step_size(lr, t), keep)
        t += 1
    return params, t
