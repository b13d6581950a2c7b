"""The MNIST local datasets and their learnt empirical graph (GTV Sec. VI-C), as one artefact.

A graph spec (``mnist_graphs: <name>:`` in the config) fixes the clusters (pairs of
digits, GTV Table II), the number of nodes per cluster and of images per node.  Building
it

1. partitions the MNIST training split: per cluster, the images of its digits are shuffled
   and dealt out in consecutive blocks of ``train_per_node + val_per_node`` images, the
   first ``train_per_node`` of each block for training (as the authors' code,
   ``mnist_NN_experiment``);
2. learns the graph from the nodes' training images (:func:`networkedfl.graph_learning.
   learn_graph`: t-SNE, pairwise KL estimates, 4-NN, ``A_e = exp(-distance)``).

The result is stored as one ``.npz`` file (``results/cache/mnist_graph/<name>.npz``) that
every target using these clusters reads: the partition (image indices into the training
split), the labels' clusters, the embedding, the divergences and the graph.  Randomness
comes from the config's base seed and the graph's name only.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..datasets.mnist import MnistSplit, load_mnist
from ..graph_learning import learn_graph
from ..graphs import EmpiricalGraph
from ..pipeline.io import atomic_write
from ..pipeline.paths import Paths

__all__ = [
    "GRAPH_KIND",
    "MnistGraph",
    "build_mnist_graph",
    "graph_file",
    "graph_seed",
    "load_mnist_graph",
    "mnist_train_files",
    "partition_mnist",
    "save_mnist_graph",
]

#: Cache folder of the graph artefacts (``results/cache/<kind>/<name>.npz``).
GRAPH_KIND = "mnist_graph"


def graph_file(name: str) -> str:
    """Where the pipeline caches the graph ``name`` (relative to the repository root)."""
    return Paths().cache(GRAPH_KIND, name)


def mnist_train_files() -> list[str]:
    """The MNIST training files as the download rule places them (below ``data/raw``)."""
    paths = Paths()
    return [paths.raw_data("mnist", f)
            for f in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")]


def graph_seed(base_seed: int, name: str) -> np.random.Generator:
    """The graph's random stream: depends on the config seed and the graph's name only."""
    return np.random.default_rng(np.random.SeedSequence([int(base_seed), zlib.crc32(name.encode())]))


def partition_mnist(
    labels: np.ndarray,
    clusters: Sequence[Sequence[int]],
    nodes_per_cluster: int,
    images_per_node: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint local datasets: ``nodes_per_cluster`` nodes per cluster of digits.

    Returns
    -------
    indices
        ``(n, images_per_node)`` indices into ``labels``; node ``c * nodes_per_cluster + j``
        belongs to cluster ``c``.  Within a cluster the images of its digits are shuffled
        once and dealt out in consecutive blocks.
    node_cluster
        ``(n,)`` cluster of every node.
    """
    labels = np.asarray(labels)
    digits = [int(d) for c in clusters for d in c]
    if len(set(digits)) != len(digits):
        raise ValueError(f"clusters must be disjoint sets of digits, got {clusters}")
    blocks = []
    for c, cluster in enumerate(clusters):
        pool = np.flatnonzero(np.isin(labels, list(cluster)))
        need = nodes_per_cluster * images_per_node
        if pool.size < need:
            raise ValueError(
                f"cluster {c + 1} (digits {list(cluster)}) has {pool.size} images, "
                f"{nodes_per_cluster} nodes x {images_per_node} need {need}"
            )
        blocks.append(rng.permutation(pool)[:need].reshape(nodes_per_cluster, images_per_node))
    node_cluster = np.repeat(np.arange(len(clusters)), nodes_per_cluster)
    return np.concatenate(blocks), node_cluster


