"""Stage 3 of an MNIST graph: the k-NN kernel graph, bundled with the partition and embedding."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.experiments.gtv.mnist_graph import (  # noqa: E402
    load_mnist_divergences,
    load_mnist_embedding,
    mnist_knn_graph,
    save_mnist_graph,
)
from networkedfl.pipeline.provenance import artefact_provenance, write_sidecar  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
name = snakemake.wildcards.graph  # noqa: F821
log.info("k-NN graph of MNIST graph %s: %s", name, snakemake.params.spec)  # noqa: F821
graph = mnist_knn_graph(load_mnist_embedding(snakemake.input.embedding),  # noqa: F821
                        load_mnist_divergences(snakemake.input.divergences),  # noqa: F821
                        snakemake.params.spec)  # noqa: F821
cross = int((graph.node_cluster[graph.edges[:, 0]] != graph.node_cluster[graph.edges[:, 1]]).sum())
log.info("%s: %d nodes, %d edges (%d between clusters); seconds: %s", name, graph.n_nodes,
         len(graph.edges), cross, {k: round(v, 2) for k, v in graph.seconds.items()})
save_mnist_graph(graph, snakemake.output[0])  # noqa: F821
write_sidecar(snakemake.output[0], artefact_provenance(  # noqa: F821
    snakemake.params.code, {"embedding": snakemake.input.embedding,  # noqa: F821
                            "divergences": snakemake.input.divergences},  # noqa: F821
    graph=name, stage="graph", spec=snakemake.params.spec))  # noqa: F821
log.info("wrote %s", snakemake.output[0])  # noqa: F821
_job.finish(snakemake)  # noqa: F821
