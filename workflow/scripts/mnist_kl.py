"""Stage 2 of an MNIST graph: the pairwise KL estimates between the nodes' embedded samples."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.experiments.gtv.mnist_graph import (  # noqa: E402
    load_mnist_embedding,
    mnist_divergences,
    save_mnist_divergences,
)
from networkedfl.pipeline.provenance import artefact_provenance, write_sidecar  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
log.info("KL estimates of MNIST graph %s: %s", snakemake.wildcards.graph, snakemake.params.spec)  # noqa: F821
stage = mnist_divergences(load_mnist_embedding(snakemake.input[0]), snakemake.params.spec,  # noqa: F821
                          n_jobs=int(snakemake.threads))  # noqa: F821
log.info("%d x %d divergences in %.2f s", *stage.divergences.shape, stage.seconds["kl"])
save_mnist_divergences(stage, snakemake.output[0])  # noqa: F821
write_sidecar(snakemake.output[0], artefact_provenance(  # noqa: F821
    snakemake.params.code, {"embedding": snakemake.input[0]}, graph=snakemake.wildcards.graph,  # noqa: F821
    stage="divergences", spec=snakemake.params.spec))  # noqa: F821
log.info("wrote %s", snakemake.output[0])  # noqa: F821
_job.finish(snakemake)  # noqa: F821
