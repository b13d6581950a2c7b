"""Files: the pipeline's output layout and atomic writes (bottom of the stack).

:class:`Paths` names every file the workflow reads or writes; :func:`atomic_write` and
its helpers write through a temporary file and a rename, so a reader never sees a partial
file, and keep the last good copy in ``.previous/``.
"""

from ._atomic import (
    PAUSE_ENV,
    atomic_write,
    keep_previous,
    previous_path,
    shared_file_mode,
    write_csv,
    write_job_table,
    write_json,
)
from ._paths import Paths, dataset_sources, find_repo_root, vendored_dataset

__all__ = [
    "atomic_write",
    "dataset_sources",
    "find_repo_root",
    "keep_previous",
    "Paths",
    "PAUSE_ENV",
    "previous_path",
    "shared_file_mode",
    "vendored_dataset",
    "write_csv",
    "write_job_table",
    "write_json",
]
