"""Local loss functions and their proximal operators (the primal update of Algorithm 1).

A local loss is anything that implements :class:`LocalLoss`: Algorithm 1 only calls
``prox_operator(tau)`` once to obtain a function that maps the stacked ``w_hat`` of all
nodes to ``argmin_v L_i(v) + ||v - w_hat_i||^2 / (2 tau_i)`` for every node at once
(GTV eq. (32)).  ``value`` and ``conjugate`` are only needed for the primal-dual gap.

:class:`SquaredErrorLoss` is the average squared error of a linear model (GTV eq. (38)),
with the trivial loss ``L_i = 0`` at nodes outside the sampling set ``M``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol, runtime_checkable

import numpy as np

from .._nodedata import NodeData
from .._validation import check_node_mask

__all__ = ["REDUCTIONS", "LocalLoss", "SquaredErrorLoss"]

ProxOperator = Callable[[np.ndarray], np.ndarray]


@runtime_checkable
class LocalLoss(Protocol):
    """The local loss functions ``L_i`` of all nodes."""

    def prox_operator(self, tau: np.ndarray) -> ProxOperator:
        """Return ``w_hat -> [argmin_v L_i(v) + ||v - w_hat_i||^2/(2 tau_i)]_i``."""

    def value(self, w: np.ndarray) -> np.ndarray:
        """``L_i(w_i)`` per node."""

    def conjugate(self, v: np.ndarray) -> np.ndarray:
        """``L_i^*(v_i)`` per node (``inf`` outside the conjugate's domain)."""

    @property
    def trivial_nodes(self) -> np.ndarray:
        """Boolean mask of the nodes with the trivial loss ``L_i = 0`` (conjugate: ``v_i = 0``)."""


#: Values of :attr:`SquaredErrorLoss.reduction`.
REDUCTIONS = ("mean", "sum")


@dataclass(frozen=True, eq=False)
class SquaredErrorLoss:
    """Average squared error ``L_i(w) = (1/m_i) ||y_i - X_i w||^2`` at nodes in ``M``.

    Parameters
    ----------
    data
        Local datasets of all nodes; their sizes ``m_i`` may differ (:attr:`NodeData.counts`,
        :meth:`NodeData.from_ragged`): everything stays batched over the zero-padded arrays.
    mask
        Boolean sampling set ``M``; nodes outside carry the trivial loss ``L_i = 0``.
        ``None`` means all nodes.
    reduction
        ``"mean"`` (default): the average squared error of GTV eq. (38).  ``"sum"``: the sum
        of squared errors ``||y_i - X_i w||^2``, as the authors' notebooks compute it
        (docs/variants.md §8.3; the ``published`` variant).  With ``m`` samples per node
        the two are the same problem up to scale: the primal-dual iterates of the sum with
        steps ``(tau, sigma)`` and parameter ``lambda`` equal those of the mean with
        ``(m tau, sigma / m)`` and ``lambda / m`` (duals scaled by ``1/m``), so the sum
        loss is the paper's loss with ``lambda / m``.
    rank_tol
        Eigenvalues of ``X_i^T X_i`` below ``rank_tol * max(1, largest)`` count as zero
        when evaluating the conjugate (used by the duality gap only).
    feasibility_tol
        A vector ``v`` lies in the conjugate's domain (the range of ``X_i^T X_i``) if its
        component in the null space has norm at most ``feasibility_tol * (1 + ||v||)``;
        a round-off allowance, not a relaxation (the gap repairs duals exactly first).
    """

    data: NodeData
    mask: np.ndarray | None = None
    rank_tol: float = 1e-10
    feasibility_tol: float = 1e-9
    reduction: str = "mean"

    def __post_init__(self) -> None:
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {self.reduction!r}")
        mask = check_node_mask(self.mask, self.data.n_nodes)
        if not mask.any():
            warnings.warn("the sampling mask selects no node: every local loss is trivial and "
                          "GTV minimisation only smooths the starting point", UserWarning, stacklevel=3)
        object.__setattr__(self, "mask", mask)

    @property
    def trivial_nodes(self) -> np.ndarray:
        return ~self.mask

    @property
    def dim(self) -> int:
        return self.data.dim

    @property
    def n_nodes(self) -> int:
        return self.data.n_nodes

    @cached_property
    def _scale(self) -> np.ndarray:
        """``s_i`` with ``Q_i = s_i X_i^T X_i``: ``2 / m_i`` (``2`` for the sum), 0 outside ``M``."""
        m = self.data.samples_per_node if self.reduction == "mean" else 1  # m_i (ragged clients)
        return self.mask.astype(float) * (2.0 / m)

    @cached_property
    def _quadratic(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``L_i(w) = 1/2 w^T Q_i w - b_i^T w + c_i`` (zero at nodes outside ``M``)."""
        x, y = self.data.features, self.data.labels
        scale = self._scale
        q = scale[:, None, None] * np.einsum("nmi,nmj->nij", x, x)
        b = scale[:, None] * np.einsum("nmi,nm->ni", x, y)
        c = 0.5 * scale * np.einsum("nm,nm->n", y, y)
        return q, b, c

    def prox_operator(self, tau: np.ndarray) -> ProxOperator:
        """Closed form ``(tau_i Q_i + I)^{-1} (w_hat_i + tau_i b_i)`` for all nodes at once.

        With ``Q_i = 2 X_i^T X_i / m`` this is the formula below GTV eq. (38) (``m = 1``
        for ``reduction="sum"``).  The inverses are computed once per ``tau``: the ``d x d``
        matrices ``(tau_i Q_i + I)^{-1}``, or, when the nodes hold fewer samples than
        features (``m < d``: ``Q_i`` has rank at most ``m``, Table I and Fig. 2 have ``m =
        10``, ``d = 100``), the ``m x m`` matrices of Woodbury's identity::

            (I + c X^T X)^{-1} v = v - c X^T (I_m + c X X^T)^{-1} X v,   c = tau_i s_i,

        (``Q_i = s_i X_i^T X_i``): an iteration then reads ``n m d`` numbers instead of the
        ``n d^2`` of the inverses.  The same operator up to floating-point rounding
        (``tests/unit/gtv/test_primal_dual.py``).
        """
        q, b, _ = self._quadratic
        tau = np.asarray(tau, float)
        x = self.data.features
        n_rows, d = x.shape[1], x.shape[2]
        if n_rows < d:
            return self._woodbury_prox(tau, b)
        inv = np.linalg.inv(tau[:, None, None] * q + np.eye(d))
        shift = np.einsum("nij,nj->ni", inv, tau[:, None] * b)

        def prox(w_hat: np.ndarray) -> np.ndarray:
            out = np.einsum("nij,nj->ni", inv, w_hat)
            out += shift
            return out

        return prox

    def _woodbury_prox(self, tau: np.ndarray, b: np.ndarray) -> ProxOperator:
        """:meth:`prox_operator` by Woodbury's identity (``m < d``; padding rows of ragged
        nodes are zero, so they drop out)."""
        x = self.data.features
        c = tau * self._scale
        gram = np.einsum("nmi,nki->nmk", x, x)
        small = np.linalg.inv(c[:, None, None] * gram + np.eye(x.shape[1]))

        def inverse_times(v: np.ndarray) -> np.ndarray:  # (I + c X^T X)^{-1} v, every node
            t = np.einsum("nmk,nk->nm", small, np.einsum("nmi,ni->nm", x, v))
            t *= c[:, None]
            return v - np.einsum("nmi,nm->ni", x, t)

        shift = inverse_times(tau[:, None] * b)

        def prox(w_hat: np.ndarray) -> np.ndarray:
            out = inverse_times(w_hat)
            out += shift
            return out

        return prox

    def value(self, w: np.ndarray) -> np.ndarray:
        resid = self.data.labels - np.einsum("nmd,nd->nm", self.data.features, w)  # 0 on padding
        total = np.sum(resid**2, axis=1)
        return self.mask * (total / self.data.samples_per_node if self.reduction == "mean" else total)

    @cached_property
    def _eig(self) -> tuple[np.ndarray, np.ndarray]:
        q, _, _ = self._quadratic
        return np.linalg.eigh(q)

    def conjugate(self, v: np.ndarray) -> np.ndarray:
        """``L_i^*(v) = 1/2 (v + b)^T Q^+ (v + b) - c`` if ``v + b`` lies in ``range(Q)``, else ``inf``."""
        _, b, c = self._quadratic
        lam, vecs = self._eig
        z = v + b
        coef = np.einsum("nij,ni->nj", vecs, z)
        big = lam > self.rank_tol * np.maximum(lam.max(axis=1, keepdims=True), 1.0)
        finite_part = 0.5 * np.sum(np.where(big, coef**2 / np.where(big, lam, 1.0), 0.0), axis=1) - c
        null_norm = np.sqrt(np.sum(np.where(big, 0.0, coef**2), axis=1))
        bound = self.feasibility_tol * (1.0 + np.sqrt(np.einsum("ni,ni->n", z, z)))
        return np.where(null_norm <= bound, finite_part, np.inf)
