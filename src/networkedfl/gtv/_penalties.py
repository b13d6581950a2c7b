"""GTV penalty functions and the proximal operators of their convex conjugates.

GTV (GTV paper eq. (14)) is ``sum_e lambda A_e phi(w_i - w_j)``.  Algorithm 1 needs the
dual update ``u <- prox_{sigma g*}(z)`` (eq. (33)) with ``g = sum_e lambda A_e phi``.  With
``r_e = lambda A_e``:

* ``l1``:     ``phi = ||.||_1``;  ``g*`` is the indicator of ``|u_k| <= r_e``: elementwise clipping.
* ``nlasso``: ``phi = ||.||_2``;  ``g*`` is the indicator of ``||u||_2 <= r_e``: vector clipping
  (projection onto the Euclidean ball).
* ``mocha``:  ``phi = ||.||_2^2``; ``(r phi)*(u) = ||u||^2 / (4 r)`` so the prox is the scaling
  ``u / (1 + sigma_e / (2 r_e))`` (for ``r_e = 0`` the conjugate forces ``u = 0``).

Each built-in penalty also has ``dual_prox_operator(step, radius)``: the dual step (33) for
fixed step sizes and radii as a function ``z -> u`` that works in place on ``z`` (what does
not depend on ``z`` is computed once), used by the primal-dual iteration.  Row-wise work on
``(E, 2)`` arrays in C order avoids numpy's slow broadcasting over rows of length two: row
row scalings go column by column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = [
    "MOCHA_DUAL_STEPS",
    "PENALTIES",
    "Penalty",
    "UnprojectedEdges",
    "clip_elementwise",
    "clip_vector",
    "get_penalty",
    "mocha_lambda_factor",
    "row_norms",
    "scale_mocha",
    "scale_rows",
]


def _is_pairs(u: np.ndarray) -> bool:
    """Whether ``u`` is an ``(E, 2)`` float64 array in C order (its rows are complex numbers)."""
    return u.ndim == 2 and u.shape[1] == 2 and u.dtype == np.float64 and u.flags.c_contiguous


def _rowwise(ufunc: np.ufunc, u: np.ndarray, per_row: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """``ufunc(u, per_row[:, None])`` into ``out`` (may be ``u``; ``None``: a new array).

    Broadcasting over rows of length two calls numpy's inner loop once per row (several
    times slower than a pass over the array), so ``(E, 2)`` C-order arrays go column by
    column (a loop over the coordinates, not over the edges).
    """
    if out is None:
        out = np.empty_like(u, dtype=np.result_type(u, per_row))
    if _is_pairs(u) and out.flags.c_contiguous:
        for k in range(2):
            ufunc(u[:, k], per_row, out=out[:, k])
        return out
    return ufunc(u, per_row[:, None], out=out)


def row_norms(u: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Euclidean norm ``||u_e||_2 = sqrt(sum_k u_ek^2)`` of every row of ``u`` (shape
    ``(E, d)``), into ``out``.

    Not the complex modulus of ``(E, 2)`` rows (``hypot``, about 2 ms faster per iteration at
    10^6 edges): it rounds differently, and the tables would no longer be byte-identical to
    those of earlier versions.
    """
    if _is_pairs(u):  # a^2 + b^2 column by column: einsum's loop over rows of two is slow
        a, b = u[:, 0], u[:, 1]
        out = np.multiply(a, a, out=out)
        out += b * b
    else:
        out = np.einsum("ed,ed->e", u, u, out=out)
    return np.sqrt(out, out=out)


