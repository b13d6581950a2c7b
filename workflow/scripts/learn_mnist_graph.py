"""Partition MNIST into the nodes' local datasets and learn their graph (GTV Sec. VI-C)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _logging  # noqa: E402

from networkedfl.experiments.gtv_mnist_graph import build_mnist_graph, save_mnist_graph  # noqa: E402

log = _logging.setup(snakemake.log[0])  # noqa: F821
name = snakemake.wildcards.graph  # noqa: F821
log.info("learning MNIST graph %s with %d thread(s): %s", name, snakemake.threads,  # noqa: F821
         snakemake.params.spec)  # noqa: F821
graph = build_mnist_graph(name, snakemake.params.spec, list(snakemake.input),  # noqa: F821
                          int(snakemake.params.base_seed), n_jobs=int(snakemake.threads))  # noqa: F821
cross = int((graph.node_cluster[graph.edges[:, 0]] != graph.node_cluster[graph.edges[:, 1]]).sum())
log.info("%s: %d nodes, %d edges (%d between clusters); seconds: %s", name, graph.n_nodes,
         len(graph.edges), cross, {k: round(v, 2) for k, v in graph.seconds.items()})
save_mnist_graph(graph, snakemake.output[0])  # noqa: F821
log.info("wrote %s", snakemake.output[0])  # noqa: F821
