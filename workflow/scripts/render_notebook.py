"""Execute a target's notebook on its table and claims (papermill, in this process's Python)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _logging  # noqa: E402
import nbformat  # noqa: E402
import papermill  # noqa: E402
import yaml  # noqa: E402

from networkedfl.io import atomic_write  # noqa: E402

log = _logging.setup(snakemake.log[0])  # noqa: F821
parameters = yaml.safe_load(Path(snakemake.input.params).read_text(encoding="utf-8"))  # noqa: F821
# no output path: papermill returns the executed notebook, written here in one rename
executed = papermill.execute_notebook(snakemake.input.notebook, None, parameters=parameters,  # noqa: F821
                                      progress_bar=False)
atomic_write(snakemake.output.notebook,  # noqa: F821
             lambda tmp: Path(tmp).write_text(nbformat.writes(executed), encoding="utf-8"))
log.info("executed %s into %s", snakemake.input.notebook, snakemake.output.notebook)  # noqa: F821
