"""pFedMe: personalized federated learning with Moreau envelopes (Dinh, Tran & Nguyen 2020).

The personalized-FL baseline of the GTV paper's MNIST comparison (Fig. 6).  Every client
``i`` keeps a personalized model ``theta_i`` tied to a local copy ``w_i`` of the global
model by the Moreau envelope

    F_i(w) = min_theta  f_i(theta) + (lam / 2) ||theta - w||^2        (pFedMe eq. (2)-(3)).

Algorithm 1 of the paper, for all clients at once: in round ``t`` the server sends ``w^t``;
every client sets ``w_i = w^t`` and repeats ``R`` times (its "local rounds")

1. draw a mini-batch ``D_i`` of ``|D|`` samples;
2. approximately solve ``theta_i = argmin_theta f_i(theta; D_i) + (lam/2)||theta - w_i||^2``
   by ``K`` gradient steps ``theta <- theta - p_lr (grad f_i(theta; D_i) + lam (theta - w_i))``
   (continuing from the previous ``theta_i``, as in the authors' implementation);
3. ``w_i <- w_i - eta lam (w_i - theta_i)``;

then the server averages the returned ``w_i`` of the selected clients (weighted by their
sample counts) and moves ``w^{t+1} = (1 - beta) w^t + beta * average``.  The personalized
models ``theta_i`` are the ones evaluated.  The steps are single
:func:`~networkedfl.nn.batch_gradients` calls (``vmap(grad(...))`` or the model's closed form)
over all clients; the Python loops run over rounds, local rounds and inner steps.

Defaults of the authors' repository (``CharlieDinh/pFedMe``, README, MNIST): batch 20,
``eta = 0.005``, ``p_lr = 0.09``, ``beta = 1``, ``lam = 15``, ``R = 20``, ``K = 5``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from .._validation import check_finite, check_int, renamed_function
from ..nn import ClientData, FlatModel, batch_gradients, sgd_step
from ._local_sgd import epoch_order
from .aggregate import sample_clients
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = ["personalised_steps", "personalized_steps", "pfedme"]


def personalized_steps(
    model: FlatModel,
    theta: Tensor,
    anchor: Tensor,
    features: Tensor,
    targets: Tensor,
    weights: Tensor,
    *,
    lam: float,
    lr: float,
    steps: int,
) -> Tensor:
    """``steps`` gradient steps on ``f_i(theta; batch) + (lam/2)||theta - anchor_i||^2``, all clients.

    This is the inner solver of pFedMe (its eq. (7)); with a convex quadratic ``f_i`` and
    enough steps it converges to the exact proximal point.
    """
    step_grad = batch_gradients(model)
    for _ in range(int(steps)):
        theta = sgd_step(theta, step_grad(theta, features, targets, weights) + lam * (theta - anchor), lr)
    return theta


def pfedme(
    model: FlatModel,
    data: ClientData,
    options: TrainingOptions | None = None,
    *,
    local_rounds: int = 20,
    inner_steps: int = 5,
    personal_lr: float = 0.09,
    lam: float = 15.0,
    beta: float = 1.0,
    **overrides: Any,
) -> FederatedResult:
    """pFedMe (Dinh et al. 2020, Algorithm 1) for all clients at once.

    Parameters
    ----------
    model, data
        Model and local datasets (padding carries weight 0).
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`.  Required: ``n_rounds``
        (``T``).  ``batch_size`` (default 20): ``|D|``, samples per mini-batch (drawn
        without replacement, a fresh draw each local round); ``lr`` (default 0.005):
        ``eta``, the local update of ``w_i``.  ``client_fraction``, ``participants``:
        clients aggregated per round, as in :func:`~networkedfl.algorithms.fedavg`
        (every participant trains; the server averages a random subset).  ``init``: the
        starting global model ``(P,)``; ``seed``, ``callback`` (``RoundState.client_params``
        are the personalized models ``theta_i``), ``device``, ``dtype``.
    local_rounds
        ``R``: mini-batches (local updates of ``w_i``) per round.
    inner_steps
        ``K``: gradient steps of the personalized problem per mini-batch.
    personal_lr
        The personalized step size.
    lam
        Regularisation ``lambda`` of the Moreau envelope.
    beta
        Server mixing parameter (1: plain averaging).

    Returns
    -------
    FederatedResult
        ``client_params`` the personalized models ``theta_i``; ``global_params`` ``(1, P)``
        the global model; ``assignment`` zeros.  The log counts ``|S_t|`` model uploads and
        one download per participating client per round.
    """
    local_rounds = check_int(local_rounds, "local_rounds", minimum=1)
    inner_steps = check_int(inner_steps, "inner_steps", minimum=1)
    for name, value in (("personal_lr", personal_lr), ("lam", lam)):
        check_finite(value, name, sign="positive")
    if not 0 < beta <= 2:
        raise ValueError(f"beta must be in (0, 2], got {beta!r}")
    run = start_run(model, data, options, overrides, "pfedme", required=("n_rounds",),
                    optional=("client_fraction", "participants"),
                    defaults={"batch_size": 20, "lr": 0.005})
    opts, data, gen, n = run.options, run.data, run.seed, run.n_clients
    batch_size, lr = check_int(opts.batch_size, "batch_size", minimum=1), opts.lr
    allowed = run.participants(allow_none=True)
    global_w = run.initial_rows(1, "server")[0]
    theta = global_w.expand(n, -1).clone()
    groups = run.zeros
    rows = run.own[:, None]
    x, y, w = data.features, data.targets, data.sample_weights
    n_local = data.weight_per_node
    take = min(batch_size, data.max_samples)
    trains = allowed
    for t in run.rounds():
        local_w = global_w.expand(n, -1).clone()
        theta = torch.where(trains[:, None], global_w.expand(n, -1), theta)
        for _ in range(local_rounds):
            order = epoch_order(w, gen)[:, :take]
            xb, yb, wb = x[rows, order], y[rows, order], w[rows, order]
            theta_new = personalized_steps(
                model, theta, local_w, xb, yb, wb, lam=lam, lr=personal_lr, steps=inner_steps
            )
            theta = torch.where(trains[:, None], theta_new, theta)
            local_w = local_w - lr * lam * (local_w - theta)
        selected = sample_clients(groups, 1, opts.client_fraction, allowed, gen)
        weights = torch.where(selected, n_local, torch.zeros_like(n_local))
        total = weights.sum()
        if total > 0:
            average = (weights[:, None] * local_w).sum(dim=0) / total
            global_w = (1.0 - beta) * global_w + beta * average
        run.record_server_round(  # every participant downloads the model, |S_t| upload
            t, upload="models", global_params=global_w[None], group_of=groups, selected=selected,
            client_params=theta, downloads=int(trains.sum()),
        )
    return run.result(theta, global_w[None], groups)


# the British spelling of issue 43 item 5 (one spelling, -ize as scikit-learn's): warns
personalised_steps = renamed_function(personalized_steps, "personalised_steps")
