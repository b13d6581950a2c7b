"""Fetch one dataset into data/raw/<name>/ from its configured sources, verifying checksums."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _logging  # noqa: E402

from networkedfl.datasets import DownloadError, fetch_dataset, get_dataset  # noqa: E402
from networkedfl.pipeline.paths import dataset_sources  # noqa: E402

log = _logging.setup(snakemake.log[0])  # noqa: F821
dataset = get_dataset(snakemake.params.dataset)  # noqa: F821
directory = Path(snakemake.output[0]).parent  # noqa: F821
repo = Path(snakemake.scriptdir).resolve().parents[1]  # noqa: F821  (scriptdir may hold "..")
sources = dataset_sources(snakemake.config["data"][dataset.name]["sources"], repo, dataset.name)  # noqa: F821
try:
    report = fetch_dataset(dataset, directory, sources, log=log.info)
except DownloadError as exc:
    log.error("%s", exc)
    print(exc, file=sys.__stderr__)  # shown by Snakemake beside the log's path
    raise SystemExit(f"download_{dataset.name} failed:\n{exc}") from None
log.info("%s: %d files verified in %s", dataset.name, len(report.origin), directory)
