"""Run every grid point of one method's tuning on the validation split and write their scores.

One process for all the points (a job's start-up is paid once). The job's last good table
(kept by networkedfl.io.keep_previous, which Snakemake's deletion of the outputs at the
start of a job does not reach) gives the points whose run did not change: an edited grid
runs only its new or changed points.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.io import previous_path, write_job_table  # noqa: E402
from networkedfl.pipeline.determinism import pin_job  # noqa: E402
from networkedfl.pipeline.provenance import job_provenance, write_sidecar  # noqa: E402
from networkedfl.pipeline.runner import read_previous_tuning, run_tuning_setting  # noqa: E402
from networkedfl.progress import ENV_VAR  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
pin_job(int(snakemake.params.determinism["threads_per_job"]))  # noqa: F821  (networkedfl.pipeline.determinism)
os.environ.setdefault(ENV_VAR, "1")
os.environ.setdefault("TQDM_DELAY", "10")
os.environ.setdefault("TQDM_MININTERVAL", "10")
output = snakemake.output[0]  # noqa: F821
inputs = {name: value if isinstance(value, str) else list(value)
          for name, value in snakemake.input.items()}  # noqa: F821
specs = list(snakemake.params.specs)  # noqa: F821
write_job_table(output,
                lambda: run_tuning_setting(snakemake.wildcards.target, specs,  # noqa: F821
                                           int(snakemake.params.base_seed), inputs,  # noqa: F821
                                           code=snakemake.params.code,  # noqa: F821
                                           previous=read_previous_tuning(previous_path(output))),
                log)
write_sidecar(output, job_provenance(snakemake.wildcards.target, snakemake.params.code,  # noqa: F821
                                     setting=snakemake.wildcards.setting, points=len(specs)))  # noqa: F821
log.info("wrote %s", output)
_job.finish(snakemake)  # noqa: F821
