"""The GTV objective, its dual, and the certified primal-dual gap (GTV eqs. (16), (24), (34)).

For ``min_w P(w) = sum_i L_i(w_i) + sum_e r_e phi(w_i - w_j)`` (``r_e = lambda A_e``) the
dual (24) is ``max_u D(u) = -sum_i L_i^*(-(D^T u)_i) - sum_e (r_e phi)^*(u_e)``, and weak
duality gives ``D(u) <= p* <= P(w)`` for *every* ``w`` and every ``u``.  The gap ``P(w) -
D(u)`` therefore bounds the sub-optimality ``P(w) - p*`` as soon as ``D(u)`` is finite,
i.e. as soon as ``u`` is *dual feasible*:

* **nodes without data** (the trivial loss ``L_i = 0`` outside the sampling set ``M``):
  ``L_i^*`` is the indicator of ``{0}``, so the flow ``(D^T u)_i`` must vanish there.  The
  primal-dual iterates satisfy this only in the limit (a node outside ``M`` moves only
  while its flow is non-zero), so :class:`FeasibleDualMap` first routes every such node's
  residual flow to the nodes with data, along the edges with ``r_e > 0`` (see its
  docstring): the corrected ``u`` has zero flow at every node without data;
* **nodes with data**: ``L_i^*`` of the squared error is finite where ``(D^T u)_i`` lies
  in the range of ``X_i^T X_i``: everywhere when the node has at least ``d`` samples in
  general position.  With fewer (rank-deficient local data, GTV Table I and Fig. 2) it is
  finite only on that range; the iterates' flows approach it (their component outside it is
  the prox step's motion, which vanishes), and
  :meth:`~networkedfl.gtv.SquaredErrorLoss.conjugate` accepts a component up to
  ``feasibility_tol * (1 + ||.||)`` (1e-9) as round-off.  Such a gap is ``inf`` until the
  iterates settle that far, and then an *approximate* certificate: the accepted component
  ``eps_i`` shifts the bound by up to ``eps_i`` times the size of the optimal ``w_i``
  outside the range, which no routing removes (every node of such a problem has a null
  space), so there it is not a rigorous bound at relative accuracies near ``n * 1e-9 /
  objective``;
* **the penalty**: ``(r_e phi)^*`` is the indicator of ``||u_e||_inf <= r_e`` for
  ``l1``, of ``||u_e||_2 <= r_e`` for ``nlasso``, and ``||u_e||^2 / (4 r_e)`` for
  ``mocha`` (finite everywhere when ``r_e > 0``; ``u_e = 0`` where ``r_e = 0``).  After the
  routing, ``u`` is scaled by the largest ``theta in [0, 1]`` that puts every edge in the
  domain (a uniform scaling keeps the flows zero).  For ``mocha`` no scaling is needed
  except on edges with ``r_e = 0``, which the routing never touches and the dual step keeps
  at zero.

Both corrections vanish as the iterates converge, so the certified gap tends to zero with
them.  The **relative gap** ``(P - D) / max(|P|, |D|)`` is then a certificate of relative
accuracy: for the non-negative GTV objectives (squared errors and norms), a relative gap
``g < 1`` implies ``D > 0`` and ``P(w) - p* <= g P(w)``.  (Up to floating-point rounding:
the flows at nodes without data vanish to rounding error, which the loss's conjugate
accepts, see :attr:`~networkedfl.gtv.SquaredErrorLoss.feasibility_tol`.)
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path
from scipy.sparse.linalg import splu

from ..graphs import EmpiricalGraph
from ._losses import LocalLoss
from ._penalties import Penalty, get_penalty

__all__ = ["FeasibleDualMap", "gtv_objective", "primal_dual_gap", "relative_gap"]


def _edge_radius(graph: EmpiricalGraph, lam: float | np.ndarray) -> np.ndarray:
    lam = np.asarray(lam, float)
    if lam.ndim not in (0, 1) or (lam.ndim == 1 and lam.shape[0] != graph.n_edges):
        raise ValueError(f"lam must be a scalar or have one entry per edge ({graph.n_edges})")
    if not np.all(np.isfinite(lam)) or np.any(lam < 0):
        raise ValueError("lam must be finite and non-negative")
    return lam * graph.weights


def gtv_objective(
    graph: EmpiricalGraph,
    loss: LocalLoss,
    penalty: str | Penalty,
    lam: float | np.ndarray,
    weights: np.ndarray,
) -> float:
    """Value of the GTV objective (16) at ``weights``."""
    penalty = get_penalty(penalty)
    radius = _edge_radius(graph, lam)
    return float(loss.value(weights).sum() + penalty.value(graph.incidence @ weights, radius).sum())


def relative_gap(primal: float, dual: float) -> float:
    """``(primal - dual) / max(|primal|, |dual|)`` (0 if both are 0, ``inf`` if ``dual`` is ``-inf``).

    With ``dual <= p* <= primal`` (weak duality) and a non-negative objective, a value
    ``g < 1`` certifies ``primal - p* <= g * primal``.
    """
    if not np.isfinite(dual):
        return float("inf")
    scale = max(abs(primal), abs(dual))
    return float((primal - dual) / scale) if scale > 0 else 0.0


def _depths(n_nodes: int, head: np.ndarray, tail: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Hop distance of every node from the nearest node of ``sources`` over the given edges
    (``-1`` where no source is reachable): one breadth-first search from an extra node
    joined to all sources."""
    root = n_nodes
    rows = np.concatenate([head, tail, np.full(sources.size, root)])
    cols = np.concatenate([tail, head, sources])
    adjacency = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n_nodes + 1, n_nodes + 1))
    dist = shortest_path(adjacency, directed=True, unweighted=True, indices=root)[:n_nodes]
    return np.where(np.isfinite(dist), dist - 1, -1).astype(np.int64)


