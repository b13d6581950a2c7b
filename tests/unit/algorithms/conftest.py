"""Clients with known answers for the FedAvg variants (FedProx, SCAFFOLD, FedOpt, Ditto)."""

import numpy as np
import pytest
import torch

from networkedfl.nn import ClientData


def quadratic_data(centres, curvatures=None, repeats=None) -> ClientData:
    """Clients with the losses ``F_i(w) = (h_i / 2) ||w - a_i||^2`` for a linear model:
    client ``i`` holds ``d`` samples ``x = s e_j``, ``y = s a_ij`` with ``s^2 = h_i d / 2``,
    whose mean squared error is ``F_i`` (gradient ``h_i (w - a_i)``), in float64; each sample
    ``repeats[i]`` times (the same loss, ``repeats[i] d`` samples: the weight of an average)."""
    a = np.asarray(centres, dtype=float)
    n, d = a.shape
    h = np.ones(n) if curvatures is None else np.asarray(curvatures, dtype=float)
    r = np.ones(n, dtype=int) if repeats is None else np.asarray(repeats)
    s = np.sqrt(h * d / 2.0)
    x = [np.tile(s[i] * np.eye(d), (r[i], 1)) for i in range(n)]
    y = [np.tile(s[i] * a[i], r[i]) for i in range(n)]
    return ClientData.from_client_arrays(x, y, dtype=torch.float64)


def ragged_data(seed=0) -> ClientData:
    """Five noisy linear clients of 3, 7, 12, 5 and 9 samples in 3 features (float64)."""
    rng = np.random.default_rng(seed)
    sizes = [3, 7, 12, 5, 9]
    x = [rng.standard_normal((m, 3)) for m in sizes]
    y = [xi @ rng.standard_normal(3) + 0.1 * rng.standard_normal(len(xi)) for xi in x]
    return ClientData.from_client_arrays(x, y, dtype=torch.float64)


@pytest.fixture
def quadratic_clients():
    """:func:`quadratic_data`, the builder of the quadratic clients."""
    return quadratic_data


@pytest.fixture
def ragged_clients():
    """:func:`ragged_data` (seed 0)."""
    return ragged_data()