@dataclass(frozen=True)
class MnistGraph:
    """Local MNIST datasets and their learnt graph (see the module docstring).

    Attributes
    ----------
    name
        The graph's name in the config.
    clusters
        ``(k, digits per cluster)`` the digits of every cluster.
    indices
        ``(n, train + val)`` image indices into the MNIST training split.
    n_train
        The first ``n_train`` images of every node are its training set.
    node_cluster
        ``(n,)`` true cluster of every node.
    embedding
        ``(n, n_train, 2)`` t-SNE coordinates of the nodes' training images.
    divergences, distances
        ``(n, n)`` directed KL estimates and their symmetrisation.
    edges, weights
        The graph: ``(E, 2)`` node pairs and ``A_e``.
    seconds
        Wall-clock seconds of the stages (``tsne``, ``kl``, ``knn``).
    spec
        The spec it was built from (as in the config).
    """

    name: str
    clusters: np.ndarray
    indices: np.ndarray
    n_train: int
    node_cluster: np.ndarray
    embedding: np.ndarray
    divergences: np.ndarray
    distances: np.ndarray
    edges: np.ndarray
    weights: np.ndarray
    seconds: dict[str, float]
    spec: dict[str, Any]

    @property
    def n_nodes(self) -> int:
        return int(self.indices.shape[0])

    @property
    def graph(self) -> EmpiricalGraph:
        return EmpiricalGraph(self.n_nodes, self.edges, self.weights, clusters=self.node_cluster)

    def local_labels(self, digits: np.ndarray) -> np.ndarray:
        """Digits ``(n, m)`` of the nodes' images mapped to their position in the node's cluster."""
        pairs = self.clusters[self.node_cluster]  # (n, k)
        hits = digits[:, :, None] == pairs[:, None, :]
        if not np.all(hits.any(axis=-1)):
            raise ValueError("an image's digit is not in its node's cluster")
        return hits.argmax(axis=-1)


def build_mnist_graph(
    name: str,
    spec: Mapping[str, Any],
    train: MnistSplit | str | os.PathLike | Sequence[str],
    base_seed: int,
    *,
    n_jobs: int = 1,
) -> MnistGraph:
    """Partition MNIST and learn the graph of the spec ``name`` (see the module docstring).

    ``spec`` keys: ``clusters`` (lists of digits), ``nodes_per_cluster``,
    ``train_per_node``, ``val_per_node``, ``neighbours`` (k of the k-NN graph), ``kl_k``
    (neighbour order of the KL estimator), ``kernel_scale`` and ``tsne`` (keyword
    arguments of :func:`~networkedfl.graph_learning.tsne_embedding`).
    """
    split = train if isinstance(train, MnistSplit) else load_mnist(train, "train")
    rng = graph_seed(base_seed, name)
    clusters = [list(map(int, c)) for c in spec["clusters"]]
    if len({len(c) for c in clusters}) != 1:
        raise ValueError("every cluster must hold the same number of digits")
    n_train, n_val = int(spec["train_per_node"]), int(spec["val_per_node"])
    indices, node_cluster = partition_mnist(
        split.labels, clusters, int(spec["nodes_per_cluster"]), n_train + n_val, rng)
    n = indices.shape[0]
    train_idx = indices[:, :n_train]
    features = split.images[train_idx.ravel()].reshape(n * n_train, -1).astype(np.float64) / 255.0
    learnt = learn_graph(
        features,
        np.repeat(np.arange(n), n_train),
        random_state=int(rng.integers(2**31 - 1)),
        n_neighbours=int(spec.get("neighbours", 4)),
        kl_k=int(spec.get("kl_k", 1)),
        kernel_scale=float(spec.get("kernel_scale", 1.0)),
        clusters=node_cluster,
        tsne=dict(spec.get("tsne", {})),
        n_jobs=n_jobs,
    )
    return MnistGraph(
        name=name, clusters=np.asarray(clusters, np.int64), indices=indices, n_train=n_train,
        node_cluster=node_cluster, embedding=learnt.embedding.reshape(n, n_train, -1),
        divergences=learnt.divergences, distances=learnt.distances,
        edges=learnt.graph.edges, weights=learnt.graph.weights, seconds=dict(learnt.seconds),
        spec=json.loads(json.dumps(dict(spec))),
    )


def save_mnist_graph(graph: MnistGraph, path: str | os.PathLike) -> None:
    """Write the artefact atomically as ``.npz`` (metadata as a JSON string)."""
    meta = {"name": graph.name, "n_train": graph.n_train, "seconds": graph.seconds, "spec": graph.spec}
    arrays = {k: getattr(graph, k) for k in ("clusters", "indices", "node_cluster", "embedding",
                                              "divergences", "distances", "edges", "weights")}

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, meta=np.array(json.dumps(meta)), **arrays)

    atomic_write(path, write)


def load_mnist_graph(path: str | os.PathLike) -> MnistGraph:
    """Read an artefact written by :func:`save_mnist_graph`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"MNIST graph not found: {path} (built by the rule learn_mnist_graph)")
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        arrays = {k: z[k] for k in z.files if k != "meta"}
    return MnistGraph(name=meta["name"], n_train=int(meta["n_train"]), seconds=meta["seconds"],
                      spec=meta["spec"], **arrays)
