"""Fetch one file of a dataset into data/raw/<name>/ from its configured sources, verifying
its checksum, within the limits configured under `data: download:` (`offline: true`, or
NETWORKEDFL_OFFLINE=1, forbids the network sources)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.datasets import DownloadError, fetch_dataset, get_dataset  # noqa: E402
from networkedfl.datasets.download import DEFAULT_TIMEOUT  # noqa: E402
from networkedfl.io import dataset_sources  # noqa: E402

log = _job.start(snakemake, keeps_previous=False)  # noqa: F821
dataset = get_dataset(snakemake.wildcards.dataset)  # noqa: F821
name = snakemake.wildcards.filename  # noqa: F821
directory = Path(snakemake.output[0]).parent  # noqa: F821
repo = Path(snakemake.scriptdir).resolve().parents[1]  # noqa: F821  (scriptdir may hold "..")
data = snakemake.config["data"]  # noqa: F821
sources = dataset_sources(data[dataset.name]["sources"], repo, dataset.name)
limits = data.get("download") or {}
try:
    report = fetch_dataset(dataset, directory, sources, files=[name], log=log.info,
                           timeout=limits.get("timeout") or DEFAULT_TIMEOUT,
                           deadline=limits.get("deadline"), max_bytes=limits.get("max_bytes"),
                           # offline: true forbids the mirrors; false leaves it to NETWORKEDFL_OFFLINE
                           offline=True if limits.get("offline") else None)
except DownloadError as exc:
    log.error("%s", exc)
    print(exc, file=sys.__stderr__)  # shown by Snakemake beside the log's path
    raise SystemExit(f"download_{dataset.name}: {name} failed:\n{exc}") from None
log.info("%s: %s verified in %s (%s)", dataset.name, name, directory, report.origin[name])
