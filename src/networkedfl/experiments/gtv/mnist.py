"""MNIST experiments of the GTV paper (Sec. VI-C: Figs. 5, 6, 7 and Table II).

Every node holds 500 images of the two digits of its cluster (400 training, 100
validation; labels are the position of the digit in the pair) and the two-layer network
(40).  The local datasets and the empirical graph learnt from them are one cached artefact
(:mod:`.gtv_mnist_graph`), named by the target's ``graph`` parameter, so targets with the
same clusters share it.

One job per method (its seeds in one process); every method starts from the same random vector (weight
entries ``U[0, 1)``, biases 0) and records the validation accuracy, pooled over all the
nodes' validation images, after every iteration / round / epoch (iteration 0: the start):

* ``primal_dual``: Algorithm 1 with the nLasso penalty on the weight matrices and the
  inexact proximal step of :class:`~networkedfl.nn.InexactProxCrossEntropy`;
  all values of ``lambda`` of a job are solved at once on a disjoint union of copies of
  the graph (per-edge ``lambda``), so the data are shared;
* ``ifca`` (Ghosh et al. 2020), ``fedavg``: rounds of full-batch local gradient steps;
* ``pfedme`` (Dinh et al. 2020);
* ``local_sgd``: independent momentum SGD per node (docs/variants.md §8.11);
* extra baselines, not the paper's (shown beside its methods where a configuration lists
  them, ``extra_baselines: [fedprox, ...]`` with FedAvg's (else IFCA's) rounds, local steps
  and step, :func:`~networkedfl.experiments.baselines.with_extra_methods`, or as jobs of
  ``methods``; the default configuration does not): ``fedprox`` (Li et al. 2020), ``scaffold``
  (Karimireddy et al. 2020), ``fedadam`` and ``fedyogi`` (Reddi et al. 2021), ``ditto``
  (Li et al. 2021, scored on the personal models), each with FedAvg's full-batch local
  gradient steps (``rounds``, ``local_steps``, ``lr``) and its own parameters.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...seeding import rng_for
from ..baselines import with_extra_methods
from .mnist_graph import MnistGraph, graph_file, load_mnist_graph, mnist_train_files

__all__ = [
    "ALL_METHODS",
    "EXTRA_BASELINES",
    "MnistProblem",
    "PAPER_TABLE2",
    "ZeroHatRestart",
    "job_seeds",
    "last_job",
    "load_problem",
    "mnist_inputs",
    "mnist_records",
    "mnist_settings",
    "run_mnist",
    "run_mnist_table2",
]

Params = Mapping[str, Any]

#: GTV Table II: the digits of the five clusters [paper].
PAPER_TABLE2: tuple[tuple[int, int], ...] = ((0, 1), (2, 3), (4, 5), (6, 7), (8, 9))


def mnist_inputs(params: Params) -> dict[str, str | list[str]]:
    """The MNIST training files and the cached graph named by ``params["graph"]``."""
    return {"mnist": mnist_train_files(), "graph": graph_file(str(params["graph"]))}


#: The setting of the single job that runs every method of a seed (``one_job: true``).
ALL_METHODS = "all"


def mnist_settings(params: Params) -> list[str]:
    """One job per configured method (e.g. ``primal_dual``, ``ifca``, ``pfedme``).

    With ``one_job: true`` (the test profile) a single job ``all`` runs every method in
    turn: the records are the same as those of the per-method jobs (each method draws
    from its own stream), only the start-up cost of a job is paid once.
    """
    return [ALL_METHODS] if params.get("one_job", False) else list(with_extra_methods(params)["methods"])


# ------------------------------------------------------------------------------ data


class MnistProblem:
    """Training and validation tensors of every node, the graph and the network."""

    def __init__(self, graph: MnistGraph, images: np.ndarray, digits: np.ndarray,
                 hidden: int, dtype, device: str):
        import torch

        from ...nn import SparseSamples, TwoLayerNetwork

        self.graph = graph
        n, m = graph.indices.shape
        x = images[graph.indices.ravel()].reshape(n, m, -1)
        y = graph.local_labels(digits[graph.indices])
        scale = np.asarray(255.0, np.float32)
        feats = torch.as_tensor(x.astype(np.float32) / scale).to(dtype=dtype, device=device)
        labels = torch.as_tensor(y, dtype=torch.int64, device=device)
        t = graph.n_train
        self.train_x, self.train_y = feats[:, :t].contiguous(), labels[:, :t].contiguous()
        self.val_x, self.val_y = feats[:, t:].contiguous(), labels[:, t:].contiguous()
        self.network = TwoLayerNetwork(x.shape[-1], int(hidden), int(graph.clusters.shape[1]))
        self.dtype, self.device = dtype, device
        # the evaluation's products with the images, in CSR form (most pixels are 0)
        self._val, self._train = SparseSamples.of(self.val_x), SparseSamples.of(self.train_x)

    def sparse(self, *tensors) -> list:
        """``flat_model``'s ``sparse`` entries for ``tensors``: the problem's own CSR form of
        its training or validation samples where a tensor is one of them (built once per job,
        not once per method), the tensor itself otherwise."""
        own = {id(self.train_x): self._train, id(self.val_x): self._val}
        return [(t, own[id(t)]) if id(t) in own else t for t in tensors]

    def start_accuracies(self, w0: np.ndarray) -> dict[str, np.ndarray]:
        """:meth:`accuracies` of every node holding the vector ``w0``."""
        return self.accuracies(np.broadcast_to(w0, (self.graph.n_nodes, w0.shape[-1])).copy())

    def accuracies(self, params) -> dict[str, np.ndarray]:
        """Pooled validation and training accuracy of ``(n, P)`` or ``(R, n, P)`` parameters."""
        import torch

        from ...nn import accuracy

        p = torch.as_tensor(params).to(dtype=self.dtype, device=self.device)
        with torch.no_grad():
            val = accuracy(self.network.logits(p, self._val), self.val_y)
            train = accuracy(self.network.logits(p, self._train), self.train_y)
            val, train = val.mean(dim=-1), train.mean(dim=-1)
        return {"accuracy": np.atleast_1d(val.cpu().numpy()),
                "train_accuracy": np.atleast_1d(train.cpu().numpy())}


def load_problem(params: Params, inputs: Mapping[str, Any]) -> MnistProblem:
    """The job's data from its input files (MNIST training split and the cached graph)."""
    from ...datasets.mnist import load_mnist
    from ...nn import as_dtype

    graph = load_mnist_graph(inputs["graph"])
    split = load_mnist(inputs["mnist"], "train")
    dtype = as_dtype(params.get("dtype", "float32"))  # this experiment's default: float32
    return MnistProblem(graph, split.images, split.labels, int(params.get("hidden", 1)), dtype,
                        str(params.get("device", "cpu")))


