"""FedProx: FedAvg whose clients solve a proximal local problem (Li et al. 2020).

Li, Sahu, Zaheer, Sanjabi, Talwalkar & Smith, "Federated Optimization in Heterogeneous
Networks", MLSys 2020, Algorithm 2: in round ``t`` every selected client ``k`` approximately
minimises

    h_k(w; w^t) = F_k(w) + (mu / 2) ||w - w^t||^2                        (eq. (2))

from ``w^t`` (here: ``E`` epochs of mini-batch SGD on ``h_k``, the inexact solver of the
paper's experiments, whose gradient is ``grad F_k(w) + mu (w - w^t)``) and the server
averages the returned models weighted by the sample counts, as FedAvg does.  ``mu = 0`` is
FedAvg, step for step and bit for bit; with a local problem solved exactly a client returns
its proximal point ``prox_{F_k / mu}(w^t)`` (for ``F_k(w) = (1/2)||w - a_k||^2``:
``(a_k + mu w^t) / (1 + mu)``).  The same loop as :func:`~networkedfl.algorithms.fedavg`
(client sampling, groups, chunks) with the proximal term added to the local gradients
(:func:`~networkedfl.algorithms.proximal_term`); the reference implementations (the authors'
``litian96/FedProx``, Flower's ``FedProx`` strategy) add the same term to the client's loss.
"""

from __future__ import annotations

from typing import Any

from .._validation import check_finite
from ..nn import ClientBuckets, ClientData, FlatModel
from ._fedavg import ROUND_OPTIONS, SAMPLING_OPTIONS, _averaging_rounds
from ._local_sgd import proximal_term
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = ["fedprox"]


def fedprox(model: FlatModel, data: ClientData | ClientBuckets, options: TrainingOptions | None = None, *,
            mu: float = 0.01, **overrides: Any) -> FederatedResult:
    """FedProx (Li et al. 2020, Algorithm 2): FedAvg with the proximal term ``(mu/2)||w - w^t||^2``.

    Parameters
    ----------
    model, data
        Model and local datasets (padding carries weight 0): a padded
        :class:`~networkedfl.nn.ClientData` or clients in size buckets
        (:class:`~networkedfl.nn.ClientBuckets`), as for :func:`~networkedfl.algorithms.fedavg`.
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`, as for
        :func:`~networkedfl.algorithms.fedavg`: required ``n_rounds``, ``local_epochs``,
        ``batch_size``, ``lr``; optional ``client_fraction``, ``client_chunk_size``,
        ``groups``, ``participants``, ``init``, ``seed``, ``callback``, ``device``, ``dtype``.
    mu
        The proximal weight ``mu >= 0`` (the paper tries 0.001 to 1; 0: FedAvg).

    Returns
    -------
    FederatedResult
        As :func:`~networkedfl.algorithms.fedavg` (the same communication: one model each
        way per selected client).
    """
    mu = float(check_finite(mu, "mu", sign="non-negative"))
    run = start_run(model, data, options, overrides, "fedprox", required=ROUND_OPTIONS,
                    optional=(*SAMPLING_OPTIONS, "groups"), ragged=True)
    return _averaging_rounds(model, run, correction=lambda start: proximal_term(mu, start))
