"""Clients with known answers for the FedAvg variants (FedProx, SCAFFOLD, FedOpt, Ditto)."""

import numpy as np
import pytest
import torch

from networkedfl.nn import ClientData


def quadratic_data(centres, curvatures=None) -> ClientData:
    """Clients with the losses ``F_i(w) = (h_i / 2) ||w - a_i||^2`` for a linear model:
    client ``i`` holds ``d`` samples ``x = s e_j``, ``y = s a_ij`` with ``s^2 = h_i d / 2``,
    whose mean squared error is ``F_i`` (gradient ``h_i (w - a_i)``), in float64."""
    a = np.asarray(centres, dtype=float)
    n, d = a.shape
    h = np.ones(n) if curvatures is None else np.asarray(curvatures, dtype=float)
    s = np.sqrt(h * d / 2.0)
    x = s[:, None, None] * np.eye(d)[None]
    return ClientData.from_arrays(x, s[:, None] * a, dtype=torch.float64)


@pytest.fixture
def quadratic_clients():
    """:func:`quadratic_data`, the builder of the quadratic clients."""
    return quadratic_data
