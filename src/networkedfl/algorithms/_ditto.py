"""Ditto: personal models regularised towards the global FedAvg model (Li et al. 2021).

Li, Hu, Beirami & Smith, "Ditto: Fair and Robust Federated Learning Through
Personalization", ICML 2021.  Every client ``k`` keeps a personal model ``v_k`` solving

    min_{v_k}  F_k(v_k) + (lam / 2) ||v_k - w*||^2                       (eq. (2))

beside the global model ``w*`` of FedAvg.  Algorithm 1, for all clients at once: in round
``t`` the server sends ``w^t`` to the selected clients; every one of them

1. runs FedAvg's ``ClientUpdate`` from ``w^t`` (``E`` epochs of SGD) and returns ``w_k^t``;
2. takes ``s`` epochs of SGD on its personal model,
   ``v_k <- v_k - eta (grad F_k(v_k) + lam (v_k - w^t))``
   (:func:`~networkedfl.algorithms.proximal_term` with the anchor ``w^t``);

and the server averages the ``w_k^t`` (weighted by the sample counts, as FedAvg).  The personal
models start at the initial global model and are the ones evaluated.  ``lam = 0`` is local
training of every client; as ``lam`` grows the personal models approach the global one: for
``F_k(v) = (1/2)||v - a_k||^2`` the personal optimum is ``v_k = (a_k + lam w*) / (1 + lam)``.

:func:`ditto_steps` is the same algorithm with local work counted in mini-batch steps, on
the rounds of :func:`~networkedfl.algorithms.fedavg_steps` (its schedules, mini-batch
sources and per-client masks): the chapter's Fig. 10.4 runs Ditto as an extra baseline there.
"""

from __future__ import annotations

from typing import Any

import torch

from .._validation import check_finite, check_int
from ..nn import ClientBuckets, ClientData, FlatModel
from ._fedavg import ROUND_OPTIONS, SAMPLING_OPTIONS, _client_update
from ._fedavg_steps import STEP_OPTIONS, _step_rounds
from ._local_sgd import proximal_term
from .aggregate import group_average
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = ["ditto", "ditto_steps"]


def ditto(model: FlatModel, data: ClientData | ClientBuckets, options: TrainingOptions | None = None, *,
          lam: float = 0.1, personal_epochs: int | None = None, **overrides: Any) -> FederatedResult:
    """Ditto (Li et al. 2021, Algorithm 1) with FedAvg as the global solver.

    Parameters
    ----------
    model, data
        Model and local datasets (padding carries weight 0): a padded
        :class:`~networkedfl.nn.ClientData` or clients in size buckets
        (:class:`~networkedfl.nn.ClientBuckets`), as for :func:`~networkedfl.algorithms.fedavg`.
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`: required ``n_rounds``,
        ``local_epochs`` (of the global model's ``ClientUpdate``), ``batch_size``, ``lr``
        (both models' step); optional ``client_fraction`` (the clients of a round: only
        they update their personal models), ``client_chunk_size``, ``participants``,
        ``init`` (``(P,)``), ``seed``, ``callback`` (``RoundState.client_params``: the
        personal models), ``device``, ``dtype``.
    lam
        ``lambda >= 0``, the pull of the personal models towards the global one (0: local
        training; the paper selects it from {0.05, 0.1, 0.2, 0.5, 1, 2}).
    personal_epochs
        ``s``: epochs of the personal update per round; ``None``: ``local_epochs``.

    Returns
    -------
    FederatedResult
        ``client_params`` the personal models ``v_k`` ``(n, P)``, ``global_params`` ``(1, P)``
        the global model, ``assignment`` zeros; the communication of FedAvg.
    """
    lam = float(check_finite(lam, "lam", sign="non-negative"))
    run = start_run(model, data, options, overrides, "ditto", required=ROUND_OPTIONS,
                    optional=SAMPLING_OPTIONS, ragged=True)
    epochs = run.options.local_epochs if personal_epochs is None else check_int(
        personal_epochs, "personal_epochs", minimum=0)
    group_of, _, allowed, w = run.server_models()
    v = w.expand(run.n_clients, -1).clone()
    n_local = run.data.weight_per_node
    for t, selected, idx, part in run.server_rounds(group_of, 1, allowed):
        anchor = w.expand(idx.numel(), -1)
        local = _client_update(model, run, anchor, part)
        personal = _client_update(model, run, v[idx], part, proximal_term(lam, anchor), epochs=epochs)
        v = torch.index_copy(v, 0, idx, personal)  # a new tensor: a callback may keep the last
        w = group_average(local, n_local[idx], group_of[idx], w)
        run.record_server_round(t, upload="models", global_params=w, group_of=group_of,
                                selected=selected, client_params=v)
    return run.result(v, w, group_of)


def ditto_steps(model: FlatModel, data: Any, options: TrainingOptions | None = None, *, lam: float = 0.1,
                personal_steps: int | None = None, client_weights: Any = None, mask: Any = None,
                mask_average: bool = False, **overrides: Any) -> FederatedResult:
    """Ditto (Li et al. 2021, Algorithm 1) with local work counted in steps: the global model
    by :func:`~networkedfl.algorithms.fedavg_steps`, the personal models beside it.

    Every round all clients start from the global model ``w^t`` (frozen coordinates their
    own), take ``tau = local_steps`` mini-batch SGD steps (FedAvg's, eq. (10.3) of the
    chapter), and then ``s = personal_steps`` steps on their personal models,
    ``v_i <- v_i - alpha^t (grad_hat f_i(v_i) + lam (v_i - w^t))``, with fresh mini-batches
    of the same stream, the step sizes of the round's first ``s`` iterations and the same
    mask; the server averages the global steps' results.  The personal models start at the
    initial models and are the ones returned and scored.

    Parameters
    ----------
    model, data, options, **overrides
        As :func:`~networkedfl.algorithms.fedavg_steps` (required ``n_rounds``,
        ``local_steps``, ``lr``, a number or a schedule, ``batch_size``; ``init`` ``(P,)`` or
        ``(n, P)``; any per-client mini-batch source).
    lam
        ``lambda >= 0``, the pull of the personal models towards the global one (0: local
        training steps beside FedAvg).
    personal_steps
        ``s``: personal steps per round; ``None``: ``local_steps``.
    client_weights, mask, mask_average
        As :func:`~networkedfl.algorithms.fedavg_steps` (the server's average; the mask also
        freezes the personal models' coordinates).

    Returns
    -------
    FederatedResult
        ``client_params`` the personal models ``(n, P)`` (also the callback's
        ``RoundState.client_params``), ``global_params`` ``(1, P)`` the global model,
        ``assignment`` zeros; the communication of FedAvg (personal models stay local).
    """
    lam = float(check_finite(lam, "lam", sign="non-negative"))
    run = start_run(model, data, options, overrides, "ditto_steps", required=STEP_OPTIONS, batches=True)
    steps = run.options.local_steps if personal_steps is None else check_int(
        personal_steps, "personal_steps", minimum=0)
    return _step_rounds(model, run, client_weights=client_weights, mask=mask, mask_average=mask_average,
                       personal=lambda start: proximal_term(lam, start), personal_steps=steps)
