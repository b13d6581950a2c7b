"""Collect the job records of one target into its tidy table."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _logging  # noqa: E402
import pandas as pd  # noqa: E402

from networkedfl.pipeline.io import write_csv  # noqa: E402
from networkedfl.pipeline.runner import collect_tables  # noqa: E402

log = _logging.setup(snakemake.log[0])  # noqa: F821
table = collect_tables([pd.read_csv(path) for path in snakemake.input])  # noqa: F821
write_csv(table, snakemake.output[0])  # noqa: F821
log.info("collected %d job files into %s (%d rows)", len(snakemake.input), snakemake.output[0], len(table))  # noqa: F821
