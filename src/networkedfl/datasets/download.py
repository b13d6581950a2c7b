"""Fetch a dataset's files from an ordered list of sources, verifying every checksum.

A *source* is either a local directory (the vendored copy shipped in the repository) or a
base URL (``http://``, ``https://`` or ``file://``); a file's URL is the base URL joined
with its name.  For each file the sources are tried in order; the first copy whose
SHA-256 (and MD5, where published) matches is moved atomically into place.  A copy that
fails its checksum is discarded and the next source tried.  When no source gives a valid
copy, :class:`DownloadError` names the file, every source tried with the reason it failed,
and the checksum expected.  A destination file that already has the right checksum is
kept without fetching anything.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .catalog import Dataset

__all__ = [
    "DownloadError",
    "FetchReport",
    "fetch_dataset",
    "fetch_file",
    "file_digests",
    "shared_file_mode",
]

_CHUNK = 1 << 20


def shared_file_mode(path: str | os.PathLike) -> None:
    """Give ``path`` the mode a newly created file gets under the process umask (``0o644``
    under the usual ``022``).  :func:`tempfile.mkstemp` creates its files ``0o600``, so a
    temporary file renamed into place would otherwise stay unreadable to colleagues on a
    shared machine."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


class DownloadError(RuntimeError):
    """No source gave a copy of a file with the expected checksum."""


@dataclass(frozen=True)
class FetchReport:
    """Where each file came from (``"present"`` if it was already in place and valid)."""

    dataset: str
    origin: dict[str, str]


def file_digests(path: str | os.PathLike) -> tuple[str, str]:
    """SHA-256 and MD5 hex digests of a file, read in chunks."""
    sha, md5 = hashlib.sha256(), hashlib.md5()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            sha.update(chunk)
            md5.update(chunk)
    return sha.hexdigest(), md5.hexdigest()


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://", "file://"))


def _checksum_problem(path: Path, sha256: str, md5: str | None) -> str | None:
    got_sha, got_md5 = file_digests(path)
    if got_sha != sha256:
        return f"SHA-256 mismatch (got {got_sha})"
    if md5 is not None and got_md5 != md5:
        return f"MD5 mismatch (got {got_md5})"
    return None


def _copy_from(source: str, name: str, tmp: Path, timeout: float) -> None:
    """Copy ``name`` from one source into ``tmp``; raise OSError/URLError on failure."""
    if _is_url(source):
        url = source if source.endswith("/") else source + "/"
        request = urllib.request.Request(url + name, headers={"User-Agent": "networkedfl"})
        with urllib.request.urlopen(request, timeout=timeout) as response, open(tmp, "wb") as out:
            shutil.copyfileobj(response, out, _CHUNK)
    else:
        path = Path(source) / name
        if not path.is_file():
            raise FileNotFoundError(f"no file {path}")
        shutil.copyfile(path, tmp)


def fetch_file(
    name: str,
    destination: str | os.PathLike,
    sources: Sequence[str],
    sha256: str,
    md5: str | None = None,
    *,
    timeout: float = 60.0,
    log: Callable[[str], None] | None = None,
) -> str:
    """Place a verified copy of file ``name`` at ``destination``; return the source used.

    Raises
    ------
    DownloadError
        If no source gives a copy with the expected checksum; the message lists every
        source tried and why it failed.  ``destination`` is then left as it was.
    """
    destination = Path(destination)
    say = log or (lambda message: None)
    if destination.is_file() and _checksum_problem(destination, sha256, md5) is None:
        say(f"{name}: already present and verified")
        return "present"
    if not sources:
        raise DownloadError(f"{name}: no sources configured (expected SHA-256 {sha256})")
    destination.parent.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    for source in sources:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=destination.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        shared_file_mode(tmp)
        try:
            _copy_from(source, name, tmp, timeout)
            problem = _checksum_problem(tmp, sha256, md5)
            if problem is None:
                os.replace(tmp, destination)
                say(f"{name}: verified copy from {source}")
                return source
            failures.append(f"{source}: {problem}")
        except (OSError, urllib.error.URLError, ValueError) as exc:  # dead URL, missing file, ...
            failures.append(f"{source}: {type(exc).__name__}: {exc}")
        finally:
            tmp.unlink(missing_ok=True)
        say(f"{name}: {failures[-1]}")
    expected = f"SHA-256 {sha256}" + (f", MD5 {md5}" if md5 else "")
    raise DownloadError(
        f"could not obtain a valid copy of {name} (expected {expected}); sources tried:\n  "
        + "\n  ".join(failures)
    )


def fetch_dataset(
    dataset: Dataset,
    directory: str | os.PathLike,
    sources: Iterable[str] | None = None,
    *,
    timeout: float = 60.0,
    log: Callable[[str], None] | None = None,
) -> FetchReport:
    """Fetch every file of ``dataset`` into ``directory`` (default sources: its mirrors).

    All files are attempted; if any fails, one :class:`DownloadError` reports all failures.
    """
    sources = list(dataset.mirrors if sources is None else sources)
    origin: dict[str, str] = {}
    errors: list[str] = []
    for name in dataset.files:
        try:
            origin[name] = fetch_file(name, Path(directory) / name, sources, dataset.sha256[name],
                                      dataset.md5.get(name), timeout=timeout, log=log)
        except DownloadError as exc:
            errors.append(str(exc))
    if errors:
        raise DownloadError(f"dataset {dataset.name!r}: {len(errors)} file(s) failed\n" + "\n".join(errors))
    return FetchReport(dataset.name, origin)
