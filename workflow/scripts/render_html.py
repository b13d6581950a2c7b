"""Render a target's executed notebook as HTML (nbconvert's HTML exporter)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402
from nbconvert import HTMLExporter  # noqa: E402

from networkedfl.io import atomic_write  # noqa: E402
from networkedfl.pipeline.provenance import job_provenance, write_sidecar  # noqa: E402

log = _job.start(snakemake, signed=list(snakemake.input))  # noqa: F821
page, _ = HTMLExporter().from_filename(snakemake.input[0])  # noqa: F821
atomic_write(snakemake.output[0], lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))  # noqa: F821
write_sidecar(snakemake.output[0], job_provenance(snakemake.wildcards.target, snakemake.params.code,  # noqa: F821
                                                 inputs={"notebook": snakemake.input[0]}))  # noqa: F821
log.info("rendered %s as %s", snakemake.input[0], snakemake.output[0])  # noqa: F821
_job.finish(snakemake)  # noqa: F821
