"""The real download path: files served by a local HTTP server on 127.0.0.1.

Covers the checksum verification, the order of sources (vendored copy first), a corrupt
file, a dead URL and a refused connection, atomic placement, and the `download_mnist`
rule of the pipeline run by Snakemake against the local server.  A second local server
misbehaves: it trickles one byte at a time, or sends more than the file holds; the
wall-clock deadline and the size cap stop both.  Temporary ``.part`` files go on any
failure, also when the process is terminated, and a killed process's are removed by the
next download.  Files below ``data/raw/`` are checked again when a job reads them.
"""

import functools
import gzip
import hashlib
import http.server
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from networkedfl.datasets import (
    DATASETS,
    DownloadError,
    fetch_dataset,
    fetch_file,
    file_digests,
    get_dataset,
)
from networkedfl.io import vendored_dataset

MNIST = get_dataset("mnist")
SMALL = "t10k-labels-idx1-ubyte.gz"  # 4.5 kB


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):
        type(self).requests.append(self.path)
        super().do_GET()


@pytest.fixture(scope="module")
def server(repo, tmp_path_factory):
    """Serves good/ (the real files), corrupt/ (one byte changed in each) and nothing else."""
    root = tmp_path_factory.mktemp("www")
    good, corrupt = root / "good", root / "corrupt"
    shutil.copytree(vendored_dataset(repo, "mnist"), good)
    corrupt.mkdir()
    for name in MNIST.files:
        data = bytearray((good / name).read_bytes())
        data[len(data) // 2] ^= 0xFF
        (corrupt / name).write_bytes(bytes(data))
    one_bad = root / "one-bad"  # every file good but the first
    shutil.copytree(good, one_bad)
    shutil.copy(corrupt / MNIST.files[0], one_bad / MNIST.files[0])
    handler = type("Handler", (_QuietHandler,), {"requests": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield base, handler
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def refused_url():
    """A URL on 127.0.0.1 where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/mnist/"


class _MisbehavingHandler(http.server.BaseHTTPRequestHandler):
    """``/slow/<name>``: the file, one byte every 50 ms; ``/huge/<name>``: announces and
    sends 50 MB; ``/endless/<name>``: 50 MB without a Content-Length; ``/padded/<name>``: the
    file followed by 100 extra bytes."""

    protocol_version = "HTTP/1.0"
    root: Path
    stop: threading.Event

    def log_message(self, *args):
        pass

    def do_GET(self):
        kind, _, name = self.path.strip("/").partition("/")
        path = self.root / name
        if not path.is_file() or kind not in ("slow", "huge", "endless", "padded"):
            self.send_error(404)
            return
        data = path.read_bytes()
        try:
            self.send_response(200)
            if kind == "slow":
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                for i in range(len(data)):
                    if self.stop.is_set():
                        return
                    self.wfile.write(data[i:i + 1])
                    time.sleep(0.05)
            elif kind in ("huge", "endless"):
                if kind == "huge":
                    self.send_header("Content-Length", str(50 << 20))
                self.end_headers()
                block = b"\0" * (1 << 16)
                for _ in range(800):
                    if self.stop.is_set():
                        return
                    self.wfile.write(block)
            else:
                padded = data + b"x" * 100
                self.send_header("Content-Length", str(len(padded)))
                self.end_headers()
                self.wfile.write(padded)
        except OSError:  # the client hung up
            pass


@pytest.fixture(scope="module")
def bad_server(repo):
    """A mirror of the vendored MNIST files that trickles or sends too much (see the handler)."""
    stop = threading.Event()
    handler = type("Handler", (_MisbehavingHandler,), {"root": vendored_dataset(repo, "mnist"), "stop": stop})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    stop.set()
    httpd.shutdown()
    httpd.server_close()


def test_catalog_checksums_equal_the_vendored_sha256sums(repo):
    for name, dataset in DATASETS.items():
        lines = (vendored_dataset(repo, name) / "SHA256SUMS").read_text().split("\n")
        listed = dict(reversed(line.split()) for line in lines if line.strip())
        assert listed == dict(dataset.sha256)


def test_vendored_files_match_the_published_md5(repo):
    for name in MNIST.files:
        _, md5 = file_digests(vendored_dataset(repo, "mnist") / name)
        assert md5 == MNIST.md5[name]


def test_download_over_http_verifies_and_places_the_file(server, tmp_path):
    base, handler = server
    dest = tmp_path / SMALL
    used = fetch_file(SMALL, dest, [f"{base}/good/"], MNIST.sha256[SMALL], MNIST.md5[SMALL])
    assert used == f"{base}/good/"
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == MNIST.sha256[SMALL]
    assert f"/good/{SMALL}" in handler.requests
    assert [p.name for p in tmp_path.iterdir()] == [SMALL]  # no temporary file left


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_placed_files_get_the_umask_mode_not_the_temporary_files_0600(server, tmp_path, umask):
    """Downloads and every pipeline output (atomic_write) are renamed from mkstemp files
    (0600); colleagues on a shared cluster must be able to read them under umask 022."""
    from networkedfl.io import atomic_write, write_csv

    base, _ = server
    old = os.umask(umask)
    try:
        fetch_file(SMALL, tmp_path / SMALL, [f"{base}/good/"], MNIST.sha256[SMALL], MNIST.md5[SMALL])
        atomic_write(tmp_path / "page.md", lambda tmp: Path(tmp).write_text("x", encoding="utf-8"))
        write_csv(pd.DataFrame({"a": [1]}), tmp_path / "table.csv")
    finally:
        os.umask(old)
    for name in (SMALL, "page.md", "table.csv"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask, name


def test_dead_url_refused_port_and_corrupt_copy_fall_through_to_a_good_source(server, refused_url, tmp_path):
    base, _ = server
    messages = []
    used = fetch_file(SMALL, tmp_path / SMALL,
                      [refused_url, f"{base}/missing/", f"{base}/corrupt/", f"{base}/good/"],
                      MNIST.sha256[SMALL], MNIST.md5[SMALL], timeout=5, log=messages.append)
    assert used == f"{base}/good/"
    failures = "\n".join(messages)
    assert "URLError" in failures  # connection refused
    assert "404" in failures  # dead URL
    assert "SHA-256 mismatch" in failures  # corrupt copy


def test_failure_names_file_sources_and_expected_checksum_and_keeps_the_old_file(server, refused_url, tmp_path):
    base, _ = server
    dest = tmp_path / SMALL
    dest.write_bytes(b"an earlier, unrelated result")
    with pytest.raises(DownloadError) as err:
        fetch_file(SMALL, dest, [refused_url, f"{base}/corrupt/"], MNIST.sha256[SMALL], MNIST.md5[SMALL], timeout=5)
    message = str(err.value)
    assert SMALL in message and MNIST.sha256[SMALL] in message and MNIST.md5[SMALL] in message
    assert refused_url in message and f"{base}/corrupt/" in message
    assert dest.read_bytes() == b"an earlier, unrelated result"
    assert sorted(p.name for p in tmp_path.iterdir()) == [SMALL]


def test_md5_is_checked_as_well_as_sha256(server, tmp_path):
    base, _ = server
    with pytest.raises(DownloadError, match="MD5 mismatch"):
        fetch_file(SMALL, tmp_path / SMALL, [f"{base}/good/"], MNIST.sha256[SMALL], "0" * 32)


def test_vendored_copy_is_preferred_and_a_valid_file_is_not_fetched_again(repo, server, tmp_path):
    base, handler = server
    before = len(handler.requests)
    report = fetch_dataset(MNIST, tmp_path, [str(vendored_dataset(repo, "mnist")), f"{base}/good/"])
    assert set(report.origin.values()) == {str(vendored_dataset(repo, "mnist"))}
    again = fetch_dataset(MNIST, tmp_path, [f"{base}/good/"])
    assert set(again.origin.values()) == {"present"}
    assert len(handler.requests) == before  # the server was never asked


def test_a_corrupted_local_file_is_replaced(server, tmp_path):
    base, _ = server
    dest = tmp_path / SMALL
    dest.write_bytes(b"truncated")
    assert fetch_file(SMALL, dest, [f"{base}/good/"], MNIST.sha256[SMALL]) == f"{base}/good/"
    assert file_digests(dest)[0] == MNIST.sha256[SMALL]


def test_dataset_failure_lists_every_failed_file(server, tmp_path):
    base, _ = server
    with pytest.raises(DownloadError) as err:
        fetch_dataset(MNIST, tmp_path, [f"{base}/corrupt/"])
    assert all(name in str(err.value) for name in MNIST.files)
    assert not any(tmp_path.iterdir())


def _download_rule(repo, workdir, sources, *args, limits=None):
    overlay = workdir / "sources.yaml"
    data = {"mnist": {"sources": sources}, **({"download": limits} if limits else {})}
    overlay.write_text(yaml.safe_dump({"data": data}))
    cores = [] if "--cores" in args else ["--cores", "1"]
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(repo / "config" / "test.yaml"), str(overlay), *cores, *args, "download_mnist"]
    env = {**os.environ, "PATH": os.pathsep.join(["/usr/bin", "/bin"])}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def test_download_rule_fetches_from_the_mirrors_when_no_vendored_copy(repo, server, refused_url, tmp_path):
    base, handler = server
    proc = _download_rule(repo, tmp_path, [refused_url, f"{base}/good/"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in MNIST.files:
        assert file_digests(tmp_path / "data" / "raw" / "mnist" / name)[0] == MNIST.sha256[name]
    assert f"/good/{MNIST.files[0]}" in handler.requests
    logs = sorted((tmp_path / "logs" / "data" / "download" / "mnist").glob("*.log"))  # one per file
    assert [p.name for p in logs] == [f"{name}.log" for name in MNIST.files]
    for log in logs:
        assert refused_url in log.read_text() and "verified copy from" in log.read_text()


def test_download_rule_fails_naming_the_file_and_checksum(repo, server, tmp_path):
    base, _ = server
    proc = _download_rule(repo, tmp_path, [f"{base}/corrupt/"])
    assert proc.returncode != 0
    shown = proc.stdout + proc.stderr
    assert "download_mnist" in shown
    # a job per file: the first that failed is named, with its checksum
    assert any(name in shown and MNIST.sha256[name] in shown for name in MNIST.files)
    raw = tmp_path / "data" / "raw" / "mnist"
    assert not any(raw.iterdir() if raw.exists() else ())


# ---------------------------------------------------------------- limits: deadline and size cap


def test_catalog_sizes_equal_the_vendored_files(repo):
    for name, dataset in DATASETS.items():
        assert dict(dataset.sizes) == {f: (vendored_dataset(repo, name) / f).stat().st_size for f in dataset.files}


def test_a_mirror_that_trickles_is_stopped_at_the_wall_clock_deadline(server, bad_server, tmp_path):
    """One byte every 50 ms never trips the per-read timeout; the deadline stops it, names
    the file, the URL and the limit, and the next source is tried."""
    base, _ = server
    messages = []
    start = time.monotonic()
    used = fetch_file(SMALL, tmp_path / SMALL, [f"{bad_server}/slow/", f"{base}/good/"], MNIST.sha256[SMALL],
                      MNIST.md5[SMALL], timeout=5, deadline=0.5, log=messages.append)
    assert time.monotonic() - start < 4
    assert used == f"{base}/good/"
    shown = "\n".join(messages)
    assert f"{bad_server}/slow/{SMALL}" in shown and "deadline of 0.5 s" in shown
    with pytest.raises(DownloadError) as err:
        fetch_file(SMALL, tmp_path / "again" / SMALL, [f"{bad_server}/slow/"], MNIST.sha256[SMALL], timeout=5,
                   deadline=0.5)
    message = str(err.value)
    assert SMALL in message and f"{bad_server}/slow/{SMALL}" in message and "deadline of 0.5 s" in message
    assert not any((tmp_path / "again").iterdir())  # no .part left
    assert time.monotonic() - start < 8


@pytest.mark.parametrize("kind", ["huge", "endless", "padded"])
def test_a_mirror_that_sends_more_than_the_file_holds_is_stopped_at_the_size_cap(bad_server, tmp_path, kind):
    start = time.monotonic()
    with pytest.raises(DownloadError) as err:
        fetch_file(SMALL, tmp_path / SMALL, [f"{bad_server}/{kind}/"], MNIST.sha256[SMALL], timeout=5,
                   size=MNIST.sizes[SMALL])
    message = str(err.value)
    assert SMALL in message and f"{bad_server}/{kind}/{SMALL}" in message
    assert f"size cap of {MNIST.sizes[SMALL]} bytes" in message
    assert not any(tmp_path.iterdir())
    assert time.monotonic() - start < 4  # not 50 MB later


def test_the_cap_can_be_set_and_defaults_to_the_catalog_size(server, bad_server, tmp_path):
    base, _ = server
    with pytest.raises(DownloadError, match="size cap of 1000 bytes"):
        fetch_file(SMALL, tmp_path / SMALL, [f"{base}/good/"], MNIST.sha256[SMALL], max_bytes=1000)
    with pytest.raises(DownloadError) as err:
        fetch_dataset(MNIST, tmp_path, [f"{bad_server}/padded/"], timeout=5)
    for name in MNIST.files:
        assert f"{bad_server}/padded/{name}" in str(err.value)
        assert f"size cap of {MNIST.sizes[name]} bytes" in str(err.value)
    assert not any(tmp_path.iterdir())


def test_default_limits_scale_with_the_expected_size():
    from networkedfl.datasets.download import (
        DEFAULT_DEADLINE,
        DEFAULT_MAX_BYTES,
        default_deadline,
        default_max_bytes,
    )

    big, small = MNIST.sizes["train-images-idx3-ubyte.gz"], MNIST.sizes[SMALL]
    assert 120 <= default_deadline(small) < default_deadline(big) <= DEFAULT_DEADLINE
    assert default_deadline(None) == DEFAULT_DEADLINE == 1800
    assert default_max_bytes(big) == big and default_max_bytes(None) == DEFAULT_MAX_BYTES


def test_the_limits_are_validated_in_the_config(repo, schema_path, tmp_path):
    from networkedfl.pipeline.config import ConfigError, load_config

    overlay = tmp_path / "limits.yaml"
    overlay.write_text(yaml.safe_dump({"data": {"download": {"deadline": 0.5, "max_bytes": 1000, "timeout": 5}}}))
    config = load_config(repo / "config" / "config.yaml", overlay, schema_path=schema_path)
    assert config["data"]["download"] == {"deadline": 0.5, "max_bytes": 1000, "timeout": 5, "offline": False}
    overlay.write_text(yaml.safe_dump({"data": {"download": {"deadline": -1}}}))
    with pytest.raises(ConfigError, match="deadline"):
        load_config(repo / "config" / "config.yaml", overlay, schema_path=schema_path)


# ---------------------------------------------------------------- temporary files


_FETCH_SCRIPT = """
import sys
from networkedfl.datasets import fetch_file
fetch_file(sys.argv[1], sys.argv[2], [sys.argv[3]], "0" * 64, timeout=30)
"""


def _start_slow_fetch(bad_server, directory):
    """A download in a child process, once its .part file exists and is receiving."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_FETCH_SCRIPT), SMALL, str(directory / SMALL),
                             f"{bad_server}/slow/"], stderr=subprocess.PIPE, text=True,
                            # as from a terminal: a shell's background job (e.g. CI started
                            # with `&`) inherits SIGINT ignored, and Python then keeps ignoring it
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for _ in range(1200):  # importing the package may take seconds on a busy machine
        if any(p.name.endswith(".part") for p in directory.iterdir()):
            break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("no .part file appeared: " + proc.communicate()[1][-2000:])
    time.sleep(0.3)
    return proc


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_part_file_is_removed_when_the_download_is_terminated(bad_server, tmp_path, signum):
    proc = _start_slow_fetch(bad_server, tmp_path)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=20)
    assert proc.returncode != 0
    if signum == signal.SIGTERM:
        assert proc.returncode == -signal.SIGTERM, stderr  # still dies of the signal
    assert list(tmp_path.iterdir()) == [], stderr


def test_a_part_file_left_by_a_killed_download_is_removed_by_the_next(server, bad_server, tmp_path):
    base, _ = server
    proc = _start_slow_fetch(bad_server, tmp_path)
    proc.kill()  # SIGKILL: nothing can clean up
    proc.communicate(timeout=20)
    stale = [p for p in tmp_path.iterdir() if p.name.endswith(".part")]
    assert stale
    live = tmp_path / f".{SMALL}.{os.getpid()}@{socket.gethostname()}.abcdefgh.part"  # a running download's
    live.write_bytes(b"partial")
    fetch_file(SMALL, tmp_path / SMALL, [f"{base}/good/"], MNIST.sha256[SMALL])
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".verified")) == sorted(
        [live.name, SMALL])


