"""SCAFFOLD: local SGD corrected by control variates (Karimireddy et al. 2020).

Karimireddy, Kale, Mohri, Reddi, Stich & Suresh, "SCAFFOLD: Stochastic Controlled Averaging
for Federated Learning", ICML 2020, Algorithm 1.  The server holds the model ``x`` and a
control variate ``c``, every client ``i`` its own ``c_i`` (all zero at the start).  In round
``t`` every selected client

1. starts from ``y_i = x`` and takes ``K_i`` local steps
   ``y_i <- y_i - eta_l (g_i(y_i) - c_i + c)`` (line 10; here ``E`` epochs of mini-batch
   SGD, ``K_i = E ceil(n_i / B)``), the correction ``c - c_i`` removing the client drift;
2. updates its control variate by option II (line 12;
   :func:`~networkedfl.algorithms.aggregate.scaffold_controls`)::

       c_i+ = c_i - c + (x - y_i) / (K_i eta_l)

3. sends ``Delta y_i = y_i - x`` and ``Delta c_i = c_i+ - c_i`` (``2P`` floats);

and the server moves ``x <- x + eta_g Delta y`` and ``c <- c + (|S|/N) Delta c`` (lines 16-17),
``Delta y`` and ``Delta c`` the averages over the selected clients.  The averages here are
weighted by the sample counts as FedAvg's are (``Delta y = sum_S (n_i/n_S) Delta y_i``,
``c <- c + sum_S (n_i/n) Delta c_i``, ``n`` the samples of all participants), so that ``c``
stays the weighted mean of the ``c_i``; with equal counts these are the paper's uniform
averages.  On quadratic clients of different curvatures, where FedAvg with ``K > 1`` local
steps converges to a point other than the optimum, SCAFFOLD converges to the optimum.
"""

from __future__ import annotations

from typing import Any

import torch

from .._validation import check_finite
from ..nn import ClientBuckets, ClientData, FlatModel
from ._fedavg import ROUND_OPTIONS, SAMPLING_OPTIONS, _client_update
from ._local_sgd import control_variates, local_step_counts
from .aggregate import group_average, scaffold_controls
from .contract import FederatedResult, TrainingOptions, start_run

__all__ = ["scaffold"]


def scaffold(model: FlatModel, data: ClientData | ClientBuckets, options: TrainingOptions | None = None, *,
             server_lr: float = 1.0, **overrides: Any) -> FederatedResult:
    """SCAFFOLD (Karimireddy et al. 2020, Algorithm 1, option II) for all clients at once.

    Parameters
    ----------
    model, data
        Model and local datasets (padding carries weight 0): a padded
        :class:`~networkedfl.nn.ClientData` or clients in size buckets
        (:class:`~networkedfl.nn.ClientBuckets`), as for :func:`~networkedfl.algorithms.fedavg`.
    options, **overrides
        :class:`~networkedfl.algorithms.contract.TrainingOptions`: required ``n_rounds``,
        ``local_epochs``, ``batch_size``, ``lr`` (the local step ``eta_l``, a number);
        optional ``client_fraction``, ``client_chunk_size``, ``participants``, ``init``,
        ``seed``, ``callback`` (``RoundState`` as FedAvg's), ``device``, ``dtype``.
    server_lr
        The global step ``eta_g`` (the paper: 1).

    Returns
    -------
    FederatedResult
        ``client_params`` the global model for every client, ``global_params`` ``(1, P)``,
        ``assignment`` zeros; the log counts ``2P`` floats each way per selected client (the
        model and a control variate).
    """
    server_lr = float(check_finite(server_lr, "server_lr", sign="positive"))
    run = start_run(model, data, options, overrides, "scaffold", required=ROUND_OPTIONS,
                    optional=SAMPLING_OPTIONS, ragged=True)
    opts = run.options
    if callable(opts.lr):
        raise TypeError("scaffold needs a constant lr (eta_l enters the control variates' update)")
    group_of, _, allowed, x = run.server_models()
    c = torch.zeros_like(x[0])
    c_i = torch.zeros(run.n_clients, run.n_params, dtype=run.dtype, device=run.device)
    n_local = run.data.weight_per_node
    total = n_local[allowed].sum().clamp_min(torch.finfo(run.dtype).tiny)  # no samples: no share
    for t, selected, idx, part in run.server_rounds(group_of, 1, allowed):
        y = _client_update(model, run, x.expand(idx.numel(), -1), part, control_variates(c, c_i[idx]))
        steps = local_step_counts(part, opts.local_epochs, opts.batch_size)
        new = scaffold_controls(c_i[idx], c, x[0], y, steps, opts.lr)
        x = x + server_lr * (group_average(y, n_local[idx], group_of[idx], x) - x)
        c = c + ((n_local[idx] / total)[:, None] * (new - c_i[idx])).sum(dim=0)
        c_i[idx] = new
        s, p = idx.numel(), run.n_params
        run.record_server_round(t, upload="models", global_params=x, group_of=group_of,
                                selected=selected, floats_up=2 * s * p, floats_down=2 * s * p)
    return run.result(x[group_of], x, group_of)
