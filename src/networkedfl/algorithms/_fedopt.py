"""FedOpt: FedAvg's clients, an optimiser on the server (FedAdam, FedYogi, FedAdagrad).

Reddi, Charles, Zaheer, Garrett, Rush, Konečný, Kumar & McMahan, "Adaptive Federated
Optimization", ICLR 2021, Algorithm 2: in round ``t`` the selected clients run ``E`` epochs of
SGD from ``x_t`` (FedAvg's ``ClientUpdate``), the server forms the pseudo-gradient

    Delta_t = sum_i (n_i / n_S) (x_i - x_t) = (weighted mean of the x_i) - x_t

and takes one step of an adaptive optimiser on it with server step ``eta``, momentum
``beta1``, second-moment decay ``beta2`` and adaptivity ``tau``
(:func:`~networkedfl.algorithms.aggregate.server_optimizer_step`)::

    m_t = beta1 m_{t-1} + (1 - beta1) Delta_t
    v_t = (Adagrad) v_{t-1} + Delta_t^2
          (Adam)    beta2 v_{t-1} + (1 - beta2) Delta_t^2
          (Yogi)    v_{t-1} - (1 - beta2) Delta_t^2 sign(v_{t-1} - Delta_t^2)
    x_{t+1} = x_t + eta m_t / (sqrt(v_t) + tau)

``m_{-1} = 0``; the paper starts from ``v_{-1} >= tau^2`` (the default here: ``tau^2``);
Flower's ``FedAdam``/``FedYogi`` strategies start from ``v_{-1} = 0``
(``initial_accumulator=0``) and also weight the average by the sample counts.  The server
optimiser ``"sgd"`` is ``x_{t+1} = x_t + eta Delta_t``: FedAvg for ``eta = 1``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from .._validation import check_finite
from ..nn import ClientBuckets, ClientData, FlatModel
from ._fedavg import ROUND_OPTIONS, SAMPLING_OPTIONS, _averaging_rounds
from .aggregate import SERVER_OPTIMIZERS, server_optimizer_step
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = ["fedadam", "fedopt", "fedyogi", "server_optimizer_rule"]


def fedopt(model: FlatModel, data: ClientData | ClientBuckets, options: TrainingOptions | None = None, *,
           server_optimizer: str = "adam", server_lr: float = 0.01, beta1: float = 0.9,
           beta2: float = 0.99, tau: float = 1e-3, initial_accumulator: float | None = None,
           **overrides: Any) -> FederatedResult:
    """FedOpt (Reddi et al. 2021, Algorithm 2): FedAvg's rounds with a server optimiser.

    Parameters
    ----------
    model, data
        Model and local datasets (padding carries weight 0): a padded
        :class:`~networkedfl.nn.ClientData` or clients in size buckets
        (:class:`~networkedfl.nn.ClientBuckets`), as for :func:`~networkedfl.algorithms.fedavg`.
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`: required ``n_rounds``,
        ``local_epochs``, ``batch_size``, ``lr`` (the clients' step ``eta_l``); optional
        ``client_fraction``, ``client_chunk_size``, ``participants``, ``init``, ``seed``,
        ``callback``, ``device``, ``dtype``.
    server_optimizer
        ``"adam"`` (FedAdam), ``"yogi"`` (FedYogi), ``"adagrad"`` (FedAdagrad) or ``"sgd"``.
    server_lr
        The server step ``eta`` (the paper tunes it on a grid; 1 with ``"sgd"``: FedAvg).
    beta1, beta2
        Momentum and second-moment parameters in ``[0, 1)`` (paper: 0.9 and 0.99).
    tau
        Adaptivity ``tau > 0`` (paper: tuned in 1e-5 .. 1; here 1e-3, Flower's FedYogi).
    initial_accumulator
        ``v_{-1}``; ``None`` (default): ``tau^2``, the paper's bound.

    Returns
    -------
    FederatedResult
        As :func:`~networkedfl.algorithms.fedavg` without groups (the same communication).
    """
    server_step = server_optimizer_rule(server_optimizer, server_lr=server_lr, beta1=beta1, beta2=beta2,
                                        tau=tau, initial_accumulator=initial_accumulator)
    name = "fedopt" if server_optimizer == "sgd" else f"fed{server_optimizer}"
    run = start_run(model, data, options, overrides, name, required=ROUND_OPTIONS,
                    optional=SAMPLING_OPTIONS, ragged=True)
    return _averaging_rounds(model, run, server_step=server_step)


def server_optimizer_rule(server_optimizer: str = "adam", *, server_lr: float = 0.01, beta1: float = 0.9,
                          beta2: float = 0.99, tau: float = 1e-3,
                          initial_accumulator: float | None = None) -> Callable[[Tensor, Tensor], Tensor]:
    """The server's update of :func:`fedopt` (Reddi et al. 2021, Algorithm 2, lines 11-15) as a
    function ``(previous, average) -> new`` of the global model(s) and the clients' average,
    holding the moments ``m``, ``v`` of one run (a fresh rule per run); the parameters and
    their checks are :func:`fedopt`'s.  Also the ``server_step`` of
    :func:`~networkedfl.algorithms.fedavg_steps` (FedAdam / FedYogi counted in steps)."""
    if server_optimizer not in SERVER_OPTIMIZERS:
        raise ValueError(f"unknown server_optimizer {server_optimizer!r}; expected one of "
                         f"{SERVER_OPTIMIZERS}")
    server_lr = float(check_finite(server_lr, "server_lr", sign="positive"))
    tau = float(check_finite(tau, "tau", sign="positive"))
    for name, value in (("beta1", beta1), ("beta2", beta2)):
        if not 0 <= value < 1:
            raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    v0 = tau**2 if initial_accumulator is None else float(
        check_finite(initial_accumulator, "initial_accumulator", sign="non-negative"))
    state: dict[str, Tensor] = {}

    def server_step(previous: Tensor, average: Tensor) -> Tensor:
        if not state:
            state.update(m=torch.zeros_like(previous), v=torch.full_like(previous, v0))
        params, state["m"], state["v"] = server_optimizer_step(
            previous, average - previous, state["m"], state["v"], optimizer=server_optimizer,
            lr=server_lr, beta1=beta1, beta2=beta2, tau=tau)
        return params

    return server_step


def fedadam(model: FlatModel, data: ClientData | ClientBuckets, options: TrainingOptions | None = None,
            **kwargs: Any) -> FederatedResult:
    """FedAdam (Reddi et al. 2021): :func:`fedopt` with ``server_optimizer="adam"``; the same
    parameters (``server_lr``, ``beta1``, ``beta2``, ``tau``, ``initial_accumulator``)."""
    return fedopt(model, data, options, server_optimizer="adam", **kwargs)


def fedyogi(model: FlatModel, data: ClientData | ClientBuckets, options: TrainingOptions | None = None,
            **kwargs: Any) -> FederatedResult:
    """FedYogi (Reddi et al. 2021): :func:`fedopt` with ``server_optimizer="yogi"``; the same
    parameters (``server_lr``, ``beta1``, ``beta2``, ``tau``, ``initial_accumulator``)."""
    return fedopt(model, data, options, server_optimizer="yogi", **kwargs)
