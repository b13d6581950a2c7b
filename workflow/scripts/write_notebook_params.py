"""Write the papermill parameters file of a target's notebook: its files relative to the working
directory (no path of this machine in a results file, issue 41 item 5; the job that executes
the notebook passes its own files, render_notebook.py)."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402
import yaml  # noqa: E402

from networkedfl.experiments import get_experiment  # noqa: E402
from networkedfl.io import atomic_write  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
target = snakemake.wildcards.target  # noqa: F821
experiment = get_experiment(target)
figure = experiment.has_figure
parameters = {
    "target": target,
    "title": experiment.title,
    "source": experiment.source,
    "table": os.path.relpath(snakemake.input.table),  # noqa: F821
    "claims": os.path.relpath(snakemake.input.claims),  # noqa: F821
    "figure_pdf": os.path.relpath(snakemake.params.figure_pdf) if figure else None,  # noqa: F821
    "figure_png": os.path.relpath(snakemake.params.figure_png) if figure else None,  # noqa: F821
    "params": dict(snakemake.params.experiment),  # noqa: F821
}


def dump(tmp):
    with open(tmp, "w", encoding="utf-8") as fh:
        yaml.safe_dump(parameters, fh, sort_keys=False)


atomic_write(snakemake.output[0], dump)  # noqa: F821
log.info("wrote notebook parameters for %s", target)
_job.finish(snakemake)  # noqa: F821