# ---------------------------------------------------------------- re-verification when read


def _raw_copy(repo, tmp_path, dataset, names):
    directory = tmp_path / "data" / "raw" / dataset
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(vendored_dataset(repo, dataset) / name, directory / name)
    return directory


def test_an_edited_review_file_is_detected_when_a_job_reads_it(repo, tmp_path):
    """An edit below data/raw/ used to change Table 10.2 silently."""
    from networkedfl.datasets.reviews import read_domain

    directory = _raw_copy(repo, tmp_path, "reviews", ["books.task.train", "books.task.test"])
    assert read_domain(directory, "books")["train"].n_documents == 1600
    path = directory / "books.task.train"
    data = path.read_bytes()
    path.write_bytes(data.replace(b" great ", b" grand ", 1))  # same size, one word changed
    with pytest.raises(ValueError) as err:
        read_domain(directory, "books")
    message = str(err.value)
    assert str(path) in message and "checksum" in message
    assert message.endswith(f"--forcerun {path}")  # the command that fetches it again (test_recovery.py runs it)


def test_an_edited_mnist_file_is_detected_when_a_job_reads_it(repo, tmp_path):
    from networkedfl.datasets.mnist import load_mnist

    directory = _raw_copy(repo, tmp_path, "mnist", [f for f in MNIST.files if f.startswith("t10k")])
    labels = directory / SMALL
    raw = bytearray(gzip.decompress(labels.read_bytes()))
    raw[8] = (raw[8] + 1) % 10  # the first label, still a digit: the file stays readable
    labels.write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(ValueError) as err:
        load_mnist(directory, "test")
    message = str(err.value)
    assert str(labels) in message and MNIST.sha256[SMALL] in message
    assert message.endswith(f"--forcerun {labels}")


