"""Fused edge kernels of the GTV primal-dual iteration (GTV paper, Algorithm 1), in numba.

The NumPy path of :func:`~networkedfl.gtv.gtv_primal_dual` takes every iteration as a
sequence of whole-array operations, each a pass over the edge arrays: ``D^T u`` (steps
2-3, scipy), two gathers, a difference, a scaling and a sum for ``u + Sigma D v``, and the
passes of the penalty's dual prox (steps 5-8, eq. (33)).  The kernels below take each step
in one pass over the edges, with row ``e = {i, j} = edges[e]`` of the incidence matrix
``D`` (eq. (6)) holding ``+1`` at ``i`` and ``-1`` at ``j``:

* :func:`_accumulate_incidence_transpose`: ``s = D^T u`` (``+u_e`` at ``i``, ``-u_e`` at
  ``j``), and :func:`_primal_argument`: ``w_hat = w - T s`` over the nodes;
* :func:`_dual_step`: ``v = 2 w_new - c w`` over the nodes (``c = 1`` for the extrapolated
  update, ``2`` for the doubled difference), then for every edge
  ``z_e = u_e + sigma_e (v_i - v_j)`` and the prox of the penalty's conjugate written to
  ``out`` (``u`` itself or a fresh array), and, in the same pass, ``s = D^T out`` for the
  next iteration's steps 2-3.  One pass over the edge arrays per iteration in all;
  :func:`_dual_step_pairs` is the same for ``d = 2`` with both coordinates in registers
  (about twice as fast as the loops over ``d``).

The kernels are compiled with ``error_model="numpy"`` (division by zero gives ``inf``/``nan``
as in NumPy instead of raising; the radius floor keeps nLasso's divisor positive anyway):
Python's error model puts a test before every division.

**Bit-identical to the NumPy path.**  Every kernel repeats the floating-point operations of
the NumPy path in their order, without ``fastmath`` (no reassociation, no fused
multiply-add), so that results do not depend on whether numba is installed:

* ``D^T u``: scipy's products (the CSC view for C-order arrays, the CSR copy column by
  column for the column-major ones) start every node's sum at ``0`` and add the edge
  contributions ``+-u_e`` in increasing edge order; so do the kernels;
* ``w_hat = (s * (-tau_i)) + w``, ``v = (2 w_new) - (c w)``, ``z = u + (v_i - v_j) sigma_e``
  (for ``d > COLUMNWISE_MAX_DIM`` NumPy takes ``D v`` with scipy, ``(0 + v_i) - v_j``,
  which differs only in the sign of a zero: the kernel computes that too);
* ``l1``: ``max(min(z, r_e), -r_e)`` (with NumPy's ties and NaN); ``mocha``: ``z`` times
  the factor of ``_penalties._mocha_factor`` (passed in); ``nlasso``: ``z * (r_e / max(||z_e||, max(r_e,
  tiny)))`` (``_ball_factor``) with ``||z_e||`` as ``row_norms`` takes it: ``sqrt`` of the
  sum of squares added coordinate after coordinate, as ``a*a + b*b`` for ``d = 2`` and as
  ``einsum`` does on column-major arrays (``1 <= d <= 8``).  On C-order arrays
  (``d > 8``) ``einsum`` sums with SIMD accumulators whose order depends on the CPU: the
  solver keeps NumPy for nLasso there (:func:`_supported`).

The kernels are compiled on first use (``cache=True``: numba stores the machine code next to
this file, or in its user cache directory when that is not writable, and later processes
load it).  Importing this module imports numba; the solver imports it lazily and falls back
to NumPy when numba is missing.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["KINDS", "NLASSO_MAX_DIM"]

#: Penalty name -> the code of its dual prox in :func:`_dual_step`.
KINDS = {"l1": 0, "nlasso": 1, "mocha": 2}
_L1, _NLASSO, _MOCHA = 0, 1, 2
_TINY = float(np.finfo(float).tiny)  # the floor of _penalties._ball_factor

#: Largest dimension for which the nLasso kernel reproduces ``row_norms`` (column-major
#: arrays and the d = 2 pairs; see the module docstring).
NLASSO_MAX_DIM = 8


def _supported(penalty_name: str, dim: int) -> str | None:
    """``None`` if the kernels reproduce the NumPy path for this penalty and dimension,
    else the reason they do not."""
    if penalty_name not in KINDS:
        return f"penalty {penalty_name!r} has no fused kernel (only {sorted(KINDS)})"
    if penalty_name == "nlasso" and dim > NLASSO_MAX_DIM:
        return (f"the nLasso kernel reproduces NumPy's row norms only for d <= {NLASSO_MAX_DIM} "
                f"(einsum sums rows of C-order arrays in a CPU-dependent order), got d = {dim}")
    return None


@numba.njit(cache=True, error_model="numpy", inline="always")
def _clip(x, p):  # pragma: no cover - compiled
    """``np.maximum(np.minimum(x, p), -p)``: numpy's second operand on a tie (the sign of a
    zero), NaN propagating."""
    if x >= p:
        x = p
    low = -p
    if x <= low:
        x = low
    return x


@numba.njit(cache=True, error_model="numpy", inline="always")
def _ball_factor(squares, p):  # pragma: no cover - compiled
    """``_penalties._ball_factor(sqrt(squares), r, max(r, tiny))``: ``r / max(||z||, floor)``
    (``r >= 0`` is finite; a NaN norm propagates)."""
    norm = math.sqrt(squares)
    floor = p if p > _TINY else _TINY
    if norm <= floor:
        norm = floor
    return p / norm


@numba.njit(cache=True, error_model="numpy")
def _accumulate_incidence_transpose(head, tail, u, out):  # pragma: no cover - compiled
    """``out = D^T u``: each node's sum starts at 0 and takes its edges in increasing order."""
    n, d = out.shape
    for i in range(n):
        for k in range(d):
            out[i, k] = 0.0
    for e in range(head.shape[0]):
        i = head[e]
        j = tail[e]
        for k in range(d):
            x = u[e, k]
            out[i, k] += x
            out[j, k] -= x


