"""Every client's model scored on its own data, the padding left out (Flower's client-side
``evaluate``, all clients in one batched call)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.func import vmap

from ..nn import ClientData, FlatModel, client_losses

__all__ = ["evaluate"]


def evaluate(model: FlatModel, params: Any, data: ClientData) -> dict[str, np.ndarray]:
    """The loss (and for class labels the accuracy) of every client's model on its samples.

    Parameters
    ----------
    model
        The model the parameters belong to.
    params
        A method's result (its ``client_params``: every client's model, e.g. its group's or
        cluster's), an ``(n, P)`` tensor or array (row ``i`` client ``i``'s model) or one
        ``(P,)`` model for every client.
    data
        The clients' datasets (e.g. their test sets), padded: a sample of weight 0 (padding)
        counts nowhere.

    Returns
    -------
    dict of ``(n,)`` numpy arrays
        ``"loss"``: the weighted mean sample loss of every client (its local loss ``F_i``, the
        loss the methods train); ``"accuracy"``: with integer targets and ``(m, C)`` outputs,
        the weighted share of samples whose largest output is the target (NaN for a client
        without samples); ``"n_samples"``: the number of real samples.  Computed in the
        parameters' precision.
    """
    if not isinstance(data, ClientData):
        raise TypeError(f"data must be a ClientData, got {type(data).__name__}")
    held = getattr(params, "client_params", params)
    theta = held if isinstance(held, Tensor) else torch.as_tensor(np.asarray(held))
    if not theta.is_floating_point():
        raise TypeError(f"params must be floating point, got {theta.dtype}")
    n = data.n_nodes
    if theta.ndim == 1:
        theta = theta.expand(n, -1)
    if theta.ndim != 2 or theta.shape != (n, model.n_params):
        raise ValueError(f"params must have shape ({model.n_params},) or ({n}, {model.n_params}) "
                         f"(one model per client of data), got {tuple(theta.shape)}")
    data = data.to(theta.dtype, theta.device)
    x, y, w = data.features, data.targets, data.sample_weights
    with torch.no_grad():
        scores = {"loss": client_losses(model, theta, x, y, w)}
        if not (y.is_floating_point() or y.is_complex()):
            outputs = vmap(model.forward)(theta, x)
            if outputs.ndim == 3:  # (n, m, C) scores of C classes
                hits = (outputs.argmax(dim=-1) == y).to(w.dtype)
                total = w.sum(dim=1)
                scores["accuracy"] = (w * hits).sum(dim=1) / total.where(total > 0, torch.nan)
    out = {name: value.double().cpu().numpy() for name, value in scores.items()}
    out["n_samples"] = data.counts.cpu().numpy()
    return out
