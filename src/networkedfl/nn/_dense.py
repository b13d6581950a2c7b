"""Closed-form batched derivatives of a dense feed-forward network, all clients at once.

The network (the chapter's synthetic models, :func:`networkedfl.experiments.gfl.synthetic.mlp`)
maps ``h_0 = x`` through ``z_k = h_{k-1} W_k + b_k`` and ``h_k = s(z_k)`` (``s``: ReLU,
sigmoid or tanh on the hidden layers; the output ``z_L`` is linear), with every ``W_k``
stored ``(in, out)`` row-major in the flat parameter vector, each followed by its bias
``b_k`` when the network has biases.  A client's loss is the weighted mean over its samples
of ``c (1/2)^h ||z_L - y||^2`` (``c = 1 / d_out`` for the mean squared error, ``h = 0``;
``c = 1``, ``h = 1`` for half the squared norm).

With ``a_j = w_j / sum w`` and ``g_L = a c' (z_L - y)`` (``c' = 2 c`` or ``1``) the gradient
is the usual back-propagation::

    dW_k = h_{k-1}^T g_k,   db_k = 1^T g_k,   g_{k-1} = (g_k W_k^T) * s'(z_{k-1}),

one batched matrix product per layer and direction for all clients.  The Hessian-vector
product in a direction ``(V_k, v_k)`` is its directional derivative (Pearlmutter's
R-operator): a forward pass of ``R(z_k) = R(h_{k-1}) W_k + h_{k-1} V_k + v_k``,
``R(h_k) = s'(z_k) R(z_k)``, then ``R(g_L) = a c' R(z_L)`` and::

    R(dW_k) = R(h_{k-1})^T g_k + h_{k-1}^T R(g_k),   R(db_k) = 1^T R(g_k),
    R(g_{k-1}) = (R(g_k) W_k^T + g_k V_k^T) * s'(z_{k-1}) + (g_k W_k^T) * s''(z_{k-1}) R(z_{k-1}),

with the forward quantities computed once per linearisation point.  Both equal
``vmap(grad(loss))`` and its vector-Jacobian product up to floating-point rounding
(``tests/unit/nn/test_dense.py``); they return ``None`` (the generic path of
:func:`~networkedfl.nn.batch_gradients`) for other layouts and for parameters tracked by
autograd or a :mod:`torch.func` transform.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

__all__ = ["DenseDerivatives"]

_ACTIVATIONS = ("relu", "sigmoid", "tanh")


class DenseDerivatives:
    """Batched gradients and Hessian-vector products of the dense network of this module.

    Parameters
    ----------
    sizes
        ``[d_in, h_1, ..., d_out]``.
    activation
        ``"relu"``, ``"sigmoid"`` or ``"tanh"`` (hidden layers).
    bias
        Whether every layer has a bias after its weights.
    loss
        ``"squared"`` (mean over the outputs of the squared error) or ``"half_squared_norm"``.
    """

    def __init__(self, sizes: Sequence[int], *, activation: str, bias: bool, loss: str) -> None:
        if activation not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; expected one of {list(_ACTIVATIONS)}")
        if loss not in ("squared", "half_squared_norm"):
            raise ValueError(f"unknown loss {loss!r}")
        self.shapes = [(int(a), int(b)) for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
        self.activation, self.bias = activation, bool(bias)
        self.d_in, self.d_out = int(sizes[0]), int(sizes[-1])
        #: ``c'``: the derivative of the sample loss in the output is ``c' (z_L - y)``
        self.scale = 2.0 / self.d_out if loss == "squared" else 1.0
        self.n_params = sum(a * b + (b if bias else 0) for a, b in self.shapes)

    # ------------------------------------------------------------------ helpers
    def _layers(self, params: Tensor) -> list[tuple[Tensor, Tensor | None]]:
        n, off, out = params.shape[0], 0, []
        for a, b in self.shapes:
            w = params[:, off:off + a * b].reshape(n, a, b)
            off += a * b
            bias = None
            if self.bias:
                bias = params[:, off:off + b]
                off += b
            out.append((w, bias))
        return out

    def _flat(self, parts: list[tuple[Tensor, Tensor | None]]) -> Tensor:
        n = parts[0][0].shape[0]
        return torch.cat([t.reshape(n, -1) for w, b in parts for t in ((w,) if b is None else (w, b))], dim=1)

    def _slopes(self, z: Tensor, h: Tensor) -> tuple[Tensor, Tensor]:
        """``s'(z)`` and ``s''(z)`` from ``z`` and ``h = s(z)``."""
        if self.activation == "relu":
            first = (z > 0).to(z.dtype)
            return first, torch.zeros_like(z)
        if self.activation == "sigmoid":
            first = h * (1 - h)
            return first, first * (1 - 2 * h)
        first = 1 - h * h
        return first, -2 * h * first

    def _applies(self, params: Tensor, x: Tensor, y: Tensor) -> bool:
        out_shape = x.shape[:2] if self.d_out == 1 else (*x.shape[:2], self.d_out)
        return (params.ndim == 2 and not params.requires_grad and x.ndim == 3 and x.shape[0] == params.shape[0]
                and x.shape[-1] == self.d_in and params.shape[1] == self.n_params
                and tuple(y.shape) in (tuple(out_shape), (*x.shape[:2], 1)))

    def _forward(self, params: Tensor, x: Tensor, y: Tensor, weights: Tensor | None) -> dict:
        layers = self._layers(params)
        hs, zs = [x], []
        h = x
        for k, (w, b) in enumerate(layers):
            z = torch.bmm(h, w) if b is None else torch.baddbmm(b[:, None, :], h, w)
            zs.append(z)
            if k < len(layers) - 1:
                h = torch.relu(z) if self.activation == "relu" else torch.sigmoid(z) if \
                    self.activation == "sigmoid" else torch.tanh(z)
                hs.append(h)
        m = x.shape[1]
        if weights is None:
            share = torch.full(x.shape[:2], 1.0 / m, dtype=x.dtype, device=x.device)
        else:
            w = weights.to(x.dtype)
            total = w.sum(dim=1, keepdim=True)
            share = w / torch.where(total > 0, total, torch.ones_like(total))
        coeff = (share * self.scale)[:, :, None]
        g = coeff * (zs[-1] - y.reshape(zs[-1].shape))
        slopes = [self._slopes(z, h) for z, h in zip(zs[:-1], hs[1:], strict=True)]
        grads = [g]  # g_L, ..., g_1 (the gradients in z_k), last layer first
        for k in range(len(layers) - 1, 0, -1):
            g = torch.bmm(g, layers[k][0].transpose(1, 2)) * slopes[k - 1][0]
            grads.append(g)
        return {"layers": layers, "hs": hs, "zs": zs, "coeff": coeff, "slopes": slopes, "grads": grads[::-1]}

    # ------------------------------------------------------------------ public
    def gradients(self, params: Tensor, x: Tensor, y: Tensor, weights: Tensor | None) -> Tensor | None:
        """Stacked gradients ``(n, P)`` of the clients' weighted mean losses, or ``None``."""
        if not self._applies(params, x, y):
            return None
        f = self._forward(params, x, y, weights)
        return self._flat([(torch.bmm(h.transpose(1, 2), g), g.sum(dim=1) if self.bias else None)
                           for h, g in zip(f["hs"], f["grads"], strict=True)])

    def hessian(self, params: Tensor, x: Tensor, y: Tensor,
                weights: Tensor | None) -> Callable[[Tensor], Tensor] | None:
        """``v (n, P) -> `` every client's Hessian at ``params`` times its row of ``v``, or ``None``."""
        if not self._applies(params, x, y):
            return None
        f = self._forward(params, x, y, weights)
        layers, hs, grads, slopes = f["layers"], f["hs"], f["grads"], f["slopes"]
        last = len(layers) - 1

        def product(v: Tensor) -> Tensor:
            direction = self._layers(v)
            r_h, r_hs, r_zs = None, [None], []
            for k, ((w, _), (dw, db)) in enumerate(zip(layers, direction, strict=True)):
                r_z = torch.bmm(hs[k], dw)
                if db is not None:
                    r_z = r_z + db[:, None, :]
                if r_h is not None:
                    r_z = r_z + torch.bmm(r_h, w)
                r_zs.append(r_z)
                if k < last:
                    r_h = slopes[k][0] * r_z
                    r_hs.append(r_h)
            r_g = f["coeff"] * r_zs[-1]
            parts: list[tuple[Tensor, Tensor | None]] = [None] * len(layers)  # type: ignore[list-item]
            for k in range(last, -1, -1):
                r_dw = torch.bmm(hs[k].transpose(1, 2), r_g)
                if r_hs[k] is not None:
                    r_dw = r_dw + torch.bmm(r_hs[k].transpose(1, 2), grads[k])
                parts[k] = (r_dw, r_g.sum(dim=1) if self.bias else None)
                if k > 0:
                    w, dw = layers[k][0], direction[k][0]
                    back = torch.bmm(grads[k], w.transpose(1, 2))
                    first, second = slopes[k - 1]
                    r_g = ((torch.bmm(r_g, w.transpose(1, 2)) + torch.bmm(grads[k], dw.transpose(1, 2))) * first
                           + back * second * r_zs[k - 1])
            return self._flat(parts)

        return product
