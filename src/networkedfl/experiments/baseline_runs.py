"""Running the extra baselines (:mod:`~networkedfl.experiments.baselines`) inside a target's job:
FedProx, SCAFFOLD, FedAdam, FedYogi and Ditto on the algorithms' contract, with local work in
epochs (:func:`run_baseline`) or in steps as FedAvg's (:func:`run_baseline_steps`, every one of
them).

Kept apart from :mod:`~networkedfl.experiments.baselines` (the configuration: names, keys,
own parameters), which the pipeline's tuning and config checks import: only the jobs that run
a baseline import this module and the torch algorithms behind it, so a numpy target's code
hash and device check see no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .baselines import EXTRA_BASELINES, STEP_BASELINES

__all__ = ["StepScaffold", "run_baseline", "run_baseline_steps"]


def run_baseline(setting: str, model: Any, data: Any, own: Mapping[str, float], **options: Any) -> Any:
    """Run the extra baseline ``setting`` with the contract's ``options`` (``n_rounds``,
    ``local_epochs``, ``batch_size``, ``lr``, ``init``, ``seed``, ``callback``, ...) and its
    ``own`` parameters (:func:`baseline_options`); the
    :class:`~networkedfl.algorithms.FederatedResult`."""
    from .. import algorithms

    if setting not in EXTRA_BASELINES:
        raise ValueError(f"{setting!r} is not an extra baseline; expected one of {list(EXTRA_BASELINES)}")
    return getattr(algorithms, setting)(model, data, **options, **own)


def run_baseline_steps(setting: str, model: Any, data: Any, own: Mapping[str, float], **options: Any) -> Any:
    """Run the extra baseline ``setting`` with local work counted in steps, as
    :func:`~networkedfl.algorithms.fedavg_steps` (its ``options``: ``n_rounds``,
    ``local_steps``, ``batch_size``, ``lr``, ``mask``, ``mask_average``, ...): FedProx is
    FedAvg's steps with the proximal gradient ``mu (w - w^t)`` (Li et al. 2020, eq. (2);
    :func:`~networkedfl.algorithms.proximal_term` with the round's start as anchor, the
    ``correction`` mechanism of :func:`~networkedfl.algorithms.local_sgd`), FedAdam and
    FedYogi FedAvg's steps with the server optimiser on the average (Reddi et al. 2021,
    Algorithm 2; :func:`~networkedfl.algorithms.server_optimizer_rule`), SCAFFOLD
    (:class:`StepScaffold`) FedAvg's steps with the control variates, Ditto
    (:func:`~networkedfl.algorithms.ditto_steps`; Li et al. 2021, Algorithm 1) FedAvg's steps
    and a personal model per client, the one scored.  Any other baseline is a
    :class:`ValueError` naming :data:`STEP_BASELINES`."""
    from .. import algorithms

    if setting not in STEP_BASELINES:
        raise ValueError(f"{setting!r} has no step-counted run; extra baselines counted in local steps: "
                         f"{list(STEP_BASELINES)}")
    if setting == "fedprox":
        mu = float(own.get("mu", 0.01))
        if not mu >= 0:
            raise ValueError(f"fedprox.mu must be non-negative, got {mu!r}")
        hook = {"correction": lambda start: algorithms.proximal_term(mu, start)}
    elif setting == "scaffold":
        hook = StepScaffold(float(own.get("server_lr", 1.0)), options).hooks()
    elif setting == "ditto":
        return algorithms.ditto_steps(model, data, **options, **own)
    else:
        hook = {"server_step": algorithms.server_optimizer_rule(setting.removeprefix("fed"), **own)}
    return algorithms.fedavg_steps(model, data, **options, **hook)


class StepScaffold:
    """SCAFFOLD (Karimireddy et al. 2020, Algorithm 1, option II) on the hooks of
    :func:`~networkedfl.algorithms.fedavg_steps`: every local step adds ``c - c_i``
    (:func:`~networkedfl.algorithms.control_variates`); after the round's ``K = local_steps``
    steps of size ``eta_l = lr`` from ``x`` to ``y_i`` every client sets
    ``c_i+ = c_i - c + (x - y_i) / (K eta_l)``
    (:func:`~networkedfl.algorithms.aggregate.scaffold_controls`), ``c`` becomes the clients'
    mean ``c_i`` (all clients take part every round) and the server moves
    ``x <- x + eta_g (mean y_i - x)``.  With a ``mask`` a client's frozen coordinates hold
    ``c_i = 0`` and ``c`` averages each coordinate over the clients that train it (the
    ``mask_average`` of the models); ``x - y_i`` is taken from the client's own start."""

    def __init__(self, server_lr: float, options: Mapping[str, Any]) -> None:
        if not server_lr > 0:
            raise ValueError(f"scaffold.server_lr must be positive, got {server_lr!r}")
        if callable(options["lr"]):
            raise TypeError("scaffold needs a constant lr (eta_l enters the control variates' update)")
        self.server_lr, self.lr, self.steps = server_lr, float(options["lr"]), int(options["local_steps"])
        self.mask = options.get("mask")
        self.c: Any = None
        self.c_i: Any = None

    def hooks(self) -> dict[str, Any]:
        """The ``correction``, ``round_end`` and ``server_step`` of ``fedavg_steps``."""
        return {"correction": self.correction, "round_end": self.round_end, "server_step": self.server_step}

    def correction(self, start: Any) -> Any:
        from ..algorithms import control_variates

        if self.c_i is None:
            self.c_i, self.c = start.new_zeros(start.shape), start.new_zeros(start.shape[1])
        return control_variates(self.c, self.c_i)

    def round_end(self, start: Any, end: Any) -> None:
        import torch

        from ..algorithms import scaffold_controls

        steps = torch.full((start.shape[0],), self.steps, device=start.device)
        new = scaffold_controls(self.c_i, self.c, start, end, steps, self.lr)
        if self.mask is None:
            self.c_i, self.c = new, new.mean(dim=0)
            return
        held = self.mask.to(new.dtype)
        self.c_i = new * held
        self.c = self.c_i.sum(dim=0) / held.sum(dim=0).clamp_min(1.0)

    def server_step(self, previous: Any, average: Any) -> Any:
        return previous + self.server_lr * (average - previous)
