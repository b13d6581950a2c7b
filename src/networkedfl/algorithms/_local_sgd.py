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

With ``chunk_size`` the clients are trained in consecutive chunks of at most that many, one
batched call per chunk and step (:func:`client_chunks`), as ``torch.func.vmap``'s
``chunk_size`` does: the working memory (the shuffled copy of the data, the activations of a
step) is that of a chunk, not of all clients, and the random orders are drawn exactly as
without chunks, so every client follows the same steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import torch
from torch import Tensor

from .._validation import check_int
from ..nn import (
    BatchSource,
    ClientBuckets,
    ClientData,
    FlatModel,
    GeneratorLike,
    StepSize,
    batch_gradients,
    make_generator,
    sgd_step,
    step_size,
)

__all__ = ["Correction", "client_chunks", "control_variates", "epoch_batches",
           "epoch_order", "in_client_chunks", "local_sgd", "local_step_counts", "local_steps",
           "proximal_term"]

#: ``correction(params (k, P), rows) -> (k, P)``: a term added to the gradients of the clients
#: ``rows`` (a slice of the clients of :func:`local_sgd`) whose models are ``params``.
Correction = Callable[[Tensor, slice], Tensor]


def proximal_term(mu: float, anchor: Tensor) -> Correction:
    """The gradient ``mu (w_i - anchor_i)`` of ``(mu/2) ||w_i - anchor_i||^2``, ``anchor``
    ``(n, P)`` one row per client: FedProx's proximal term (Li et al. 2020, eq. (2)) with the
    round's global model as anchor, Ditto's (Li et al. 2021, eq. (2)) for the personal models."""
    return lambda params, rows: mu * (params - anchor[rows])


def control_variates(server: Tensor, client: Tensor) -> Correction:
    """SCAFFOLD's drift correction ``c - c_i`` (Karimireddy et al. 2020, Algorithm 1, line 10):
    ``server`` ``(P,)`` the server's control variate ``c``, ``client`` ``(n, P)`` the clients'
    ``c_i``; a constant of the step."""
    difference = server - client
    return lambda params, rows: difference[rows]


def client_chunks(n: int, chunk_size: int | None, name: str = "client_chunk_size") -> list[slice]:
    """Consecutive slices of at most ``chunk_size`` of ``n`` clients; ``None`` (or a size of
    at least ``n``): one slice of all of them.  A ``chunk_size`` that is not a positive
    integer is a ValueError naming it (as ``name``).

    No chunk holds a single client unless ``chunk_size`` is 1 or 2 (a remainder of one
    client takes one from the chunk before it): torch computes a batch of one matrix product with
    another kernel than a batch of several, whose result can differ in the last bits, while
    batches of two or more clients give every client the same bits as one call (checked by
    the tests).
    """
    if chunk_size is None:
        return [slice(0, n)]
    size = check_int(chunk_size, name, minimum=1)
    starts = list(range(0, n, size))
    if len(starts) > 1 and size > 2 and n - starts[-1] == 1:
        starts[-1] -= 1
    return [slice(a, b) for a, b in zip(starts, [*starts[1:], n], strict=True)] or [slice(0, 0)]


def in_client_chunks(fn: Callable[..., Tensor], chunk_size: int | None, *per_client: Tensor) -> Tensor:
    """``fn(*(t[rows] for t in per_client))`` for the :func:`client_chunks` of the clients
    (the rows of the ``per_client`` tensors), concatenated along the first dimension: a
    per-client computation (losses, gradients) whose working memory is that of
    ``chunk_size`` clients.  One chunk calls ``fn`` once, on the whole tensors."""
    chunks = client_chunks(int(per_client[0].shape[0]), chunk_size)
    if len(chunks) == 1:
        return fn(*per_client)
    return torch.cat([fn(*(t[rows] for t in per_client)) for rows in chunks])


def epoch_order(sample_weights: Tensor, seed: GeneratorLike) -> Tensor:
    """Per-client random order of the samples for one epoch, ``int64`` of shape ``(n, m)``.

    Each row lists the client's real samples (positive weight) in a uniformly random order
    followed by its padding.  One ``(n, m)`` block of uniform keys is drawn on the CPU
    with the generator made from ``seed`` and sorted row by row.
    """
    return _order(_epoch_keys(sample_weights.shape, make_generator(seed)), sample_weights)


def _epoch_keys(shape: Sequence[int], generator: torch.Generator) -> Tensor:
    """The uniform keys of one epoch of every client (on the CPU), ``(n, m)`` float64."""
    return torch.rand(tuple(shape), generator=generator, dtype=torch.float64)


def _order(keys: Tensor, sample_weights: Tensor) -> Tensor:
    """Row-wise argsort of ``keys`` with the padding (weight 0) last: the epoch's order."""
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
    n = data.n_nodes
    n_steps = math.ceil(int(data.counts.max()) / batch_size) if n else 0
    yield from _blocks(data.features, data.targets, data.sample_weights,
                       epoch_order(data.sample_weights, seed), n_steps, batch_size)


