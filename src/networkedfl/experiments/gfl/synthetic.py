"""Synthetic experiments of the graph-aware FL chapter (Lu, Xing & Yu, Secs. 10.2-10.4).

* ``gfl_fig10_1_dfl`` (:func:`run_dfl`): FedAvg vs DFL-SGD vs DFL-GT on the five
  heterogeneous nodes of Sec. 10.2, one job per method; the test loss of every round.
* ``gfl_fig10_3_synthetic`` (:func:`run_synthetic`): BiG-FL vs FeSEM, FedAvg, DFL-SGD and
  DFL-GT on the homologous-graph data of Sec. 10.5.1, one job per method; the local test
  loss of every round.
* ``gfl_fig10_2_homologous_graphs`` (:func:`run_homologous_graphs`): the node and edge
  lists of the two graphs that ``gfl_fig10_3_synthetic`` uses (its instance of seed 0).
* ``gfl_table10_1_settings`` (:func:`run_settings_table`): Table 10.1 emitted from the
  ``synthetic`` block of the configuration, beside the published values.

The three synthetic targets share one ``synthetic`` parameter block (a YAML anchor in
``config/config.yaml``), and every instance is drawn from the stream of
``gfl_fig10_3_synthetic`` (:func:`synthetic_instance`), so the diagram, the table and the
figure describe the same data.  torch is imported inside the run functions only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ...datasets import (
    HomologousGraphs,
    heterogeneous_nodes,
    homologous_graph,
    homologous_graphs,
    node_regression_data,
)
from ...graphs import EmpiricalGraph, ring
from ...seeding import generator_for, rng_for
from ..baseline_runs import run_baseline
from ..baselines import EXTRA_BASELINES, baseline_options, extra_baselines
from ..claims import CLUSTER_ORACLE, LOCAL, MEAN, ORACLE
from ..tuning import VALIDATION_METRIC, evaluation_data

__all__ = [
    "DIAGNOSTICS",
    "METHOD_NAMES",
    "SYNTHETIC_ID",
    "SyntheticInstance",
    "TABLE_10_1",
    "VALIDATION_MODES",
    "baseline_epochs",
    "layer_shapes",
    "method_settings",
    "mlp",
    "run_dfl",
    "run_homologous_graphs",
    "run_settings_table",
    "run_synthetic",
    "settings_rows",
    "synthetic_instance",
    "upper_level_gain",
    "validation_instance",
]

Params = Mapping[str, Any]

#: The target whose random stream draws every synthetic instance (Figs. 10.2, 10.3, Table 10.1).
SYNTHETIC_ID = "gfl_fig10_3_synthetic"
#: History keys of the algorithms recorded as table metrics (BiG-FL's UL diagnostics, see
#: :func:`~networkedfl.algorithms.bigfl`; DFL's consensus distance).
DIAGNOSTICS = ("upper_loss", "upper_loss_full", "upper_loss_identity", "upper_step_decrease",
               "hypergradient_norm", "phi_distance", "consensus_distance")
METHOD_NAMES = {"fedavg": "FedAvg", "dfl_sgd": "DFL-SGD", "dfl_gt": "DFL-GT", "fesem": "FeSEM",
                "bigfl": "BiG-FL", "local": LOCAL, "oracle": ORACLE, "mean": MEAN,
                "cluster_oracle": CLUSTER_ORACLE, **EXTRA_BASELINES}


# ------------------------------------------------------------------------------- model

def mlp(sizes: Sequence[int], *, activation: str, bias: bool, loss: str, name: str = "mlp") -> Any:
    """A multilayer perceptron as a :class:`~networkedfl.nn.FlatModel`.

    ``sizes`` = ``[d_in, h_1, ..., d_out]``; hidden layers apply ``activation`` (``relu``,
    ``sigmoid`` or ``tanh``), the output layer is linear; weights are stored ``(in, out)``
    row-major, each followed by its bias when ``bias``.  Initialisation: every entry
    ``U[-1/sqrt(fan_in), 1/sqrt(fan_in)]`` (PyTorch's ``nn.Linear`` bounds), drawn from the
    generator.  ``loss``: ``"squared"`` (mean over outputs of the squared error, the MSE)
    or ``"half_squared_norm"`` (``(1/2) ||y - y_hat||^2`` summed over outputs, the data
    term of the chapter's eq. (10.17)).  A single output is returned as shape ``(m,)``.
    The model's batched gradients and Hessian-vector products are closed forms
    (:class:`~networkedfl.nn.DenseDerivatives`).
    """
    import torch

    from ...nn import DenseDerivatives, FlatModel

    acts = {"relu": torch.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh}
    if activation not in acts:
        raise ValueError(f"unknown activation {activation!r}; expected one of {sorted(acts)}")
    if loss not in ("squared", "half_squared_norm"):
        raise ValueError(f"unknown loss {loss!r}")
    act = acts[activation]
    shapes = list(zip(sizes[:-1], sizes[1:], strict=True))
    n_params = sum(a * b + (b if bias else 0) for a, b in shapes)
    scalar_out = int(sizes[-1]) == 1

    def forward(params: Any, x: Any) -> Any:
        h, off = x, 0
        for k, (a, b) in enumerate(shapes):
            h = h @ params[off:off + a * b].reshape(a, b)
            off += a * b
            if bias:
                h = h + params[off:off + b]
                off += b
            if k < len(shapes) - 1:
                h = act(h)
        return h.squeeze(-1) if scalar_out else h

    def sample_loss(out: Any, y: Any) -> Any:
        err = (out - y) ** 2
        if err.ndim > 1:
            err = err.mean(-1) if loss == "squared" else err.sum(-1)
        return 0.5 * err if loss == "half_squared_norm" else err

    def init(generator: Any, dtype: Any, device: Any) -> Any:
        if generator is None:
            raise ValueError("the MLP initialisation is random: pass a generator")
        parts = []
        for a, b in shapes:
            bound = 1.0 / math.sqrt(a)
            parts.append((2 * torch.rand(a * b, generator=generator, dtype=torch.float64) - 1) * bound)
            if bias:
                parts.append((2 * torch.rand(b, generator=generator, dtype=torch.float64) - 1) * bound)
        return torch.cat(parts).to(dtype=dtype, device=device)

    label = f"{name}({'-'.join(map(str, sizes))}, {activation}, bias={bias})"
    closed = DenseDerivatives(sizes, activation=activation, bias=bias, loss=loss)
    return FlatModel(n_params, forward, sample_loss, init, label, batch_gradient=closed.gradients,
                     batch_hessian=closed.hessian)


def _torch_setup(params: Params) -> tuple[Any, Any, Any]:
    import torch

    from ...nn import as_device, as_dtype

    # float64 unless the configuration names another (the package's default is float32)
    return torch, as_dtype(params.get("dtype", "float64")), as_device(params.get("device"))


def method_settings(params: Params) -> list[str]:
    """One job per configured method, then one per extra baseline (``extra_baselines``,
    :mod:`~networkedfl.experiments.baselines`)."""
    unknown = [m for m in params["methods"] if m not in METHOD_NAMES or m in EXTRA_BASELINES]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; expected some of "
                         f"{[m for m in METHOD_NAMES if m not in EXTRA_BASELINES]}")
    return [*params["methods"], *extra_baselines(params)]


def baseline_epochs(local_steps: int, batch_size: int, n_samples: int) -> int:
    """The epochs of an extra baseline (whose local work is counted in epochs of
    ``ceil(n_samples / batch_size)`` mini-batch steps) that make the ``local_steps`` steps of
    the figure's other methods; a :class:`ValueError` when no whole number of epochs does."""
    per_epoch = math.ceil(n_samples / batch_size)
    if local_steps % per_epoch:
        raise ValueError(f"extra baselines count local work in epochs of {per_epoch} steps "
                         f"(ceil({n_samples} samples / batch_size {batch_size})): local_steps "
                         f"{local_steps} is not a whole number of epochs; set batch_size >= {n_samples} "
                         f"(full batch) or local_steps a multiple of {per_epoch}")
    return local_steps // per_epoch


# ------------------------------------------------------------------ Fig. 10.1 (DFL)

def _communication_graph(params: Params, n: int) -> EmpiricalGraph:
    if params.get("graph", "ring") != "ring":
        raise ValueError(f"unknown graph {params['graph']!r} (only 'ring')")
    return ring(n)


def run_dfl(params: Params, setting: str, seed: int, base_seed: int, *,
            experiment_id: str) -> pd.DataFrame:
    """Fig. 10.1: one method on the heterogeneous nodes; test loss after every round.

    Records per round ``r`` (``step`` = ``r * tau`` iterations; round 0 is the common start):
    ``test_loss`` (mean over the nodes' models of each model's MSE on the union of all
    nodes' test sets, i.e. the test value of (P1) at every node's model),
    ``test_loss_average_model`` (the same for the network-average model) and, for DFL,
    ``consensus_distance``.  A non-finite loss (divergence) is recorded as ``inf``.

    Reference bounds (issue 17): ``local`` (every node trains alone: FedAvg with each node
    its own group), ``oracle`` (centralised SGD on the pooled data, the minimiser's route of
    (P1): one global step per iteration on all nodes' mini-batches, ``T`` iterations
    recorded every ``tau``) and ``mean`` (the pooled training mean predicted everywhere).
    With ``validation_fraction`` in ``params`` (the tuning protocol,
    :mod:`~networkedfl.experiments.tuning`) every node holds out that share of its training
    data and the loss on the union of the held-out sets is recorded as ``validation_loss``.
    """
    from ...algorithms import dfl_gt, dfl_sgd, fedavg_steps
    from ...nn import ClientBatches, inverse_sqrt

    torch, dtype, device = _torch_setup(params)
    nodes = heterogeneous_nodes(
        rng_for(base_seed, experiment_id, seed, "data"), dim=int(params["dim"]),
        n_train=int(params["n_train"]), n_test=int(params["n_test"]),
        input_ranges=params["input_ranges"], nonlinearities=params["nonlinearities"],
        standardize=bool(params["standardize_inputs"]),
        standardize_targets=bool(params.get("standardize_targets", False)))
    x_train, y_train, x_eval, y_eval, metric = evaluation_data(
        params, rng_for(base_seed, experiment_id, seed, "validation"),
        nodes.x_train, nodes.y_train, nodes.x_test, nodes.y_test)
    n = x_train.shape[0]
    tau = int(params["local_steps"])
    n_rounds = math.ceil(int(params["iterations"]) / tau)
    name = METHOD_NAMES[setting]
    records: list[dict[str, Any]] = []

    def add(round_: int, metric_: str, value: float) -> None:
        records.append({"method": name, "round": round_, "step": round_ * tau, "metric": metric_,
                        "value": float(value), "seed": seed})

    if setting == "mean":
        loss = float(((y_eval - y_train.mean()) ** 2).mean())
        add(0, metric, loss)
        add(n_rounds, metric, loss)
        return pd.DataFrame.from_records(records)
    model = mlp([int(params["dim"]), *map(int, params["hidden"]), 1], activation=params["activation"],
                bias=True, loss="squared")
    init = model.initial_params(generator_for(base_seed, experiment_id, seed, "init"),
                                dtype=dtype, device=device)
    data = ClientBatches.from_arrays(x_train, y_train, dtype=dtype, device=device)
    x_test = torch.as_tensor(x_eval).to(dtype=dtype, device=device).reshape(-1, x_eval.shape[-1])
    y_test = torch.as_tensor(y_eval).to(dtype=dtype, device=device).reshape(-1)

    def test_loss(models: Any) -> float:
        out = torch.vmap(model.forward, in_dims=(0, None))(models, x_test)
        value = float(((out - y_test) ** 2).mean())
        return value if math.isfinite(value) else math.inf

    def evaluate(round_: int, client_params: Any) -> None:
        add(round_, metric, test_loss(client_params))
        if metric == "test_loss":
            add(round_, "test_loss_average_model", test_loss(client_params.mean(0, keepdim=True)))

    evaluate(0, init[None])
    common = {"n_rounds": n_rounds, "local_steps": tau, "lr": inverse_sqrt(float(params["lr_scale"])),
              "batch_size": int(params["batch_size"]), "init": init,
              "seed": rng_for(base_seed, experiment_id, seed, setting),
              "callback": lambda s: evaluate(s.round, s.client_params), "device": device, "dtype": dtype}
    graph = _communication_graph(params, n)
    with np.errstate(all="ignore"):
        if setting == "fedavg":
            fedavg_steps(model, data, **common)
        elif setting == "local":
            fedavg_steps(model, data, groups=np.arange(n), **common)
        elif setting == "oracle":  # one pooled step per iteration, recorded every tau
            fedavg_steps(model, data, **{
                **common, "n_rounds": n_rounds * tau, "local_steps": 1,
                "callback": lambda s: evaluate(s.round // tau, s.client_params) if s.round % tau == 0 else None})
        elif setting == "dfl_sgd":
            result = dfl_sgd(model, data, graph=graph, rule=params["rule"], **common)
        elif setting == "dfl_gt":
            result = dfl_gt(model, data, graph=graph, rule=params["rule"], **common)
        else:
            raise ValueError(f"{experiment_id} has no method {setting!r}")
    if setting in ("dfl_sgd", "dfl_gt"):
        for row in result.history:
            add(int(row["round"]), "consensus_distance", row["consensus_distance"])
    return pd.DataFrame.from_records(records)


# ------------------------------------------------------- the shared synthetic instance

def layer_shapes(spec: Params) -> list[tuple[int, int]]:
    """LL layer shapes ``[(8, 16), (16, 16), (16, 8)]`` from the synthetic block."""
    r, c = (int(v) for v in spec["weight_shape"])
    sizes = [r, *map(int, spec["hidden"]), c]
    return list(zip(sizes[:-1], sizes[1:], strict=True))


@dataclass(frozen=True)
class SyntheticInstance:
    """One repetition of the homologous-graph task (Sec. 10.5.1, Table 10.1).

    Inputs are divided by the input range's bound (``/60``) and the targets standardised
    with the mean and standard deviation of all training targets (the same affine map for
    the test targets).
    """

    graphs: HomologousGraphs
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    input_scale: float = 1.0
    target_mean: float = 0.0
    target_std: float = 1.0
    input_range: tuple[float, float] = (-1.0, 1.0)

    def test_distribution_sample(self, rng: np.random.Generator, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
        """Fresh samples of every test node's own distribution (its ground-truth weights
        ``W_i^test``), scaled like the instance's data: the oracle's training data."""
        x, y = node_regression_data(rng, self.graphs.w_test, n_samples, self.input_range)
        return x / self.input_scale, (y - self.target_mean) / self.target_std


def synthetic_instance(spec: Params, seed: int, base_seed: int) -> SyntheticInstance:
    """The instance of repetition ``seed``, drawn from ``gfl_fig10_3_synthetic``'s stream
    (its ``data`` key)."""
    rng = rng_for(base_seed, SYNTHETIC_ID, seed, "data")
    hg = homologous_graphs(
        rng, n_nodes=int(spec["n_nodes"]), n_centers=int(spec["n_centres"]),
        center_range=spec["centre_range"], std=float(spec["std"]),
        weight_shape=spec["weight_shape"], n_neighbours=int(spec["n_neighbours"]),
        propagate=bool(spec.get("propagate_ground_truth", True)))
    m, rng_in = int(spec["n_samples"]), spec["input_range"]
    x, y = node_regression_data(rng, hg.w_train, m, rng_in)
    xt, yt = node_regression_data(rng, hg.w_test, m, rng_in)
    scale = max(abs(float(v)) for v in rng_in)
    mu, sd = float(y.mean()), float(y.std())
    return SyntheticInstance(hg, x / scale, (y - mu) / sd, xt / scale, (yt - mu) / sd, scale, mu, sd,
                             (float(rng_in[0]), float(rng_in[1])))


def validation_instance(inst: SyntheticInstance, spec: Params, seed: int, base_seed: int) -> SyntheticInstance:
    """``inst`` with its test graph replaced by a third graph of the same mixture, drawn as
    the test graph is: node ``i`` from train node ``i``'s component, its own k-NN graph and
    propagated ground truth, ``n_samples`` fresh samples per node, scaled with ``inst``'s
    training statistics.  The tuning protocol of Fig. 10.3 scores a grid point on it
    (``validation: homologous_graph``): the figure's test graph is never read, and the
    validation asks what the test asks (how well client ``i``'s model fits a node homologous
    to its own), not how well it fits more of its own node's data.  Drawn from the
    instance's stream under the ``validation-graph`` key, so the instance itself is unchanged.
    """
    rng = rng_for(base_seed, SYNTHETIC_ID, seed, "validation-graph")
    hg = inst.graphs
    z, graph, w = homologous_graph(rng, hg.centers, hg.components, std=float(spec["std"]),
                                   weight_shape=spec["weight_shape"], n_neighbours=int(spec["n_neighbours"]),
                                   propagate=bool(spec.get("propagate_ground_truth", True)))
    x, y = node_regression_data(rng, w, int(spec["n_samples"]), inst.input_range)
    graphs = replace(hg, z_test=z, test_graph=graph, w_test=w)
    return replace(inst, graphs=graphs, x_test=x / inst.input_scale,
                   y_test=(y - inst.target_mean) / inst.target_std)


#: How Fig. 10.3's tuning runs draw their validation data (``validation``): a third graph
#: homologous to the train and test graphs (:func:`validation_instance`), or a held-out share
#: of every client's training samples (the protocol before issue 34).
VALIDATION_MODES = ("homologous_graph", "held_out")


# ---------------------------------------------------------------- Fig. 10.3 (synthetic)

def run_synthetic(params: Params, setting: str, seed: int, base_seed: int, *,
                  experiment_id: str) -> pd.DataFrame:
    """Fig. 10.3: one method on the homologous-graph task; local test loss every round.

    Client ``i`` trains on train-graph node ``i``'s data and is tested on test-graph node
    ``i``'s data with its own model (FedAvg: the global model).  Records per round:
    ``test_loss`` (the LL data loss ``(1/2)||y - y_hat||^2`` per test sample, averaged over
    samples and clients), ``test_mse`` (per output); BiG-FL adds ``upper_loss`` (the UL
    loss (10.14) at the round's LL iterate, not the UL objective (10.12a): it moves with the
    LL models, see :func:`~networkedfl.algorithms.bigfl`), its diagnostics
    ``upper_loss_full`` / ``upper_loss_identity`` (the UL loss with every non-neighbour as
    a negative, at ``phi`` and at ``phi = I``: their difference is what the UL steps
    achieved), ``upper_step_decrease``, ``hypergradient_norm`` and ``phi_distance``; DFL
    ``consensus_distance``; FeSEM ``cluster_agreement`` (adjusted
    Rand index of its final clusters against the mixture components).

    Reference bounds (issue 17): ``local`` (every client trains alone: FedAvg with each
    client its own group), ``oracle`` (every client knows its test node's ground-truth
    weights ``W_i^test`` and trains alone on as many fresh samples of that node's
    distribution as the others get: what the LL model can learn without the train/test
    graph shift), ``cluster_oracle`` (FedAvg within the true mixture components: each
    client's model trained on its true cluster's pooled data; not a bound here, since the
    propagated weights differ within a component) and ``mean`` (every client predicts its
    own training targets' mean).

    With ``validation_fraction`` (a run of the tuning protocol,
    :mod:`~networkedfl.experiments.tuning`) the same loss is recorded as ``validation_loss``
    on validation data chosen by ``validation`` (:data:`VALIDATION_MODES`):
    ``homologous_graph`` (the default) trains on all the training samples and scores every
    client on a third graph drawn as the test graph is (:func:`validation_instance`; the
    oracle then knows that graph's weights), so ``validation_fraction`` splits nothing;
    ``held_out`` holds out that share of every client's training samples and scores the
    clients on them.
    """
    from ...algorithms import bigfl, dfl_gt, dfl_sgd, fedavg_steps, fesem
    from ...nn import ClientBatches

    torch, dtype, device = _torch_setup(params)
    spec = params["synthetic"]
    inst = synthetic_instance(spec, seed, base_seed)
    mode = params.get("validation", VALIDATION_MODES[0])
    if mode not in VALIDATION_MODES:
        raise ValueError(f"{experiment_id}: unknown validation {mode!r}; expected one of {list(VALIDATION_MODES)}")
    homologous = params.get("validation_fraction") is not None and mode == "homologous_graph"
    if homologous:  # the validation graph takes the test graph's place
        inst = validation_instance(inst, spec, seed, base_seed)
    x_source, y_source = inst.x_train, inst.y_train
    if setting == "oracle":  # knows its test node's weights: trains on that node's distribution
        x_source, y_source = inst.test_distribution_sample(
            rng_for(base_seed, experiment_id, seed, "oracle-data"), inst.x_train.shape[1])
    if homologous:
        x_train, y_train, x_eval, y_eval, metric = x_source, y_source, inst.x_test, inst.y_test, VALIDATION_METRIC
    else:
        x_train, y_train, x_eval, y_eval, metric = evaluation_data(
            params, rng_for(base_seed, experiment_id, seed, "validation"),
            x_source, y_source, inst.x_test, inst.y_test)
    name = METHOD_NAMES[setting]
    records: list[dict[str, Any]] = []

    def add(round_: int, metric_: str, value: float) -> None:
        records.append({"method": name, "round": round_, "metric": metric_, "value": float(value),
                        "seed": seed})

    if setting == "mean":
        err = (y_eval - y_train.mean(axis=1, keepdims=True)) ** 2
        for round_ in (0, int(params["rounds"])):
            add(round_, metric, float(0.5 * err.sum(-1).mean()))
            if metric == "test_loss":
                add(round_, "test_mse", float(err.mean()))
        return pd.DataFrame.from_records(records)
    r, c = (int(v) for v in spec["weight_shape"])
    model = mlp([r, *map(int, spec["hidden"]), c], activation=spec["activation"], bias=False,
                loss="half_squared_norm")
    init = model.initial_params(generator_for(base_seed, experiment_id, seed, "init"),
                                dtype=dtype, device=device)
    data = ClientBatches.from_arrays(x_train, y_train, dtype=dtype, device=device)
    x_test = torch.as_tensor(x_eval).to(dtype=dtype, device=device)
    y_test = torch.as_tensor(y_eval).to(dtype=dtype, device=device)
    n = x_test.shape[0]

    def evaluate(round_: int, client_params: Any) -> None:
        out = torch.vmap(model.forward)(client_params.expand(n, -1), x_test)
        err = (out - y_test) ** 2
        loss = float(0.5 * err.sum(-1).mean())
        add(round_, metric, loss if math.isfinite(loss) else math.inf)
        if metric == "test_loss":
            add(round_, "test_mse", float(err.mean()))

    evaluate(0, init[None])
    common = {"n_rounds": int(params["rounds"]), "local_steps": int(params["local_steps"]),
              "batch_size": int(params["batch_size"]), "init": init,
              "seed": rng_for(base_seed, experiment_id, seed, setting),
              "callback": lambda s: evaluate(s.round, s.client_params), "device": device,
              "dtype": dtype}
    graph, lr = inst.graphs.train_graph, float(params["lr"])
    if setting in ("fedavg", "local", "oracle", "cluster_oracle"):
        groups = {"fedavg": None, "local": np.arange(n), "oracle": np.arange(n),
                  "cluster_oracle": inst.graphs.components}[setting]
        result = fedavg_steps(model, data, lr=lr, groups=groups, **common)
    elif setting in ("dfl_sgd", "dfl_gt"):
        run = dfl_sgd if setting == "dfl_sgd" else dfl_gt
        result = run(model, data, graph=graph, lr=lr, rule=params["rule"], **common)
    elif setting == "fesem":
        fs = params["fesem"]
        result = fesem(model, data, n_clusters=int(fs["n_clusters"]), lam=float(fs["lam"]),
                       lr=float(fs.get("lr", lr)), **common)
        add(int(params["rounds"]), "cluster_agreement",
            _adjusted_rand(result.assignment.cpu().numpy(), inst.graphs.components))
    elif setting == "bigfl":
        bs = params["bigfl"]
        result = bigfl(model, data, graph, lr=float(bs["lr_lower"]), lr_upper=float(bs["lr_upper"]),
                       lam=float(bs["lam"]), kappa=float(bs["kappa"]),
                       lam_upper=float(bs.get("lam_upper", bs["lam"])),
                       n_negatives=int(bs["n_negatives"]), neumann_terms=int(bs["neumann_terms"]),
                       diagnostics=params.get("validation_fraction") is None,  # not read in tuning
                       **common)
    elif setting in EXTRA_BASELINES:  # FedProx, SCAFFOLD, FedAdam, FedYogi, Ditto: not the chapter's
        epochs = baseline_epochs(int(params["local_steps"]), int(params["batch_size"]), x_train.shape[1])
        options = {k: v for k, v in common.items() if k != "local_steps"}
        result = run_baseline(setting, model, data, baseline_options(setting, params), lr=lr,
                              local_epochs=epochs, **options)
    else:
        raise ValueError(f"{experiment_id} has no method {setting!r}")
    for row in result.history:
        for key in DIAGNOSTICS:
            if key in row:
                add(int(row["round"]), key, row[key])
    return pd.DataFrame.from_records(records)


def _adjusted_rand(labels: np.ndarray, truth: np.ndarray) -> float:
    """Adjusted Rand index of two partitions (Hubert & Arabie 1985); 1 for equal ones."""
    _, a = np.unique(np.asarray(labels), return_inverse=True)
    _, b = np.unique(np.asarray(truth), return_inverse=True)
    table = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(table, (a, b), 1)

    def pairs(x: np.ndarray) -> float:
        return float((x * (x - 1) / 2).sum())

    index, rows, cols, total = pairs(table), pairs(table.sum(1)), pairs(table.sum(0)), pairs(np.array([a.size]))
    expected = rows * cols / total if total else 0.0
    top = 0.5 * (rows + cols) - expected
    return 1.0 if top == 0 else float((index - expected) / top)


def _upper_level_gains(table: pd.DataFrame) -> pd.DataFrame:
    """BiG-FL's UL gain ``f(phi^t, Theta^t) - f(I, Theta^t)``: index ``(seed, round)``."""
    rows = table[table["metric"].isin(["upper_loss_full", "upper_loss_identity"])]
    if rows.empty:
        return pd.DataFrame()
    wide = rows.pivot_table(index=["seed", "round"], columns="metric", values="value")
    return (wide["upper_loss_full"] - wide["upper_loss_identity"]).rename("gain").to_frame()


def upper_level_gain(table: pd.DataFrame) -> pd.Series:
    """BiG-FL's UL gain per round (mean over seeds): ``f(phi^t, Theta^t) - f(I, Theta^t)``
    with every non-neighbour as a negative, i.e. how much the learnt GNN layer lowers the
    UL loss (10.14) at the round's LL models (negative: lower).  Empty without BiG-FL."""
    gains = _upper_level_gains(table)
    if gains.empty:
        return pd.Series(dtype=float)
    return gains["gain"].groupby(level="round").mean().sort_index()


# ------------------------------------------------------- Fig. 10.2 (homologous graphs)

def _projection(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and the two leading principal directions ``(D, 2)`` of ``points``."""
    mean = points.mean(axis=0)
    _, _, vt = np.linalg.svd(points - mean, full_matrices=False)
    return mean, vt[:2].T


def run_homologous_graphs(params: Params, setting: str, seed: int, base_seed: int, *,
                          experiment_id: str) -> pd.DataFrame:
    """Fig. 10.2: node and edge lists of the train and test graphs of
    ``gfl_fig10_3_synthetic``'s instance ``seed``, positioned by the two principal
    components of all node vectors (one projection for both graphs and the centres).

    Rows (``element``): ``centre`` (x, y), ``node`` (x, y, with its ``graph`` and
    ``component``), ``edge`` (``source``, ``target``), ``weight`` (the 8 x 8 ground truth of
    one train node per component, ``row``/``col``), ``component_distance`` (distance from
    the mean node vector of a graph's component to every centre), ``sample`` (the first
    inputs and outputs of those nodes), and ``base_seed`` (to re-create the instance).
    """
    spec = params["synthetic"]
    inst = synthetic_instance(spec, seed, base_seed)
    hg = inst.graphs
    mean, axes = _projection(np.vstack([hg.z_train, hg.z_test]))
    rows: list[dict[str, Any]] = [{"element": "base_seed", "metric": "base_seed", "value": base_seed}]
    for k, xy in enumerate((hg.centers - mean) @ axes):
        rows += [{"element": "centre", "component": k, "metric": "x", "value": xy[0]},
                 {"element": "centre", "component": k, "metric": "y", "value": xy[1]}]
    for name, z, g in (("train", hg.z_train, hg.train_graph), ("test", hg.z_test, hg.test_graph)):
        for i, xy in enumerate((z - mean) @ axes):
            base = {"graph": name, "element": "node", "node": i, "component": int(hg.components[i])}
            rows += [{**base, "metric": "x", "value": xy[0]}, {**base, "metric": "y", "value": xy[1]}]
        for a, b in g.edges:
            rows.append({"graph": name, "element": "edge", "source": int(a), "target": int(b),
                         "metric": "weight", "value": 1.0})
        for k in range(hg.centers.shape[0]):
            members = z[hg.components == k]
            if len(members):
                dist = np.linalg.norm(hg.centers - members.mean(axis=0), axis=1)
                rows += [{"graph": name, "element": "component_distance", "component": k,
                          "centre": j, "metric": "distance", "value": d} for j, d in enumerate(dist)]
    examples = [int(np.flatnonzero(hg.components == k)[0]) for k in np.unique(hg.components)]
    for i in examples:
        w = hg.w_train[i]
        rows += [{"graph": "train", "element": "weight", "node": i, "component": int(hg.components[i]),
                  "row": a, "col": b, "metric": "ground_truth", "value": w[a, b]}
                 for a in range(w.shape[0]) for b in range(w.shape[1])]
        for s in range(min(5, inst.x_train.shape[1])):
            rows += [{"graph": "train", "element": "sample", "node": i, "sample": s, "col": j,
                      "metric": kind, "value": v}
                     for kind, vec in (("input", inst.x_train[i, s]), ("output", inst.y_train[i, s]))
                     for j, v in enumerate(vec)]
    table = pd.DataFrame.from_records(rows)
    table["seed"] = seed
    return table


# ------------------------------------------------------------------- Table 10.1

#: Table 10.1 as published: (group, item, value).
TABLE_10_1: tuple[tuple[str, str, str], ...] = (
    ("Common Mixture Distribution", "Distribution Type", "Gaussian"),
    ("Common Mixture Distribution", "Number of Center", "3"),
    ("Common Mixture Distribution", "Range of Center", "[-0.5, 0.5]"),
    ("Common Mixture Distribution", "Standard Deviation", "0.5"),
    ("Common Mixture Distribution", "Dimension", "64"),
    ("Homologous Graph Generation", "Number of Neighbor Connections", "4"),
    ("Homologous Graph Generation", "Node Dimension", "64"),
    ("Homologous Graph Generation", "Node Number of Train Graph", "50"),
    ("Homologous Graph Generation", "Node Number of Test Graph", "50"),
    ("Node Data Synthesis", "Shape of Ground Truth Weight", "8×8"),
    ("Node Data Synthesis", "Shape of Input", "100×8"),
    ("Node Data Synthesis", "Range of Input Distribution", "[-60, 60]"),
    ("Node Data Synthesis", "Shape of Input (printed transposed)", "8×100"),
    ("Node (Lower Level) Model", "Number of Layer", "3"),
    ("Node (Lower Level) Model", "Activation Function", "Sigmoid"),
    ("Node (Lower Level) Model", "Shape of Layers", "[8×16, 16×16, 16×8]"),
    ("Upper Level Model", "Shape of GNN weight", "512×512"),
)


def _num(v: Any) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else f"{f:g}"


def settings_rows(spec: Params) -> dict[tuple[str, str], str]:
    """The value of every Table 10.1 row computed from a ``synthetic`` block."""
    r, c = (int(v) for v in spec["weight_shape"])
    dim, m = r * c, int(spec["n_samples"])
    shapes = layer_shapes(spec)
    p = sum(a * b for a, b in shapes)  # flattened LL weights (no biases)
    lo, hi = spec["centre_range"]
    ilo, ihi = spec["input_range"]
    values = [
        "Gaussian", _num(spec["n_centres"]), f"[{_num(lo)}, {_num(hi)}]", _num(spec["std"]), str(dim),
        _num(spec["n_neighbours"]), str(dim), _num(spec["n_nodes"]), _num(spec["n_nodes"]),
        f"{r}×{c}", f"{m}×{r}", f"[{_num(ilo)}, {_num(ihi)}]", f"{r}×{m}",
        str(len(shapes)), str(spec["activation"]).capitalize(),
        "[" + ", ".join(f"{a}×{b}" for a, b in shapes) + "]", f"{p}×{p}",
    ]
    return {(g, item): v for (g, item, _), v in zip(TABLE_10_1, values, strict=True)}


def run_settings_table(params: Params, setting: str, seed: int, base_seed: int, *,
                       experiment_id: str) -> pd.DataFrame:
    """Table 10.1 from the configuration's ``synthetic`` block (shared with Fig. 10.3),
    with the published value and a ``provenance`` flag (``paper`` or ``choice``) per row."""
    got = settings_rows(params["synthetic"])
    records = []
    for group, item, paper in TABLE_10_1:
        value = got[(group, item)]
        records.append({"group": group, "item": item, "paper": paper,
                        "provenance": "paper" if value == paper else "choice",
                        "metric": "setting", "value": value, "seed": seed})
    return pd.DataFrame.from_records(records)
