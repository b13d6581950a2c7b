"""Atomic writers: an output file appears complete or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from ..datasets.download import shared_file_mode

__all__ = ["atomic_write", "keep_previous", "previous_path", "write_csv", "write_json"]


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` then rename the temporary file onto ``path``.

    The temporary file lives in the destination directory so the rename is atomic; on
    any error it is removed and an existing ``path`` is left untouched.  The file gets the
    mode of any new file under the umask (:func:`~networkedfl.datasets.download.shared_file_mode`),
    not the ``0o600`` of the temporary file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        shared_file_mode(tmp)
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_csv(table: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a tidy table as CSV (no index; full float precision, so reruns are byte-identical)."""
    atomic_write(path, lambda tmp: table.to_csv(tmp, index=False, float_format="%.17g"))


def write_json(obj: Any, path: str | os.PathLike) -> None:
    def dump(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2, sort_keys=False)
            fh.write("\n")

    atomic_write(path, dump)


def previous_path(path: str | os.PathLike) -> Path:
    """Where :func:`keep_previous` keeps the last good version of ``path``:
    ``<dir>/.previous/<name>``."""
    path = Path(path)
    return path.parent / ".previous" / path.name


def keep_previous(path: str | os.PathLike) -> Path:
    """Keep the just-written ``path`` as its last good version (a hard link: no copy).

    Snakemake deletes a job's outputs when the job starts; if the rerun then fails (a
    config value that makes the run diverge), the last good result survives here and the
    job's error names it.  Written atomically; replaced after every successful run.
    """
    previous = previous_path(path)
    previous.parent.mkdir(parents=True, exist_ok=True)
    tmp = previous.with_name(f".{previous.name}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(path, tmp)
    except OSError:  # a file system without hard links
        import shutil

        shutil.copy2(path, tmp)
    os.replace(tmp, previous)
    return previous
