"""Run one job of a target (one setting, every repetition seed) and write its tidy records."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.io import write_job_table  # noqa: E402
from networkedfl.pipeline.integrity import read_table  # noqa: E402
from networkedfl.pipeline.provenance import job_provenance, write_sidecar  # noqa: E402
from networkedfl.pipeline.runner import run_setting  # noqa: E402
from networkedfl.progress import ENV_VAR  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
# tqdm progress of long loops goes to the job's log: bars appear after 10 s, update every 10 s
os.environ.setdefault(ENV_VAR, "1")
os.environ.setdefault("TQDM_DELAY", "10")
os.environ.setdefault("TQDM_MININTERVAL", "10")
wildcards = snakemake.wildcards  # noqa: F821
experiment = dict(snakemake.params.experiment)  # noqa: F821
if snakemake.threads > 1:  # noqa: F821  (the cores Snakemake gave the job: a target's `threads` or fewer)
    experiment["threads"] = snakemake.threads  # noqa: F821
config = {"seed": snakemake.params.base_seed, "experiments": {wildcards.target: experiment}}  # noqa: F821
inputs = {name: value if isinstance(value, str) else list(value)
          for name, value in snakemake.input.items()}  # noqa: F821
# the method's tuning results (one file, every grid point) choose its values; not a data input
tuning = [read_table(path) for path in inputs.pop("tuning", [])] or None
seed_list = [int(s) for s in snakemake.params.seeds]  # noqa: F821
write_job_table(snakemake.output[0],  # noqa: F821
                lambda: run_setting(config, wildcards.target, wildcards.setting, seed_list, inputs, tuning),
                log)
write_sidecar(snakemake.output[0], job_provenance(wildcards.target, snakemake.params.code,  # noqa: F821
                                                 setting=wildcards.setting, seeds=seed_list))
log.info("wrote %s", snakemake.output[0])  # noqa: F821
_job.finish(snakemake)  # noqa: F821