@numba.njit(cache=True, error_model="numpy")
def _primal_argument(s, neg_tau, w, out):  # pragma: no cover - compiled
    """Steps 2-3 from ``s = D^T u``: ``out = s * (-tau_i) + w`` (``out`` may be ``s``)."""
    n, d = out.shape
    for i in range(n):
        t = neg_tau[i]
        for k in range(d):
            out[i, k] = s[i, k] * t + w[i, k]


@numba.njit(cache=True, error_model="numpy", inline="always")
def _extrapolate(w_new, w, extrapolation, v, s):  # pragma: no cover - compiled
    """The node part of steps 5-8: ``v = 2 w_new - c w``, and ``s = 0`` before the edges add
    ``D^T out`` to it."""
    n, d = v.shape
    for i in range(n):
        for k in range(d):
            v[i, k] = 2.0 * w_new[i, k] - extrapolation * w[i, k]
            s[i, k] = 0.0


@numba.njit(cache=True, error_model="numpy")
def _dual_step(head, tail, u, w_new, w, extrapolation, v, sigma, uniform_sigma, kind, param,
              scipy_difference, out, s):  # pragma: no cover - compiled
    """Steps 5-8 fused with the penalty's dual prox, and ``s = D^T out`` for the next steps 2-3.

    ``v`` (nodes) is scratch; ``sigma`` is per edge, or its first entry is used for all
    edges if ``uniform_sigma``; ``param`` is the radius ``r_e`` (``l1``, ``nlasso``) or the
    MOCHA factor per edge; ``out`` may be ``u``.
    """
    d = v.shape[1]
    _extrapolate(w_new, w, extrapolation, v, s)
    step = sigma[0]
    for e in range(head.shape[0]):
        i = head[e]
        j = tail[e]
        if not uniform_sigma:
            step = sigma[e]
        for k in range(d):
            if scipy_difference:
                diff = (0.0 + v[i, k]) - v[j, k]
            else:
                diff = v[i, k] - v[j, k]
            out[e, k] = u[e, k] + diff * step
        p = param[e]
        if kind == _L1:  # np.minimum(z, r) then np.maximum(., -r)
            for k in range(d):
                out[e, k] = _clip(out[e, k], p)
        else:
            if kind == _NLASSO:  # _ball_factor(row_norms(z), r, max(r, tiny))
                sq = out[e, 0] * out[e, 0]
                for k in range(1, d):
                    sq = sq + out[e, k] * out[e, k]
                factor = _ball_factor(sq, p)
            else:  # MOCHA: the precomputed factor
                factor = p
            for k in range(d):
                out[e, k] = out[e, k] * factor
        for k in range(d):
            x = out[e, k]
            s[i, k] += x
            s[j, k] -= x


@numba.njit(cache=True, error_model="numpy")
def _dual_step_pairs(head, tail, u, w_new, w, extrapolation, v, sigma, uniform_sigma, kind, param,
                    out, s):  # pragma: no cover - compiled
    """:func:`_dual_step` for ``d = 2`` (the pairs of the NumPy path), with the two coordinates
    held in registers: about twice as fast as the loops over ``d``."""
    _extrapolate(w_new, w, extrapolation, v, s)
    step = sigma[0]
    for e in range(head.shape[0]):
        i = head[e]
        j = tail[e]
        if not uniform_sigma:
            step = sigma[e]
        a = u[e, 0] + (v[i, 0] - v[j, 0]) * step
        b = u[e, 1] + (v[i, 1] - v[j, 1]) * step
        p = param[e]
        if kind == _L1:
            a = _clip(a, p)
            b = _clip(b, p)
        else:
            if kind == _NLASSO:  # row_norms of pairs: a*a + b*b
                factor = _ball_factor(a * a + b * b, p)
            else:
                factor = p
            a = a * factor
            b = b * factor
        out[e, 0] = a
        out[e, 1] = b
        s[i, 0] += a
        s[i, 1] += b
        s[j, 0] -= a
        s[j, 1] -= b
