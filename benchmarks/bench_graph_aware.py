"""Rounds per second of the graph-aware FL algorithms (the chapter), single thread.

Setting: the default ``gfl_fig10_3_synthetic`` instance: 50 clients on the 4-NN train
graph, the MLP 8-16-16-8 (sigmoid, no biases, P = 512 parameters), 100 samples per client,
tau = 5 local steps per round, full-batch gradients, on the CPU with
``torch.set_num_threads(1)``.  Every round of every algorithm is batched over the 50
clients (one ``vmap(grad(...))`` call per local step; gossip is one sparse product):

* ``fedavg_steps``, ``dfl_sgd``, ``dfl_gt`` (Metropolis-Hastings mixing), ``fesem`` (K = 3),
* ``bigfl``: tau LL steps plus the UL step with the hyper-gradient (10.20), 5-term Neumann
  series (phi is 512 x 512),
* ``dfl_sgd (python loop)``: the same DFL-SGD round written per client with
  ``torch.autograd`` (only here, for comparison).

Each figure is the median over ``--repeats`` timed runs of ``--rounds`` rounds, after one
untimed warm-up run of 2 rounds.  Nothing is asserted.

Usage::

    .venv/bin/python benchmarks/bench_graph_aware.py
    .venv/bin/python benchmarks/bench_graph_aware.py --rounds 10 --repeats 3 --dtype float32
"""

from __future__ import annotations

import argparse
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from networkedfl.algorithms import (  # noqa: E402
    bigfl,  # noqa: E402
    dfl_gt,
    dfl_sgd,
    fedavg_steps,  # noqa: E402
    fesem,  # noqa: E402
    mixing_operator,
)
from networkedfl.experiments.gfl.synthetic import mlp, synthetic_instance  # noqa: E402
from networkedfl.nn import ClientBatches  # noqa: E402
from networkedfl.pipeline.config import load_config  # noqa: E402

TAU, LR = 5, 0.01
CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"


def loop_dfl_sgd(model, data: ClientBatches, w_mix: torch.Tensor, params: torch.Tensor,
                 n_rounds: int) -> torch.Tensor:
    """DFL-SGD rounds with a Python loop over clients and autograd per step."""
    w_dense = w_mix.to_dense()
    n = params.shape[0]
    for _ in range(n_rounds):
        for t in range(TAU):
            base = w_dense @ params if t == 0 else params
            grads = []
            for i in range(n):
                p = params[i].clone().requires_grad_(True)
                loss = model.loss(p, data.features[i], data.targets[i], data.sample_weights[i])
                grads.append(torch.autograd.grad(loss, p)[0])
            params = base - LR * torch.stack(grads)
    return params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float64")
    args = parser.parse_args()
    torch.set_num_threads(1)
    dtype = getattr(torch, args.dtype)
    runs, n, model, data = make_runs(dtype)
    print(f"{n} clients, P = {model.n_params}, {data.max_samples} samples each, tau = {TAU}, "
          f"{args.dtype}, 1 thread; median of {args.repeats} x {args.rounds} rounds")
    print(f"{'algorithm':<24}{'rounds/s':>10}{'ms/round':>10}")
    for name, fn in runs.items():
        rounds = max(2, args.rounds // 5) if "loop" in name else args.rounds
        fn(2)
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn(rounds)
            times.append((time.perf_counter() - t0) / rounds)
        per = statistics.median(times)
        print(f"{name:<24}{1 / per:>10.1f}{1000 * per:>10.1f}")


def make_runs(dtype: torch.dtype):
    """``(runs, n_clients, model, data)``: ``runs[name](n_rounds)`` runs that many rounds."""
    config = load_config(CONFIG)
    params = config["experiments"]["gfl_fig10_3_synthetic"]
    spec = params["synthetic"]
    inst = synthetic_instance(spec, 0, config["base_seed"])
    model = mlp([8, *spec["hidden"], 8], activation=spec["activation"], bias=False,
                loss="half_squared_norm")
    data = ClientBatches.from_arrays(inst.x_train, inst.y_train, dtype=dtype)
    graph = inst.graphs.train_graph
    init = model.initial_params(torch.Generator().manual_seed(0), dtype=dtype)
    n = data.n_nodes
    common = {"local_steps": TAU, "batch_size": None, "init": init, "seed": 0, "dtype": dtype}
    bl = params["bigfl"]
    runs: dict[str, Callable[[int], object]] = {
        "fedavg_steps": lambda r: fedavg_steps(model, data, n_rounds=r, lr=LR, **common),
        "dfl_sgd": lambda r: dfl_sgd(model, data, graph, n_rounds=r, lr=LR, **common),
        "dfl_gt": lambda r: dfl_gt(model, data, graph, n_rounds=r, lr=LR, **common),
        "fesem": lambda r: fesem(model, data, n_clusters=3, lam=0.1, n_rounds=r, lr=LR, **common),
        "bigfl": lambda r: bigfl(model, data, graph, n_rounds=r, lr=bl["lr_lower"],
                                 lr_upper=bl["lr_upper"], lam=bl["lam"], kappa=bl["kappa"],
                                 n_negatives=bl["n_negatives"], neumann_terms=bl["neumann_terms"],
                                 **common),
    }
    w_mix, _ = mixing_operator(graph, dtype=dtype)
    start = init.expand(n, -1).clone()
    runs["dfl_sgd (python loop)"] = lambda r: loop_dfl_sgd(model, data, w_mix, start, r)
    return runs, n, model, data


if __name__ == "__main__":
    main()
