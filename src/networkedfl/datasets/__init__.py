"""Real datasets: catalog (files, checksums, sources), verified download and readers."""

from .catalog import DATASETS, Dataset, get_dataset
from .download import (
    DownloadError,
    DownloadLimitError,
    FetchReport,
    fetch_dataset,
    fetch_file,
    file_digests,
)
from .verify import ChecksumError, check_raw_file

__all__ = [
    "DATASETS",
    "ChecksumError",
    "Dataset",
    "DownloadError",
    "DownloadLimitError",
    "FetchReport",
    "check_raw_file",
    "fetch_dataset",
    "fetch_file",
    "file_digests",
    "get_dataset",
]