def _blocks(x: Tensor, y: Tensor, w: Tensor, order: Tensor, n_steps: int,
            batch_size: int) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
    """The ``n_steps`` consecutive blocks of ``batch_size`` of the clients' samples in ``order``."""
    rows = torch.arange(x.shape[0], device=x.device)[:, None]
    xs, ys, ws = x[rows, order], y[rows, order], w[rows, order]
    for s in range(n_steps):
        block = slice(s * batch_size, (s + 1) * batch_size)
        yield xs[:, block], ys[:, block], ws[:, block]


def local_sgd(
    model: FlatModel,
    params: Tensor,
    data: ClientData | ClientBuckets,
    *,
    epochs: int,
    batch_size: int | None,
    lr: float,
    seed: GeneratorLike | None = None,
    chunk_size: int | None = None,
    correction: Correction | None = None,
) -> Tensor:
    """``epochs`` epochs of mini-batch SGD on every client's own data, all clients at once.

    Parameters
    ----------
    model
        The model.
    params
        ``(n, P)`` starting parameters of the ``n`` clients of ``data`` (not modified).
    data
        Local datasets, possibly padded (padding samples have weight 0), or clients in
        buckets of similar sizes (:class:`~networkedfl.nn.ClientBuckets`): each bucket is
        trained in turn, its ``epochs`` drawing from the one generator of ``seed`` (a
        ``correction`` indexes the clients of the whole network; each bucket's rows are mapped).
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
    chunk_size
        Train at most this many clients per batched call (:func:`client_chunks`); ``None``
        (default): all at once.  The result is the same: every epoch draws the orders of
        all clients first, exactly as without chunks, then trains the chunks in turn.
    correction
        A term added to every client's gradient at every step it takes (a
        :data:`Correction`, ``correction(params, rows) -> (len(rows), P)`` for the clients
        ``rows`` of ``params``): the proximal term of FedProx and Ditto, the control variates
        of SCAFFOLD (:func:`proximal_term`, :func:`control_variates`).  ``None``: plain SGD.

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
    n = data.n_nodes
    if params.shape != (n, model.n_params):
        raise ValueError(
            f"params must be ({n}, {model.n_params}) for {n} clients, got {tuple(params.shape)}"
        )
    if isinstance(data, ClientBuckets):
        gen = None if seed is None else make_generator(seed)
        out = torch.empty_like(params)
        for part, rows in zip(data.buckets, data.clients, strict=True):  # buckets, not clients
            out[rows] = local_sgd(model, params[rows], part, epochs=epochs, batch_size=batch_size,
                                  lr=lr, seed=gen, chunk_size=chunk_size,
                                  correction=_in_bucket(correction, rows))
        return out
    chunks = client_chunks(n, chunk_size, "chunk_size")
    step_grad = batch_gradients(model)
    x, y, w = data.features, data.targets, data.sample_weights
    params = params.clone()
    largest = int(data.counts.max()) if n else 0
    full_batch = batch_size is None or batch_size >= largest
    n_steps = 1 if full_batch else math.ceil(largest / batch_size)
    gen = None if full_batch else make_generator(seed)
    for _ in range(int(epochs)):
        keys = None if gen is None else _epoch_keys(w.shape, gen)  # all clients' orders first
        for rows in chunks:  # chunks of clients, not clients
            p, xc, yc, wc = params[rows], x[rows], y[rows], w[rows]
            batches = ([(xc, yc, wc)] if keys is None
                       else _blocks(xc, yc, wc, _order(keys[rows], wc), n_steps, batch_size))
            for xb, yb, wb in batches:
                g = step_grad(p, xb, yb, wb)
                if correction is not None:  # a block of padding only: no step, no correction
                    g = g + torch.where((wb.sum(dim=1) > 0)[:, None], correction(p, rows), 0.0)
                p = sgd_step(p, g, lr)
            if len(chunks) == 1:
                params = p
            else:
                params[rows] = p
    return params


def _in_bucket(correction: Correction | None, clients: Tensor) -> Correction | None:
    """``correction`` seen from one bucket: its rows (a slice of the bucket's clients) mapped to
    the rows ``clients`` of the whole network that the correction indexes."""
    if correction is None:
        return None
    return lambda params, rows: correction(params, clients[rows])


def local_step_counts(data: ClientData, epochs: int, batch_size: int | None) -> Tensor:
    """``(n,)`` the number of SGD steps every client takes in :func:`local_sgd`:
    ``E * ceil(n_i / B)`` with mini-batches, ``E`` with full batches (``B`` ``None`` or at
    least the largest client), 0 for a client without samples (SCAFFOLD's ``K`` per client)."""
    counts = data.counts
    largest = int(counts.max()) if data.n_nodes else 0
    if batch_size is None or batch_size >= largest:
        return int(epochs) * (counts > 0).to(torch.int64)
    return int(epochs) * torch.div(counts + batch_size - 1, batch_size, rounding_mode="floor")


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
