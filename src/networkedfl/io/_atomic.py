"""Atomic writers: an output file appears complete or not at all."""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is an optional dependency (the pipeline's): only its tables come here
    import pandas as pd

__all__ = ["PAUSE_ENV", "atomic_write", "keep_previous", "last_good", "previous_path", "restore_previous", "write_csv",
           "write_json", "write_job_table"]

#: Fault injection for the interruption tests (``tests/integration/test_faults.py``): seconds every
#: :func:`atomic_write` waits between writing its temporary file and renaming it onto the
#: output, so that a test can stop a job in the middle of a write.  Unset in normal use.
def shared_file_mode(path: str | os.PathLike) -> None:
    """Give ``path`` the mode a newly created file gets under the process umask (``0o644``
    under the usual ``022``).  :func:`tempfile.mkstemp` creates its files ``0o600``, so a
    temporary file renamed into place would otherwise stay unreadable to colleagues on a
    shared machine."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


PAUSE_ENV = "NETWORKEDFL_TEST_WRITE_PAUSE"


def _temporary_prefix(path: Path) -> str:
    """``.<name>.<host>-``: the start of every temporary of ``path`` written on this host."""
    return f".{path.name}.{socket.gethostname().replace('.', '_')}-"


def _remove_stale_temporaries(path: Path) -> None:
    """Remove temporaries of ``path`` left by writers on this host that no longer run
    (a SIGKILL gives no chance to clean up); a live writer's temporary is left alone."""
    prefix = _temporary_prefix(path)
    for tmp in path.parent.glob(f"{prefix}*.tmp"):
        pid = tmp.name[len(prefix):].split(".", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            tmp.unlink(missing_ok=True)
        except OSError:  # alive, another user's process
            pass


def _pause_for_tests() -> None:
    seconds = os.environ.get(PAUSE_ENV)
    if seconds:
        time.sleep(float(seconds))


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` then rename the temporary file onto ``path``.

    The temporary file lives in the destination directory so the rename is atomic; on
    any error it is removed and an existing ``path`` is left untouched.  A temporary that a
    killed writer left behind (``.<name>.<host>-<pid>.*.tmp``, its process gone) is removed
    by the next write of ``path``.  The file gets the mode of any new file under the umask
    (:func:`shared_file_mode`), not the ``0o600`` of the
    temporary file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=f"{_temporary_prefix(path)}{os.getpid()}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        shared_file_mode(tmp)
        write(tmp)
        _pause_for_tests()
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
    if previous.is_file() and os.path.samefile(path, previous):
        return previous  # kept already (a rename onto a link of the same file would do nothing)
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


def restore_previous(path: str | os.PathLike, *, made_from: str | os.PathLike) -> bool:
    """Put the last good version of ``path`` (:func:`keep_previous`) back where a failed job's
    output was deleted; ``False`` where ``path`` exists or none was kept.

    The restored file is dated a second before its input ``made_from``, so that the next run
    makes it again (Snakemake's mtime trigger) instead of taking it for the failed job's
    result.  Used after a claims job failed (issue 45): its earlier verdicts stay in place.
    """
    path, previous = Path(path), previous_path(path)
    if path.exists() or not previous.is_file():
        return False
    import shutil

    tmp = path.with_name(f".{path.name}.restore")
    shutil.copy2(previous, tmp)
    stamp = os.stat(made_from).st_mtime - 1 if os.path.exists(made_from) else os.stat(previous).st_mtime
    os.utime(tmp, (stamp, stamp))
    os.replace(tmp, path)
    return True


def last_good(outputs: list[str | os.PathLike]) -> str:
    """Where the last good version of each of ``outputs`` is kept (:func:`keep_previous`),
    one line each, for the message of a job that failed (a full disk, a diverged run): a
    failed job's outputs are gone, Snakemake deletes them when it starts."""
    lines = []
    for output in outputs:
        previous = previous_path(output)
        lines.append(f"the last good {output} is kept at {previous}" if previous.is_file()
                     else f"there is no earlier good {output} (none was kept at {previous})")
    return "\n".join(lines)


def write_job_table(output: str | os.PathLike, compute: Callable[[], pd.DataFrame],
                    log: logging.Logger) -> pd.DataFrame:
    """A job's table: ``compute()`` it, write it to ``output`` atomically and keep it as the
    last good version (:func:`keep_previous`).

    If ``compute`` raises, nothing is written and the error propagates; the log names the
    last good version of ``output`` kept from an earlier run, which Snakemake's deletion of
    the job's outputs at its start did not reach.
    """
    try:
        table = compute()
    except Exception:
        if previous_path(output).is_file():
            log.error("the last good result of this job is kept at %s (copy it back to keep using it)",
                      previous_path(output))
        raise
    write_csv(table, output)
    keep_previous(output)
    return table
