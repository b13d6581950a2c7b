"""Artefacts the pipeline reads back: readable errors with the command that rebuilds them,
and ``.npz`` files whose bytes depend on their content only.

A corrupt artefact (a cache that is no complete zip, an output whose bytes differ from what
its sidecar records, a dataset file that no longer has its checksum) raises
:class:`CorruptArtefactError`, which names the file, what is wrong, and the one command that
rebuilds it and everything made from it: the run's own Snakemake command (recorded by the
workflow in :data:`REPAIR_ENV`, which its jobs inherit) with ``--forcerun <file>``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import zipfile
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._atomic import atomic_write

__all__ = [
    "REPAIR_ENV",
    "ZIP_DATE",
    "CorruptArtefactError",
    "file_sha256",
    "npz_problem",
    "read_npz",
    "record_command",
    "repair_command",
    "write_npz",
]

#: The Snakemake command of the run, as the workflow recorded it (its jobs inherit it).
REPAIR_ENV = "NETWORKEDFL_SNAKEMAKE_COMMAND"
#: The date of every entry of a zip written by :func:`write_npz`: the earliest a zip holds.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_CHUNK = 1 << 20


def record_command(argv: Sequence[str]) -> str | None:
    """Remember the Snakemake command line ``argv`` (``sys.argv`` of a run) for the repair
    commands of this process and its jobs, as ``<interpreter> -m snakemake <arguments>``,
    every word shell-quoted: it runs from any checkout path and with any venv activated or
    not. ``None`` (nothing recorded) for a command line that is not Snakemake's."""
    program = Path(argv[0]) if argv else Path()
    if program.name != "snakemake" and not (program.name == "__main__.py" and program.parent.name == "snakemake"):
        return None
    command = shlex.join([sys.executable, "-m", "snakemake", *argv[1:]])
    os.environ[REPAIR_ENV] = command
    return command


def repair_command(paths: Iterable[str | os.PathLike]) -> str:
    """The command that rebuilds ``paths`` and everything made from them: the run's own
    command (:func:`record_command`) with ``--forcerun`` and the paths."""
    base = os.environ.get(REPAIR_ENV) or "snakemake <the targets and options of your run>"
    return f"{base} --forcerun {' '.join(shlex.quote(str(p)) for p in paths)}"


class CorruptArtefactError(ValueError):
    """Files the pipeline reads are unreadable or not what was written.

    ``problems`` maps each file to what is wrong with it; the message names them and ends
    with the command that rebuilds them (:func:`repair_command`).
    """

    def __init__(self, problems: Mapping[str | os.PathLike, str]) -> None:
        self.problems = {str(path): problem for path, problem in problems.items()}
        it = "it" if len(self.problems) == 1 else "them"
        lines = [f"{path}: {problem}" for path, problem in self.problems.items()]
        super().__init__("\n".join(lines) + f"\nTo rebuild {it} and everything made from {it}, run:\n    "
                         + repair_command(self.problems))


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 hex digest of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def write_npz(path: str | os.PathLike, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` and the JSON ``meta`` (member ``meta``) as a compressed ``.npz``,
    atomically, whose bytes depend on the content only: every entry is dated
    :data:`ZIP_DATE` (``numpy.savez_compressed`` dates them with the clock). ``numpy.load``
    reads it."""
    members = {"meta": np.array(json.dumps(dict(meta))), **arrays}

    def write(tmp: str) -> None:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, array in members.items():
                info = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_DATE)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                with archive.open(info, "w", force_zip64=True) as fh:
                    np.lib.format.write_array(fh, np.asanyarray(array), allow_pickle=False)

    atomic_write(path, write)


_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError)


def npz_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with the ``.npz`` written by :func:`write_npz` at ``path``, or ``None``:
    not a complete zip, a member whose data fails its CRC-32 or its decompression, no
    ``meta`` member. Reads every member once."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            for name in names:
                try:
                    with archive.open(name) as fh:
                        while fh.read(_CHUNK):
                            pass
                except _READ_ERRORS as exc:
                    return f"its member {name} is damaged ({exc})"
    except zipfile.BadZipFile as exc:
        return f"not a complete zip file ({exc})"
    if "meta.npy" not in names:
        return "no member meta (not written by networkedfl.io.write_npz)"
    return None


def read_npz(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The ``meta`` and arrays of a file written by :func:`write_npz`.

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    CorruptArtefactError
        If it cannot be read whole (:func:`npz_problem`), naming it and the command that
        rebuilds it.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}; to build it and everything made from it, run:\n    "
                                f"{repair_command([path])}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if "meta" not in archive.files:
                raise CorruptArtefactError({path: "no member meta (not written by networkedfl.io.write_npz)"})
            meta = json.loads(str(archive["meta"]))
            arrays = {name: archive[name] for name in archive.files if name != "meta"}
    except CorruptArtefactError:
        raise
    except _READ_ERRORS as exc:
        raise CorruptArtefactError({path: npz_problem(path) or f"cannot be read ({exc})"}) from exc
    return meta, arrays
