"""Checksums of the dataset files the pipeline placed, checked again whenever they are read.

A file below ``data/raw/<dataset>/`` (the download rules' layout) that the catalog lists is
verified against the catalog's SHA-256 (and MD5, where published) by
:func:`check_raw_file`, which the readers (:func:`networkedfl.datasets.mnist.read_idx`,
:func:`networkedfl.datasets.reviews.read_review_file`) call before parsing a file.  An
edited or truncated file then stops the job with :class:`ChecksumError`, which names the
file and says how to recover, instead of silently changing a result.

The verification is cached so that it costs one ``stat``: after a file below
``data/raw/`` is verified, a sidecar ``.<file>.verified`` beside it records its size,
inode, modification and status-change times (``st_ctime_ns``, which no user can set
back); the file is hashed again only when one of them changed.  As in git's index, a file
changed less than :data:`RACY_SECONDS` before it was hashed is not recorded (on a file
system with coarse timestamps a later edit could keep its times), nor is one that changed
while it was hashed.

The record is signed (HMAC-SHA-256) with a key of the user's own, outside the data directory
(``~/.cache/networkedfl/verify.key``, readable by its owner only, made on first use;
:data:`KEY_ENV` names another file): whoever can write the data directory but not read the
key cannot write a record that makes an edited file pass, as rewriting an unsigned record
with the edited file's new times could.  A record that does not verify is ignored (the file
is hashed).  Where the record or the key cannot be written (a read-only folder or home),
every read hashes the file.  Files anywhere else (a test's synthetic corpus, a user's own
copy) are not checked.  What this protects against and what not: ``docs/data.md``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
import time
from pathlib import Path

from .._validation import warn_renamed
from ..io import CorruptArtefactError
from .catalog import DATASETS, Dataset

__all__ = [
    "KEY_ENV",
    "OLD_KEY_ENV",
    "RACY_SECONDS",
    "ChecksumError",
    "check_raw_file",
    "checksum_problem",
    "file_digests",
    "raw_file_entry",
    "raw_file_problem",
    "record_verified",
    "sidecar",
    "verify_file",
]

_CHUNK = 1 << 20
_SIDECAR_SUFFIX = ".verified"
#: A file whose times are this recent when it is hashed is verified but not cached.
RACY_SECONDS = 2.0
#: The environment variable naming the file of the key that signs the records (default
#: ``$XDG_CACHE_HOME/networkedfl/verify.key``, ``~/.cache/...`` without it); ``_FILE``, as
#: ``NETWORKEDFL_RESULTS_KEY_FILE`` (:mod:`networkedfl.pipeline.signing`): a variable of the
#: family ending in ``_FILE`` names a file, one without it holds a key.
KEY_ENV = "NETWORKEDFL_VERIFY_KEY_FILE"
#: The name :data:`KEY_ENV` had until issue 40 (a file too), still read, with a warning.
OLD_KEY_ENV = "NETWORKEDFL_VERIFY_KEY"


class ChecksumError(CorruptArtefactError):
    """A dataset file no longer has the checksum of the copy that was downloaded; the message
    names the command that fetches a verified copy again and rebuilds what read it."""


def file_digests(path: str | os.PathLike) -> tuple[str, str]:
    """SHA-256 and MD5 hex digests of a file, read in chunks."""
    sha, md5 = hashlib.sha256(), hashlib.md5()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            sha.update(chunk)
            md5.update(chunk)
    return sha.hexdigest(), md5.hexdigest()


def sidecar(path: str | os.PathLike) -> Path:
    """The cache record of ``path``: ``.<name>.verified`` in the same folder."""
    path = Path(path)
    return path.with_name(f".{path.name}{_SIDECAR_SUFFIX}")


def _stat_key(st: os.stat_result) -> dict[str, int]:
    return {"size": st.st_size, "ino": st.st_ino, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}


def _key_file() -> Path:
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV])
    if os.environ.get(OLD_KEY_ENV):
        warn_renamed(f"{OLD_KEY_ENV} is now {KEY_ENV} (a file, as NETWORKEDFL_RESULTS_KEY_FILE); the old "
                     "name is read for now", stacklevel=3)
        return Path(os.environ[OLD_KEY_ENV])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "networkedfl" / "verify.key"


def _key(create: bool) -> bytes | None:
    """The user's signing key (made, readable by its owner only, where ``create`` and there
    is none); ``None`` where it cannot be read or made: no cache."""
    path = _key_file()
    try:
        return path.read_bytes() or None
    except FileNotFoundError:
        if not create:
            return None
    except OSError:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0o600
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(32))
        try:
            os.link(tmp, path)  # never replaces a key another process made meanwhile
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
        return path.read_bytes() or None
    except OSError:
        return None


def _signature(key: bytes, sha256: str, stat_key: dict[str, int]) -> str:
    message = json.dumps({"sha256": sha256, "stat": stat_key}, sort_keys=True).encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _cached(path: Path, sha256: str, st: os.stat_result) -> bool:
    try:
        record = json.loads(sidecar(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not (isinstance(record, dict) and record.get("sha256") == sha256 and record.get("stat") == _stat_key(st)):
        return False
    key = _key(create=False)
    return key is not None and hmac.compare_digest(str(record.get("hmac", "")),
                                                   _signature(key, sha256, _stat_key(st)))


def record_verified(path: str | os.PathLike, sha256: str, hashed: os.stat_result) -> None:
    """Record, signed with the user's key, that ``path``, whose status was ``hashed`` when it
    was hashed, has checksum ``sha256``; not if it has changed since, or changed just
    before (see :data:`RACY_SECONDS`).  Best effort: a folder that cannot be written, or no
    key, means no cache."""
    path = Path(path)
    key = _stat_key(hashed)
    try:
        if _stat_key(path.stat()) != key:
            return
        if time.time_ns() - max(hashed.st_mtime_ns, hashed.st_ctime_ns) < RACY_SECONDS * 1e9:
            return
        secret = _key(create=True)
        if secret is None:
            return
        record = json.dumps({"sha256": sha256, "stat": key, "hmac": _signature(secret, sha256, key)})
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".verifying", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(record)
        os.replace(tmp, sidecar(path))
    except OSError:
        pass
    finally:
        Path(tmp).unlink(missing_ok=True)


def checksum_problem(path: str | os.PathLike, sha256: str, md5: str | None = None,
                     size: int | None = None) -> str | None:
    """Why ``path`` does not have the expected size and checksums, or ``None`` if it has
    them (hashing it; no cache)."""
    if size is not None and (got := os.stat(path).st_size) != size:
        return f"size {got} bytes, expected {size}"
    got_sha, got_md5 = file_digests(path)
    if got_sha != sha256:
        return f"SHA-256 mismatch (got {got_sha})"
    if md5 is not None and got_md5 != md5:
        return f"MD5 mismatch (got {got_md5})"
    return None


def verify_file(path: str | os.PathLike, sha256: str, md5: str | None = None,
                size: int | None = None, *, cache: bool = False) -> str | None:
    """:func:`checksum_problem`; with ``cache``, skipped when the sidecar shows the file
    unchanged since it last passed, and a file that passes is recorded in its sidecar."""
    path = Path(path)
    before = path.stat()
    if cache and _cached(path, sha256, before):
        return None
    problem = checksum_problem(path, sha256, md5, size)
    if problem is None and cache:
        record_verified(path, sha256, before)
    return problem


def raw_file_entry(path: str | os.PathLike) -> tuple[Dataset, str] | None:
    """The catalog dataset and file name of ``path`` if it lies where the download rules
    place that file (``.../raw/<dataset>/<file>``), else ``None``."""
    path = Path(os.path.abspath(path))
    dataset = DATASETS.get(path.parent.name)
    if dataset is None or path.parent.parent.name != "raw" or path.name not in dataset.sha256:
        return None
    return dataset, path.name


def raw_file_problem(path: str | os.PathLike) -> str | None:
    """Why the downloaded dataset file at ``path`` is not the verified copy, or ``None``
    (also when ``path`` is not ``.../raw/<dataset>/<file>`` of the catalog, or missing)."""
    entry = raw_file_entry(path)
    if entry is None or not Path(path).is_file():
        return None  # the reader reports a missing file in its own words
    dataset, name = entry
    problem = verify_file(path, dataset.sha256[name], dataset.md5.get(name), dataset.sizes.get(name), cache=True)
    if problem is None:
        return None
    return (f"does not match its checksum: {problem}, expected SHA-256 {dataset.sha256[name]} "
            f"(networkedfl.datasets.catalog): it changed after it was downloaded and verified")


def check_raw_file(path: str | os.PathLike) -> None:
    """Check a downloaded dataset file against the catalog before it is read.

    A no-op unless ``path`` is ``.../raw/<dataset>/<file>`` for a file of the catalog.

    Raises
    ------
    ChecksumError
        If the file differs from the verified download (edited, truncated, replaced); the
        message names the file, the checksum expected and found, and the command that
        fetches a verified copy and rebuilds everything made from it (the run's own
        command with ``--forcerun <file>``).
    """
    problem = raw_file_problem(path)
    if problem is not None:
        raise ChecksumError({path: problem})