def scale_rows(u: np.ndarray, factor: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``factor_e * u_e`` for every row, into ``out`` (may be ``u``; default a new array)."""
    return _rowwise(np.multiply, u, np.asarray(factor, float), out)


def clip_elementwise(u: np.ndarray, radius: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Project each row ``u_e`` onto the box ``[-radius_e, radius_e]^d`` (into ``out``, may be ``u``)."""
    r = np.asarray(radius, float)
    out = _rowwise(np.minimum, u, r, out)  # two ufuncs: about twice as fast as np.clip
    return _rowwise(np.maximum, out, -r, out)


def _ball_factor(norms: np.ndarray, radius: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """``min(1, r_e / ||u_e||)`` in place of ``norms``, as ``r_e / max(||u_e||, r_e, tiny)``.

    ``floor`` is ``max(r_e, tiny)``: one pass instead of two, and 0 (not 0/0) for ``r_e = 0``.
    """
    np.maximum(norms, floor, out=norms)
    return np.divide(radius, norms, out=norms)


def clip_vector(u: np.ndarray, radius: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Project each row ``u_e`` onto the Euclidean ball of radius ``radius_e`` (into ``out``, may be ``u``)."""
    r = np.asarray(radius, float)
    factor = _ball_factor(row_norms(u), r, np.maximum(r, np.finfo(float).tiny))
    return scale_rows(u, factor, out)


def _mocha_factor(step: np.ndarray, radius: np.ndarray) -> np.ndarray:
    r = np.asarray(radius, float)
    s = np.broadcast_to(np.asarray(step, float), r.shape)
    with np.errstate(divide="ignore"):
        return np.where(r > 0, 2 * r / (2 * r + s), 0.0)


def scale_mocha(u: np.ndarray, step: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Exact prox of ``step * ||u||^2 / (4 radius)``: ``u / (1 + step / (2 radius))``."""
    return scale_rows(u, _mocha_factor(step, radius))


#: MOCHA dual steps ``u / (1 + c sigma_e / (lambda A_e))`` by name, as the constant ``c``:
#: ``exact`` is the prox of the conjugate of ``lambda A_e ||.||_2^2`` (``c = 1/2``); the
#: authors' SBM notebooks use ``c = 2``, their chain and MNIST notebooks ``c = 1``
#: (docs/variants.md §8.8).
MOCHA_DUAL_STEPS = {"exact": 0.5, "notebook_sbm": 2.0, "notebook_chain": 1.0}


def mocha_lambda_factor(step: str) -> float:
    """The factor ``f`` such that the exact MOCHA step with ``f * lambda`` is the ``step`` named.

    ``u / (1 + c sigma / (lambda A))`` is the exact step ``u / (1 + sigma / (2 lambda' A))``
    with ``lambda' = lambda / (2 c)``: a notebook's MOCHA step is the exact one for a
    smaller ``lambda`` (a quarter of it in the SBM notebooks, half in the chain notebook),
    not another algorithm.
    """
    try:
        c = MOCHA_DUAL_STEPS[step]
    except KeyError:
        raise ValueError(f"unknown MOCHA dual step {step!r}; known: {sorted(MOCHA_DUAL_STEPS)}") from None
    return MOCHA_DUAL_STEPS["exact"] / c


class Penalty(Protocol):
    """A GTV penalty ``phi`` with the pieces Algorithm 1 and its duality gap need.

    A penalty may also define ``dual_prox_operator(step, radius)``, returning the function
    ``z -> dual_prox(z, step, radius)`` for fixed ``step`` and ``radius``; that function may
    overwrite ``z`` and return it.  :func:`~networkedfl.gtv_primal_dual` uses it when present.
    """

    name: str

    def value(self, v: np.ndarray, radius: np.ndarray) -> np.ndarray:
        """``radius_e * phi(v_e)`` per edge."""

    def dual_prox(self, z: np.ndarray, step: np.ndarray, radius: np.ndarray) -> np.ndarray:
        """``prox_{step g*}(z)`` row by row, ``g = radius_e * phi``."""

    def conjugate(self, u: np.ndarray, radius: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """``(radius_e * phi)^*(u_e)`` per edge (``inf`` outside the domain)."""

    def feasible_scale(self, u: np.ndarray, radius: np.ndarray) -> float:
        """Largest ``theta`` in ``[0, 1]`` such that ``theta * u`` lies in the domain of ``g*``."""


def _row_max_abs(u: np.ndarray) -> np.ndarray:
    """``max_k |u_ek|`` of every row (0 for rows of length 0): column by column for short
    rows (numpy's reduction over rows of a few entries runs its inner loop once per row)."""
    if u.shape[1] == 0 or u.shape[1] > 8:
        return np.abs(u).max(axis=1, initial=0.0)
    out = np.abs(u[:, 0])
    for k in range(1, u.shape[1]):  # over the coordinates, not over the edges
        np.maximum(out, np.abs(u[:, k]), out=out)
    return out


def _ball_scale(norms: np.ndarray, radius: np.ndarray) -> float:
    """``min(1, min_e radius_e / norms_e)`` over the edges with ``norms_e > 0``."""
    nonzero = norms > 0
    if not nonzero.any():
        return 1.0
    return float(min(1.0, np.min(radius[nonzero] / norms[nonzero])))


def _indicator(violation: np.ndarray, radius: np.ndarray, tol: float) -> np.ndarray:
    return np.where(violation <= radius * (1 + tol) + tol, 0.0, np.inf)


@dataclass(frozen=True)
class L1Penalty:
    name: str = "l1"

    def value(self, v, radius):
        return radius * np.abs(v).sum(axis=1)

    def dual_prox(self, z, step, radius):
        return clip_elementwise(z, radius)

    def dual_prox_operator(self, step, radius):
        r = np.asarray(radius, float)
        neg_r = -r
        bounds = None  # for (E, 2) pairs: the bounds of every entry, made on first use

        def prox(z):  # clip to [-r_e, r_e] in place
            nonlocal bounds
            if _is_pairs(z) and r.shape == z.shape[:1]:
                if bounds is None:
                    bounds = np.repeat(r, 2), np.repeat(neg_r, 2)
                hi, lo = bounds
                flat = z.reshape(-1)  # a view: one pass per bound instead of one per column
                np.minimum(flat, hi, out=flat)
                np.maximum(flat, lo, out=flat)
                return z
            _rowwise(np.minimum, z, r, z)
            return _rowwise(np.maximum, z, neg_r, z)

        return prox

    def conjugate(self, u, radius, tol=1e-9):
        return _indicator(_row_max_abs(u), radius, tol)

    def feasible_scale(self, u, radius):
        return _ball_scale(_row_max_abs(u), np.asarray(radius, float))


@dataclass(frozen=True)
class NLassoPenalty:
    name: str = "nlasso"

    def value(self, v, radius):
        return radius * row_norms(v)

    def dual_prox(self, z, step, radius):
        return clip_vector(z, radius)

    def dual_prox_operator(self, step, radius):
        r = np.asarray(radius, float)
        floor = np.maximum(r, np.finfo(float).tiny)
        norms = np.empty(r.shape)

        def prox(z):  # z_e * min(1, r_e / ||z_e||), in place on z
            factor = _ball_factor(row_norms(z, out=norms if norms.shape == z.shape[:1] else None), r, floor)
            return scale_rows(z, factor, out=z)

        return prox

    def conjugate(self, u, radius, tol=1e-9):
        return _indicator(row_norms(u), radius, tol)

    def feasible_scale(self, u, radius):
        return _ball_scale(row_norms(u), np.asarray(radius, float))


@dataclass(frozen=True)
class MochaPenalty:
    name: str = "mocha"

    def value(self, v, radius):
        return radius * np.einsum("ed,ed->e", v, v)

    def dual_prox(self, z, step, radius):
        return scale_mocha(z, step, radius)

    def dual_prox_operator(self, step, radius):
        factor = _mocha_factor(step, radius)
        return lambda z: scale_rows(z, factor, out=z)

    def conjugate(self, u, radius, tol=1e-9):
        sq = np.einsum("ed,ed->e", u, u)
        with np.errstate(divide="ignore", invalid="ignore"):
            val = np.where(radius > 0, sq / (4 * np.where(radius > 0, radius, 1.0)), 0.0)
        return np.where((radius > 0) | (sq <= tol), val, np.inf)

    def feasible_scale(self, u, radius):
        # finite everywhere on edges with radius > 0; u_e must vanish where radius_e = 0
        zero_radius = np.asarray(radius, float) <= 0
        return 0.0 if np.any(np.abs(u[zero_radius]) > 0) else 1.0


PENALTIES: dict[str, Penalty] = {p.name: p for p in (L1Penalty(), NLassoPenalty(), MochaPenalty())}


@dataclass(frozen=True)
class UnprojectedEdges:
    """``base``, except that the dual step leaves the ``edges`` marked unprojected.

    The authors' MNIST notebook skips the nLasso projection when ``lambda = 0``
    (docs/variants.md §8.5): the duals of those edges then grow freely and couple the
    nodes although the penalty is zero.  ``edges`` is a boolean mask over the edges (e.g.
    the copies with ``lambda = 0`` on a disjoint-union graph).  Only the iteration uses this;
    the objective and the gap are those of ``base`` (for which such duals are infeasible).
    """

    base: Penalty
    edges: np.ndarray

    @property
    def name(self) -> str:
        return f"{self.base.name}_unprojected"

    def value(self, v, radius):
        return self.base.value(v, radius)

    def dual_prox(self, z, step, radius):
        keep = np.asarray(self.edges, bool)
        if keep.shape != (z.shape[0],):
            raise ValueError(f"edges must be a mask over the {z.shape[0]} edges, got shape {keep.shape}")
        # an unbounded ball: the identity on the penalised coordinates (free ones stay 0)
        r = np.array(np.broadcast_to(np.asarray(radius, float), keep.shape))
        r[keep] = np.finfo(float).max / 4
        return self.base.dual_prox(z, step, r)

    def conjugate(self, u, radius, tol=1e-9):
        return self.base.conjugate(u, radius, tol)

    def feasible_scale(self, u, radius):
        return self.base.feasible_scale(u, radius)


def get_penalty(name: str | Penalty) -> Penalty:
    """Look up a penalty by name (``"l1"``, ``"nlasso"``, ``"mocha"``) or pass one through."""
    if not isinstance(name, str):
        return name
    try:
        return PENALTIES[name]
    except KeyError:
        raise ValueError(
            f"unknown GTV penalty {name!r}; choose one of {sorted(PENALTIES)}"
        ) from None


@dataclass(frozen=True)
class BlockNLassoPenalty:
    """nLasso on blocks of coordinates: ``phi(v) = sum_b ||v_b||_2``; other coordinates free.

    ``blocks`` are coordinate ranges ``[start, stop)``; coordinates outside every block are
    not penalised (e.g. the local biases of a neural network).  The conjugate of
    ``r * phi`` is the indicator of ``||u_b||_2 <= r`` for every block and ``u = 0`` off the
    blocks, so the dual step projects each block onto its ball (GTV eq. (33)) and zeroes
    the free coordinates.  One block covering every coordinate is :class:`NLassoPenalty`;
    the GTV MNIST experiment uses one block for the stacked weights of both layers, or one
    per layer as in the authors' code (docs/variants.md §8.6).
    """

    blocks: tuple[tuple[int, int], ...]
    name: str = "nlasso_blocks"

    def __post_init__(self) -> None:
        blocks = tuple((int(a), int(b)) for a, b in self.blocks)
        if not blocks or any(a < 0 or b <= a for a, b in blocks):
            raise ValueError(f"blocks must be non-empty ranges [start, stop), got {self.blocks!r}")
        ordered = sorted(blocks)
        if any(prev[1] > nxt[0] for prev, nxt in zip(ordered, ordered[1:], strict=False)):
            raise ValueError(f"blocks must not overlap, got {self.blocks!r}")
        object.__setattr__(self, "blocks", blocks)

    def _free(self, d: int) -> np.ndarray:
        free = np.ones(d, bool)
        for a, b in self.blocks:
            if b > d:
                raise ValueError(f"block [{a}, {b}) exceeds the dimension {d}")
            free[a:b] = False
        return free

    def _block_norms(self, v: np.ndarray) -> np.ndarray:
        return np.stack([np.linalg.norm(v[:, a:b], axis=1) for a, b in self.blocks], axis=1)

    def value(self, v, radius):
        return np.asarray(radius, float) * self._block_norms(v).sum(axis=1)

    def dual_prox(self, z, step, radius):
        out = np.zeros_like(z)
        for a, b in self.blocks:  # over the few blocks, not nodes or edges
            out[:, a:b] = clip_vector(np.ascontiguousarray(z[:, a:b]), radius)
        return out

    def conjugate(self, u, radius, tol=1e-9):
        r = np.asarray(radius, float)
        worst = self._block_norms(u).max(axis=1)
        off = np.abs(u[:, self._free(u.shape[1])]).max(axis=1, initial=0.0)
        return np.where(off <= tol, _indicator(worst, r, tol), np.inf)

    def feasible_scale(self, u, radius):
        if np.any(np.abs(u[:, self._free(u.shape[1])]) > 0):
            return 0.0
        r = np.asarray(radius, float)
        return min(_ball_scale(norms, r) for norms in self._block_norms(u).T)


__all__ += ["BlockNLassoPenalty"]
