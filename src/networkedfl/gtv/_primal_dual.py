"""GTV minimisation by the primal-dual method (GTV paper, Algorithm 1).

Solves (GTV eq. (16))::

    min_w  sum_i L_i(w_i) + lambda * sum_{e={i,j}} A_e * phi(w_i - w_j)

jointly with its dual (eq. (19)/(24)) by the Chambolle-Pock iteration [27, Alg. 6]
with the diagonal preconditioners ``T = diag(tau_i)``, ``Sigma = diag(sigma_e)``::

    w_hat = w - T D^T u                                  (steps 2-3)
    w_new = prox_{T L}(w_hat)                            (step 4, eq. (32))
    u     = prox_{Sigma g*}(u + Sigma D (2 w_new - w))    (steps 5-8, eq. (33))

The primal step is pluggable (any :class:`~networkedfl.gtv.LocalLoss`), the dual step
is one of :data:`~networkedfl.gtv.PENALTIES`.  Every iteration is a handful of
sparse and batched dense operations over all nodes and edges: there is no Python loop
over nodes or edges.  ``D v`` is taken as two gathers (row ``e = {i, j}`` of ``D`` is
``+1`` at ``i`` and ``-1`` at ``j``, eq. (6)) and, without a callback, the dual step works
in place on ``u`` in buffers reused across iterations.

Two implementations of the edge work, chosen by ``kernel`` of :func:`gtv_primal_dual`:

* NumPy (``kernel="numpy"``, and always where the other does not apply): whole-array
  operations, one pass over the edge arrays each: ``D^T u`` (scipy), the gathers of
  ``v_i`` and ``v_j``, their difference, the scaling by ``Sigma`` and the sum with ``u``
  (one set per coordinate for ``d <= COLUMNWISE_MAX_DIM`` except the ``d = 2`` pairs),
  then the penalty's dual prox (two passes for ``l1``, eight over edge-length arrays for
  ``nlasso``, one or two for ``mocha``): fourteen passes per iteration for ``d = 2`` and nLasso.
* numba (``kernel="numba"``; ``"auto"`` picks it where it applies): the fused kernels of
  :mod:`networkedfl.gtv._kernels`, for the built-in penalties ``l1``, ``nlasso`` (``d <=
  8``) and ``mocha``: the dual step, the prox and the next iteration's ``D^T u`` in *one*
  pass over the edge arrays per iteration (plus passes over the node arrays), with results
  bit-identical to the NumPy path (same floating-point operations in the same order).
  At 10^5 nodes and 10^6 edges (``d = 2``, nLasso) an iteration then costs less than scipy's
  two products ``D @ x`` and ``D.T @ y`` alone (``benchmarks/bench_primal_dual.py``).

Two methods, chosen by ``method``: ``"pdhg"`` (default) runs the iteration with the fixed
steps, as the paper and the authors' code do (and the notebooks' variants of it, which
``prox_tau`` and ``dual_update`` select); ``"restarted"`` runs the same iteration with
adaptive restarts, primal weight and step scale (:mod:`networkedfl.gtv._restarted`), to
the same fixed points in far fewer iterations.  Either stops, when asked to, on the
certified primal-dual gap (:mod:`networkedfl.gtv._gap`); :func:`~networkedfl.gtv.gtv_lambda_path`
solves a grid of ``lambda`` values with warm starts.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_finite
from ..graphs import EmpiricalGraph, GraphError, GraphLike, as_graph
from ..progress import show_progress, tqdm
from ._gap import (
    FeasibleDualMap,
    _Certificate,
    _edge_radius,
    _GapStop,
    gtv_objective,
    primal_dual_gap,
    relative_gap,
)
from ._losses import LocalLoss
from ._penalties import (
    L1Penalty,
    MochaPenalty,
    NLassoPenalty,
    Penalty,
    _mocha_factor,
    get_penalty,
    scale_rows,
)

__all__ = [
    "DUAL_UPDATES",
    "KERNELS",
    "METHODS",
    "FeasibleDualMap",
    "HistoryRecorder",
    "IterationState",
    "PrimalDualResult",
    "cluster_index_step_sizes",
    "default_step_sizes",
    "gtv_objective",
    "gtv_primal_dual",
    "primal_dual_gap",
    "relative_gap",
]

#: Dual step size of the authors' code; with tau_i = 1/deg_i it gives
#: ||Sigma^{1/2} D T^{1/2}||^2 <= 2 * 0.45 < 1, the convergence condition of [27].
DEFAULT_SIGMA = 0.45


#: Values of ``dual_update`` in :func:`gtv_primal_dual`.
DUAL_UPDATES = ("extrapolated", "doubled_difference")


#: Values of ``kernel`` in :func:`gtv_primal_dual`.
KERNELS = ("auto", "numba", "numpy")

#: Values of ``method`` in :func:`gtv_primal_dual`: Algorithm 1 with fixed steps, or with
#: adaptive restarts, primal weight and step scale (:mod:`networkedfl.gtv._restarted`).
METHODS = ("pdhg", "restarted")

#: The penalties with a fused kernel (the classes themselves: a subclass may change the prox).
_KERNEL_PENALTIES = {L1Penalty: "l1", NLassoPenalty: "nlasso", MochaPenalty: "mocha"}


#: Up to this dimension the iteration keeps edge arrays column-major and takes products
#: with the incidence matrix one coordinate at a time: the per-edge operations of the dual
#: step then run on contiguous memory.  ``d = 2`` (the SBM experiments) has its own layout,
#: see :func:`_pair_view`.
COLUMNWISE_MAX_DIM = 8


def _sparse_product(matrix, x: np.ndarray, columnwise: bool) -> np.ndarray:
    """``matrix @ x``; column by column into a column-major array if ``columnwise``."""
    if not columnwise:
        return matrix @ x
    out = np.empty((matrix.shape[0], x.shape[1]), order="F")
    for k in range(x.shape[1]):  # over the d coordinates, not over nodes or edges
        out[:, k] = matrix @ x[:, k]
    return out


def _pair_view(a: np.ndarray) -> np.ndarray:
    """An ``(m, 2)`` C-order float array as ``m`` complex numbers ``a[:, 0] + 1j a[:, 1]`` (a view).

    For ``d = 2`` the iteration keeps ``w`` and ``u`` in C order and reads their rows as
    complex numbers: one gather moves a whole row (the rows of ``v`` are fetched once, not
    once per coordinate), sums of rows are one pass, and ``D^T u`` is scipy's product with
    the ``(E, 2)`` array, which reads the incidence structure once for both coordinates.
    """
    return a.view(np.complex128).ravel()


class _IncidenceGathers:
    """``z = u + Sigma D v`` (the argument of the dual prox, steps 5-8) without scipy.

    Row ``e = {i, j}`` of the incidence matrix ``D`` (GTV eq. (6)) holds ``+1`` in column
    ``i = edges[e, 0]`` and ``-1`` in column ``j = edges[e, 1]``, so ``(D v)_e = v_i - v_j``:
    two gathers and a difference, cheaper than the generic sparse product, done in reused
    buffers.  For ``d = 2`` one pass over the rows as complex numbers (:func:`_pair_view`),
    otherwise one per coordinate of the column-major arrays.
    """

    def __init__(self, graph: EmpiricalGraph, sigma: np.ndarray, uniform_sigma: bool, pairs: bool):
        self.head = np.ascontiguousarray(graph.edges[:, 0], dtype=np.intp)
        self.tail = np.ascontiguousarray(graph.edges[:, 1], dtype=np.intp)
        dtype = np.complex128 if pairs else np.float64
        self.gathered = np.empty(graph.n_edges, dtype)
        self.scratch = np.empty(graph.n_edges, dtype)
        self.pairs = pairs
        # Sigma multiplies the float view of the differences: one entry per coordinate
        if uniform_sigma:
            self.sigma = float(sigma[0])
        else:
            self.sigma = np.repeat(sigma, 2) if pairs else np.asarray(sigma, float)

    def __call__(self, u: np.ndarray, v: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out = u + Sigma D v`` (``out`` may be ``u``)."""
        if self.pairs:
            columns = [(_pair_view(u), _pair_view(v), _pair_view(out))]
        else:  # over the d coordinates, not over nodes or edges
            columns = [(u[:, k], np.ascontiguousarray(v[:, k]), out[:, k]) for k in range(u.shape[1])]
        diff, scratch = self.gathered, self.scratch
        for u_k, v_k, out_k in columns:
            # mode="clip": the indices are valid, and it spares numpy a buffered copy of out
            np.take(v_k, self.head, out=diff, mode="clip")
            np.take(v_k, self.tail, out=scratch, mode="clip")
            np.subtract(diff, scratch, out=diff)  # (D v)_e = v_i - v_j
            flat = diff.view(np.float64)
            np.multiply(flat, self.sigma, out=flat)
            np.add(u_k, diff, out=out_k)
        return out


