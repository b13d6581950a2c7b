"""A/B timings of the GTV MNIST training (Figs. 5-7): dense vs sparse products, one seed per
solve vs all seeds together, in one process.

1. One gradient of the two-layer network (40 nodes x 400 images, float32) for ``R``
   replicas: the dense batched products (``(n, m, F)`` features) vs
   :class:`networkedfl.nn.SparseSamples` (CSR, 32-bit indices), per call and per replica,
   and whether a replica's numbers depend on the replicas beside it.
2. Alg. 1 on Fig. 5's published variant (5 values of lambda) for ``--seeds`` seeds and
   ``--iterations`` iterations: as before (dense, one solve of 5 replicas per seed) and now
   (sparse, one solve of 5 x seeds replicas); the records of a seed are compared with those
   of the seed solved alone.
3. FedAvg's full-batch local steps (IFCA's too): the dense fast path vs the sparse one of
   ``TwoLayerNetwork.flat_model(sparse=[the clients' features])`` (building included).

Needs the default config's cached graphs (``results/cache/mnist_graph/``, built by the
pipeline: ``snakemake --cores 2 learn_mnist_graph`` or any MNIST target)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_mnist_training.py
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_mnist_training.py --iterations 2 --seeds 3   # quick
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

ROOT = Path(__file__).resolve().parents[1]


def _cpu_seconds(fn, repeats: int = 1) -> float:
    """Median CPU seconds of ``fn()`` (CPU time: the shared machine's load inflates wall time)."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=5, help="Alg. 1 iterations K (default 5)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds solved together (default 3)")
    parser.add_argument("--repeats", type=int, default=10, help="repeats of a gradient timing (median)")
    args = parser.parse_args()
    torch.set_num_threads(1)

    from networkedfl.algorithms import fedavg
    from networkedfl.experiments.gtv.mnist import _client_data, load_problem, mnist_records
    from networkedfl.experiments.variants import variant_params
    from networkedfl.nn import SparseSamples
    from networkedfl.pipeline.config import load_config
    from networkedfl.pipeline.runner import job_inputs

    config = load_config(ROOT / "config" / "config.yaml")
    target = "gtv_fig05_mnist_lambda"
    params = variant_params(config["experiments"][target], "published")
    inputs = {k: (str(ROOT / v) if isinstance(v, str) else [str(ROOT / p) for p in v])
              for k, v in job_inputs(config, target, "published.primal_dual").items()}
    if not Path(inputs["graph"]).is_file():
        raise SystemExit(f"no cached graph at {inputs['graph']}: build it with the pipeline first")
    problem = load_problem(params, inputs)
    net, x, y = problem.network, problem.train_x, problem.train_y
    n, m, f = x.shape
    print(f"two-layer network {f} -> {net.n_hidden} -> {net.n_classes}, {n} nodes x {m} images, float32, "
          f"1 thread; density of the images {float((x != 0).float().mean()):.3f}")

    sparse = SparseSamples.of(x)
    print(f"SparseSamples.of: {_cpu_seconds(lambda: SparseSamples.of(x)):.3f} s CPU")
    g = torch.Generator().manual_seed(0)
    params_all = torch.rand(25, n, net.n_params, generator=g) * 0.1
    _, full = net.losses_and_gradients(params_all, sparse, y)
    print("\n1. one gradient (CPU ms; median of repeats)")
    print(f"{'R':>4}{'dense':>10}{'sparse':>10}{'dense/sparse':>14}{'sparse/replica':>16}{'same alone':>12}")
    for r in (1, 3, 5, 15, 25):
        p = params_all[:r]
        dense_s = _cpu_seconds(lambda p=p: net.losses_and_gradients(p, x, y), args.repeats)
        sparse_s = _cpu_seconds(lambda p=p: net.losses_and_gradients(p, sparse, y), args.repeats)
        alone = torch.equal(net.losses_and_gradients(params_all[r - 1:r], sparse, y)[1], full[r - 1:r])
        print(f"{r:>4}{1e3 * dense_s:>10.2f}{1e3 * sparse_s:>10.2f}{dense_s / sparse_s:>14.2f}"
              f"{1e3 * sparse_s / r:>16.2f}{alone!s:>12}")

    print(f"\n2. Alg. 1, Fig. 5 published (5 lambdas), K = {args.iterations}, {args.seeds} seeds (CPU s)")
    spec = {**params["methods"]["primal_dual"], "n_iter": args.iterations}
    short = {**params, "methods": {"primal_dual": spec}}
    seeds = list(range(args.seeds))
    dense = {**short, "methods": {"primal_dual": {**spec, "sparse": False}}}  # the previous products
    start = time.process_time()
    for seed in seeds:  # a solve per seed, as before
        mnist_records(problem, dense, ["primal_dual"], [seed], int(config["base_seed"]), target)
    before = time.process_time() - start
    start = time.process_time()
    together = mnist_records(problem, short, ["primal_dual"], seeds, int(config["base_seed"]), target)
    after = time.process_time() - start
    alone = mnist_records(problem, short, ["primal_dual"], [seeds[-1]], int(config["base_seed"]), target)
    same = pd.DataFrame(together[seeds[-1]]).equals(pd.DataFrame(alone[seeds[-1]]))
    print(f"dense, a solve per seed: {before:.1f} s; sparse, seeds together: {after:.1f} s; "
          f"ratio {before / after:.2f}; seed {seeds[-1]}'s records equal to its solve alone: {same}")

    print("\n3. FedAvg, 20 full-batch local steps per round, 20 rounds (CPU s; sparse: its CSR built once included)")
    w0 = net.initial_params(np.random.default_rng(0))
    data = _client_data(problem)

    def run(sparse_path: bool) -> torch.Tensor:
        model = net.flat_model(w0, sparse=[data.features] if sparse_path else [])
        return fedavg(model, data, n_rounds=20, local_epochs=20, batch_size=None, lr=0.1, init=w0, seed=0,
                      dtype=torch.float32).global_params

    dense_s, sparse_s = _cpu_seconds(lambda: run(False)), _cpu_seconds(lambda: run(True))
    diff = float((run(False) - run(True)).abs().max())
    print(f"dense {dense_s:.2f} s, sparse {sparse_s:.2f} s, ratio {dense_s / sparse_s:.2f}; "
          f"largest difference of the models {diff:.1e} (float32 rounding)")


if __name__ == "__main__":
    main()