# ------------------------------------------------------------------------------ methods


#: The keys in which the Alg. 1 jobs solved together may differ (one replica each).
_REPLICA_KEYS = ("lam", "step_scale")


def _replica_group(spec: Params) -> str:
    """What Alg. 1 methods must share to be solved together: the spec but ``lam`` and
    ``step_scale`` (e.g. the step scan's ``c`` values)."""
    return json.dumps({k: v for k, v in spec.items() if k not in _REPLICA_KEYS}, sort_keys=True, default=str)


class ZeroHatRestart:
    """A local loss whose prox first restarts every row whose ``w_hat`` has an all-zero first
    weight matrix: ``W1`` and ``W2`` (the first ``n_weights`` coordinates) replaced by fresh
    U[0, 1) draws, biases kept.  The GTV MNIST notebooks do this in their optimiser (``if
    np.sum(old_weight[0]) == 0``), and it fires at iteration 1 on every node no k-NN row chose
    as a neighbour: with the duals started at the weights its ``w_hat`` is exactly 0
    (docs/variants.md); without the restart such a node starts with a dead hidden unit.
    ``draws[r]`` is replica ``r``'s generator (rows ``r * n .. r * n + n - 1``)."""

    def __init__(self, loss: Any, n_nodes: int, w1: tuple[int, int], n_weights: int,
                 draws: Sequence[np.random.Generator]):
        self._loss, self._n, self._w1, self._nw, self._draws = loss, int(n_nodes), w1, int(n_weights), list(draws)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loss, name)

    def prox_operator(self, tau: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        inner = self._loss.prox_operator(tau)
        start, stop = self._w1

        def prox(w_hat: np.ndarray) -> np.ndarray:
            zero = np.flatnonzero(np.asarray(w_hat)[:, start:stop].sum(axis=1) == 0)
            if len(zero):
                w_hat = np.array(w_hat, copy=True)
                for row in zero:
                    w_hat[row, : self._nw] = self._draws[row // self._n].random(self._nw)
            return inner(w_hat)

        return prox


def _primal_dual(problem: MnistProblem, specs: Mapping[str, Params], starts: Mapping[int, np.ndarray],
                 draws: Callable[[int, float], np.random.Generator] | None = None
                 ) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Algorithm 1 for every method of ``specs`` (Alg. 1 blocks that differ only in
    ``lam`` and ``step_scale``), seed of ``starts`` (its shared start ``w0``) and ``lambda``
    at once: one replica each on a disjoint union of copies of the graph (per-edge
    ``lambda``, per-node ``tau`` and per-edge ``sigma``), so the data are shared.  With the
    sparse products every replica's numbers are those it gives alone.  ``draws(seed, lam)``:
    a replica's generator for ``restart_zero_hat`` (:class:`ZeroHatRestart`).  Returns the records
    of every ``(method, seed)``: the accuracies per iteration and the final metrics."""
    from ...graphs import disjoint_union
    from ...gtv import BlockNLassoPenalty, UnprojectedEdges, default_step_sizes, gtv_primal_dual
    from ...nn import InexactProxCrossEntropy

    if len({_replica_group(spec) for spec in specs.values()}) != 1:
        raise ValueError(f"Alg. 1 methods {sorted(specs)} differ in more than {_REPLICA_KEYS}")
    spec = next(iter(specs.values()))
    replicas = [(method, seed, float(lam), float(s.get("step_scale", 1.0)))
                for method, s in specs.items() for seed in starts for lam in s["lam"]]
    r, graph, net = len(replicas), problem.graph.graph, problem.network
    n, p, e = graph.n_nodes, net.n_params, graph.n_edges
    lams, scales = np.array([x[2] for x in replicas]), np.array([x[3] for x in replicas])
    if np.any(scales <= 0):
        raise ValueError(f"step_scale must be positive, got {sorted(set(scales[scales <= 0]))}")
    union, _ = disjoint_union([graph] * r)
    lam_per_edge = np.repeat(lams, e)
    if spec.get("penalty", "nlasso") != "nlasso":
        raise ValueError(f"the MNIST experiment uses the nLasso penalty, got {spec['penalty']!r}")
    blocks = {"stacked": ((0, net.n_weights),), "per_layer": net.weight_blocks}[
        spec.get("dual_blocks", "stacked")]
    penalty = BlockNLassoPenalty(blocks)
    if not spec.get("project_at_zero_lambda", True):
        # the five-cluster notebook skips the projection when lambda = 0 (docs/variants.md §8.5)
        penalty = UnprojectedEdges(penalty, lam_per_edge == 0)
    loss = InexactProxCrossEntropy(
        net, problem.train_x, problem.train_y, replicas=r, steps=int(spec["steps"]),
        lr=float(spec["lr"]), optimizer=str(spec.get("optimizer", "rmsprop")),
        prox_scale=float(spec.get("prox_scale", 1.0)), dtype=problem.dtype, device=problem.device,
        sparse=bool(spec.get("sparse", True)))
    if spec.get("restart_zero_hat", False):  # the notebooks' restart of an all-zero w_hat (published)
        if draws is None:
            raise ValueError("restart_zero_hat needs the replicas' generators (draws)")
        loss = ZeroHatRestart(loss, n, net.blocks["W1"], net.n_weights,
                              [draws(seed, lam) for _, seed, lam, _ in replicas])
    tau, sigma = default_step_sizes(union)
    # tau = c/deg, sigma = 0.45/c (issue 16 item 6) keeps ||Sigma^{1/2} D T^{1/2}|| unchanged
    tau, sigma = tau * np.repeat(scales, n), sigma / np.repeat(scales, e)
    w0 = np.stack([np.broadcast_to(starts[seed], (n, p)) for _, seed, _, _ in replicas])  # (R, n, P)
    max_dual = np.zeros(r)
    records: dict[tuple[str, int], list[dict[str, Any]]] = {(m, seed): [] for m in specs for seed in starts}

    def record(iteration: int, acc: Mapping[str, np.ndarray]) -> None:
        for k, (method, seed, lam, _) in enumerate(replicas):
            records[(method, seed)] += [{"lam": lam, "iteration": iteration, "metric": metric,
                                         "value": float(values[k])} for metric, values in acc.items()]

    def callback(state) -> None:
        u = np.abs(state.duals).reshape(r, e, p).max(axis=(1, 2), initial=0.0)
        np.maximum(max_dual, u, out=max_dual)
        record(state.iteration, problem.accuracies(state.weights.reshape(r, n, p)))

    record(0, problem.accuracies(w0))
    u0 = None
    if spec.get("dual_init", "zeros") == "weights":
        # the notebook starts every edge's dual at the initial weights (§8 item 5), in its
        # orientation of D (+1 at the node whose k-NN row chose the edge)
        u0 = np.zeros((r, e, p))
        u0[:, :, : net.n_weights] = w0[:, :1, : net.n_weights] * problem.graph.edge_signs()[None, :, None]
        u0 = u0.reshape(r * e, p)
        np.maximum(max_dual, np.abs(u0).reshape(r, -1).max(axis=1), out=max_dual)  # iteration 0 counts
    result = gtv_primal_dual(union, loss, penalty, lam_per_edge, int(spec["n_iter"]), tau=tau, sigma=sigma,
                             w0=w0.reshape(r * n, p).copy(), u0=u0,
                             dual_update=spec.get("dual_update", "extrapolated"), callback=callback)
    weights = result.weights.reshape(r, n, p)[:, :, : net.n_weights]
    for k, (method, seed, lam, _) in enumerate(replicas):
        w = np.ascontiguousarray(weights[k])  # each replica alone: numpy's sums depend on the layout
        mean = w.mean(axis=0)
        spread = np.linalg.norm(w - mean, axis=1).max() / np.linalg.norm(mean)
        records[(method, seed)] += [
            {"lam": lam, "iteration": np.nan, "metric": "relative_spread", "value": float(spread)},
            {"lam": lam, "iteration": np.nan, "metric": "max_abs_dual", "value": float(max_dual[k])}]
    return records


def _client_data(problem: MnistProblem):
    from ...nn import ClientData

    return ClientData.from_arrays(problem.train_x, problem.train_y, dtype=problem.dtype,
                                  device=problem.device)


def _round_callback(problem: MnistProblem, rec):
    def callback(state):
        acc = problem.accuracies(state.client_params)
        rec(state.round, {}, {m: v[0] for m, v in acc.items()})

    return callback


def _ifca(problem: MnistProblem, spec: Params, w0: np.ndarray, rec, rng) -> dict:
    import torch

    from ...algorithms import ifca
    from ...nn import losses_of_models

    k = int(spec["n_clusters"])
    net = problem.network
    start = spec.get("model_init", "shared_start")
    if start == "shared_start":
        # cluster 1 starts from the shared vector, the others from fresh draws of the same law
        init = np.stack([w0] + [net.initial_params(rng) for _ in range(k - 1)])
    elif start == "torch_default":
        # the notebooks: every cluster model a fresh nn.Linear network (small weights)
        init = np.stack([net.linear_default_params(rng) for _ in range(k)])
    else:
        raise ValueError(f"IFCA model_init must be shared_start or torch_default, got {start!r}")
    data = _client_data(problem)
    model = net.flat_model(w0, sparse=problem.sparse(data.features, problem.val_x))  # full-batch steps, validation
    models = torch.as_tensor(init).to(problem.dtype)
    by_validation = spec.get("evaluate_by", "training_loss") == "validation_loss"

    def chosen_by(models_, x, y):
        return losses_of_models(model, models_, x, y).argmin(dim=1)

    def evaluate(models_, assigned):
        # the notebook picks each node's model by its *validation* loss when it evaluates
        # (docs/variants.md §8.10; optimistic); by default the training assignment counts
        picked = chosen_by(models_, problem.val_x, problem.val_y) if by_validation else assigned
        return problem.accuracies(models_[picked])

    starts = spec.get("initial_assignment", "min_loss")
    if starts not in ("min_loss", "first_cluster") or spec.get("evaluate_by", "training_loss") not in (
            "training_loss", "validation_loss"):
        raise ValueError(f"IFCA initial_assignment must be min_loss or first_cluster and evaluate_by "
                         f"training_loss or validation_loss, got {starts!r}, {spec.get('evaluate_by')!r}")
    first = chosen_by(models, data.features, data.targets)
    if starts == "first_cluster":  # every node starts in cluster 0 (the notebook)
        first = torch.zeros_like(first)
    rec(0, {}, {m: v[0] for m, v in evaluate(models, first).items()})

    def callback(state):
        rec(state.round, {}, {m: v[0] for m, v in
                              evaluate(state.global_params, state.assignment.clamp_min(0)).items()})

    result = ifca(model, data, n_clusters=k, n_rounds=int(spec["rounds"]),
                  local_epochs=int(spec["local_steps"]), batch_size=None, lr=float(spec["lr"]),
                  init=init, initial_assignment=None if starts == "min_loss" else first.cpu().numpy(),
                  seed=rng, callback=callback, device=problem.device, dtype=problem.dtype)
    sizes = np.bincount(result.assignment.cpu().numpy(), minlength=k)
    return {"clusters_used": float(np.count_nonzero(sizes))}


def _fedavg(problem: MnistProblem, spec: Params, w0: np.ndarray, rec, rng) -> dict:
    from ...algorithms import fedavg

    rec(0, {}, {m: v[0] for m, v in problem.start_accuracies(w0).items()})
    data = _client_data(problem)
    fedavg(problem.network.flat_model(w0, sparse=problem.sparse(data.features)), data, n_rounds=int(spec["rounds"]),
           local_epochs=int(spec["local_steps"]), batch_size=None, lr=float(spec["lr"]),
           init=w0, seed=rng, callback=_round_callback(problem, rec),
           device=problem.device, dtype=problem.dtype)
    return {}


def _pfedme(problem: MnistProblem, spec: Params, w0: np.ndarray, rec, rng) -> dict:
    from ...algorithms import pfedme

    rec(0, {}, {m: v[0] for m, v in problem.start_accuracies(w0).items()})
    pfedme(problem.network.flat_model(w0), _client_data(problem), n_rounds=int(spec["rounds"]),
           local_rounds=int(spec["local_rounds"]), inner_steps=int(spec["inner_steps"]),
           batch_size=int(spec["batch_size"]), lr=float(spec["lr"]),
           personal_lr=float(spec["personal_lr"]), lam=float(spec["lam"]),
           beta=float(spec["beta"]), init=w0, seed=rng,
           callback=_round_callback(problem, rec), device=problem.device, dtype=problem.dtype)
    return {}


def _local_sgd(problem: MnistProblem, spec: Params, w0: np.ndarray, rec, rng) -> dict:
    from ...algorithms import local_momentum_sgd

    rec(0, {}, {m: v[0] for m, v in problem.start_accuracies(w0).items()})
    local_momentum_sgd(problem.network.flat_model(w0), _client_data(problem),
                       n_rounds=int(spec["epochs"]), local_epochs=1, batch_size=int(spec["batch_size"]),
                       lr=float(spec["lr"]), momentum=float(spec.get("momentum", 0.0)), init=w0,
                       seed=rng, callback=_round_callback(problem, rec),
                       device=problem.device, dtype=problem.dtype)
    return {}


#: The extra baselines' own parameters (besides ``rounds``, ``local_steps``, ``lr``).
EXTRA_BASELINES: dict[str, tuple[str, ...]] = {
    "fedprox": ("mu",), "scaffold": ("server_lr",), "ditto": ("lam",),
    "fedadam": ("server_lr", "beta1", "beta2", "tau"), "fedyogi": ("server_lr", "beta1", "beta2", "tau"),
}


def _extra_baseline(problem: MnistProblem, spec: Params, w0: np.ndarray, rec, rng) -> dict:
    """FedProx, SCAFFOLD, FedAdam, FedYogi or Ditto with FedAvg's full-batch local steps."""
    from ... import algorithms

    name = spec["algorithm"]
    unknown = sorted(set(spec) - {"algorithm", "rounds", "local_steps", "lr", *EXTRA_BASELINES[name]})
    if unknown:
        raise ValueError(f"{name} takes no {unknown}; its own parameters: {list(EXTRA_BASELINES[name])}")
    own = {key: float(spec[key]) for key in EXTRA_BASELINES[name] if key in spec}
    rec(0, {}, {m: v[0] for m, v in problem.start_accuracies(w0).items()})
    data = _client_data(problem)
    getattr(algorithms, name)(
        problem.network.flat_model(w0, sparse=problem.sparse(data.features)), data, n_rounds=int(spec["rounds"]),
        local_epochs=int(spec["local_steps"]), batch_size=None, lr=float(spec["lr"]), init=w0, seed=rng,
        callback=_round_callback(problem, rec), device=problem.device, dtype=problem.dtype, **own)
    return {}


_BASELINES = {"ifca": _ifca, "fedavg": _fedavg, "pfedme": _pfedme, "local_sgd": _local_sgd,
              **dict.fromkeys(EXTRA_BASELINES, _extra_baseline)}


def _baseline(problem: MnistProblem, spec: Params, w0: np.ndarray, rng) -> list[dict[str, Any]]:
    """One run of a baseline: its records without the method and seed."""
    records: list[dict[str, Any]] = []

    def rec(iteration: int, keys: dict, metrics: dict) -> None:
        records.extend({"lam": np.nan, **keys, "iteration": iteration, "metric": metric, "value": float(value)}
                       for metric, value in metrics.items())

    extra = _BASELINES[spec["algorithm"]](problem, spec, w0, rec, rng)
    records.extend({"lam": np.nan, "iteration": np.nan, "metric": metric, "value": float(value)}
                   for metric, value in extra.items())
    return records


def _graph_records(problem: MnistProblem) -> list[dict[str, Any]]:
    """The learnt graph's statistics.  No wall-clock times here (the job's or the graph's):
    records must be byte-identical on a rerun; the runner logs the job's duration and the
    graph job logs its stages."""
    g = problem.graph
    metrics = {
        "nodes": g.n_nodes, "edges": len(g.edges),
        "cross_cluster_edges": int(np.sum(g.node_cluster[g.edges[:, 0]] != g.node_cluster[g.edges[:, 1]])),
        "mean_edge_weight": float(np.mean(g.weights)),
    }
    return [{"lam": np.nan, "iteration": np.nan, "metric": metric, "value": float(value)}
            for metric, value in metrics.items()]


def mnist_records(problem: MnistProblem, params: Params, methods: Sequence[str], seeds: Sequence[int],
                  base_seed: int, experiment_id: str) -> dict[int, list[dict[str, Any]]]:
    """The records of ``methods`` for every seed of ``seeds`` (see :func:`run_mnist`).

    Every method of a seed starts from the same vector (stream ``init``) and draws from its
    own stream (its name), so a method's records do not depend on the other methods or
    seeds run beside it.  The Alg. 1 methods that differ only in ``lam`` and ``step_scale``
    are solved together, all seeds at once (:func:`_primal_dual`); the baselines run seed by
    seed.  Nothing global is seeded: every draw, torch's included, comes from these streams.
    """
    starts = {seed: problem.network.initial_params(rng_for(base_seed, experiment_id, seed, "init"))
              for seed in seeds}
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    groups: dict[str, dict[str, Params]] = {}
    for method in methods:
        spec = params["methods"][method]
        if spec["algorithm"] == "primal_dual":
            groups.setdefault(_replica_group(spec), {})[method] = spec

    def draws(seed: int, lam: float) -> np.random.Generator:  # a replica's own stream (seed, lambda)
        return rng_for(base_seed, experiment_id, seed, "restart", float(lam))

    for specs in groups.values():
        runs.update(_primal_dual(problem, specs, starts, draws))
    graph = _graph_records(problem)
    out: dict[int, list[dict[str, Any]]] = {seed: [] for seed in seeds}
    for seed in seeds:
        for method in methods:
            spec = params["methods"][method]
            rows = runs.get((method, seed))
            if rows is None:
                rows = _baseline(problem, spec, starts[seed], rng_for(base_seed, experiment_id, seed, method))
            base = {"method": method, "algorithm": spec["algorithm"], "seed": seed}
            out[seed] += [{**base, **row} for row in rows + graph]
    return out


#: The last job's result (:func:`last_job`).
_LAST_JOB: dict[str, Any] = {}


def last_job(key: Sequence[Any], compute: Callable[[], Any]) -> Any:
    """``compute()``, kept for the next calls with the same ``key`` (JSON-serialisable
    parts) until a call with another key: the pipeline runs a job's seeds in one process,
    one call each, and the first call computes them all."""
    text = json.dumps(list(key), sort_keys=True, default=str)
    if text not in _LAST_JOB:
        _LAST_JOB.clear()
        _LAST_JOB[text] = compute()
    return _LAST_JOB[text]


def job_seeds(params: Params, seed: int) -> list[int]:
    """The seeds solved with ``seed``: the job's repetitions ``0 .. repetitions - 1`` (the
    pipeline's seeds of every target) when ``seed`` is one of them, else ``seed`` alone."""
    seeds = list(range(int(params.get("repetitions", 1))))
    return seeds if seed in seeds else [int(seed)]


def run_mnist(params: Params, setting: str, seed: int, base_seed: int, *,
              inputs: Mapping[str, Any], experiment_id: str) -> pd.DataFrame:
    """Run one method (``setting``), or all of them (``all``), for one seed.

    Columns: ``method`` (the method's name in the config), ``algorithm``, ``seed``, ``lam``
    (Alg. 1 only), ``iteration`` (iteration, round or epoch; 0 is the start), ``metric``
    (``accuracy``: pooled validation accuracy; ``train_accuracy``; final-state metrics and
    the graph's statistics with ``iteration`` missing), ``value``.

    The first call of a job computes every seed of :func:`job_seeds` (Alg. 1 solves them
    together) and keeps them for the calls of the other seeds; a seed's records are the
    same whichever seeds are computed with it.
    """
    params = with_extra_methods(params)  # extra_baselines: one more method each
    seeds = job_seeds(params, seed)
    methods = list(params["methods"]) if setting == ALL_METHODS else [setting]
    records = last_job(["run_mnist", params, methods, seeds, int(base_seed), dict(inputs), experiment_id],
                       lambda: mnist_records(load_problem(params, inputs), params, methods, seeds, base_seed,
                                             experiment_id))
    return pd.DataFrame.from_records(records[int(seed)])


# ------------------------------------------------------------------------------ Table II


def run_mnist_table2(params: Params, setting: str, seed: int, base_seed: int, *,
                     inputs: Mapping[str, Any], experiment_id: str) -> pd.DataFrame:
    """The clusters of the graph ``params["graph"]`` (the one gtv_fig07 uses) beside Table II.

    Columns ``cluster`` (C1, C2, ...), ``source`` (``paper`` or ``graph``), ``metric``
    (``digits``: e.g. ``"0, 1"``; ``nodes``: nodes in the cluster), ``value``, ``seed``.
    """
    graph = load_mnist_graph(inputs["graph"])
    records: list[dict[str, Any]] = []
    for c, pair in enumerate(PAPER_TABLE2):
        records.append({"cluster": f"C{c + 1}", "source": "paper", "metric": "digits",
                        "value": ", ".join(map(str, pair)), "seed": seed})
    for c, digits in enumerate(graph.clusters.tolist()):
        records.append({"cluster": f"C{c + 1}", "source": "graph", "metric": "digits",
                        "value": ", ".join(map(str, digits)), "seed": seed})
        records.append({"cluster": f"C{c + 1}", "source": "graph", "metric": "nodes",
                        "value": str(int(np.sum(graph.node_cluster == c))), "seed": seed})
    return pd.DataFrame.from_records(records)