def _select_kernels(kernel: str, penalty: Penalty, dim: int):
    """The module of fused kernels if ``kernel`` asks for them and they apply, else ``None``.

    ``"auto"``: the kernels where they apply (a built-in penalty, see
    :func:`networkedfl.gtv._kernels._supported`, and numba importable), else NumPy;
    ``"numba"``: the kernels or an error naming why not; ``"numpy"``: NumPy.
    """
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if kernel == "numpy":
        return None
    name = _KERNEL_PENALTIES.get(type(penalty))
    if name is None:
        reason = (f"penalty {penalty!r} has no fused kernel (only the built-in "
                  f"{sorted(_KERNEL_PENALTIES.values())})")
    else:
        try:
            from . import _kernels
        except ImportError as exc:
            if kernel == "numba":
                raise ImportError(
                    f"kernel='numba' needs numba, which cannot be imported ({exc}); install "
                    "it with pip install 'networkedfl[fast]', or pass kernel='numpy'"
                ) from exc
            return None
        reason = _kernels._supported(name, dim)
        if reason is None:
            return _kernels
    if kernel == "numba":
        raise ValueError(f"kernel='numba' does not apply: {reason}; pass kernel='numpy' or 'auto'")
    return None


class _FusedIteration:
    """Algorithm 1's edge work by the fused numba kernels (:mod:`._kernels`), one pass per iteration.

    Holds ``s = D^T u`` of the current dual iterate: :meth:`dual_step` computes the next one
    in the pass that updates ``u``, so steps 2-3 of the next iteration need only the nodes.
    Node indices are int32 (half the bytes to read) when the graph allows.
    """

    def __init__(self, kernels, graph: EmpiricalGraph, u: np.ndarray, neg_tau: np.ndarray,
                 sigma: np.ndarray, uniform_sigma: bool, penalty: Penalty, radius: np.ndarray,
                 extrapolation: float, scipy_difference: bool, layout: str):
        index = np.int32 if graph.n_nodes <= np.iinfo(np.int32).max else np.intp
        self.kernels = kernels
        self.head = np.ascontiguousarray(graph.edges[:, 0], dtype=index)
        self.tail = np.ascontiguousarray(graph.edges[:, 1], dtype=index)
        self.neg_tau = np.array(neg_tau, float)  # contiguous and writeable: one compiled type
        self.uniform_sigma = uniform_sigma
        self.sigma = np.array(sigma[:1] if uniform_sigma else sigma, float)
        if self.sigma.size == 0:  # no edges
            self.sigma = np.zeros(1)
        name = _KERNEL_PENALTIES[type(penalty)]
        self.kind = kernels.KINDS[name]
        # the penalty's per-edge constant: the radius r_e, or MOCHA's factor (as _penalties has it)
        param = _mocha_factor(sigma, radius) if name == "mocha" else radius
        self.param = np.array(np.broadcast_to(param, (graph.n_edges,)), float)
        self.extrapolation = float(extrapolation)
        self.scipy_difference = scipy_difference
        # D^T u, in the layout of the NumPy path's w_hat (the prox must see the same array)
        self.s = np.empty((graph.n_nodes, u.shape[1]), order=layout)
        kernels._accumulate_incidence_transpose(self.head, self.tail, u, self.s)

    def primal_argument(self, w: np.ndarray) -> np.ndarray:
        """Steps 2-3: ``w_hat = w - T D^T u``, a fresh array in the layout of the NumPy path."""
        w_hat = np.empty_like(self.s)
        self.kernels._primal_argument(self.s, self.neg_tau, w, w_hat)
        return w_hat

    def dual_step(self, u: np.ndarray, w_new: np.ndarray, w: np.ndarray, v: np.ndarray,
                  out: np.ndarray) -> np.ndarray:
        """Steps 5-8 into ``out`` (may be ``u``), and ``D^T out`` for the next steps 2-3."""
        if u.shape[1] == 2:  # the pairs: the two coordinates in registers
            self.kernels._dual_step_pairs(self.head, self.tail, u, w_new, w, self.extrapolation,
                                         v, self.sigma, self.uniform_sigma, self.kind,
                                         self.param, out, self.s)
        else:
            self.kernels._dual_step(self.head, self.tail, u, w_new, w, self.extrapolation, v,
                                   self.sigma, self.uniform_sigma, self.kind, self.param,
                                   self.scipy_difference, out, self.s)
        return out


