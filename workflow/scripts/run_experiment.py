"""Run one job of a target (one setting, or every setting of a grouped target; every
repetition seed) and write its tidy records.  A grouped job's last good table (kept by
networkedfl.io.keep_previous) gives the settings whose runs did not change."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.io import previous_path, write_job_table  # noqa: E402
from networkedfl.pipeline.determinism import pin_job  # noqa: E402
from networkedfl.pipeline.integrity import read_table  # noqa: E402
from networkedfl.pipeline.provenance import job_provenance, write_sidecar  # noqa: E402
from networkedfl.pipeline.runner import GROUP_JOB, read_previous_table, run_group  # noqa: E402
from networkedfl.progress import ENV_VAR  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
# the threads of every library in this process, whatever the cores it was given (its floats
# depend on them), and PyTorch's deterministic mode (networkedfl.pipeline.determinism)
threads_per_job = int(snakemake.params.determinism["threads_per_job"])  # noqa: F821
pin_job(threads_per_job)
# tqdm progress of long loops goes to the job's log: bars appear after 10 s, update every 10 s
os.environ.setdefault(ENV_VAR, "1")
os.environ.setdefault("TQDM_DELAY", "10")
os.environ.setdefault("TQDM_MININTERVAL", "10")
wildcards = snakemake.wildcards  # noqa: F821
experiment = dict(snakemake.params.experiment)  # noqa: F821
# worker processes: the cores Snakemake gave the job (a target's `threads` x threads_per_job, or
# fewer) over the threads of each; the results do not depend on them
workers = max(1, snakemake.threads // threads_per_job)  # noqa: F821
if workers > 1:
    experiment["threads"] = workers
config = {"base_seed": snakemake.params.base_seed, "experiments": {wildcards.target: experiment}}  # noqa: F821
inputs = {name: value if isinstance(value, str) else list(value)
          for name, value in snakemake.input.items()}  # noqa: F821
# the methods' tuning results (one file per tuned setting, every grid point) choose their
# values; not a data input
tuning = {Path(path).stem: [read_table(path)] for path in inputs.pop("tuning", [])}
seed_list = [int(s) for s in snakemake.params.seeds]  # noqa: F821
output = snakemake.output[0]  # noqa: F821
write_job_table(output,
                lambda: run_group(config, wildcards.target, wildcards.setting, seed_list, inputs, tuning,
                                  code=snakemake.params.code,  # noqa: F821
                                  previous=read_previous_table(previous_path(output))
                                  if wildcards.setting == GROUP_JOB else None),
                log)
write_sidecar(output, job_provenance(wildcards.target, snakemake.params.code,  # noqa: F821
                                    setting=wildcards.setting, seeds=seed_list))
log.info("wrote %s", output)
_job.finish(snakemake)  # noqa: F821
