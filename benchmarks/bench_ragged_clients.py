"""Clients of very different sizes: padded to the largest client against size buckets.

Setting (issue 42, item 4): ``quantity_skew(200000, 2000, 0.1)`` (client sizes from
``Dir(0.1)``), 18 float32 features N(0, I), three classes; the clients' data built by
``networkedfl.datasets.client_data`` with ``layout="padded"`` (one ``ClientData``) and
``layout="buckets"`` (a ``ClientBuckets``: sizes within a factor 2 per bucket), then two rounds
of FedAvg (softmax regression, one local epoch, mini-batches of 32, step 0.1, one thread).

Each layout runs in a fresh subprocess (so that its peak memory is its own) and prints: the
data's bytes, the bytes the container stores, the number of buckets, the peak resident set
size (``ru_maxrss``) and FedAvg's seconds.  Nothing is asserted.

    .venv/bin/python benchmarks/bench_ragged_clients.py [--clients 2000] [--samples 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def case(layout: str, n_samples: int, n_clients: int, alpha: float) -> dict[str, float]:
    import numpy as np
    import torch

    from networkedfl.algorithms import fedavg
    from networkedfl.datasets import client_data, quantity_skew
    from networkedfl.nn import softmax_regression

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n_samples, 18)).astype(np.float32)
    y = rng.integers(0, 3, n_samples)
    data = client_data(x, y, quantity_skew(n_samples, n_clients, alpha, seed=0), layout=layout)
    parts = data.buckets if layout == "buckets" else [data]
    stored = sum(t.numel() * t.element_size() for d in parts
                 for t in (d.features, d.targets, d.sample_weights))
    start = time.perf_counter()
    fedavg(softmax_regression(18, 3), data, n_rounds=2, local_epochs=1, batch_size=32, lr=0.1, seed=0)
    return {"layout": layout, "data_MB": (x.nbytes + y.nbytes) / 1e6, "stored_MB": stored / 1e6,
            "buckets": len(parts), "fedavg_s": time.perf_counter() - start,
            "peak_MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--case", choices=["padded", "buckets"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(case(args.case, args.samples, args.clients, args.alpha)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for layout in ("padded", "buckets"):
        out = subprocess.run([sys.executable, __file__, "--case", layout, "--samples", str(args.samples),
                              "--clients", str(args.clients), "--alpha", str(args.alpha)],
                             capture_output=True, text=True, env=env, check=False)
        if out.returncode:
            print(f"{layout}: failed\n{out.stderr[-2000:]}")
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{layout:8s} data {row['data_MB']:.1f} MB, stored {row['stored_MB']:.1f} MB in "
              f"{row['buckets']} bucket(s), peak RSS {row['peak_MB']:.0f} MB, FedAvg 2 rounds "
              f"{row['fedavg_s']:.1f} s")


if __name__ == "__main__":
    main()
