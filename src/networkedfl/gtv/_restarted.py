"""Algorithm 1 with adaptive restarts, primal weight and step scale (PDLP's scheme).

The fixed-step iteration of :func:`~networkedfl.gtv.gtv_primal_dual` needs thousands of
iterations where nodes without data must travel far: such a node moves only through its
dual flows, which are capped at ``lambda A_e``, so with ``tau_i = 1/deg_i`` it moves at
most ``lambda`` per iteration.  The cure is the balance between the primal and the dual
step, which no fixed choice gets right for every ``lambda`` and data scale.  This module
runs the same iteration ``T_omega`` (steps 2-8 of Algorithm 1, the Chambolle-Pock method)
with the steps::

    tau = eta * tau_0 / omega,     sigma = eta * sigma_0 * omega

where ``tau_0, sigma_0`` are the base steps (default ``1/deg_i`` and 0.45), and

* the **step scale** ``eta`` puts ``||Sigma^{1/2} D T^{1/2}||^2`` at :data:`STEP_NORM_TARGET`
  (< 1, the method's convergence condition) from a Lanczos estimate of the largest
  eigenvalue of ``T_0^{1/2} D^T Sigma_0 D T_0^{1/2}`` (the default steps guarantee only
  ``<= 0.9`` for every graph and sit at 0.55-0.65 on the SBMs of the experiments);
* the **primal weight** ``omega`` is PDLP's (Applegate et al., "Practical large-scale
  linear programming using primal-dual hybrid gradient", NeurIPS 2021, Sec. 3.3): at each
  restart ``omega <- exp(theta log(Du / Dw) + (1 - theta) log omega)`` with ``theta =
  1/2``, ``Dw = ||w - w_restart||_{T_0^{-1}}`` and ``Du = ||u - u_restart||_{Sigma_0^{-1}}``
  the distances travelled since the last restart;
* **restarts** follow PDLP's criteria on the fixed-point residual ``r(z) = ||z -
  T_omega(z)||_P`` in the method's metric ``P = [[T^{-1}, -D^T], [-D, Sigma^{-1}]]``
  (the measure of restarted PDHG for general convex problems, Lu & Yang 2023), evaluated
  on the first iteration of an epoch and on every :data:`CHECK_EVERY`-th: restart when
  ``r <= 0.2 r_0`` (sufficient decay), when ``r <= 0.8 r_0`` and ``r`` grew since the
  last check (no local progress), or when the epoch is 36 % of all iterations so far
  (artificial), ``r_0`` being the residual at the epoch's start.  A restart is *to the
  current iterate* (PDLP's averaged iterate gave the same iteration counts here, with
  more work per check): it updates ``omega`` and starts a new epoch.

Every ``T_omega`` has the fixed points of Algorithm 1 (the saddle points of the GTV
problem), whatever ``omega > 0`` and ``eta``, so the method converges to the same
solutions.  It is deterministic: the Lanczos start vector is fixed and no decision depends
on anything but the iterates.  Measured (``benchmarks/bench_gtv_solver.py``, n = 200 SBM,
40 % of the nodes without data, nLasso, certified relative gap 1e-6): 5,580 fixed-step
iterations at lambda = 0.001 against about 140; Malitsky and Pock's line search (the other
candidate) needed 3,170 with the default ratio of the steps and needs the ratio the
restarts find (200 iterations with it) at four products per iteration.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackNoConvergence, eigsh

from ..graphs import EmpiricalGraph
from ..progress import show_progress, tqdm
from ._gap import _GapStop
from ._losses import LocalLoss
from ._penalties import Penalty
from ._primal_dual import PrimalDualResult, _Iteration, _result, _should_stop

__all__ = ["CHECK_EVERY", "GAP_EVERY", "STEP_NORM_TARGET"]

#: PDLP's restart criteria: sufficient decay, necessary decay (with no local progress),
#: artificial restart (epoch length as a fraction of all iterations).
RESTART_SUFFICIENT, RESTART_NECESSARY, RESTART_ARTIFICIAL = 0.2, 0.8, 0.36
#: Smoothing of the primal weight update (PDLP's theta).
WEIGHT_SMOOTHING = 0.5
#: The primal weight stays within [1/PRIMAL_WEIGHT_BOUND, PRIMAL_WEIGHT_BOUND].
PRIMAL_WEIGHT_BOUND = 1e8
#: The restart criteria are checked on every CHECK_EVERY-th iteration of an epoch.
CHECK_EVERY = 8
#: Default iterations between evaluations of the certified gap.
GAP_EVERY = 8
#: ``||Sigma^{1/2} D T^{1/2}||^2`` the step scale aims at, and the relative allowance for
#: the error of the Lanczos estimate of the norm.
STEP_NORM_TARGET, NORM_ESTIMATE_SLACK = 0.95, 0.02
#: Relative tolerance of the Lanczos estimate; dense eigenvalues up to this many nodes.
LANCZOS_TOL, DENSE_MAX_NODES = 1e-2, 64


def _step_scale(graph: EmpiricalGraph, tau: np.ndarray, sigma: np.ndarray) -> float:
    """``eta`` with ``||(eta Sigma)^{1/2} D (eta T)^{1/2}||^2 = STEP_NORM_TARGET``, from an estimate.

    The largest eigenvalue of ``T^{1/2} D^T Sigma D T^{1/2}`` by Lanczos (``eigsh``, relative
    tolerance :data:`LANCZOS_TOL`, a fixed start vector), raised by
    :data:`NORM_ESTIMATE_SLACK`; exact for small graphs.  1 (the given steps) when the
    graph has no edges or Lanczos does not converge.
    """
    if graph.n_edges == 0:
        return 1.0
    scaled = graph.incidence @ sp.diags(np.sqrt(tau))  # D T^{1/2}
    gram = (scaled.T @ sp.diags(sigma) @ scaled).tocsr()  # T^{1/2} D^T Sigma D T^{1/2}, n x n
    if graph.n_nodes <= DENSE_MAX_NODES:
        largest = float(np.linalg.eigvalsh(gram.toarray())[-1])
    else:
        start = np.random.default_rng(0).standard_normal(graph.n_nodes)  # fixed: deterministic
        try:
            largest = float(eigsh(gram, k=1, which="LA", tol=LANCZOS_TOL, v0=start,
                                  return_eigenvectors=False)[0])
        except ArpackNoConvergence:
            return 1.0
    if not np.isfinite(largest) or largest <= 0:
        return 1.0
    return float(np.sqrt(STEP_NORM_TARGET / (largest * (1 + NORM_ESTIMATE_SLACK))))


def _weighted_square(weights: np.ndarray, a: np.ndarray) -> float:
    """``sum_e weights_e ||a_e||^2`` (a matrix-vector product: no reduction over short rows)."""
    return float(np.sum(weights @ (a * a)))


class _RestartProblem:
    """One GTV problem's fixed parts, for one solve or several (a lambda path).

    Holds the graph, loss, penalty, base steps and kernels, and the step scale ``eta``
    (computed once: it depends on the graph and the base steps only).
    """

    def __init__(self, graph: EmpiricalGraph, loss: LocalLoss, penalty: Penalty, tau: np.ndarray,
                 sigma: np.ndarray, kernels):
        self.graph, self.loss, self.penalty, self.kernels = graph, loss, penalty, kernels
        self.tau, self.sigma = np.asarray(tau, float), np.asarray(sigma, float)
        self.eta = _step_scale(graph, self.tau, self.sigma)
        self.inv_tau, self.inv_sigma = 1.0 / self.tau, 1.0 / self.sigma
        self.head, self.tail = graph.edges[:, 0], graph.edges[:, 1]

    def iteration(self, radius: np.ndarray, omega: float, u: np.ndarray) -> _Iteration:
        """The fixed-step iteration ``T_omega`` (its fused state starts from ``u``)."""
        tau, sigma = (self.eta / omega) * self.tau, (self.eta * omega) * self.sigma
        return _Iteration(self.graph, self.loss, self.penalty, radius, tau, sigma, None, 1.0,
                          self.kernels, u)

    def residual(self, omega: float, w: np.ndarray, u: np.ndarray, w_new: np.ndarray,
                 u_new: np.ndarray) -> float:
        """``||z - T_omega z||_P`` for ``z = (w, u)`` and ``T_omega z = (w_new, u_new)``."""
        dw, du = w_new - w, u_new - u
        primal = _weighted_square(self.inv_tau, dw) * (omega / self.eta)
        dual = _weighted_square(self.inv_sigma, du) / (self.eta * omega)
        difference = np.take(dw, self.head, axis=0)  # (D dw)_e = dw_i - dw_j by two gathers
        difference -= np.take(dw, self.tail, axis=0)
        cross = float(np.vdot(du, difference))
        return float(np.sqrt(max(primal + dual - 2.0 * cross, 0.0)))

    def primal_weight(self, omega: float, w: np.ndarray, u: np.ndarray, w_start: np.ndarray,
                      u_start: np.ndarray) -> float:
        """PDLP's update of ``omega`` from the distances travelled since the restart."""
        dw = np.sqrt(_weighted_square(self.inv_tau, w - w_start))
        du = np.sqrt(_weighted_square(self.inv_sigma, u - u_start))
        if not (dw > 0 and du > 0 and np.isfinite(dw) and np.isfinite(du)):
            return omega
        log_omega = WEIGHT_SMOOTHING * np.log(du / dw) + (1 - WEIGHT_SMOOTHING) * np.log(omega)
        return float(np.clip(np.exp(log_omega), 1 / PRIMAL_WEIGHT_BOUND, PRIMAL_WEIGHT_BOUND))

    def solve(self, radius: np.ndarray, w: np.ndarray, u: np.ndarray, n_iter: int, *,
              primal_weight: float = 1.0, stopping: _GapStop | None = None, callback=None,
              progress: bool | None = None) -> PrimalDualResult:
        """At most ``n_iter`` restarted iterations from ``(w, u)`` for the radii ``lambda A_e``."""
        omega = float(primal_weight)
        iteration = self.iteration(radius, omega, u)
        w_start, u_start = w.copy(), u.copy()
        epoch_start, reference, previous = 0, None, None
        restarts, converged, k = 0, False, 0
        for k in tqdm(range(1, n_iter + 1), disable=not show_progress(progress),
                      desc="primal-dual (restarted)", leave=False):
            j = k - epoch_start
            check = j == 1 or j % CHECK_EVERY == 0
            fresh = check or callback is not None  # keep (w, u): the residual, or the callback's
            w_new, u_new = iteration.step(w, u, out=np.empty_like(u) if fresh else u)
            if check:
                r = self.residual(omega, w, u, w_new, u_new)
                if reference is None:
                    reference = r
                elif (r <= RESTART_SUFFICIENT * reference
                      or (r <= RESTART_NECESSARY * reference and r > previous)
                      or j >= RESTART_ARTIFICIAL * k):
                    omega = self.primal_weight(omega, w_new, u_new, w_start, u_start)
                    iteration = self.iteration(radius, omega, u_new)
                    w_start, u_start = w_new.copy(), u_new.copy()
                    epoch_start, reference, r = k, None, None
                    restarts += 1
                previous = r
            w, u = w_new, u_new
            stop, converged = _should_stop(k, w, u, callback, stopping)
            if stop:
                break
        return _result(w, u, k, converged, stopping, n_restarts=restarts, primal_weight=omega)
