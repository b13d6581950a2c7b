"""Real datasets: catalog (files, checksums, sources), verified download and readers."""

from .catalog import DATASETS, Dataset, get_dataset
from .download import DownloadError, FetchReport, fetch_dataset, fetch_file, file_digests

__all__ = [
    "DATASETS",
    "Dataset",
    "DownloadError",
    "FetchReport",
    "fetch_dataset",
    "fetch_file",
    "file_digests",
    "get_dataset",
]
