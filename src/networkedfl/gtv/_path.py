"""GTV minimisation along a grid of lambda values, each solve warm-started from the last.

Choosing ``lambda`` (GTV eq. (16)) means solving the problem for a grid of values; the
solutions move continuously with ``lambda``, so each solve starts from the previous one:
the weights as they are, the edge flows scaled by ``lambda_new / lambda_old`` (the flows of
the edges that are not fused are ``lambda A_e`` times a unit vector, so the scaled flows are
exact for them, and they stay in the new balls when ``lambda`` decreases), and the primal
weight of :func:`~networkedfl.gtv.gtv_primal_dual`'s ``method="restarted"``.  Every
solve stops on its own certified gap, so a warm start changes the work, not the result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..graphs import GraphLike, as_graph
from ._losses import LocalLoss
from ._penalties import Penalty
from ._primal_dual import PrimalDualResult, gtv_primal_dual

__all__ = ["LambdaPath", "gtv_lambda_path"]


@dataclass(frozen=True)
class LambdaPath:
    """Output of :func:`gtv_lambda_path`: one solution per ``lambda``, in the order given.

    Attributes
    ----------
    lams
        The ``lambda`` values, shape ``(L,)``.
    weights, duals
        The solutions, shapes ``(L, n, d)`` and ``(L, E, d)``.
    n_iter, n_restarts
        Iterations and restarts of every solve, shape ``(L,)``.
    gap, rel_gap
        The last certified gap and relative gap of every solve (``nan`` where not evaluated).
    converged
        Whether every solve met its stopping rule, shape ``(L,)``.
    """

    lams: np.ndarray
    weights: np.ndarray
    duals: np.ndarray
    n_iter: np.ndarray
    n_restarts: np.ndarray
    gap: np.ndarray
    rel_gap: np.ndarray
    converged: np.ndarray

    def __len__(self) -> int:
        return self.lams.size

    def __getitem__(self, k: int) -> PrimalDualResult:
        """The ``k``-th solve as a :class:`~networkedfl.gtv.PrimalDualResult`."""
        return PrimalDualResult(weights=self.weights[k], duals=self.duals[k], n_iter=int(self.n_iter[k]),
                                gap=float(self.gap[k]), converged=bool(self.converged[k]),
                                rel_gap=float(self.rel_gap[k]), n_restarts=int(self.n_restarts[k]))


def _check_lams(lams) -> np.ndarray:
    values = np.asarray(lams, dtype=float) if not isinstance(lams, str) else np.array([np.nan])
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError(f"lams must be a non-empty 1-D sequence of finite, non-negative lambda values, got {lams!r}")
    return values


def gtv_lambda_path(
    graph: GraphLike,
    loss: LocalLoss,
    penalty: str | Penalty = "nlasso",
    lams: Sequence[float] | np.ndarray = (),
    n_iter: int = 10_000,
    *,
    rel_gap_tol: float | None = 1e-6,
    gap_tol: float | None = None,
    method: str = "restarted",
    warm_start: bool = True,
    dim: int | None = None,
    tau: np.ndarray | None = None,
    sigma: np.ndarray | float | None = None,
    w0: np.ndarray | None = None,
    u0: np.ndarray | None = None,
    primal_weight: float = 1.0,
    gap_every: int | None = None,
    kernel: str = "auto",
    progress: bool | None = None,
    callback: Callable[[int, PrimalDualResult], None] | None = None,
) -> LambdaPath:
    """Solve GTV (eq. (16)) for every ``lambda`` of ``lams`` in one call, warm-starting each solve.

    Parameters
    ----------
    graph, loss, penalty
        As for :func:`~networkedfl.gtv.gtv_primal_dual`.
    lams
        The ``lambda`` values (scalars), solved in the order given: an increasing or
        decreasing grid makes consecutive solutions close.
    n_iter
        The most iterations of each solve.
    rel_gap_tol, gap_tol
        Each solve's stopping rule on its certified gap (default: a relative gap of 1e-6).
    method
        ``"restarted"`` (default) or ``"pdhg"`` (:func:`~networkedfl.gtv.gtv_primal_dual`).
    warm_start
        Start each solve from the previous solution (weights, flows scaled by the ratio of the
        ``lambda`` values, primal weight); ``False``: every solve from ``w0`` and ``u0``.
    dim, tau, sigma, gap_every, kernel, progress
        As for :func:`~networkedfl.gtv.gtv_primal_dual`, for every solve.
    w0, u0, primal_weight
        The first solve's start (and every solve's without ``warm_start``).
    callback
        Called with ``(k, result)`` after the ``k``-th solve.
    """
    lams = _check_lams(lams)
    if not isinstance(warm_start, bool):
        raise ValueError(f"warm_start must be True or False, got {warm_start!r}")
    graph = as_graph(graph)
    options = {"dim": dim, "tau": tau, "sigma": sigma, "gap_every": gap_every, "kernel": kernel,
               "progress": progress, "rel_gap_tol": rel_gap_tol, "gap_tol": gap_tol, "method": method}
    start = {"w0": w0, "u0": u0, "primal_weight": primal_weight}
    results: list[PrimalDualResult] = []
    for k, lam in enumerate(lams):
        result = gtv_primal_dual(graph, loss, penalty, float(lam), n_iter, **start, **options)
        results.append(result)
        if callback is not None:
            callback(k, result)
        if warm_start:
            scale = lams[k + 1] / lam if k + 1 < lams.size and lam > 0 else 0.0
            start = {"w0": result.weights, "u0": result.duals * scale, "primal_weight": result.primal_weight}
    return LambdaPath(
        lams=lams,
        weights=np.stack([r.weights for r in results]),
        duals=np.stack([r.duals for r in results]),
        n_iter=np.array([r.n_iter for r in results]),
        n_restarts=np.array([r.n_restarts for r in results]),
        gap=np.array([r.gap for r in results]),
        rel_gap=np.array([r.rel_gap for r in results]),
        converged=np.array([r.converged for r in results]),
    )
