"""Collect the job records of one target into its tidy table."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.io import write_csv  # noqa: E402
from networkedfl.pipeline.integrity import read_table  # noqa: E402
from networkedfl.pipeline.provenance import read_sidecar, table_provenance, write_sidecar  # noqa: E402
from networkedfl.pipeline.runner import collect_tables, tuning_table  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
target = snakemake.wildcards.target  # noqa: F821
tables = [read_table(path) for path in snakemake.input.raw]  # noqa: F821
# tuning results/tuning/<target>/<setting>.csv (every grid point), by setting
by_setting = {Path(path).stem: [read_table(path)] for path in snakemake.input.tuning}  # noqa: F821
config = {"experiments": {target: snakemake.params.experiment}}  # noqa: F821
tuning = tuning_table(config, target, by_setting)
table = collect_tables(tables + ([tuning] if tuning is not None else []))
write_csv(table, snakemake.output[0])  # noqa: F821
jobs = [read_sidecar(path).get("code_hash") for path in [*snakemake.input.raw, *snakemake.input.tuning]]  # noqa: F821
write_sidecar(snakemake.output[0], table_provenance(target, snakemake.params.code, jobs))  # noqa: F821
log.info("collected %d job files and %d tuning files into %s (%d rows)", len(snakemake.input.raw),  # noqa: F821
         len(snakemake.input.tuning), snakemake.output[0], len(table))  # noqa: F821
_job.finish(snakemake)  # noqa: F821