def _layout(d: int) -> str:
    """``"F"`` (column-major) where the iteration takes products one coordinate at a time
    (``d <= COLUMNWISE_MAX_DIM`` except the ``d = 2`` pairs), else ``"C"``."""
    return "F" if d != 2 and d <= COLUMNWISE_MAX_DIM else "C"


class _Iteration:
    """Steps 2-8 of Algorithm 1 for fixed step sizes: each :meth:`step` is one iteration.

    Everything that does not depend on the iterates is prepared once: the prox operator for
    ``prox_tau`` (default ``tau``), the reused buffers, and either the fused kernels' state
    (:class:`_FusedIteration`, which holds ``D^T u`` of the ``u`` given here and of every
    dual iterate it computes: pass it the ``u`` it returned last) or the NumPy path's
    transposed incidence, gathers and dual prox.
    """

    def __init__(self, graph: EmpiricalGraph, loss: LocalLoss, penalty: Penalty, radius: np.ndarray,
                 tau: np.ndarray, sigma: np.ndarray, prox_tau: np.ndarray | None,
                 extrapolation: float, kernels, u: np.ndarray):
        d = u.shape[1]
        pairs = d == 2  # rows as complex numbers, see _pair_view
        self.columnwise = columnwise = not pairs and d <= COLUMNWISE_MAX_DIM
        self.layout = layout = _layout(d)
        self.extrapolation = extrapolation
        self.prox = loss.prox_operator(tau if prox_tau is None else prox_tau)
        self.neg_tau = neg_tau = -tau
        uniform_sigma = sigma.size > 0 and bool(np.all(sigma == sigma[0]))
        self.v = np.empty((graph.n_nodes, d), order=layout)  # 2 w_new - w (never handed out)
        if kernels is not None:
            self.fused = _FusedIteration(kernels, graph, u, neg_tau, sigma, uniform_sigma, penalty,
                                         radius, extrapolation, scipy_difference=d > COLUMNWISE_MAX_DIM,
                                         layout=layout)
            return
        self.fused = None
        self.incidence = incidence = graph.incidence
        # D^T: for one coordinate at a time a CSR copy (gather per node) is fastest; for rows
        # of a C-order array the CSC view (no copy), which streams over the edges and scatters.
        self.incidence_t = incidence.T.tocsr() if columnwise else incidence.T
        self.sigma_col = sigma[0] if uniform_sigma else sigma[:, None]  # scalar: no broadcast
        # z = u + Sigma D v: two gathers per coordinate up to COLUMNWISE_MAX_DIM, else scipy
        self.gathers = _IncidenceGathers(graph, sigma, uniform_sigma, pairs) if d <= COLUMNWISE_MAX_DIM else None
        operator = getattr(penalty, "dual_prox_operator", None)
        self.dual_prox = operator(sigma, radius) if operator is not None else (
            lambda z: penalty.dual_prox(z, sigma, radius))

    def step(self, w: np.ndarray, u: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One iteration from ``(w, u)``: ``(w_new, u_new)``, the dual written to ``out``
        (``u`` itself to work in place, or a fresh array); ``w_new`` is always a new array."""
        v, extrapolation = self.v, self.extrapolation
        if self.fused is not None:  # the same steps in one pass over the edges (_kernels)
            w_new = self.prox(self.fused.primal_argument(w))  # steps 2-4
            return w_new, self.fused.dual_step(u, w_new, w, v, out=out)  # steps 5-8, and D^T u
        # steps 2-3: w_hat = w - T D^T u (a fresh array, scaled in place)
        w_hat = _sparse_product(self.incidence_t, u, self.columnwise)
        scale_rows(w_hat, self.neg_tau, out=w_hat)
        np.add(w_hat, w, out=w_hat)
        w_new = self.prox(w_hat)  # step 4
        # steps 5-8: u = prox_{Sigma g*}(u + Sigma D (2 w_new - w))
        np.multiply(w_new, 2.0, out=v)
        np.subtract(v, w if extrapolation == 1.0 else extrapolation * w, out=v)
        if self.gathers is not None:
            self.gathers(u, v, out=out)
        else:
            product = self.incidence @ v
            product *= self.sigma_col
            np.add(product, u, out=out)
        u_new = self.dual_prox(out)
        if not (u_new.flags.f_contiguous if self.columnwise else u_new.flags.c_contiguous):
            u_new = np.array(u_new, order=self.layout)  # a penalty without the operator changed the layout
        return w_new, u_new


@dataclass(frozen=True)
class IterationState:
    """What the history hook sees after each iteration (arrays must not be modified)."""

    iteration: int
    weights: np.ndarray
    duals: np.ndarray


@dataclass(frozen=True)
class PrimalDualResult:
    """Output of :func:`gtv_primal_dual`.

    Attributes
    ----------
    weights
        Local model parameters ``w_i``, shape ``(n, d)``.
    duals
        Edge flows ``u_e``, shape ``(E, d)``.
    n_iter
        Iterations carried out.
    gap
        Last primal-dual gap (eq. (34)) if it was evaluated, else ``nan``: a certified upper
        bound on ``objective(weights) - optimum`` (:mod:`networkedfl.gtv._gap`).
    converged
        Whether the gap stopping rule (``gap_tol`` or ``rel_gap_tol``) was met.
    rel_gap
        Last relative gap ``gap / max(|primal|, |dual|)`` if it was evaluated, else ``nan``.
    n_restarts
        Restarts of ``method="restarted"`` (0 for ``"pdhg"``).
    primal_weight
        The primal weight ``omega`` at the end (steps ``tau / omega`` and ``sigma * omega``
        relative to the base steps; 1 for ``"pdhg"``): pass it back as ``primal_weight``
        to warm-start a related problem.
    """

    weights: np.ndarray
    duals: np.ndarray
    n_iter: int
    gap: float = float("nan")
    converged: bool = False
    rel_gap: float = float("nan")
    n_restarts: int = 0
    primal_weight: float = 1.0


@dataclass
class HistoryRecorder:
    """A ready history hook: evaluates named metrics every ``every`` iterations.

    Examples
    --------
    >>> rec = HistoryRecorder({"mse": lambda s: float(np.mean((s.weights - w_true) ** 2))})
    >>> gtv_primal_dual(graph, loss, callback=rec)            # doctest: +SKIP
    >>> rec.records[-1]                                      # doctest: +SKIP
    {'iteration': 1000, 'mse': 0.0012}
    """

    metrics: Mapping[str, Callable[[IterationState], float]]
    every: int = 1
    records: list[dict[str, float]] = field(default_factory=list)

    def __call__(self, state: IterationState) -> None:
        if state.iteration % self.every == 0:
            row = {"iteration": state.iteration}
            row.update({name: fn(state) for name, fn in self.metrics.items()})
            self.records.append(row)


def default_step_sizes(graph: EmpiricalGraph) -> tuple[np.ndarray, np.ndarray]:
    """Step sizes of the authors' code: ``tau_i = 1/deg_i`` and ``sigma_e = 0.45``.

    Raises
    ------
    GraphError
        If a node has no edges (``1/deg_i`` is undefined); pass ``tau`` explicitly then.
    """
    isolated = graph.isolated_nodes
    if isolated.size:
        shown = ", ".join(map(str, isolated[:10])) + (" ..." if isolated.size > 10 else "")
        raise GraphError(
            f"{isolated.size} isolated node(s) ({shown}): the step size tau_i = 1/deg_i is "
            "undefined; connect them or pass tau explicitly"
        )
    return 1.0 / graph.degrees, np.full(graph.n_edges, DEFAULT_SIGMA)


def cluster_index_step_sizes(graph: EmpiricalGraph) -> tuple[np.ndarray, np.ndarray]:
    """The step of the authors' linear notebooks' proximal update: ``1/deg_{c_i}``.

    Their closed-form prox looks the degree up by the *cluster index* ``c_i`` of node
    ``i`` instead of by ``i`` (docs/variants.md §8.1): every node of cluster ``c`` uses
    the degree of node number ``c``, while the step ``w_hat = w - T D^T u`` uses the true
    ``T = diag(1/deg_i)``.  Pass the first array as ``prox_tau`` of
    :func:`gtv_primal_dual` (the ``published`` variant of the linear GTV targets does);
    the second is the dual step ``sigma_e = 0.45``.

    Raises
    ------
    GraphError
        If the graph has no clusters, or a node ``c`` used as a degree has no edges.
    """
    if graph.clusters is None:
        raise GraphError("cluster-index step sizes need the graph's clusters")
    clusters = np.asarray(graph.clusters)
    degrees = graph.degrees[clusters]
    if np.any(degrees == 0):
        bad = sorted(set(clusters[degrees == 0].tolist()))
        raise GraphError(f"node(s) {bad}, used as cluster-index degrees, have no edges")
    return 1.0 / degrees, np.full(graph.n_edges, DEFAULT_SIGMA)


def gtv_primal_dual(
    graph: GraphLike,
    loss: LocalLoss,
    penalty: str | Penalty = "nlasso",
    lam: float | np.ndarray = 1.0,
    n_iter: int = 1000,
    *,
    dim: int | None = None,
    tau: np.ndarray | None = None,
    sigma: np.ndarray | float | None = None,
    w0: np.ndarray | None = None,
    u0: np.ndarray | None = None,
    prox_tau: np.ndarray | None = None,
    dual_update: str = "extrapolated",
    gap_tol: float | None = None,
    gap_every: int | None = None,
    callback: Callable[[IterationState], bool | None] | None = None,
    progress: bool | None = None,
    kernel: str = "auto",
    method: str = "pdhg",
    rel_gap_tol: float | None = None,
    primal_weight: float = 1.0,
) -> PrimalDualResult:
    """GTV minimisation by the primal-dual method (GTV Algorithm 1).

    The defaults of ``gtv_primal_dual`` are the paper's: ``method="pdhg"`` (fixed steps) for
    ``n_iter=1000`` (1,000) iterations without a stopping rule.  :class:`~networkedfl.gtv.GTVRegressor`
    calls this function with other defaults, ``method="restarted"``, ``n_iter=10_000``
    (10,000, a cap) and ``rel_gap_tol=1e-6``: a fit certified to a relative gap of 10^-6.
    When a stopping rule (``gap_tol`` or ``rel_gap_tol``) is given and not met within
    ``n_iter`` iterations, a :class:`sklearn.exceptions.ConvergenceWarning` says so.

    Parameters
    ----------
    graph
        Empirical graph; its weights are the ``A_e`` of eq. (14).
    loss
        Local losses with a batched proximal operator (eq. (32)); nodes outside the
        sampling set carry the trivial loss and keep ``w_i = w_hat_i``.
    penalty
        GTV penalty: ``"l1"``, ``"nlasso"`` (``||.||_2``) or ``"mocha"`` (``||.||_2^2``).
    lam
        GTV parameter ``lambda`` of eq. (16); a scalar, or one value per edge (so that
        independent problems with different ``lambda`` can be solved as one union graph).
    n_iter
        Maximum number of iterations ``K``.
    dim
        Parameter dimension ``d``; taken from ``w0`` or ``loss.dim`` when omitted.
    tau, sigma
        Primal (per node) and dual (per edge) step sizes; default ``1/deg_i`` and 0.45.
        For ``method="restarted"`` they are the base steps that the primal weight and the
        step scale multiply.
    w0, u0
        Initial primal and dual variables; default zeros, as in the authors' code.
    prox_tau
        The step inside the proximal update (step 4), per node; default ``tau``, as
        Algorithm 1 has it.  The authors' linear notebooks use another one there (see
        :func:`cluster_index_step_sizes`); the iteration is then no longer the
        Chambolle-Pock method of the paper (and ``method="restarted"`` refuses it).
    dual_update
        ``"extrapolated"`` (default, steps 5-8): ``u + Sigma D (2 w_new - w)``.
        ``"doubled_difference"``: ``u + Sigma D (2 (w_new - w))``, what the authors' MNIST
        notebooks compute (docs/variants.md §8.5); it is not the paper's method (with
        ``u0 = 0`` and ``w0 = 0`` the two agree only in the first iteration).
    gap_tol, rel_gap_tol
        Optional stopping rule on the certified primal-dual gap (34) (see
        :mod:`networkedfl.gtv._gap`), evaluated every ``gap_every`` iterations: stop once
        the gap is at most ``gap_tol``, or the relative gap ``gap / max(|primal|, |dual|)``
        is at most ``rel_gap_tol``.  Both are certificates: the gap bounds
        ``objective(w) - optimum`` and a relative gap ``g`` bounds it by ``g *
        objective(w)`` (approximately where nodes hold fewer samples than features, see
        :mod:`networkedfl.gtv._gap`).  Without either, the method runs ``n_iter`` iterations.
    gap_every
        Iterations between evaluations of the gap; default 10 for ``"pdhg"`` and
        :data:`~networkedfl.gtv._restarted.GAP_EVERY` for ``"restarted"``.
    callback
        History hook called with an :class:`IterationState` after every iteration; a
        return value of ``True`` stops the iteration.
    progress
        Show a tqdm progress bar (``None``: as :func:`networkedfl.progress.show_progress` decides).
    kernel
        How the edge work is done (see the module docstring); the results are the same
        bit for bit.  ``"auto"`` (default): the fused numba kernels when numba is
        installed (the ``fast`` extra) and they apply (the built-in ``l1``, ``mocha`` and,
        for ``d <= 8``, ``nlasso`` penalties; not wrappers such as
        :class:`~networkedfl.gtv.UnprojectedEdges`), else NumPy.  ``"numba"``: the
        kernels, or an error saying why they cannot be used.  ``"numpy"``: NumPy and scipy.
    method
        ``"pdhg"`` (default): Algorithm 1 with fixed steps, as the paper and the authors'
        code run it.  ``"restarted"``: the same iteration with adaptive restarts, primal
        weight and step scale (PDLP's scheme, :mod:`networkedfl.gtv._restarted`): the same
        fixed points in far fewer iterations (``benchmarks/bench_gtv_solver.py``), with
        ``dual_update="extrapolated"`` and ``prox_tau=None`` only; meant with a stopping
        rule (``rel_gap_tol``), ``n_iter`` then being a cap.
    primal_weight
        ``method="restarted"``: the initial primal weight ``omega`` (steps ``tau / omega``
        and ``sigma * omega``), e.g. a previous result's :attr:`PrimalDualResult.primal_weight`.

    Raises
    ------
    ValueError
        A step size (``tau``, ``sigma``, ``prox_tau``: finite and positive), ``lam`` or
        ``gap_tol`` (finite and non-negative), ``w0`` or ``u0`` (finite) that is not, naming
        the argument and the first bad node or edge.
    """
    for name, value, sign, element in (("tau", tau, "positive", "node"), ("sigma", sigma, "positive", "edge"),
                                       ("prox_tau", prox_tau, "positive", "node"),
                                       ("lam", lam, "non-negative", "edge"),
                                       ("gap_tol", gap_tol, "non-negative", "entry"),
                                       ("w0", w0, None, "node"), ("u0", u0, None, "edge")):
        if value is not None:  # at entry: the iteration never sees a NaN or infinite step
            check_finite(value, name, sign=sign, element=element)
    graph = as_graph(graph)  # an EmpiricalGraph, a networkx graph or an adjacency matrix
    penalty = get_penalty(penalty)
    if isinstance(n_iter, bool) or not isinstance(n_iter, int | np.integer) or n_iter < 1:
        raise ValueError(f"n_iter must be a positive integer, got {n_iter!r}")
    loss_nodes = getattr(loss, "n_nodes", None)
    if loss_nodes is not None and int(loss_nodes) != graph.n_nodes:
        raise ValueError(f"the loss holds data of {int(loss_nodes)} nodes but the graph has "
                         f"{graph.n_nodes} nodes (node i's data must be row i)")
    if dual_update not in DUAL_UPDATES:
        raise ValueError(f"dual_update must be one of {DUAL_UPDATES}, got {dual_update!r}")
    _check_method(method, prox_tau, dual_update, rel_gap_tol, primal_weight, gap_every)
    extrapolation = 1.0 if dual_update == "extrapolated" else 2.0  # z = 2 w_new - c w
    default_tau, default_sigma = default_step_sizes(graph) if tau is None else (None, None)
    tau = default_tau if tau is None else np.broadcast_to(np.asarray(tau, float), (graph.n_nodes,))
    if sigma is None:
        sigma = default_sigma if default_sigma is not None else np.full(graph.n_edges, DEFAULT_SIGMA)
    sigma = np.broadcast_to(np.asarray(sigma, float), (graph.n_edges,))
    radius = _edge_radius(graph, lam)

    if w0 is not None:
        w = np.array(w0, dtype=float, copy=True)
    else:
        d = dim if dim is not None else getattr(loss, "dim", None)
        if d is None:
            raise ValueError("pass dim= or w0= (the loss does not expose its dimension)")
        w = np.zeros((graph.n_nodes, int(d)))
    loss_dim = getattr(loss, "dim", None)
    if w.ndim != 2 or w.shape[0] != graph.n_nodes or (loss_dim is not None and w.shape[1] != int(loss_dim)):
        expected = f"({graph.n_nodes}, {loss_dim if loss_dim is not None else 'd'})"
        raise ValueError(f"w0 has shape {w.shape}, expected {expected} (nodes x parameter dimension)")
    d = w.shape[1]
    kernels = _select_kernels(kernel, penalty, d)
    layout = _layout(d)
    u = np.zeros((graph.n_edges, d), order=layout) if u0 is None else np.array(u0, float, order=layout)
    if u.shape != (graph.n_edges, d):
        raise ValueError(f"u0 has shape {u.shape}, expected {(graph.n_edges, d)}")

    if prox_tau is not None:
        prox_tau = np.broadcast_to(np.asarray(prox_tau, float), (graph.n_nodes,))
        if not np.all(np.isfinite(prox_tau)) or np.any(prox_tau <= 0):
            raise ValueError("prox_tau must be finite and positive")
    from . import _restarted  # imports this module

    stopping = None
    if gap_tol is not None or rel_gap_tol is not None:
        every = gap_every if gap_every is not None else (10 if method == "pdhg" else _restarted.GAP_EVERY)
        stopping = _GapStop(_Certificate(graph, loss, penalty, radius), gap_tol, rel_gap_tol, every,
                            adaptive=method == "restarted" and gap_every is None)
    if method == "restarted":
        problem = _restarted._RestartProblem(graph, loss, penalty, tau, sigma, kernels)
        result = problem.solve(radius, w, u, n_iter, primal_weight=primal_weight, stopping=stopping,
                               callback=callback, progress=progress)
    else:
        iteration = _Iteration(graph, loss, penalty, radius, tau, sigma, prox_tau, extrapolation, kernels, u)
        result = _run_fixed(iteration, w, u, n_iter, stopping, callback, progress)
    if stopping is not None and not result.converged and result.n_iter == n_iter:
        _warn_unconverged("gtv_primal_dual", result.n_iter, result.gap, result.rel_gap, gap_tol, rel_gap_tol)
    return result


def _warn_unconverged(name: str, n_iter: int, gap: float, rel_gap: float, gap_tol: float | None,
                     rel_gap_tol: float | None) -> None:
    """scikit-learn's :class:`~sklearn.exceptions.ConvergenceWarning` for a solve that used its
    ``n_iter`` iterations without meeting its stopping rule, with the last certified gap."""
    from sklearn.exceptions import ConvergenceWarning

    rule = " or ".join(f"{key} = {tol:g}" for key, tol in (("gap_tol", gap_tol), ("rel_gap_tol", rel_gap_tol))
                       if tol is not None)
    warnings.warn(f"{name} stopped after n_iter = {n_iter} iterations with the certified gap {gap:.3g} "
                  f"(relative {rel_gap:.3g}), short of {rule}: the weights may be far from the optimum; "
                  "raise n_iter (or use method='restarted').  NaN: the gap was not evaluated yet "
                  "(gap_every); inf: no feasible dual point to certify it (nodes holding fewer "
                  "samples than features)",
                  ConvergenceWarning, stacklevel=3)


def _check_method(method, prox_tau, dual_update, rel_gap_tol, primal_weight, gap_every) -> None:
    """Errors naming the argument for the options of the method and its stopping rule."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if rel_gap_tol is not None and not (isinstance(rel_gap_tol, int | float | np.floating)
                                        and not isinstance(rel_gap_tol, bool)
                                        and np.isfinite(rel_gap_tol) and rel_gap_tol > 0):
        raise ValueError(f"rel_gap_tol must be a positive number or None, got {rel_gap_tol!r}")
    if isinstance(primal_weight, bool) or not isinstance(primal_weight, int | float | np.floating) or not (
            np.isfinite(primal_weight) and primal_weight > 0):
        raise ValueError(f"primal_weight must be a positive finite number, got {primal_weight!r}")
    if gap_every is not None and (isinstance(gap_every, bool) or not isinstance(gap_every, int | np.integer)
                                  or gap_every < 1):
        raise ValueError(f"gap_every must be a positive integer, got {gap_every!r}")
    if method == "restarted":
        if prox_tau is not None:
            raise ValueError("prox_tau is not supported with method='restarted': a prox step other "
                             "than tau changes the fixed points (the notebooks' iteration); use "
                             "method='pdhg'")
        if dual_update != "extrapolated":
            raise ValueError(f"dual_update={dual_update!r} is not supported with method='restarted' "
                             "(the notebooks' iteration, not a primal-dual method); use method='pdhg'")