class _FlowRouting:
    """A linear map ``r -> c`` on the edges with ``(D^T c)_i = r_i`` at every node without data.

    Every node ``i`` outside ``M`` has a depth, its hop distance from ``M`` over the edges
    with ``r_e > 0``.  A node passes everything it holds (its own residual ``r_i`` plus what
    deeper neighbours pass to it) to its neighbours one level closer to ``M``, in equal shares
    over those edges; the nodes of ``M`` absorb what reaches them (their flow need not
    vanish).  With ``a_i`` what node ``i`` holds, ``a = r + W a`` (``W_pc = 1/k_c`` when ``c``
    passes to ``p``, ``k_c`` the number of edges ``c`` passes along), a triangular system in
    the order of decreasing depth: one sparse LU factorisation without fill-in (the matrix
    is already triangular), one solve per evaluation, and the edge flows ``c = F a``.
    Compared with the least-norm correction (a solve with the grounded Laplacian, whose
    factorisation fills in on random graphs: 109 s at 20,000 nodes) this costs
    ``O(edges)`` and certifies the same gap to within a few iterations
    (``benchmarks/bench_gtv_solver.py``).
    """

    def __init__(self, graph: EmpiricalGraph, trivial: np.ndarray, active: np.ndarray):
        n = graph.n_nodes
        self.trivial = np.flatnonzero(trivial)
        act = np.flatnonzero(active)
        head, tail = graph.edges[act, 0], graph.edges[act, 1]
        depth = _depths(n, head, tail, np.flatnonzero(~trivial))
        self.reachable = bool(np.all(depth[self.trivial] >= 0))
        if not self.reachable:
            return
        head_deeper = depth[head] == depth[tail] + 1  # head passes to tail
        tail_deeper = depth[tail] == depth[head] + 1
        edge = np.concatenate([act[head_deeper], act[tail_deeper]])
        child = np.concatenate([head[head_deeper], tail[tail_deeper]])
        parent = np.concatenate([tail[head_deeper], head[tail_deeper]])
        # (D^T c)_child gets +c_e if child is the edge's head, -c_e if its tail
        sign = np.concatenate([np.ones(head_deeper.sum()), -np.ones(tail_deeper.sum())])
        share = 1.0 / np.bincount(child, minlength=n)[child]
        # position of every node outside M in the order of decreasing depth (ties by index)
        order = self.trivial[np.lexsort((self.trivial, -depth[self.trivial]))]
        position = np.full(n, -1)
        position[order] = np.arange(order.size)
        self._perm = position[self.trivial]  # row of node trivial[k] in the triangular system
        inner = position[parent] >= 0  # parents outside M keep passing; M absorbs
        w = sp.csc_matrix((share[inner], (position[parent[inner]], position[child[inner]])),
                          shape=(order.size, order.size))
        self._solve = None
        if w.nnz:
            system = (sp.identity(order.size, format="csc") - w).tocsc()
            self._solve = splu(system, permc_spec="NATURAL", diag_pivot_thresh=0.0,
                               options={"SymmetricMode": False}).solve
        self._flows = sp.csr_matrix((sign * share, (edge, position[child])),
                                    shape=(graph.n_edges, order.size))

    def __call__(self, residual: np.ndarray) -> np.ndarray:
        """Edge flows ``c`` with ``(D^T c)_i = residual[k]`` at ``i = trivial[k]``."""
        held = np.empty_like(residual)
        held[self._perm] = residual
        if self._solve is not None:
            held = self._solve(held)
        return self._flows @ held


