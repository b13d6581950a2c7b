"""Local SGD of the lecture demo: softmax regression's closed-form gradient against
``vmap(grad(loss))``, timed alternately in one process (single thread).

Setting: ``lecture_fig1_fedsgd_vs_fedavg``'s default scale (10 clients x 600 points of the
10-class Gaussian mixture in d = 50, softmax regression with bias, lr 0.1), FedAvg with
E = 5, B = 10 (300 local steps per round, the demo's costliest run) and E = 1, B = 10, for
``--rounds`` rounds.  Each way runs ``--repeats`` times, the two alternating, after one
untimed warm-up each; the figures are medians of process CPU time (robust to other load on
a shared machine) and of wall time.  Also printed: the largest difference between the two
ways' final parameters (rounding: the closed form sums in another order).  Nothing is
asserted.

Usage::

    .venv/bin/python benchmarks/bench_lecture.py
    .venv/bin/python benchmarks/bench_lecture.py --rounds 2 --repeats 3
"""

from __future__ import annotations

import argparse
import dataclasses
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from networkedfl.algorithms import fedavg  # noqa: E402
from networkedfl.experiments.lecture.runs import gaussian_mixture_classification  # noqa: E402
from networkedfl.nn import ClientData, softmax_regression  # noqa: E402


def measure(rounds: int, repeats: int, epochs: int) -> dict[str, float]:
    x, y, _, _ = gaussian_mixture_classification(10, 600, 1, 50, 10, 3.0, np.random.default_rng(0))
    data = ClientData.from_arrays(x, y)
    closed = softmax_regression(50, 10)
    generic = dataclasses.replace(closed, batch_gradient=None)
    ways = {"closed form": closed, "vmap(grad)": generic}

    def run(model):
        return fedavg(model, data, n_rounds=rounds, local_epochs=epochs, batch_size=10, lr=0.1, seed=1).global_params

    final = {name: run(model) for name, model in ways.items()}  # warm-up, and the results compared
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    wall: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(repeats):
        for name, model in ways.items():
            c, w = time.process_time(), time.perf_counter()
            run(model)
            cpu[name].append(time.process_time() - c)
            wall[name].append(time.perf_counter() - w)
    out = {f"{name} cpu s": statistics.median(v) for name, v in cpu.items()}
    out |= {f"{name} wall s": statistics.median(v) for name, v in wall.items()}
    out["max |difference|"] = float((final["closed form"] - final["vmap(grad)"]).abs().max())
    out["steps"] = rounds * epochs * 60
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for epochs in (5, 1):
        r = measure(args.rounds, args.repeats, epochs)
        print(f"FedAvg E={epochs} B=10, {args.rounds} rounds ({r['steps']} local steps), medians of {args.repeats}:")
        for way in ("closed form", "vmap(grad)"):
            print(f"  {way:12s} {r[f'{way} cpu s']:.3f} s CPU  {r[f'{way} wall s']:.3f} s wall  "
                  f"({1e3 * r[f'{way} cpu s'] / r['steps']:.3f} ms CPU per step)")
        print(f"  vmap(grad) / closed form: CPU {r['vmap(grad) cpu s'] / r['closed form cpu s']:.1f}x, "
              f"wall {r['vmap(grad) wall s'] / r['closed form wall s']:.1f}x; "
              f"final parameters differ by at most {r['max |difference|']:.2g}")


if __name__ == "__main__":
    main()