def _run_fixed(iteration: _Iteration, w: np.ndarray, u: np.ndarray, n_iter: int,
               stopping: _GapStop | None, callback, progress) -> PrimalDualResult:
    """Algorithm 1 with the fixed steps of ``iteration``: ``n_iter`` iterations, or fewer when
    the callback or the gap stopping rule stops them."""
    converged = False
    k = 0
    for k in tqdm(range(1, n_iter + 1), disable=not show_progress(progress), desc="primal-dual", leave=False):
        # The callback may hold w and u, so with one the dual step writes a fresh array;
        # without one it works in place on u (w_new is the prox's output either way).
        w, u = iteration.step(w, u, out=u if callback is None else np.empty_like(u))
        stop, converged = _should_stop(k, w, u, callback, stopping)
        if stop:
            break
    return _result(w, u, k, converged, stopping)


def _should_stop(k: int, w: np.ndarray, u: np.ndarray, callback, stopping: _GapStop | None) -> tuple[bool, bool]:
    """``(stop, converged)`` after iteration ``k``: the callback asked to stop, or the gap rule is met."""
    if callback is not None and callback(IterationState(k, w, u)):
        return True, False
    if stopping is not None and stopping.due(k) and stopping(w, u, k):
        return True, True
    return False, False


def _result(w: np.ndarray, u: np.ndarray, k: int, converged: bool, stopping: _GapStop | None,
            **extra) -> PrimalDualResult:
    """The result of a run that ended after iteration ``k``, with the last gap evaluated."""
    gap, rel_gap = (stopping.gap, stopping.rel_gap) if stopping is not None else (float("nan"),) * 2
    return PrimalDualResult(weights=w, duals=u, n_iter=k, gap=gap, converged=converged, rel_gap=rel_gap,
                            **extra)
