"""Optimiser steps of the torch methods, written once and applied to all clients at once.

Every torch method keeps the models of its ``n`` clients as the rows of one ``(n, P)``
matrix; the update rules below act on such a matrix (elementwise, so one call is every
client's own optimiser).  They are the arithmetic of PyTorch's optimisers, written out
because importing :mod:`torch.optim` loads ``torch._dynamo`` (seconds per process) and
because the methods need per-client masks that ``torch.optim`` does not have:

* :func:`sgd_step`: ``w <- w - eta * g``, frozen coordinates (mask 0) kept
  (``ClientUpdate`` of FedAvg, the chapter's eq. (10.3), FeSEM's and BiG-FL's local steps,
  pFedMe's inner solver);
* :func:`heavy_ball_step`: ``torch.optim.SGD(lr, momentum)`` (dampening 0, no Nesterov),
  clients whose mini-batch is empty waiting;
* :class:`RMSprop`: ``torch.optim.RMSprop`` (single-tensor implementation, same defaults
  and options) with its running averages kept between calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from ._client_batches import freeze

__all__ = ["RMSprop", "heavy_ball_step", "sgd_step"]


def sgd_step(params: Tensor, grad: Tensor, lr: float, mask: Tensor | None = None) -> Tensor:
    """One gradient step ``params - lr * grad`` with every frozen coordinate (``mask`` 0 or
    ``False``) kept at its value in ``params`` (:func:`~networkedfl.nn.freeze`)."""
    return freeze(params - lr * grad, params, mask)


def heavy_ball_step(params: Tensor, grad: Tensor, buffer: Tensor | None, lr: float,
                    momentum: float, active: Tensor) -> tuple[Tensor, Tensor]:
    """One step of ``torch.optim.SGD(lr, momentum)`` for every client, ``(params, buffer)``.

    ``b <- g`` on the first step (``buffer`` ``None``), ``b <- momentum * b + g`` after, and
    ``w <- w - lr * b``; a client whose ``active`` entry ``(n, 1)`` is false (its mini-batch
    holds only padding) keeps its model and its buffer.
    """
    buffer = grad if buffer is None else torch.where(active, momentum * buffer + grad, buffer)
    return torch.where(active, params - lr * buffer, params), buffer


class RMSprop:
    """The running averages and steps of ``torch.optim.RMSprop`` on a tensor of any shape
    (its single-tensor arithmetic, same defaults and options), written out because importing
    ``torch.optim`` loads ``torch._dynamo`` (seconds per process).  Elementwise, so one
    instance on an ``(n, d)`` tensor is every node's own optimiser (FedRelax Algorithm 2, the
    inexact proximal step of the GTV MNIST network).

    Parameters
    ----------
    like
        A tensor of the parameters' shape, dtype and device (the state starts at zero).
    lr
        Step size.
    options
        ``alpha`` (0.99), ``eps`` (1e-8), ``weight_decay`` (0), ``momentum`` (0),
        ``centered`` (False), as in :class:`torch.optim.RMSprop`; any other key is an error.
    """

    DEFAULTS = {"alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0, "momentum": 0.0, "centered": False}

    def __init__(self, like: Tensor, lr: float, options: Mapping[str, Any] | None = None) -> None:
        opts = {**self.DEFAULTS, **dict(options or {})}
        unknown = set(opts) - set(self.DEFAULTS)
        if unknown:
            raise ValueError(f"unsupported RMSprop options {sorted(unknown)}; "
                             f"supported: {sorted(self.DEFAULTS)}")
        self.lr = float(lr)
        self.alpha, self.eps = float(opts["alpha"]), float(opts["eps"])
        self.weight_decay, self.momentum = float(opts["weight_decay"]), float(opts["momentum"])
        self.square_avg = torch.zeros_like(like)
        self.grad_avg = torch.zeros_like(like) if bool(opts["centered"]) else None
        self.buffer = torch.zeros_like(like) if self.momentum > 0 else None

    def denominator(self, grad: Tensor) -> Tensor:
        """Update the running averages with ``grad`` and return ``sqrt(v) + eps`` (centred:
        ``sqrt(v - m^2) + eps``), the elementwise scale of the step."""
        self.square_avg.mul_(self.alpha).addcmul_(grad, grad, value=1 - self.alpha)
        if self.grad_avg is not None:
            self.grad_avg.lerp_(grad, 1 - self.alpha)
            avg = self.square_avg.addcmul(self.grad_avg, self.grad_avg, value=-1).sqrt_()
        else:
            avg = self.square_avg.sqrt()
        return avg.add_(self.eps)

    def step_(self, param: Tensor, grad: Tensor) -> None:
        """One ``torch.optim.RMSprop`` step on ``param``, in place."""
        if self.weight_decay != 0:
            grad = grad.add(param, alpha=self.weight_decay)
        avg = self.denominator(grad)
        if self.buffer is not None:
            self.buffer.mul_(self.momentum).addcdiv_(grad, avg)
            param.add_(self.buffer, alpha=-self.lr)
        else:
            param.addcdiv_(grad, avg, value=-self.lr)
