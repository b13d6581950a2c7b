"""Files: the pipeline's output layout and atomic writes (bottom of the stack).

:class:`Paths` names every file the workflow reads or writes; :func:`atomic_write` and
its helpers write through a temporary file and a rename, so a reader never sees a partial
file, and keep the last good copy in ``.previous/``; an artefact read back that is not
what was written raises :class:`CorruptArtefactError`, naming it and the command that
rebuilds it; :func:`write_npz` writes ``.npz`` files whose bytes depend on their content;
:func:`redact_paths` and :func:`redact_notebook` take the build machine's absolute paths out of
what the pipeline renders.
"""

from ._artefacts import (
    REPAIR_ENV,
    ZIP_DATE,
    CorruptArtefactError,
    file_sha256,
    npz_problem,
    read_npz,
    record_command,
    repair_command,
    write_npz,
)
from ._atomic import (
    PAUSE_ENV,
    atomic_write,
    keep_previous,
    last_good,
    previous_path,
    restore_previous,
    shared_file_mode,
    write_csv,
    write_job_table,
    write_json,
)
from ._paths import Paths, dataset_sources, find_repo_root, vendored_dataset
from ._redact import path_replacements, redact_notebook, redact_paths

__all__ = [
    "atomic_write",
    "CorruptArtefactError",
    "dataset_sources",
    "file_sha256",
    "find_repo_root",
    "keep_previous",
    "last_good",
    "npz_problem",
    "path_replacements",
    "Paths",
    "PAUSE_ENV",
    "previous_path",
    "read_npz",
    "record_command",
    "redact_notebook",
    "redact_paths",
    "REPAIR_ENV",
    "repair_command",
    "restore_previous",
    "shared_file_mode",
    "vendored_dataset",
    "write_csv",
    "write_job_table",
    "write_json",
    "write_npz",
    "ZIP_DATE",
]
