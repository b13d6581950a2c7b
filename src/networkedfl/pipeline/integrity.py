"""Is an artefact the pipeline reads still what was written?  Checked before any job of a run
and by every job for the files it reads (issue 37).

* a dataset file below ``data/raw/`` against the catalog's checksums
  (:func:`networkedfl.datasets.verify.verify_file`, cached);
* a ``.npz`` cache: a complete zip whose every member passes its CRC-32
  (:func:`networkedfl.io.npz_problem`);
* any other output with a provenance sidecar (raw and tuning outputs, tables, claims,
  notebooks, figures, pages, their ``.previous/`` copies): its size and SHA-256 against the
  sidecar's record (:func:`networkedfl.pipeline.provenance.write_sidecar`), and the sidecar
  itself readable.

With a results key set (:mod:`networkedfl.pipeline.signing`) every sidecar checked must also
carry a valid signature, and :func:`check_signed` (run before a report, the index page or
the gallery is rendered) requires one for every file it is given: the sidecars then guard
against deliberate edits by whoever lacks the key; without a key, against corruption only.

A problem raises :class:`networkedfl.io.CorruptArtefactError`, naming every bad file, what is
wrong with it, and the command that rebuilds it and everything made from it.

Before any job (``finished=False``) an output is compared with its sidecar only where the
sidecar is at least as recent as the output, as a finished job leaves them: an output
renamed into place by a job killed before it wrote the sidecar, or one that a run going on
is rewriting, is Snakemake's to redo, and the job that reads it next checks it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..datasets.verify import raw_file_entry, raw_file_problem
from ..io import CorruptArtefactError, file_sha256, npz_problem
from .provenance import read_sidecar, sidecar_path
from .signing import KEY_ENV, KEY_FILE_ENV, results_key, signature_problem

__all__ = ["artefact_problem", "check_artefacts", "check_signed", "read_table"]


def _sidecar_problem(path: Path, finished: bool) -> str | None:
    sidecar = sidecar_path(path)
    try:
        record = read_sidecar(path)
    except CorruptArtefactError:
        return None  # the sidecar's own problem is reported for the sidecar
    key = results_key()
    if key is not None and sidecar.is_file():
        problem = signature_problem(path, record, key)
        if problem is not None:
            return f"{problem}: {sidecar}"
    recorded = record.get("output")
    if not isinstance(recorded, dict) or not {"bytes", "sha256"} <= set(recorded):
        return None  # no record of the output's bytes (written before they were recorded)
    if not finished and sidecar.stat().st_mtime_ns < path.stat().st_mtime_ns:
        return None
    size = path.stat().st_size
    if size != recorded["bytes"]:
        return f"{size} bytes, but its provenance sidecar {sidecar} records {recorded['bytes']}"
    digest = file_sha256(path)
    if digest != recorded["sha256"]:
        return f"SHA-256 {digest}, but its provenance sidecar {sidecar} records {recorded['sha256']}"
    return None


def artefact_problem(path: str | os.PathLike, *, finished: bool = True) -> str | None:
    """What is wrong with the artefact at ``path``, or ``None`` (also for a missing file, or
    one the pipeline has no record of). ``finished=False``: before any job of a run (see
    the module's docstring)."""
    path = Path(path)
    if not path.is_file():
        return None
    if raw_file_entry(path) is not None:
        return raw_file_problem(path)
    if path.suffix == ".npz":  # checked as a zip; with a results key, also against its signed sidecar
        return npz_problem(path) or (_sidecar_problem(path, finished) if results_key() is not None else None)
    if path.name.endswith(".provenance.json"):
        try:
            read_sidecar(str(path)[: -len(".provenance.json")])
        except CorruptArtefactError as exc:
            return exc.problems[str(path)]
        return None
    return _sidecar_problem(path, finished)


def check_artefacts(paths: Iterable[str | os.PathLike], *, finished: bool = True,
                    skip: Iterable[str | os.PathLike] = ()) -> None:
    """Check every artefact of ``paths`` (:func:`artefact_problem`) except those in
    ``skip`` (e.g. files the run rebuilds anyway).

    Raises
    ------
    CorruptArtefactError
        Naming every bad file, what is wrong, and the command that rebuilds them.
    """
    skipped = {os.path.normpath(p) for p in skip}
    problems = {}
    for path in dict.fromkeys(map(str, paths)):
        if os.path.normpath(path) in skipped:
            continue
        problem = artefact_problem(path, finished=finished)
        if problem is not None:
            problems[path] = problem
    if problems:
        raise CorruptArtefactError(problems)


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """A CSV table the pipeline wrote (a raw, tuning or target table), checked against its
    sidecar (:func:`check_artefacts`) and parsed.

    Raises
    ------
    CorruptArtefactError
        If it is not what its sidecar records or cannot be parsed as a table.
    """
    check_artefacts([path])
    try:
        return pd.read_csv(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # pandas' parser and empty-file errors are ValueErrors
        raise CorruptArtefactError({path: f"not a readable table ({type(exc).__name__}: {exc})"}) from exc


def check_signed(paths: Iterable[str | os.PathLike]) -> None:
    """With a results key set (:func:`~networkedfl.pipeline.signing.results_key`), check that
    every file of ``paths`` (sidecars themselves skipped) has a provenance sidecar with a
    valid signature and is what it records (:func:`check_artefacts`); without a key, only the
    latter.  Run before a report, the index page or the gallery is rendered from results.

    Raises
    ------
    CorruptArtefactError
        Naming every file without a sidecar (when keyed) and every bad file.
    """
    paths = [str(p) for p in paths if not str(p).endswith(".provenance.json")]
    if results_key() is not None:
        missing = {p: f"no provenance sidecar, but {KEY_ENV} or {KEY_FILE_ENV} is set: nothing vouches for it"
                   for p in paths if Path(p).is_file() and not sidecar_path(p).is_file()}
        if missing:
            raise CorruptArtefactError(missing)
    check_artefacts(paths)
