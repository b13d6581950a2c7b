"""Timings of the GTV MNIST pipeline: the learnt graph and the batched two-layer networks.

1. The graph of ``gtv_fig07_mnist_five_clusters`` at its default size: 5 clusters x 20
   nodes x 400 training images = 40,000 MNIST images (the issue's bar: 100 nodes x 400
   images in under 2 minutes on 2 cores).  Stages, as the rules ``mnist_tsne``,
   ``mnist_kl`` and ``learn_mnist_graph`` run them
   (:func:`networkedfl.experiments.gtv.mnist_graph.build_mnist_graph` with the default
   config's spec):

   * ``load``: reading the IDX files and partitioning them into the nodes' datasets;
   * ``tsne``: PCA to 50 dimensions + openTSNE of all 40,000 images (2-d);
   * ``kl``: the 100 x 99 = 9,900 directed k-NN KL estimates (4,950 pairs, symmetrised);
   * ``knn``: the 4-NN graph with exponential-kernel weights.

2. Training 100 networks (40) at once (784 -> h = 1 -> 2, 400 images each):

   * one inexact proximal update of Alg. 1 (40 RMSprop steps of the batched network, all
     nodes together; :class:`networkedfl.nn.InexactProxCrossEntropy`), for 1
     and 5 replicas of the nodes (gtv_fig05 solves 5 values of lambda together);
   * one epoch of local momentum SGD (batch 100, the ``local_sgd`` baseline, one
     ``vmap(grad(...))`` call per mini-batch over all nodes).

Thread counts: ``--threads`` (default 2) is given to openTSNE and the k-d tree queries;
``torch.set_num_threads(--torch-threads)`` (default 1: the pipeline's jobs run one thread
each) for the training part.  Nothing is asserted.

Usage::

    .venv/bin/python benchmarks/bench_mnist_graph.py
    .venv/bin/python benchmarks/bench_mnist_graph.py --nodes-per-cluster 4 --threads 1   # quick
    .venv/bin/python benchmarks/bench_mnist_graph.py --tsne-iter 125,250 --skip-training
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _mnist_dir() -> Path:
    for candidate in (ROOT / "data" / "raw" / "mnist", ROOT / "data" / "vendored" / "mnist"):
        if (candidate / "train-images-idx3-ubyte.gz").is_file():
            return candidate
    raise SystemExit("no MNIST files in data/raw/mnist or data/vendored/mnist")


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes-per-cluster", type=int, default=20)
    parser.add_argument("--train", type=int, default=400, help="training images per node")
    parser.add_argument("--threads", type=int, default=2, help="openTSNE and k-d tree threads")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch threads of the training part (2 thrash on a shared machine)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats of the training steps")
    parser.add_argument("--skip-graph", action="store_true")
    parser.add_argument("--tsne-iter", default=None,
                        help="EARLY,LATER: t-SNE iterations of the two phases (default: the config's)")
    parser.add_argument("--skip-training", action="store_true")
    args = parser.parse_args()

    import torch

    from networkedfl.datasets.mnist import load_mnist
    from networkedfl.experiments.gtv.mnist import MnistProblem
    from networkedfl.experiments.gtv.mnist_graph import build_mnist_graph
    from networkedfl.pipeline.config import load_config

    torch.set_num_threads(args.torch_threads)
    config = load_config(ROOT / "config" / "config.yaml")
    spec = dict(config["mnist_graphs"]["five_clusters"])
    spec.update(nodes_per_cluster=args.nodes_per_cluster, train_per_node=args.train)
    if args.tsne_iter:
        early, later = (int(v) for v in args.tsne_iter.split(","))
        spec["tsne"] = {**spec["tsne"], "early_exaggeration_iter": early, "n_iter": later}
    n = len(spec["clusters"]) * args.nodes_per_cluster
    print(f"MNIST graph: {n} nodes x {args.train} training images = {n * args.train} images, "
          f"threads {args.threads}")
    print(f"spec: {spec}")

    start = time.perf_counter()
    split = load_mnist(_mnist_dir(), "train")
    load_s = time.perf_counter() - start
    if args.skip_graph:
        from networkedfl.experiments.gtv.mnist_graph import MnistGraph, partition_mnist

        rng = np.random.default_rng(0)
        idx, node_cluster = partition_mnist(split.labels, spec["clusters"], args.nodes_per_cluster,
                                            args.train + spec["val_per_node"], rng)
        empty = np.zeros((0, 2), np.int64)
        graph = MnistGraph(name="bench", clusters=np.asarray(spec["clusters"]), indices=idx,
                           n_train=args.train, node_cluster=node_cluster,
                           embedding=np.zeros((n, args.train, 2)), seconds={}, spec=spec,
                           divergences=np.zeros((n, n)), distances=np.zeros((n, n)),
                           edges=empty, weights=np.zeros(0))
    else:
        start = time.perf_counter()
        graph = build_mnist_graph("five_clusters", spec, split, int(config["base_seed"]), n_jobs=args.threads)
        total = time.perf_counter() - start
        cross = int(np.sum(graph.node_cluster[graph.edges[:, 0]] != graph.node_cluster[graph.edges[:, 1]]))
        print(f"{'stage':<28}{'seconds':>10}")
        print(f"{'load (IDX read)':<28}{load_s:>10.2f}")
        for stage, label in (("tsne", "tsne (PCA 50 + openTSNE)"), ("kl", f"kl ({n * (n - 1)} estimates)"),
                             ("knn", "knn graph")):
            print(f"{label:<28}{graph.seconds[stage]:>10.2f}")
        print(f"{'graph total (incl. split)':<28}{total:>10.2f}")
        print(f"graph: {len(graph.edges)} edges, {cross} between clusters, "
              f"mean A_e {np.mean(graph.weights):.3g}")

    if args.skip_training:
        return
    from networkedfl.algorithms import local_momentum_sgd
    from networkedfl.nn import ClientData, InexactProxCrossEntropy

    problem = MnistProblem(graph, split.images, split.labels, 1, torch.float32, "cpu")
    net = problem.network
    w0 = net.initial_params(np.random.default_rng(0))
    print(f"\nbatched training: {n} networks 784 -> 1 -> 2 ({net.n_params} parameters each), "
          f"{args.train} images per node, float32, torch threads {torch.get_num_threads()}")
    print(f"{'operation':<48}{'seconds':>10}{'ms/step':>10}")
    for replicas in (1, 5):
        loss = InexactProxCrossEntropy(net, problem.train_x, problem.train_y, replicas=replicas,
                                       steps=40, lr=0.01)
        prox = loss.prox_operator(np.full(replicas * n, 0.25))
        w = np.tile(w0, (replicas * n, 1))
        prox(w)  # warm-up
        s = _median_seconds(lambda p=prox, w=w: p(w), args.repeats)
        print(f"{f'prox update, 40 RMSprop steps, {replicas} replica(s)':<48}{s:>10.3f}{1e3 * s / 40:>10.2f}")
        print(f"{'  -> Alg. 1, K = 70 iterations':<48}{70 * s:>10.1f}")
    data = ClientData.from_arrays(problem.train_x, problem.train_y, dtype=torch.float32)
    model = net.flat_model(w0)

    def epoch():
        local_momentum_sgd(model, data, local_epochs=1, batch_size=100, lr=0.1, momentum=0.5, init=w0,
                           seed=np.random.default_rng(0), dtype=torch.float32)

    epoch()
    s = _median_seconds(epoch, args.repeats)
    steps = -(-args.train // 100)
    print(f"{'local SGD epoch (batch 100, momentum 0.5)':<48}{s:>10.3f}{1e3 * s / steps:>10.2f}")
    print(f"{'  -> 400 epochs':<48}{400 * s:>10.1f}")


if __name__ == "__main__":
    main()
