"""FedAvg in the form used by the GTV paper's comparisons (and its cluster-oracle variant).

Each round every node in the sampling set ``M`` takes the local proximal step (GTV eq.
(32)) from the current global model of its group, and the server replaces the group's
model by the average over the group's nodes in ``M``.  With one group this is FedAvg as
in the authors' code; with the true clusters as groups it is FedAvgC, the oracle
benchmark of GTV Fig. 2.  All nodes of all groups are updated in one batched call.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_finite
from ._losses import LocalLoss

__all__ = ["fedavg_proximal"]


def fedavg_proximal(
    loss: LocalLoss,
    mask: np.ndarray,
    tau: np.ndarray,
    n_rounds: int,
    *,
    groups: np.ndarray | None = None,
    dim: int | None = None,
    w0: np.ndarray | None = None,
) -> np.ndarray:
    """Run proximal FedAvg and return the model each node ends with, shape ``(n, d)``.

    Parameters
    ----------
    loss
        Local losses of all nodes (only rows in ``mask`` are averaged).
    mask
        Boolean sampling set ``M``: the nodes that train and are averaged.
    tau
        Per-node proximal step size of the local update (the authors use ``1/deg_i``).
    n_rounds
        Communication rounds ``K``.
    groups
        Optional group label per node; averaging happens within groups (FedAvgC with
        the true clusters).  ``None``: one global model (FedAvg).
    dim, w0
        Parameter dimension, or an initial model per group broadcast to nodes ``(n, d)``.
    """
    tau = check_finite(tau, "tau", sign="positive", element="node")
    mask = np.asarray(mask, bool)
    n = mask.shape[0]
    groups = np.zeros(n, np.int64) if groups is None else np.asarray(groups, np.int64)
    d = w0.shape[1] if w0 is not None else (dim if dim is not None else loss.dim)
    w = np.zeros((n, d)) if w0 is None else np.array(w0, float, copy=True)
    n_groups = int(groups.max()) + 1
    counts = np.bincount(groups[mask], minlength=n_groups)
    if np.any(counts == 0):
        empty = np.flatnonzero(counts == 0).tolist()
        raise ValueError(f"groups {empty} have no node in the sampling set; nothing to average")
    # Averaging operator: (n_groups x n) with 1/|group ∩ M| at sampled members.
    members = np.flatnonzero(mask)
    average = sp.csr_matrix(
        (1.0 / counts[groups[members]], (groups[members], members)), shape=(n_groups, n)
    )
    prox = loss.prox_operator(tau)
    for _ in range(n_rounds):
        w = (average @ prox(w))[groups]
    return w
