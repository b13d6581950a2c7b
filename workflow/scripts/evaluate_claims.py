"""Evaluate a target's claims on its table.  A claim that fails is a verdict; an error in
claim code (or an empty table) fails the job with its traceback in the log, and no claims
file is written (the last good one stays in results/claims/.previous/, issue 45)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.io import write_json  # noqa: E402
from networkedfl.pipeline.integrity import read_table  # noqa: E402
from networkedfl.pipeline.provenance import job_provenance, write_sidecar  # noqa: E402
from networkedfl.pipeline.runner import evaluate_claims  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
target = snakemake.wildcards.target  # noqa: F821
config = {"experiments": {target: snakemake.params.experiment}}  # noqa: F821
claims = evaluate_claims(config, target, read_table(snakemake.input.table))  # noqa: F821
write_json(claims, snakemake.output[0])  # noqa: F821
write_sidecar(snakemake.output[0], job_provenance(target, snakemake.params.code,  # noqa: F821
                                                 inputs={"table": snakemake.input.table}))  # noqa: F821
log.info("%s: %s", target, ", ".join(f"{sum(c['verdict'] == v for c in claims)} {v}"
                                    for v in ("holds", "equivalent", "fails", "inconclusive")))
_job.finish(snakemake)  # noqa: F821
