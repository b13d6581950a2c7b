"""The real download path: files served by a local HTTP server on 127.0.0.1.

Covers the checksum verification, the order of sources (vendored copy first), a corrupt
file, a dead URL and a refused connection, atomic placement, and the `download_mnist`
rule of the pipeline run by Snakemake against the local server.
"""

import functools
import hashlib
import http.server
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
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
from networkedfl.pipeline.paths import vendored_dataset

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
    from networkedfl.pipeline.io import atomic_write, write_csv

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


def _download_rule(repo, workdir, sources):
    overlay = workdir / "sources.yaml"
    overlay.write_text(yaml.safe_dump({"data": {"mnist": {"sources": sources}}}))
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(repo / "config" / "test.yaml"), str(overlay), "--cores", "1", "download_mnist"]
    env = {**os.environ, "PATH": os.pathsep.join(["/usr/bin", "/bin"])}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.pipeline
def test_download_rule_fetches_from_the_mirrors_when_no_vendored_copy(repo, server, refused_url, tmp_path):
    base, handler = server
    proc = _download_rule(repo, tmp_path, [refused_url, f"{base}/good/"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in MNIST.files:
        assert file_digests(tmp_path / "data" / "raw" / "mnist" / name)[0] == MNIST.sha256[name]
    assert f"/good/{MNIST.files[0]}" in handler.requests
    log = (tmp_path / "logs" / "data" / "download_mnist.log").read_text()
    assert refused_url in log and "verified copy from" in log


@pytest.mark.pipeline
def test_download_rule_fails_naming_the_file_and_checksum(repo, server, tmp_path):
    base, _ = server
    proc = _download_rule(repo, tmp_path, [f"{base}/corrupt/"])
    assert proc.returncode != 0
    shown = proc.stdout + proc.stderr
    assert "download_mnist" in shown
    assert MNIST.files[0] in shown and MNIST.sha256[MNIST.files[0]] in shown
    assert not (tmp_path / "data" / "raw" / "mnist" / MNIST.files[0]).exists()
