"""Cross-entropy of the two-layer network (40) with an inexact proximal step (GTV Sec. VI-C).

For a neural network the primal update of Algorithm 1 (GTV eq. (32)),

    w_i <- argmin_v  L_i(v) + ||v - w_hat_i||^2 / (2 tau_i),

has no closed form.  :class:`InexactProxCrossEntropy` solves it approximately, as the
GTV authors' MNIST code does: a fixed number of RMSprop (or plain gradient) steps on the
node's mean cross-entropy plus the proximal term, started from ``w_hat_i`` (warm start).
Unlike the authors' code the proximal term is a real one (it has a gradient) and sums over
the entries of ``w_i`` (docs/variants.md §8.4).

The proximal term acts on the weight matrices ``W1, W2`` only: they are the ``w_i`` of the
paper.  The biases are local; with a penalty that leaves them uncoupled (their dual
variables stay 0, see :class:`~networkedfl.gtv.BlockNLassoPenalty`) they enter the
solver's iterate unchanged (``w_hat`` equals the previous value there) and are trained by
the same steps without a proximal term.

The operator keeps state between calls: the RMSprop averages of every node persist across
the iterations of Algorithm 1 (in the authors' code every node keeps one optimiser).  All
nodes take their steps together, as one batched computation (see
:meth:`~networkedfl.nn.TwoLayerNetwork.logits`); ``replicas`` independent copies of
the nodes (e.g. one per value of ``lambda`` on a disjoint-union graph) share the data.

This class implements the :class:`~networkedfl.gtv.LocalLoss` interface
(``prox_operator``, ``value``, ``trivial_nodes``); the conjugate is not available, so the
primal-dual gap cannot be evaluated for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from .._validation import check_finite, check_int, check_node_mask
from ._mnist_network import SparseSamples, TwoLayerNetwork
from ._models import DeviceLike
from ._optim import RMSprop

__all__ = ["InexactProxCrossEntropy"]


@dataclass(frozen=True, eq=False)
class InexactProxCrossEntropy:
    """Mean cross-entropy of the network (40) at every node, with an inexact prox.

    Parameters
    ----------
    network
        Shapes and parameter layout.
    features
        ``(n, m, F)`` training samples of the ``n`` nodes.
    labels
        ``(n, m)`` integer class labels.
    replicas
        ``R``: the solver's iterate has ``R * n`` rows, row ``r * n + i`` a copy of node
        ``i`` (default 1).
    steps
        Optimiser steps per proximal update (GTV code: 40).
    lr
        Step size (GTV code: RMSprop with PyTorch's default 0.01).
    optimizer
        ``"rmsprop"`` (``alpha = 0.99``, ``eps = 1e-8``, PyTorch's defaults) or ``"sgd"``.
    mask
        Boolean sampling set ``M`` over the ``R * n`` rows; rows outside keep
        ``w_hat`` (trivial loss).  ``None``: all rows.
    prox_scale
        Factor on the gradient of the proximal term (default 1: the real proximal step).
        0 reproduces the GTV authors' MNIST code, whose proximal term is computed on
        detached tensors and has no gradient (docs/variants.md §8.4): the update is then
        ``steps`` optimiser steps on the local loss alone, warm-started at ``w_hat`` (an
        ablation, not the method).
    dtype, device
        Precision and device of the computation (the solver's arrays stay float64 NumPy).
    sparse
        Multiply with the samples as :class:`~networkedfl.nn.SparseSamples` (default): for
        MNIST's mostly-zero images several times less data is read, and each replica's
        numbers are the same bit for bit whatever the number of replicas.  ``False``: the
        dense batched products (for dense features).
    """

    network: TwoLayerNetwork
    features: Tensor
    labels: Tensor
    replicas: int = 1
    steps: int = 40
    lr: float = 0.01
    optimizer: str = "rmsprop"
    mask: np.ndarray | None = None
    alpha: float = 0.99
    eps: float = 1e-8
    prox_scale: float = 1.0
    dtype: torch.dtype = torch.float32
    device: DeviceLike = "cpu"
    sparse: bool = True

    def __post_init__(self) -> None:
        x = torch.as_tensor(self.features).to(dtype=self.dtype, device=self.device)
        y = torch.as_tensor(self.labels).to(dtype=torch.int64, device=self.device)
        if x.ndim != 3 or x.shape[2] != self.network.n_features or y.shape != x.shape[:2]:
            raise ValueError(
                f"features must be (n, m, {self.network.n_features}) and labels (n, m); got "
                f"{tuple(x.shape)} and {tuple(y.shape)}"
            )
        if y.numel() and (int(y.min()) < 0 or int(y.max()) >= self.network.n_classes):
            raise ValueError(f"labels must lie in [0, {self.network.n_classes - 1}]")
        if self.optimizer not in ("rmsprop", "sgd"):
            raise ValueError(f"optimizer must be 'rmsprop' or 'sgd', got {self.optimizer!r}")
        check_int(self.steps, "steps", minimum=1)
        check_int(self.replicas, "replicas", minimum=1)
        check_finite(self.lr, "lr", sign="positive")
        check_finite(self.prox_scale, "prox_scale", sign="non-negative")
        rows = int(self.replicas) * x.shape[0]
        mask = check_node_mask(self.mask, rows)
        object.__setattr__(self, "features", x)
        object.__setattr__(self, "labels", y)
        object.__setattr__(self, "mask", mask)
        object.__setattr__(self, "_samples", SparseSamples.of(x) if self.sparse else x)

    # ------------------------------------------------------------- LocalLoss interface
    @property
    def n_nodes(self) -> int:
        """Rows of the solver's iterate: ``replicas * n``."""
        return int(self.replicas) * int(self.features.shape[0])

    @property
    def dim(self) -> int:
        return self.network.n_params

    @property
    def trivial_nodes(self) -> np.ndarray:
        return ~self.mask

    def _to_torch(self, w: np.ndarray) -> Tensor:
        n = self.features.shape[0]
        t = torch.as_tensor(np.asarray(w), device=self.device).to(self.dtype)
        if t.shape != (self.n_nodes, self.dim):
            raise ValueError(f"expected ({self.n_nodes}, {self.dim}) parameters, got {tuple(t.shape)}")
        return t.reshape(int(self.replicas), n, self.dim)

    def value(self, w: np.ndarray) -> np.ndarray:
        """Mean training cross-entropy ``L_i(w_i)`` of every row (0 outside ``M``)."""
        with torch.no_grad():
            losses = self.network.node_losses(self._to_torch(w), self._samples, self.labels)
        return self.mask * losses.reshape(-1).to(torch.float64).cpu().numpy()

    def conjugate(self, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError(
            "the conjugate of a neural network's loss is not available: the primal-dual gap "
            "cannot be evaluated (do not pass gap_tol)"
        )

    def prox_operator(self, tau: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """Inexact ``argmin_v L_i(v) + ||v_W - w_hat_W||^2 / (2 tau_i)`` for all rows.

        ``v_W`` are the weight entries.  Returns a stateful function: the optimiser's
        running averages persist from one call to the next.
        """
        tau = np.broadcast_to(np.asarray(tau, float), (self.n_nodes,))
        if np.any(tau[self.mask] <= 0):
            raise ValueError("tau must be positive on the sampling set")
        r, n, p = int(self.replicas), int(self.features.shape[0]), self.dim
        safe_tau = np.where(self.mask, tau, 1.0)
        coef = torch.as_tensor(float(self.prox_scale) / (2.0 * safe_tau), dtype=self.dtype,
                               device=self.device)
        coef = coef.reshape(r, n, 1)
        weights = torch.as_tensor(self.network.weight_mask(), device=self.device).to(self.dtype)
        keep = torch.as_tensor(~self.mask, device=self.device).reshape(r, n, 1)
        net, x, y = self.network, self._samples, self.labels
        steps, lr = int(self.steps), float(self.lr)
        # RMSprop's running averages (nn.RMSprop), kept from one call to the next; the step
        # divides lr * g by the scale (the GTV code's order; torch.optim: lr * (g / scale))
        rmsprop = RMSprop(torch.zeros((r, n, p), dtype=self.dtype, device=self.device), lr,
                          {"alpha": float(self.alpha), "eps": float(self.eps)}
                          ) if self.optimizer == "rmsprop" else None

        def prox(w_hat: np.ndarray) -> np.ndarray:
            anchor = self._to_torch(w_hat)
            v = anchor.clone()
            for _ in range(steps):  # over optimiser steps; all nodes and replicas at once
                _, g = net.losses_and_gradients(v, x, y)
                g += 2.0 * coef * weights * (v - anchor)  # gradient of the proximal term
                if rmsprop is not None:
                    v = v - lr * g / rmsprop.denominator(g)
                else:
                    v = v - lr * g
            v = torch.where(keep, anchor, v)
            return v.reshape(r * n, p).to(torch.float64).cpu().numpy()

        return prox
