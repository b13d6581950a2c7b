"""Execute a target's notebook on its table and claims (papermill, in this process's Python)."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402
import nbformat  # noqa: E402
import papermill  # noqa: E402
import yaml  # noqa: E402

from networkedfl.io import atomic_write, redact_notebook  # noqa: E402
from networkedfl.pipeline.provenance import job_provenance, write_sidecar  # noqa: E402

log = _job.start(snakemake, signed=[snakemake.input.table, snakemake.input.claims])  # noqa: F821
parameters = yaml.safe_load(Path(snakemake.input.params).read_text(encoding="utf-8"))  # noqa: F821
# the files as this job names them, not as the parameters file recorded them (absolute paths:
# in a copy of the working directory they would name the original's table and figures)
parameters.update({name: os.path.abspath(getattr(snakemake.input, name)) for name in ("table", "claims")})  # noqa: F821
parameters.update({f"figure_{ext}": os.path.abspath(getattr(snakemake.output, ext))  # noqa: F821
                   for ext in ("pdf", "png") if hasattr(snakemake.output, ext)})  # noqa: F821
# no output path: papermill returns the executed notebook, written here in one rename
executed = papermill.execute_notebook(snakemake.input.notebook, None, parameters=parameters,  # noqa: F821
                                      progress_bar=False)
# no path of this machine in the report: the working directory and the checkout become ".", the
# venv "<venv>", the home "~" (papermill's parameters, the header's table path, warnings' sources)
checkout = Path(snakemake.scriptdir).resolve().parents[1]  # noqa: F821
executed = redact_notebook(executed, roots=[os.getcwd(), checkout])
atomic_write(snakemake.output.notebook,  # noqa: F821
             lambda tmp: Path(tmp).write_text(nbformat.writes(executed), encoding="utf-8"))
log.info("executed %s into %s", snakemake.input.notebook, snakemake.output.notebook)  # noqa: F821
record = job_provenance(snakemake.wildcards.target, snakemake.params.code,  # noqa: F821
                        inputs={name: getattr(snakemake.input, name) for name in ("notebook", "table", "claims")})  # noqa: F821
for name in ("notebook", "pdf", "png"):  # the figures: written by the notebook
    if hasattr(snakemake.output, name):  # noqa: F821
        write_sidecar(getattr(snakemake.output, name), record)  # noqa: F821
_job.finish(snakemake)  # noqa: F821