class FeasibleDualMap:
    """Map a dual iterate ``u`` to a feasible dual point of (24), for a valid gap (34).

    Primal-dual iterates satisfy ``(D^T u)_i = 0`` at nodes with the trivial loss only in
    the limit, so the dual objective is ``-inf`` at every iterate.  This map removes the
    residual ``r = (D^T u)_U`` on the trivial nodes ``U`` by routing it to the nodes with
    data along the edges with ``lambda A_e > 0`` (:class:`_FlowRouting`: each node passes
    its residual, and what deeper nodes pass to it, in equal shares to its neighbours one hop
    closer to the data), and then scales the result into the domain of the penalty's
    conjugate (scaling keeps ``(D^T u)_U = 0``).  Both steps vanish as ``u`` converges, so
    the gap of the repaired point still tends to zero.  The routing is built once, in
    ``O(edges)``; when a group of trivial nodes reaches no node with data no feasible point
    exists and ``None`` is returned (the gap is reported as ``inf``).
    """

    def __init__(self, graph: EmpiricalGraph, loss: LocalLoss, radius: np.ndarray):
        trivial = getattr(loss, "trivial_nodes", None)
        trivial = np.zeros(graph.n_nodes, bool) if trivial is None else np.asarray(trivial, bool)
        self.trivial = np.flatnonzero(trivial)
        self.active = np.flatnonzero(radius > 0)
        self._routing = None
        if self.trivial.size:
            self._routing = _FlowRouting(graph, trivial, radius > 0)
            self._flow_rows = graph.incidence.T.tocsr()[self.trivial]  # (D^T u)_U = this @ u

    def __call__(self, graph: EmpiricalGraph, penalty: Penalty, radius: np.ndarray,
                 duals: np.ndarray) -> np.ndarray | None:
        u = duals
        if self._routing is not None:
            residual = self._flow_rows @ duals
            if np.any(residual):
                if not self._routing.reachable:
                    return None
                u = duals - self._routing(residual)
        return penalty.feasible_scale(u, radius) * u


class _Certificate:
    """``P(w)`` and ``D(feasible(u))`` of one problem, for repeated evaluation along a run."""

    def __init__(self, graph: EmpiricalGraph, loss: LocalLoss, penalty: Penalty, radius: np.ndarray,
                 feasible_map: FeasibleDualMap | None = None):
        self.graph, self.loss, self.penalty, self.radius = graph, loss, penalty, radius
        self.feasible = FeasibleDualMap(graph, loss, radius) if feasible_map is None else feasible_map
        self.incidence, self.incidence_t = graph.incidence, graph.incidence.T.tocsr()

    def __call__(self, weights: np.ndarray, duals: np.ndarray) -> tuple[float, float]:
        """``(primal, dual)``; ``dual = -inf`` when no feasible dual point can be formed."""
        penalty, radius = self.penalty, self.radius
        primal = float(self.loss.value(weights).sum() + penalty.value(self.incidence @ weights, radius).sum())
        u = self.feasible(self.graph, penalty, radius, duals)
        if u is None:
            return primal, float("-inf")
        flow = self.incidence_t @ u
        np.negative(flow, out=flow)
        dual = -self.loss.conjugate(flow).sum() - penalty.conjugate(u, radius).sum()
        return primal, float(dual)