def test_the_verification_is_cached_by_size_and_times(repo, tmp_path, monkeypatch):
    from networkedfl.datasets import verify
    from networkedfl.datasets.reviews import read_review_file

    path = _raw_copy(repo, tmp_path, "reviews", ["MR.task.test"]) / "MR.task.test"
    hashed = []
    real = verify.file_digests
    monkeypatch.setattr(verify, "file_digests", lambda p: hashed.append(p) or real(p))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**10))  # as if written just now, however slow the test
    read_review_file(path)
    read_review_file(path)
    assert len(hashed) == 2  # just written: a later edit might keep its times, not cached yet
    monkeypatch.setattr(verify, "RACY_SECONDS", 0.0)
    os.utime(path, ns=(time.time_ns(), time.time_ns() - 10**9))
    read_review_file(path)
    read_review_file(path)
    assert len(hashed) == 3  # the second read trusts the cache
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))  # touched: checked again, still good
    read_review_file(path)
    assert len(hashed) == 4
    os.utime(path, ns=(time.time_ns(), time.time_ns() - 10**9))
    read_review_file(path)
    read_review_file(path)
    assert len(hashed) == 5  # cached again
    before = path.stat()
    time.sleep(0.05)  # past the kernel's timestamp tick (RACY_SECONDS covers this outside tests)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime set back: only ctime differs
    after = path.stat()
    assert (after.st_size, after.st_ino, after.st_mtime_ns) == (before.st_size, before.st_ino, before.st_mtime_ns)
    with pytest.raises(ValueError, match="checksum"):
        read_review_file(path)


