"""Time per iteration of FedRelax Algorithm 2: the batched tensor vs a loop over node models.

Setting (FedRelax Sec. IV-A, Fig. 1a at d/m = 5): 150 nodes in 3 SBM clusters of 50
(p_in 0.8, p_out 0.2, about 59 neighbours per node), d = 50, m_i = 10 local points and
m' = 100 public points per node, alpha = 0.05, RMSprop lr 0.01, one thread.

* ``batched``: :func:`networkedfl.fedrelax.fedrelax_linear`, the whole
  network as one ``(150, 50)`` weight tensor: one batched ``[M_i | G_i]`` product, one
  product with the adjacency and one ``torch.optim.RMSprop`` step per iteration.
* ``loop``: the same update written the usual way (only here, for comparison): one
  ``nn.Linear(d, 1, bias=False)`` and one ``torch.optim.RMSprop`` per node; every iteration
  each node first computes its predictions on its public data (the shared predictions),
  then each node in turn builds its loss (16), local MSE plus ``alpha sum_i' A_ii'`` times
  the mean squared difference on ``P^(i')`` (the neighbours' public data stacked once,
  outside the timed loop), backpropagates and steps.

Both start from the same weights; after the timed iterations the script prints the largest
difference between the two results (they agree up to rounding).  Figures are medians over
``--repeats`` runs after a warm-up.  Nothing is asserted.

Usage::

    .venv/bin/python benchmarks/bench_fedrelax.py
    .venv/bin/python benchmarks/bench_fedrelax.py --dtype float64 --iterations 500
"""

from __future__ import annotations

import argparse
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from networkedfl.fedrelax import (  # noqa: E402  # noqa: E402
    FedRelaxData,
    clustered_data,
    fedrelax_linear,
    initial_weights,
    linear_problem,
)

N_PER_CLUSTER, DIM, M_LOCAL, M_PUBLIC, ALPHA, LR = 50, 50, 10, 100, 0.05, 0.01


class NodeLoop:
    """Algorithm 2 with one PyTorch model and optimiser per node (the reference loop)."""

    def __init__(self, data: FedRelaxData, init: torch.Tensor, dtype: torch.dtype) -> None:
        n = data.n_nodes
        adj = data.graph.adjacency.tocsr()
        self.x = [torch.as_tensor(v, dtype=dtype) for v in data.features]
        self.y = [torch.as_tensor(v, dtype=dtype) for v in data.labels]
        self.pub = [torch.as_tensor(v, dtype=dtype) for v in data.public]
        self.nbrs, self.pub_cat, self.point_w = [], [], []
        for i in range(n):  # set-up, not timed: the neighbours' public data stacked once
            nb = adj.indices[adj.indptr[i]: adj.indptr[i + 1]]
            a = adj.data[adj.indptr[i]: adj.indptr[i + 1]]
            self.nbrs.append(torch.as_tensor(nb))
            self.pub_cat.append(torch.cat([self.pub[j] for j in nb]))
            self.point_w.append(torch.as_tensor(np.repeat(a / M_PUBLIC, M_PUBLIC), dtype=dtype))
        self.models, self.optims = [], []
        for i in range(n):
            lin = torch.nn.Linear(DIM, 1, bias=False).to(dtype)
            with torch.no_grad():
                lin.weight.copy_(init[i][None])
            self.models.append(lin)
            self.optims.append(torch.optim.RMSprop(lin.parameters(), lr=LR))

    def run(self, n_iter: int) -> None:
        n = len(self.models)
        for _ in range(n_iter):
            with torch.no_grad():  # step 3 of Alg. 2: every node shares its public predictions
                shared = torch.stack([self.models[j](self.pub[j]).squeeze(-1) for j in range(n)])
            for i in range(n):  # step 4: every node minimises (16) by one RMSprop step
                lin, opt = self.models[i], self.optims[i]
                opt.zero_grad()
                local = torch.mean((lin(self.x[i]).squeeze(-1) - self.y[i]) ** 2)
                target = shared[self.nbrs[i]].reshape(-1)
                disc = torch.sum(self.point_w[i] * (lin(self.pub_cat[i]).squeeze(-1) - target) ** 2)
                (local + ALPHA * disc).backward()
                opt.step()

    def weights(self) -> torch.Tensor:
        return torch.stack([lin.weight.detach()[0] for lin in self.models])


def setup(dtype: torch.dtype):
    """The benchmark's network, batched problem and common start: ``(data, problem, init)``."""
    data = clustered_data([N_PER_CLUSTER] * 3, 0.8, 0.2, DIM, M_LOCAL, 1, M_PUBLIC, 0.0,
                          np.random.default_rng(0))
    problem = linear_problem(data.graph, data.features, data.labels, data.public, dtype=dtype)
    init = initial_weights(data.n_nodes, DIM, "uniform", 0, dtype=dtype)
    return data, problem, init


def median_seconds(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200, help="batched iterations per timing")
    parser.add_argument("--loop-iterations", type=int, default=10, help="loop iterations per timing")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    args = parser.parse_args()
    torch.set_num_threads(1)
    dtype = getattr(torch, args.dtype)
    data, problem, init = setup(dtype)
    print("FedRelax Algorithm 2 benchmark (networkedfl.fedrelax._parametric)")
    print(f"python {platform.python_version()}  torch {torch.__version__}  threads "
          f"{torch.get_num_threads()}  {args.dtype}  platform {platform.platform()}")
    print(f"{data.n_nodes} nodes, {data.graph.n_edges} edges (mean degree "
          f"{2 * data.graph.n_edges / data.n_nodes:.1f}), d = {DIM}, m = {M_LOCAL}, "
          f"m' = {M_PUBLIC}, alpha = {ALPHA}, RMSprop lr {LR}")

    fedrelax_linear(problem, ALPHA, n_iter=5, lr=LR, init=init)  # warm-up
    t_batch = median_seconds(
        lambda: fedrelax_linear(problem, ALPHA, n_iter=args.iterations, lr=LR, init=init),
        args.repeats) / args.iterations
    t_exact = median_seconds(
        lambda: fedrelax_linear(problem, ALPHA, n_iter=args.iterations, solver="exact", init=init),
        args.repeats) / args.iterations

    loop = NodeLoop(data, init, dtype)
    loop.run(1)  # warm-up
    t_loop = median_seconds(lambda: loop.run(args.loop_iterations), args.repeats) / args.loop_iterations

    # the same update: both from `init`, the same number of iterations
    check = 5
    ref = NodeLoop(data, init, dtype)
    ref.run(check)
    got = fedrelax_linear(problem, ALPHA, n_iter=check, lr=LR, init=init).weights
    diff = float((got - ref.weights()).abs().max())
    scale = float((got - init).abs().max())

    print(f"batched (one tensor, RMSprop):   {1e3 * t_batch:9.3f} ms/iteration")
    print(f"batched, exact update (16):      {1e3 * t_exact:9.3f} ms/iteration")
    print(f"loop over per-node nn.Linear:    {1e3 * t_loop:9.3f} ms/iteration")
    print(f"speed-up of the batched update over the loop: {t_loop / t_batch:.0f}x "
          f"(bar: >= 100x: {'PASS' if t_loop / t_batch >= 100 else 'FAIL'})")
    print(f"after {check} iterations from the same start: max |batched - loop| = {diff:.2e} "
          f"(max change of a weight {scale:.2e})")


if __name__ == "__main__":
    main()