class _GapStop:
    """The stopping rule on the certified gap: ``gap <= gap_tol`` or ``rel_gap <= rel_gap_tol``.

    Evaluated when :meth:`due`: every ``every`` iterations, or, with ``adaptive``, at a
    multiple of ``every`` chosen from the gap's progress (each evaluation costs a few
    iterations' work: products with ``D``, the routing and the conjugates).  The adaptive
    schedule extrapolates the last two evaluations log-linearly to where the rule would be met
    and evaluates again after :data:`ADAPTIVE_FRACTION` of that distance, at least ``every``
    and at most ``ADAPTIVE_MAX_STRIDE * every`` iterations later; it depends on the iterates
    only, so runs stay deterministic.  Keeps the last gap and relative gap evaluated.
    """

    ADAPTIVE_FRACTION = 0.7
    ADAPTIVE_MAX_STRIDE = 4

    def __init__(self, certificate: _Certificate, gap_tol: float | None, rel_gap_tol: float | None,
                 every: int, adaptive: bool = False):
        self.certificate, self.gap_tol, self.rel_gap_tol, self.every = certificate, gap_tol, rel_gap_tol, every
        self.adaptive = adaptive
        self.gap = self.rel_gap = float("nan")
        self.next = every
        self._last: tuple[int, float] | None = None  # (iteration, log of the distance to the rule)

    def due(self, k: int) -> bool:
        return k >= self.next

    def __call__(self, weights: np.ndarray, duals: np.ndarray, k: int) -> bool:
        """Evaluate the gap at ``(weights, duals)`` (iteration ``k``); whether the rule is met."""
        primal, dual = self.certificate(weights, duals)
        self.gap = float(primal - dual)
        self.rel_gap = relative_gap(primal, dual)
        ratios = [value / tol for value, tol in ((self.gap, self.gap_tol), (self.rel_gap, self.rel_gap_tol))
                  if tol is not None]
        distance = min(ratios)  # the rule is met when <= 1
        if distance <= 1:
            return True
        stride = 1
        if self.adaptive and np.isfinite(distance):
            log_distance = float(np.log(distance))
            if self._last is not None and log_distance < self._last[1]:
                rate = (self._last[1] - log_distance) / (k - self._last[0])  # log decrease per iteration
                ahead = self.ADAPTIVE_FRACTION * log_distance / rate / self.every
                stride = int(min(max(np.ceil(ahead), 1), self.ADAPTIVE_MAX_STRIDE))
            self._last = (k, log_distance)
        self.next = k + stride * self.every
        return False


def primal_dual_gap(
    graph: EmpiricalGraph,
    loss: LocalLoss,
    penalty: str | Penalty,
    lam: float | np.ndarray,
    weights: np.ndarray,
    duals: np.ndarray,
    *,
    feasible_map: FeasibleDualMap | None = None,
) -> float:
    """Primal-dual gap (GTV eq. (34)): objective (16) at ``weights`` minus dual (24).

    The dual objective is evaluated at ``feasible_map(duals)`` (see
    :class:`FeasibleDualMap`), so the gap is a valid certificate at every iterate:
    non-negative and an upper bound on ``objective(weights) - optimum``.  It is ``inf``
    when no feasible dual point can be formed (e.g. rank-deficient local data whose
    conjugate domain the iterate misses).  Pass a prebuilt ``feasible_map`` when
    evaluating the gap repeatedly on one problem.
    """
    penalty = get_penalty(penalty)
    radius = _edge_radius(graph, lam)
    primal, dual = _Certificate(graph, loss, penalty, radius, feasible_map)(weights, duals)
    return float(primal - dual)
