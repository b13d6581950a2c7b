"""Stage 1 of an MNIST graph: partition MNIST into the nodes' datasets and embed them (t-SNE)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.experiments.gtv.mnist_graph import embed_mnist, save_mnist_embedding  # noqa: E402
from networkedfl.pipeline.provenance import artefact_provenance, write_sidecar  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
name = snakemake.wildcards.graph  # noqa: F821
log.info("embedding MNIST graph %s with %d thread(s): %s", name, snakemake.threads,  # noqa: F821
         snakemake.params.spec)  # noqa: F821
stage = embed_mnist(name, snakemake.params.spec, list(snakemake.input),  # noqa: F821
                    int(snakemake.params.base_seed), n_jobs=int(snakemake.threads))  # noqa: F821
log.info("%s: %d nodes x %d training images embedded in %.1f s", name, stage.n_nodes, stage.n_train,
         stage.seconds["tsne"])
save_mnist_embedding(stage, snakemake.output[0])  # noqa: F821
write_sidecar(snakemake.output[0], artefact_provenance(  # noqa: F821
    snakemake.params.code, {"mnist": list(snakemake.input)}, graph=name, stage="embedding",  # noqa: F821
    spec=snakemake.params.spec, base_seed=int(snakemake.params.base_seed)))  # noqa: F821
log.info("wrote %s", snakemake.output[0])  # noqa: F821
_job.finish(snakemake)  # noqa: F821
