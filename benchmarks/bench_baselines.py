"""Rounds per second of the batched federated baselines, single thread.

Setting: 150 clients, linear regression in d = 50, m = 100 samples per client (the
noisy linear model of the GTV paper, eq. (37), two clusters), float64 on the CPU,
``torch.set_num_threads(1)``.  Measured:

* ``fedavg``: :func:`networkedfl.algorithms.fedavg`, E = 1, B = 10, lr 0.01,
  all clients every round (10 batched ``vmap(grad)`` steps per round);
* ``ifca``: :func:`networkedfl.algorithms.ifca`, k = 2, one full-batch local step;
* ``fedavg (python loop)``: the same FedAvg round written the usual way, one client after
  another with ``torch.autograd`` (only here, for comparison).

Each figure is the median over ``--repeats`` timed runs of ``--rounds`` rounds, after
one untimed warm-up run.  Nothing is asserted.

Usage::

    .venv/bin/python benchmarks/bench_baselines.py
    .venv/bin/python benchmarks/bench_baselines.py --rounds 10 --repeats 3
"""

from __future__ import annotations

import argparse
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from networkedfl.algorithms import fedavg, ifca  # noqa: E402
from networkedfl.gtv import cluster_weights_per_node, linear_model_data  # noqa: E402
from networkedfl.nn import ClientData, FlatModel, linear_regression  # noqa: E402

N_CLIENTS, DIM, SAMPLES = 150, 50, 100
LR, BATCH = 0.01, 10


def make_data(seed: int = 0) -> ClientData:
    rng = np.random.default_rng(seed)
    clusters = np.repeat([0, 1], N_CLIENTS // 2)
    centres = 0.5 * rng.binomial(1, 0.5, size=(2, DIM)).astype(float)
    truth = cluster_weights_per_node(clusters, centres)
    return ClientData.from_node_data(linear_model_data(truth, SAMPLES, 0.001, rng), dtype=torch.float64)


def loop_fedavg(
    model: FlatModel, data: ClientData, n_rounds: int, generator: torch.Generator
) -> torch.Tensor:
    """FedAvg (E = 1, B = 10) with a Python loop over clients and autograd per step."""
    w_global = model.initial_params(dtype=data.dtype)
    counts = data.weight_per_node
    for _ in range(n_rounds):
        local = []
        for i in range(data.n_nodes):
            w = w_global.clone()
            m = int(data.counts[i])
            order = torch.randperm(m, generator=generator)
            x, y = data.features[i], data.targets[i]
            for start in range(0, m, BATCH):
                batch = order[start : start + BATCH]
                w.requires_grad_(True)
                loss = model.loss(w, x[batch], y[batch])
                (g,) = torch.autograd.grad(loss, w)
                w = (w - LR * g).detach()
            local.append(w)
        stacked = torch.stack(local)
        w_global = (counts[:, None] * stacked).sum(0) / counts.sum()
    return w_global


def rounds_per_second(run, n_rounds: int, repeats: int) -> float:
    run(1)  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(n_rounds)
        times.append(time.perf_counter() - t0)
    return n_rounds / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--loop-rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = make_data()
    model = linear_regression(DIM)
    bern = linear_regression(DIM, init="bernoulli")

    def run_fedavg(t: int) -> None:
        fedavg(model, data, n_rounds=t, local_epochs=1, batch_size=BATCH, lr=LR, seed=0, dtype=data.dtype)

    def run_ifca(t: int) -> None:
        ifca(bern, data, n_clusters=2, n_rounds=t, lr=0.1, seed=0, dtype=data.dtype)

    def run_loop(t: int) -> None:
        loop_fedavg(model, data, t, torch.Generator().manual_seed(0))

    tag = f"{N_CLIENTS} clients d={DIM}"
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, m={SAMPLES}, float64")
    r = rounds_per_second(run_fedavg, args.rounds, args.repeats)
    print(f"fedavg {tag} (E=1, B={BATCH}, batched): {r:.1f} rounds/s")
    r_ifca = rounds_per_second(run_ifca, args.rounds, args.repeats)
    print(f"ifca {tag} (k=2, full batch, batched): {r_ifca:.1f} rounds/s")
    r_loop = rounds_per_second(run_loop, args.loop_rounds, args.repeats)
    print(f"fedavg {tag} (E=1, B={BATCH}, python loop over clients): {r_loop:.1f} rounds/s")
    print(f"speed-up of the batched fedavg over the loop: {r / r_loop:.1f}x")


if __name__ == "__main__":
    main()