def test_files_outside_data_raw_are_not_checked(repo, tmp_path):
    from networkedfl.datasets.reviews import read_review_file

    path = tmp_path / "elsewhere" / "MR.task.test"
    path.parent.mkdir()
    path.write_bytes(b"1\tan edited copy , outside data/raw\n")
    assert read_review_file(path).texts == ("an edited copy , outside data/raw",)


# ---------------------------------------------------------------- the rules: a job per file


def test_one_bad_file_costs_only_itself(repo, server, tmp_path):
    base, _ = server
    proc = _download_rule(repo, tmp_path, [f"{base}/one-bad/"], "--keep-going")
    assert proc.returncode != 0
    raw = tmp_path / "data" / "raw" / "mnist"
    bad, *good = MNIST.files
    assert not (raw / bad).exists()
    for name in good:  # verified, and kept although another file failed
        assert file_digests(raw / name)[0] == MNIST.sha256[name]
    shown = proc.stdout + proc.stderr
    assert bad in shown and MNIST.sha256[bad] in shown


def test_download_limits_come_from_the_config(repo, server, bad_server, tmp_path):
    base, _ = server
    proc = _download_rule(repo, tmp_path, [f"{bad_server}/slow/"], "--cores", "4",
                          limits={"deadline": 0.5, "timeout": 5})
    assert proc.returncode != 0
    shown = proc.stdout + proc.stderr
    assert f"{bad_server}/slow/{SMALL}" in shown and "deadline of 0.5 s" in shown
    assert not any((tmp_path / "data" / "raw" / "mnist").glob(".*.part"))


def test_offline_the_download_rule_contacts_no_mirror_and_names_the_switch(repo, server, tmp_path):
    """Issue 45 item 6: a bad local copy with `data: download: offline: true` fails without
    contacting the mirror, naming the switch; the good local files are placed."""
    base, handler = server
    corrupt = tmp_path / "corrupt-copy"
    shutil.copytree(vendored_dataset(repo, "mnist"), corrupt)
    data = bytearray((corrupt / SMALL).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (corrupt / SMALL).write_bytes(bytes(data))
    before = len(handler.requests)
    proc = _download_rule(repo, tmp_path, [str(corrupt), f"{base}/good/"], "--keep-going",
                          limits={"offline": True})
    shown = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "offline: refusing to download" in shown and "data: download: offline: false" in shown, shown[-3000:]
    assert handler.requests[before:] == []
    assert file_digests(tmp_path / "data" / "raw" / "mnist" / MNIST.files[0])[0] == MNIST.sha256[MNIST.files[0]]
