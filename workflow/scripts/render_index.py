"""Write results/index.html: the claims summary and links to every target's outputs."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402
import pandas as pd  # noqa: E402

from networkedfl.experiments import get_experiment  # noqa: E402
from networkedfl.io import (
    Paths,  # noqa: E402
    atomic_write,  # noqa: E402
)
from networkedfl.pipeline.summary import job_seconds, render_index  # noqa: E402

log = _job.start(snakemake, signed=list(snakemake.input))  # noqa: F821
paths = Paths()
page = Path(snakemake.output[0])  # noqa: F821


def href(path):
    return os.path.relpath(path, page.parent)


links, seconds = {}, {}
for target in snakemake.params.targets:  # noqa: F821
    figure = get_experiment(target).has_figure
    links[target] = {
        "report": href(paths.report(target)),
        "notebook": href(paths.executed_notebook(target)),
        "table": href(paths.table(target)),
        "claims": href(paths.claims(target)),
        "pdf": href(paths.figure(target, "pdf")) if figure else None,
        "png": href(paths.figure(target, "png")) if figure else None,
    }
    seconds[target] = job_seconds(sorted(Path(paths.logs, "run", target).glob("*.log")))

summary = pd.read_csv(snakemake.input.summary, keep_default_na=False)  # noqa: F821
atomic_write(page, lambda tmp: Path(tmp).write_text(render_index(summary, links, seconds), encoding="utf-8"))
log.info("wrote %s (%d targets)", page, len(summary))
_job.finish(snakemake)  # noqa: F821
