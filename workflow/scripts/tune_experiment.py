"""Run one grid point of one method's tuning on the validation split and write its score."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _logging  # noqa: E402

from networkedfl.io import write_job_table  # noqa: E402
from networkedfl.pipeline.provenance import job_provenance, write_sidecar  # noqa: E402
from networkedfl.pipeline.runner import run_tuning_job  # noqa: E402
from networkedfl.progress import ENV_VAR  # noqa: E402

log = _logging.setup(snakemake.log[0])  # noqa: F821
os.environ.setdefault(ENV_VAR, "1")
os.environ.setdefault("TQDM_DELAY", "10")
os.environ.setdefault("TQDM_MININTERVAL", "10")
inputs = {name: value if isinstance(value, str) else list(value)
          for name, value in snakemake.input.items()}  # noqa: F821
write_job_table(snakemake.output[0],  # noqa: F821
                lambda: run_tuning_job(snakemake.wildcards.target, snakemake.params.spec,  # noqa: F821
                                       int(snakemake.params.base_seed), inputs),  # noqa: F821
                log)
write_sidecar(snakemake.output[0], job_provenance(snakemake.wildcards.target, snakemake.params.code,  # noqa: F821
                                                 setting=snakemake.wildcards.setting,  # noqa: F821
                                                 point=int(snakemake.wildcards.point)))  # noqa: F821
log.info("wrote %s", snakemake.output[0])  # noqa: F821
