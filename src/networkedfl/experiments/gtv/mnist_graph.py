"""The MNIST local datasets and their learnt empirical graph (GTV Sec. VI-C), in three stages.

A graph spec (``mnist_graphs: <name>:`` in the config) fixes the clusters (pairs of
digits, GTV Table II), the number of nodes per cluster and of images per node, and how
the graph is learnt.  The pipeline builds it in three cached stages, each a rule of its
own that reads only its part of the spec (:data:`STAGE_KEYS`), so that changing ``k`` or
the kernel reruns only the last stage:

1. **embedding** (:func:`embed_mnist`, ``results/cache/mnist_tsne/<name>.npz``): the
   partition of the MNIST training split into the nodes' local datasets (per cluster, the
   images of its digits are shuffled and dealt out in consecutive blocks of
   ``train_per_node + val_per_node`` images, the first ``train_per_node`` of each block
   for training, as the authors' ``mnist_NN_experiment``), and the t-SNE coordinates of
   the nodes' training images.  ``tsne_images: nodes`` embeds those images alone (the
   paper variant, docs/variants.md); ``digits`` embeds every training image of the
   clusters' digits and keeps the nodes' rows (the notebooks, docs/variants.md §8.7).
2. **divergences** (:func:`mnist_divergences`, ``results/cache/mnist_kl/<name>.npz``):
   the directed k-NN KL estimates ``D_hat(P_i || P_j)`` between the nodes' embedded
   samples (``kl_k``; the notebooks' ``kl_eps: 0.01`` approximate query and
   ``sort_columns: true``, each coordinate sorted on its own within a node).
3. **graph** (:func:`mnist_knn_graph`, ``results/cache/mnist_graph/<name>.npz``): every
   node linked to its ``neighbours`` nearest nodes, ``A_e = exp(-distance / scale)``;
   ``relation: union`` of the symmetrised divergences (the paper) or ``directed`` rows
   of the directed ones (the notebooks, a multigraph), ``rescale: minmax`` (the
   notebooks: the weakest edge gets weight 0).

The graph artefact holds everything the targets read (the partition, the labels'
clusters, the embedding, the divergences and the graph), so the targets read one file.
Randomness comes from the config's base seed and the graph's name only, or the name in
``draws_from``: two specs drawing from the same name and with the same clusters and sizes
hold the same local datasets (the published and paper variants compare graphs on the
same data).  :func:`build_mnist_graph` runs the three stages in one call.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...datasets.mnist import MnistSplit, load_mnist
from ...graphs import (
    EmpiricalGraph,
    divergence_graph,
    pairwise_kl_divergences,
    sort_columns_per_node,
    symmetrised,
    tsne_embedding,
)
from ...io import Paths, read_npz, write_npz
from ...seeding import graph_rng

__all__ = [
    "GRAPH_KIND",
    "STAGE_KEYS",
    "STAGE_KINDS",
    "MnistDivergences",
    "MnistEmbedding",
    "MnistGraph",
    "build_mnist_graph",
    "embed_mnist",
    "embedding_rows",
    "graph_file",
    "graph_names",
    "load_mnist_divergences",
    "load_mnist_embedding",
    "load_mnist_graph",
    "mnist_divergences",
    "mnist_knn_graph",
    "mnist_train_files",
    "partition_mnist",
    "save_mnist_divergences",
    "save_mnist_embedding",
    "save_mnist_graph",
    "stage_file",
    "stage_spec",
]

#: Cache folder of the graph artefacts (``results/cache/<kind>/<name>.npz``).
GRAPH_KIND = "mnist_graph"
#: Cache folder of each stage's artefact.
STAGE_KINDS = {"embedding": "mnist_tsne", "divergences": "mnist_kl", "graph": GRAPH_KIND}
#: The spec keys each stage reads (its rule's params: a change reruns that stage and later).
STAGE_KEYS = {
    "embedding": ("clusters", "nodes_per_cluster", "train_per_node", "val_per_node", "draws_from",
                  "tsne_images", "tsne"),
    "divergences": ("kl_k", "kl_eps", "sort_columns"),
    "graph": ("neighbours", "kernel_scale", "relation", "rescale"),
}
#: Which images t-SNE embeds (``tsne_images``).
TSNE_IMAGES = ("nodes", "digits")


def stage_spec(spec: Mapping[str, Any], stage: str) -> dict[str, Any]:
    """The part of a graph spec that ``stage`` reads (see :data:`STAGE_KEYS`)."""
    if stage not in STAGE_KEYS:
        raise ValueError(f"unknown stage {stage!r}; stages: {list(STAGE_KEYS)}")
    unknown = sorted(set(spec) - {k for keys in STAGE_KEYS.values() for k in keys})
    if unknown:
        raise ValueError(f"unknown MNIST graph spec keys {unknown}; known: {STAGE_KEYS}")
    return {k: json.loads(json.dumps(spec[k])) for k in STAGE_KEYS[stage] if k in spec}


def stage_file(stage: str, name: str) -> str:
    """Where the pipeline caches ``stage`` of the graph ``name`` (relative to the repository root)."""
    return Paths().cache(STAGE_KINDS[stage], name)


def graph_file(name: str) -> str:
    """Where the pipeline caches the graph ``name`` (relative to the repository root)."""
    return stage_file("graph", name)


def graph_names(params: Mapping[str, Any]) -> list[str]:
    """The MNIST graphs a target's parameters name, in order, without repeats: its own
    ``graph``, its variants' and its ablation cases' (recursively)."""
    names: list[str] = []
    blocks = [params, *(params.get("variants") or {}).values(), *(params.get("cases") or {}).values()]
    for i, block in enumerate(blocks):
        block = block or {}
        if "graph" in block:
            names.append(str(block["graph"]))
        if i:  # a variant or a case: its own variants and cases
            names += graph_names({k: v for k, v in block.items() if k != "graph"})
    return list(dict.fromkeys(names))


def mnist_train_files() -> list[str]:
    """The MNIST training files as the download rule places them (below ``data/raw``)."""
    paths = Paths()
    return [paths.raw_data("mnist", f)
            for f in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")]


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


# ------------------------------------------------------------------ stage 1: embedding


@dataclass(frozen=True)
class MnistEmbedding:
    """The nodes' local datasets and the t-SNE coordinates of their training images.

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
    seconds
        Wall-clock seconds of the stage (``tsne``); empty when read from its file, which
        holds no timings (its bytes depend on its content only).
    spec
        The embedding stage's spec (:func:`stage_spec`).
    """

    name: str
    clusters: np.ndarray
    indices: np.ndarray
    n_train: int
    node_cluster: np.ndarray
    embedding: np.ndarray
    seconds: dict[str, float]
    spec: dict[str, Any]

    @property
    def n_nodes(self) -> int:
        return int(self.indices.shape[0])


def embedding_rows(labels: np.ndarray, clusters: Sequence[Sequence[int]], train_idx: np.ndarray,
                   tsne_images: str) -> tuple[np.ndarray, np.ndarray]:
    """Which images t-SNE embeds, and where the nodes' training images sit among them.

    Returns ``(rows, positions)``: ``rows`` are indices into the training split, in the
    order they are embedded; ``positions`` (shaped like ``train_idx``) the row of every
    node's training image in that order.  ``"nodes"``: the nodes' training images, node
    by node.  ``"digits"``: every image whose digit belongs to a cluster, in the split's
    order (the notebooks' t-SNE input).
    """
    train_idx = np.asarray(train_idx, dtype=np.int64)
    if tsne_images == "nodes":
        return train_idx.ravel(), np.arange(train_idx.size).reshape(train_idx.shape)
    if tsne_images == "digits":
        rows = np.flatnonzero(np.isin(np.asarray(labels), [int(d) for c in clusters for d in c]))
        where = np.full(np.asarray(labels).shape[0], -1, np.int64)
        where[rows] = np.arange(rows.size)
        return rows, where[train_idx]
    raise ValueError(f"tsne_images must be one of {TSNE_IMAGES}, got {tsne_images!r}")


def embed_mnist(
    name: str,
    spec: Mapping[str, Any],
    train: MnistSplit | str | os.PathLike | Sequence[str],
    base_seed: int,
    *,
    n_jobs: int = 1,
) -> MnistEmbedding:
    """Stage 1: partition MNIST into the nodes' datasets and embed them (module docstring).

    ``spec`` keys (those of the other stages are ignored, unknown ones are an error):
    ``clusters`` (lists of digits), ``nodes_per_cluster``, ``train_per_node``,
    ``val_per_node``, ``draws_from`` (the name the random streams derive from; default
    ``name``), ``tsne_images`` (``nodes`` or ``digits``) and ``tsne`` (keyword arguments
    of :func:`~networkedfl.graphs.tsne_embedding`).
    """
    spec = stage_spec(spec, "embedding")
    split = train if isinstance(train, MnistSplit) else load_mnist(train, "train")
    rng = graph_rng(base_seed, str(spec.get("draws_from", name)))
    clusters = [list(map(int, c)) for c in spec["clusters"]]
    if len({len(c) for c in clusters}) != 1:
        raise ValueError(f"graph {name}: every cluster must hold the same number of digits, got {clusters}")
    n_train, n_val = int(spec["train_per_node"]), int(spec["val_per_node"])
    indices, node_cluster = partition_mnist(
        split.labels, clusters, int(spec["nodes_per_cluster"]), n_train + n_val, rng)
    n = indices.shape[0]
    rows, positions = embedding_rows(split.labels, clusters, indices[:, :n_train],
                                     str(spec.get("tsne_images", "nodes")))
    features = split.images[rows].reshape(rows.size, -1).astype(np.float64) / 255.0
    start = time.perf_counter()
    coords = tsne_embedding(features, seed=int(rng.integers(2**31 - 1)), n_jobs=n_jobs,
                            **dict(spec.get("tsne", {})))
    seconds = {"tsne": time.perf_counter() - start}
    return MnistEmbedding(
        name=name, clusters=np.asarray(clusters, np.int64), indices=indices, n_train=n_train,
        node_cluster=node_cluster, embedding=coords[positions].reshape(n, n_train, -1),
        seconds=seconds, spec=spec,
    )


def save_mnist_embedding(stage: MnistEmbedding, path: str | os.PathLike) -> None:
    """Write stage 1 atomically as ``.npz`` (metadata as a JSON string; byte-reproducible: no
    timings, :func:`networkedfl.io.write_npz`)."""
    meta = {"name": stage.name, "n_train": stage.n_train, "spec": stage.spec}
    write_npz(path, meta, {k: getattr(stage, k) for k in ("clusters", "indices", "node_cluster", "embedding")})


def load_mnist_embedding(path: str | os.PathLike) -> MnistEmbedding:
    """Read a file written by :func:`save_mnist_embedding`."""
    meta, arrays = read_npz(path)
    return MnistEmbedding(name=meta["name"], n_train=int(meta["n_train"]), seconds=meta.get("seconds", {}),
                          spec=meta["spec"], **arrays)


# ---------------------------------------------------------------- stage 2: divergences


@dataclass(frozen=True)
class MnistDivergences:
    """``(n, n)`` directed KL estimates between the nodes' embedded samples (stage 2)."""

    name: str
    divergences: np.ndarray
    seconds: dict[str, float]
    spec: dict[str, Any]


def mnist_divergences(embedding: MnistEmbedding, spec: Mapping[str, Any], *, n_jobs: int = 1) -> MnistDivergences:
    """Stage 2: ``D_hat(P_i || P_j)`` for all ordered node pairs (module docstring).

    ``spec`` keys: ``kl_k`` (neighbour order, default 1), ``kl_eps`` (approximate query,
    default 0: exact) and ``sort_columns`` (default false).
    """
    spec = stage_spec(spec, "divergences")
    n, m, _ = embedding.embedding.shape
    node = np.repeat(np.arange(n), m)
    points = embedding.embedding.reshape(n * m, -1)
    start = time.perf_counter()
    if bool(spec.get("sort_columns", False)):
        points = sort_columns_per_node(points, node)
    div = pairwise_kl_divergences(points, node, n_nodes=n, k=int(spec.get("kl_k", 1)), workers=n_jobs,
                                  eps=float(spec.get("kl_eps", 0.0)))
    return MnistDivergences(embedding.name, div, {"kl": time.perf_counter() - start}, spec)


def save_mnist_divergences(stage: MnistDivergences, path: str | os.PathLike) -> None:
    """Write stage 2 atomically as a byte-reproducible ``.npz``."""
    write_npz(path, {"name": stage.name, "spec": stage.spec},
               {"divergences": stage.divergences})


def load_mnist_divergences(path: str | os.PathLike) -> MnistDivergences:
    """Read a file written by :func:`save_mnist_divergences`."""
    meta, arrays = read_npz(path)
    return MnistDivergences(meta["name"], arrays["divergences"], meta.get("seconds", {}), meta["spec"])


# ---------------------------------------------------------------------- stage 3: graph


@dataclass(frozen=True)
class MnistGraph(MnistEmbedding):
    """Local MNIST datasets and their learnt graph: the artefact every MNIST target reads.

    An :class:`MnistEmbedding` (the fields of the one it was built from, with ``seconds``
    and ``spec`` of all three stages) with the divergences and the graph:

    Attributes
    ----------
    divergences, distances
        ``(n, n)`` directed KL estimates and their symmetrisation.
    edges, weights
        The graph: ``(E, 2)`` node pairs and ``A_e`` (pairs may repeat with
        ``relation: directed``).
    seconds
        Wall-clock seconds of the stages (``tsne``, ``kl``, ``knn``), of those run in this
        process (the files hold no timings).
    spec
        The spec it was built from (the three stages' parts).
    """

    divergences: np.ndarray
    distances: np.ndarray
    edges: np.ndarray
    weights: np.ndarray

    @property
    def graph(self) -> EmpiricalGraph:
        return EmpiricalGraph(self.n_nodes, self.edges, self.weights, clusters=self.node_cluster,
                              parallel_edges=self.spec.get("relation", "union") == "directed")

    def edge_signs(self) -> np.ndarray:
        """``(E,)`` the sign of every edge's row of the notebooks' incidence matrix in ours.

        The notebooks build ``D`` from the k-NN rows: the edge that node ``i``'s row
        chooses has ``+1`` at ``i`` and ``-1`` at the neighbour; :attr:`graph` has ``+1``
        at the smaller endpoint.  With ``relation: directed`` the edges are stored in row
        order, ``k`` per node (:func:`~networkedfl.graphs.knn_graph`), so the source of
        edge ``e`` is ``e // k``: the sign is ``+1`` where it is the smaller endpoint and
        ``-1`` otherwise.  An undirected graph (``relation: union``) has no sources: all
        ``+1``.  Only an iteration whose duals start away from zero sees the difference
        (``dual_init: weights``): flipping the sign of an edge's row and of its dual
        leaves Algorithm 1 unchanged.
        """
        signs = np.ones(len(self.edges))
        if self.spec.get("relation", "union") != "directed":
            return signs
        k = int(self.spec.get("neighbours", 4))
        source = np.repeat(np.arange(self.n_nodes), k)
        if len(self.edges) != self.n_nodes * k or not np.all((self.edges == source[:, None]).any(axis=1)):
            raise ValueError(f"graph {self.name}: the edges are not the {k} k-NN rows of each node in order")
        signs[self.edges[:, 0] != source] = -1.0
        return signs

    def local_labels(self, digits: np.ndarray) -> np.ndarray:
        """Digits ``(n, m)`` of the nodes' images mapped to their position in the node's cluster."""
        pairs = self.clusters[self.node_cluster]  # (n, k)
        hits = digits[:, :, None] == pairs[:, None, :]
        if not np.all(hits.any(axis=-1)):
            raise ValueError("an image's digit is not in its node's cluster")
        return hits.argmax(axis=-1)


def mnist_knn_graph(embedding: MnistEmbedding, divergences: MnistDivergences,
                    spec: Mapping[str, Any]) -> MnistGraph:
    """Stage 3: the k-NN graph of the divergences, bundled with stages 1 and 2.

    ``spec`` keys: ``neighbours`` (k, default 4), ``kernel_scale`` (default 1),
    ``relation`` (``union`` of the symmetrised divergences, default, or ``directed``
    rows of the directed ones) and ``rescale`` (``none``, default, or ``minmax``); see
    :func:`~networkedfl.graphs.knn_graph`.
    """
    spec = stage_spec(spec, "graph")
    if divergences.divergences.shape != (embedding.n_nodes,) * 2:
        raise ValueError(f"graph {embedding.name}: divergences of shape {divergences.divergences.shape} "
                         f"for {embedding.n_nodes} nodes (stages of different graphs?)")
    div = divergences.divergences
    start = time.perf_counter()
    g = divergence_graph(div, int(spec.get("neighbours", 4)), scale=float(spec.get("kernel_scale", 1.0)),
                         clusters=embedding.node_cluster, relation=str(spec.get("relation", "union")),
                         rescale=str(spec.get("rescale", "none")))
    seconds = {**embedding.seconds, **divergences.seconds, "knn": time.perf_counter() - start}
    return MnistGraph(
        name=embedding.name, clusters=embedding.clusters, indices=embedding.indices,
        n_train=embedding.n_train, node_cluster=embedding.node_cluster, embedding=embedding.embedding,
        divergences=div, distances=symmetrised(div), edges=g.edges, weights=g.weights, seconds=seconds,
        spec={**embedding.spec, **divergences.spec, **spec},
    )


def build_mnist_graph(
    name: str,
    spec: Mapping[str, Any],
    train: MnistSplit | str | os.PathLike | Sequence[str],
    base_seed: int,
    *,
    n_jobs: int = 1,
) -> MnistGraph:
    """The three stages in one call (the pipeline runs them as three cached rules)."""
    embedding = embed_mnist(name, spec, train, base_seed, n_jobs=n_jobs)
    return mnist_knn_graph(embedding, mnist_divergences(embedding, spec, n_jobs=n_jobs), spec)


def save_mnist_graph(graph: MnistGraph, path: str | os.PathLike) -> None:
    """Write the artefact atomically as a byte-reproducible ``.npz`` (metadata as a JSON
    string, without the stages' timings, which the jobs' logs hold)."""
    meta = {"name": graph.name, "n_train": graph.n_train, "spec": graph.spec}
    write_npz(path, meta, {k: getattr(graph, k) for k in ("clusters", "indices", "node_cluster", "embedding",
                                                            "divergences", "distances", "edges", "weights")})


def load_mnist_graph(path: str | os.PathLike) -> MnistGraph:
    """Read an artefact written by :func:`save_mnist_graph`."""
    meta, arrays = read_npz(path)
    return MnistGraph(name=meta["name"], n_train=int(meta["n_train"]), seconds=meta.get("seconds", {}),
                      spec=meta["spec"], **arrays)
