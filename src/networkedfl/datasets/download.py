"""Fetch a dataset's files from an ordered list of sources, verifying every checksum.

A *source* is either a local directory (the vendored copy shipped in the repository) or a
base URL (``http://``, ``https://`` or ``file://``); a file's URL is the base URL joined
with its name.  For each file the sources are tried in order; the first copy whose
SHA-256 (and MD5, where published) matches is moved atomically into place.  A copy that
fails its checksum is discarded and the next source tried.  When no source gives a valid
copy, :class:`DownloadError` names the file, every source tried with the reason it failed,
and the checksum expected.  A destination file that already has the right checksum is
kept without fetching anything.

Limits.  Every attempt (one file from one source) has a wall-clock *deadline* and a *size
cap*, besides the ``timeout`` for a single read: a mirror that trickles a byte at a time
never trips the read timeout but is stopped at the deadline, and one that sends more than
the file holds is stopped at the cap; the next source is then tried.  By default the
deadline is :data:`DEFAULT_BASE_DEADLINE` plus the expected size at
:data:`DEFAULT_MIN_RATE` (:data:`DEFAULT_DEADLINE` when the size is unknown) and the cap is
the expected size (the catalog's ``sizes``; :data:`DEFAULT_MAX_BYTES` when unknown).  The
pipeline reads both, and the timeout, from ``data: download:`` in the config.

Offline.  ``offline=True``, the environment variable ``NETWORKEDFL_OFFLINE=1``
(:data:`OFFLINE_ENV`) or, in the pipeline, ``data: download: offline: true`` forbids every
network source (``http://``, ``https://``): they are listed as not contacted, and only
local sources (the vendored copy, a directory, ``file://``) are read.  A failure names the
switch: offline, how to allow the mirrors; online, after a network source was tried (a bad
vendored copy falls through to the mirrors), how to forbid them.

Temporary files.  A copy is written to a ``.<name>.<pid>@<host>.*.part`` file beside the
destination and renamed into place once verified.  It is removed on any failure,
including ``KeyboardInterrupt`` and SIGTERM/SIGHUP (turned into an exception while a file
is fetched, after which the process still ends by the signal).  SIGKILL cannot be caught:
the next download of the file removes the ``.part`` files of processes that no longer run
(and any older than a day).
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..io import shared_file_mode
from .catalog import Dataset
from .verify import checksum_problem, file_digests, raw_file_entry, verify_file

__all__ = [
    "DEFAULT_BASE_DEADLINE",
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MIN_RATE",
    "DEFAULT_TIMEOUT",
    "DownloadError",
    "DownloadLimitError",
    "FetchReport",
    "OFFLINE_ENV",
    "default_deadline",
    "default_max_bytes",
    "fetch_dataset",
    "fetch_file",
    "file_digests",
    "offline_requested",
    "remove_stale_parts",
]

_CHUNK = 1 << 20

#: Seconds a single read may wait for data (the old, and only, limit).
DEFAULT_TIMEOUT = 60.0
#: Wall-clock deadline of one attempt when the file's size is unknown: 30 minutes.
DEFAULT_DEADLINE = 1800.0
#: With a known size, the deadline is this many seconds (connection, a slow start) ...
DEFAULT_BASE_DEADLINE = 120.0
#: ... plus the size at this rate in bytes per second (16 KiB/s: 12 min for MNIST's 9.9 MB).
DEFAULT_MIN_RATE = 16 * 1024
#: Size cap of a file whose size is unknown: 1 GiB.
DEFAULT_MAX_BYTES = 1 << 30
#: The environment variable that forbids network sources (``1``, ``true``, ``yes``, ``on``).
OFFLINE_ENV = "NETWORKEDFL_OFFLINE"
_SWITCH = f"{OFFLINE_ENV}=1 or data: download: offline: true"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
#: ``.part`` files of other hosts (whose processes cannot be checked) are stale after this.
STALE_PART_AGE = 86400.0


def default_deadline(size: int | None) -> float:
    """Wall-clock seconds allowed to fetch a file of ``size`` bytes from one source."""
    return DEFAULT_DEADLINE if size is None else DEFAULT_BASE_DEADLINE + size / DEFAULT_MIN_RATE


def default_max_bytes(size: int | None) -> int:
    """Size cap of a file of ``size`` bytes: the size itself, if known."""
    return DEFAULT_MAX_BYTES if size is None else int(size)


class DownloadError(RuntimeError):
    """No source gave a copy of a file with the expected checksum."""


class DownloadLimitError(DownloadError):
    """One attempt ran past its wall-clock deadline or its size cap."""


@dataclass(frozen=True)
class FetchReport:
    """Where each file came from (``"present"`` if it was already in place and valid)."""

    dataset: str
    origin: dict[str, str]


def offline_requested(offline: bool | None = None) -> bool:
    """Whether network sources are forbidden: ``offline`` if given, else whether
    :data:`OFFLINE_ENV` is set to ``1``, ``true``, ``yes`` or ``on`` (``0``, ``false``,
    ``no``, ``off`` or unset: allowed; anything else is a ``ValueError`` naming it)."""
    if offline is not None:
        return bool(offline)
    value = os.environ.get(OFFLINE_ENV, "").strip().lower()
    if value not in _TRUE + _FALSE:
        raise ValueError(f"{OFFLINE_ENV}={os.environ[OFFLINE_ENV]!r}: expected 1 (offline) or 0 (downloads allowed)")
    return value in _TRUE


def _is_network(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def _switch_hint(offline: bool, skipped: list[str], tried_network: bool) -> str:
    """The line of a failure that names the offline switch."""
    if offline and skipped:
        return (f"\noffline: refusing to download from {len(skipped)} network source(s); to allow them, unset "
                f"{OFFLINE_ENV} and set data: download: offline: false")
    if tried_network:
        return f"\nto forbid downloads (local sources only), set {_SWITCH}"
    return ""


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://", "file://"))


def _location(source: str, name: str) -> str:
    """The URL or path of file ``name`` in ``source``."""
    if _is_url(source):
        return (source if source.endswith("/") else source + "/") + name
    return str(Path(source) / name)


# ---------------------------------------------------------------- the wall-clock deadline


def _shutdown(sock: socket.socket) -> None:
    try:  # the plain socket's method, also for an SSL socket: wakes a blocked read
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class _Watchdog:
    """The deadline of one attempt: when it passes, the sockets of the transfer are shut
    down, which wakes a read that is blocked on a server that stalls or trickles."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expires = time.monotonic() + seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def remaining(self) -> float:
        return self.expires - time.monotonic()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)

    def register(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shutdown(sock)

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()


def _opener(watchdog: _Watchdog) -> urllib.request.OpenerDirector:
    """urllib's opener whose HTTP(S) connections register their sockets with ``watchdog``."""

    def watched(base: type[http.client.HTTPConnection]) -> type[http.client.HTTPConnection]:
        class Connection(base):
            def connect(self) -> None:
                super().connect()
                watchdog.register(self.sock)

        return Connection

    class HTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(watched(http.client.HTTPConnection), req)

    class HTTPSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(watched(http.client.HTTPSConnection), req, context=self._context)

    return urllib.request.build_opener(HTTPHandler(), HTTPSHandler())


def _copy_from(source: str, name: str, out: BinaryIO, *, timeout: float, deadline: float,
               max_bytes: int) -> None:
    """Copy ``name`` from one source into ``out`` within ``deadline`` seconds and at most
    ``max_bytes`` bytes; raise :class:`DownloadLimitError`, or OSError/URLError/HTTPException
    on other failures."""
    where = _location(source, name)

    def over_deadline(received: int) -> DownloadLimitError:
        return DownloadLimitError(
            f"{name} from {where}: wall-clock deadline of {deadline:g} s exceeded after {received} bytes "
            "(config: data: download: deadline)")

    def over_cap(size: int, how: str) -> DownloadLimitError:
        return DownloadLimitError(
            f"{name} from {where}: {how} {size} bytes, over the size cap of {max_bytes} bytes "
            "(config: data: download: max_bytes)")

    with _Watchdog(deadline) as watchdog:
        if _is_url(source):
            request = urllib.request.Request(where, headers={"User-Agent": "networkedfl"})
            try:
                stream = _opener(watchdog).open(request, timeout=max(min(timeout, watchdog.remaining()), 0.001))
            except Exception:
                if watchdog.expired:
                    raise over_deadline(0) from None
                raise
            announced = stream.headers.get("Content-Length") if stream.headers else None
            if announced and announced.strip().isdigit() and int(announced) > max_bytes:
                stream.close()
                raise over_cap(int(announced), "announces")
        else:
            path = Path(where)
            if not path.is_file():
                raise FileNotFoundError(f"no file {path}")
            stream = open(path, "rb")  # noqa: SIM115 (closed below)
        with stream:
            read = getattr(stream, "read1", None) or stream.read
            received = 0
            while True:
                try:
                    chunk = read(_CHUNK)
                except Exception:
                    if watchdog.expired:
                        raise over_deadline(received) from None
                    raise
                if watchdog.expired:  # a shut-down socket reads as the end of the data
                    raise over_deadline(received)
                if not chunk:
                    return
                received += len(chunk)
                if received > max_bytes:
                    raise over_cap(received, "sent more than")
                out.write(chunk)


# ---------------------------------------------------------------- temporary files


class _Terminated(BaseException):
    """A termination signal, raised while a file is fetched so that cleanup runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


def _raise_terminated(signum, frame) -> None:
    raise _Terminated(signum)


@contextmanager
def _terminate_after_cleanup() -> Iterator[None]:
    """While fetching, SIGTERM and SIGHUP raise an exception, so that ``finally`` clauses
    remove the ``.part`` file; then the process ends by the signal, as it would have.
    Only in the main thread, and only for signals that still have their default action."""
    installed: dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
                installed[sig] = signal.signal(sig, _raise_terminated)
    try:
        yield
    except _Terminated as exc:
        for sig, handler in installed.items():
            signal.signal(sig, handler)
        installed.clear()
        os.kill(os.getpid(), exc.signum)  # the default action: the process ends here
        raise SystemExit(128 + exc.signum) from None
    finally:
        for sig, handler in installed.items():
            signal.signal(sig, handler)


def _part_prefix(name: str) -> str:
    return f".{name}.{os.getpid()}@{socket.gethostname()}."


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process
        return True
    return True


def remove_stale_parts(directory: str | os.PathLike, name: str, *, max_age: float = STALE_PART_AGE) -> list[Path]:
    """Remove the ``.part`` files of ``name`` left in ``directory`` by downloads that no
    longer run (killed with SIGKILL, a lost machine): those of this host whose process is
    gone, and any older than ``max_age`` seconds.  Returns the files removed."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    pattern = re.compile(re.escape(f".{name}.") + r"(?:(\d+)@(.+)\.)?[^.]+\.part")
    host, now, removed = socket.gethostname(), time.time(), []
    for path in directory.iterdir():
        match = pattern.fullmatch(path.name)
        if match is None:
            continue
        pid, owner = match.groups()
        try:
            old = now - path.stat().st_mtime > max_age
        except OSError:
            continue
        if old or (owner == host and not _process_alive(int(pid))):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def fetch_file(
    name: str,
    destination: str | os.PathLike,
    sources: Sequence[str],
    sha256: str,
    md5: str | None = None,
    *,
    size: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float | None = None,
    max_bytes: int | None = None,
    log: Callable[[str], None] | None = None,
    offline: bool | None = None,
) -> str:
    """Place a verified copy of file ``name`` at ``destination``; return the source used.

    Parameters
    ----------
    size
        The file's expected size in bytes, if known: sets the default deadline and cap.
    timeout
        Seconds a single read may wait for data.
    deadline
        Wall-clock seconds for one attempt (one source), connection included; default
        :func:`default_deadline` of ``size``.
    max_bytes
        The most bytes accepted from one source; default :func:`default_max_bytes` of
        ``size`` (the expected size itself).
    offline
        Forbid network sources (``http://``, ``https://``); ``None``: as
        :data:`OFFLINE_ENV` says (:func:`offline_requested`).

    Raises
    ------
    DownloadError
        If no source gives a copy with the expected checksum within the limits; the
        message lists every source tried and why it failed (a limit names the file, its
        URL and the limit), and names the offline switch (see the module docstring).  ``destination`` is then left as it was, and no ``.part``
        file remains.
    """
    destination = Path(destination)
    say = log or (lambda message: None)
    offline = offline_requested(offline)
    deadline = default_deadline(size) if deadline is None else float(deadline)
    max_bytes = default_max_bytes(size) if max_bytes is None else int(max_bytes)
    for stale in remove_stale_parts(destination.parent, name):
        say(f"{name}: removed {stale.name}, left by an interrupted download")
    cache = raw_file_entry(destination) is not None  # a file below data/raw/: see .verify
    if destination.is_file() and verify_file(destination, sha256, md5, cache=cache) is None:
        say(f"{name}: already present and verified")
        return "present"
    if not sources:
        raise DownloadError(f"{name}: no sources configured (expected SHA-256 {sha256})")
    destination.parent.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    skipped = [source for source in sources if offline and _is_network(source)]
    with _terminate_after_cleanup():
        for source in sources:
            if source in skipped:
                failures.append(f"{source}: not contacted: offline ({_SWITCH.replace(' or ', ' / ')})")
                say(f"{name}: {failures[-1]}")
                continue
            if failures and _is_network(source):  # e.g. a bad vendored copy: say how to forbid this
                say(f"{name}: trying the network source {source} (to forbid downloads: {_SWITCH})")
            tmp: Path | None = None
            try:
                fd, tmp_name = tempfile.mkstemp(prefix=_part_prefix(name), suffix=".part", dir=destination.parent)
                tmp = Path(tmp_name)
                with os.fdopen(fd, "wb") as out:
                    shared_file_mode(tmp)
                    _copy_from(source, name, out, timeout=timeout, deadline=deadline, max_bytes=max_bytes)
                problem = checksum_problem(tmp, sha256, md5, size)  # a cut-off copy: its size
                if problem is None:
                    os.replace(tmp, destination)
                    say(f"{name}: verified copy from {source}")
                    return source
                failures.append(f"{source}: {problem}")
            except (OSError, urllib.error.URLError, http.client.HTTPException, ValueError,
                    DownloadLimitError) as exc:  # dead URL, missing file, a limit, ...
                failures.append(f"{source}: {type(exc).__name__}: {exc}")
            finally:
                if tmp is not None:
                    tmp.unlink(missing_ok=True)
            say(f"{name}: {failures[-1]}")
    expected = f"SHA-256 {sha256}" + (f", MD5 {md5}" if md5 else "")
    raise DownloadError(
        f"could not obtain a valid copy of {name} (expected {expected}); sources tried:\n  "
        + "\n  ".join(failures) + _switch_hint(offline, skipped, any(map(_is_network, sources)) and not skipped)
    )


def fetch_dataset(
    dataset: Dataset,
    directory: str | os.PathLike,
    sources: Iterable[str] | None = None,
    *,
    files: Iterable[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float | None = None,
    max_bytes: int | None = None,
    log: Callable[[str], None] | None = None,
    offline: bool | None = None,
) -> FetchReport:
    """Fetch every file of ``dataset`` (or only ``files``) into ``directory`` (default
    sources: its mirrors), each on its own: a file that fails costs only itself.

    The limits and ``offline`` are those of :func:`fetch_file`; by default each file's follow from its
    size in the catalog.  All files are attempted; if any fails, one
    :class:`DownloadError` reports all failures (the verified files stay in place).
    """
    sources = list(dataset.mirrors if sources is None else sources)
    names = dataset.files if files is None else list(files)
    unknown = sorted(set(names) - set(dataset.sha256))
    if unknown:
        raise KeyError(f"dataset {dataset.name!r} has no files {unknown}")
    origin: dict[str, str] = {}
    errors: list[str] = []
    for name in names:
        try:
            origin[name] = fetch_file(name, Path(directory) / name, sources, dataset.sha256[name],
                                      dataset.md5.get(name), size=dataset.sizes.get(name), timeout=timeout,
                                      deadline=deadline, max_bytes=max_bytes, log=log, offline=offline)
        except DownloadError as exc:
            errors.append(str(exc))
    if errors:
        raise DownloadError(f"dataset {dataset.name!r}: {len(errors)} file(s) failed\n" + "\n".join(errors))
    return FetchReport(dataset.name, origin)
