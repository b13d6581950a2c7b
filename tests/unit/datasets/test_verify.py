"""The check of a downloaded dataset file cannot be talked round from the data directory
(issue 37 item 5): the cache that spares a re-hash of an unchanged file is a record beside
the file, and a record that whoever edits the file writes too (the expected SHA-256, the
edited file's new size, inode and times) no longer makes the edit pass."""

import json
import os
import shutil
import time

import pytest

from networkedfl.datasets import verify
from networkedfl.datasets.catalog import DATASETS
from networkedfl.datasets.verify import ChecksumError, check_raw_file, sidecar

NAME = "t10k-labels-idx1-ubyte.gz"  # MNIST's smallest file


@pytest.fixture
def raw_file(repo, tmp_path, monkeypatch):
    monkeypatch.setattr(verify, "RACY_SECONDS", 0.0)  # record at once (the tests set no times back)
    monkeypatch.setenv("NETWORKEDFL_VERIFY_KEY_FILE", str(tmp_path / "key"))  # not the user's own
    path = tmp_path / "data" / "raw" / "mnist" / NAME
    path.parent.mkdir(parents=True)
    shutil.copy(repo / "data" / "vendored" / "mnist" / NAME, path)
    return path


def _stat_key(path):
    st = path.stat()
    return {"size": st.st_size, "ino": st.st_ino, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}


def test_a_record_rewritten_for_an_edited_file_does_not_make_it_pass(raw_file):
    check_raw_file(raw_file)  # verified, and recorded beside it
    record = json.loads(sidecar(raw_file).read_text())
    assert record["sha256"] == DATASETS["mnist"].sha256[NAME]
    time.sleep(0.05)  # past the kernel's timestamp tick (RACY_SECONDS covers this outside tests)
    data = bytearray(raw_file.read_bytes())
    data[-1] ^= 0x01
    raw_file.write_bytes(bytes(data))  # edited: one bit
    forged = {**record, "stat": _stat_key(raw_file)}  # what the editor can see and write
    sidecar(raw_file).write_text(json.dumps(forged))
    with pytest.raises(ChecksumError, match="does not match its checksum"):
        check_raw_file(raw_file)


def test_a_record_copied_from_another_verified_file_does_not_make_it_pass(raw_file, repo):
    check_raw_file(raw_file)
    other = raw_file.with_name("train-labels-idx1-ubyte.gz")
    shutil.copy(repo / "data" / "vendored" / "mnist" / other.name, other)
    check_raw_file(other)
    shutil.copy(raw_file, other)  # the wrong file under the other's name ...
    record = json.loads(sidecar(raw_file).read_text())
    sidecar(other).write_text(json.dumps({**record, "stat": _stat_key(other)}))  # ... with a record to match
    with pytest.raises(ChecksumError):
        check_raw_file(other)


def test_an_unchanged_file_is_hashed_once(raw_file, monkeypatch):
    hashed = []
    real = verify.file_digests
    monkeypatch.setattr(verify, "file_digests", lambda p: hashed.append(p) or real(p))
    for _ in range(3):
        check_raw_file(raw_file)
    assert len(hashed) == 1


def test_a_record_made_with_another_key_is_not_trusted(raw_file, monkeypatch, tmp_path):
    """Another user's, or after the key was replaced: checked again, then recorded anew."""
    check_raw_file(raw_file)
    monkeypatch.setenv(verify.KEY_ENV, str(tmp_path / "another" / "key"))
    hashed = []
    real = verify.file_digests
    monkeypatch.setattr(verify, "file_digests", lambda p: hashed.append(p) or real(p))
    check_raw_file(raw_file)
    check_raw_file(raw_file)
    assert len(hashed) == 1
    assert os.stat(tmp_path / "another" / "key").st_mode & 0o077 == 0  # readable by its owner only


def test_the_key_file_variable_ends_in_file_and_its_old_name_is_read_with_a_warning(raw_file, monkeypatch, tmp_path):
    """One family of names (issue 40): ``NETWORKEDFL_VERIFY_KEY_FILE`` names a file, as
    ``NETWORKEDFL_RESULTS_KEY_FILE`` does; ``NETWORKEDFL_VERIFY_KEY``, its old name, still
    works, with a warning naming the new one, and loses to the new name where both are set."""
    assert verify.KEY_ENV == "NETWORKEDFL_VERIFY_KEY_FILE" and verify.OLD_KEY_ENV == "NETWORKEDFL_VERIFY_KEY"
    monkeypatch.delenv(verify.KEY_ENV)
    monkeypatch.setenv(verify.OLD_KEY_ENV, str(tmp_path / "old" / "key"))
    with pytest.warns(FutureWarning, match="NETWORKEDFL_VERIFY_KEY_FILE"):
        check_raw_file(raw_file)
    assert (tmp_path / "old" / "key").is_file()
    monkeypatch.setenv(verify.KEY_ENV, str(tmp_path / "new" / "key"))
    check_raw_file(raw_file)
    assert (tmp_path / "new" / "key").is_file()
