"""Keyed signatures of the provenance sidecars (issue 45): a sidecar's size and SHA-256
catch corruption; with a results key, an edited result whose sidecar was recomputed is
caught too, and without one behaviour is that of the unsigned sidecars."""

import hashlib
import hmac
import json

import pytest

from networkedfl.io import CorruptArtefactError, file_sha256, write_json
from networkedfl.pipeline.integrity import (
    artefact_problem,
    check_artefacts,
    check_signed,
    read_table,
)
from networkedfl.pipeline.provenance import read_sidecar, sidecar_path, write_sidecar
from networkedfl.pipeline.signing import (
    KEY_ENV,
    KEY_FILE_ENV,
    SIGNATURE,
    results_key,
    sign_record,
    signature_problem,
)

KEY = "k" * 32


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY.encode()


@pytest.fixture
def unkeyed(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)


def _result(tmp_path, text="a,value\n1,2.5\n"):
    path = tmp_path / "results" / "tables" / "t.csv"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    write_sidecar(path, {"target": "t", "code_hash": "abc"})
    return path


def _forge(path, text):
    """Edit the result and recompute its sidecar's size and SHA-256, keeping the rest (the
    signature of the old content too): what a deliberate edit without the key can do."""
    path.write_text(text)
    record = json.loads(sidecar_path(path).read_text())
    record["output"] = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
    write_json(record, sidecar_path(path))


def test_the_signature_is_the_hmac_of_the_file_name_and_the_record(keyed, tmp_path):
    path = _result(tmp_path)
    record = read_sidecar(path)
    body = {k: v for k, v in record.items() if k != SIGNATURE}
    message = b"t.csv\0" + json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    assert record[SIGNATURE] == {"algorithm": "hmac-sha256",
                                 "value": hmac.new(keyed, message, hashlib.sha256).hexdigest()}
    assert record["output"]["sha256"] == file_sha256(path)
    assert signature_problem(path, record, keyed) is None
    check_signed([path, sidecar_path(path)])
    assert len(read_table(path)) == 1


def test_an_edited_result_with_a_recomputed_sidecar_is_caught_when_keyed(keyed, tmp_path):
    path = _result(tmp_path)
    _forge(path, "a,value\n1,9.5\n")
    problem = artefact_problem(path)
    assert "signature does not match" in problem and str(sidecar_path(path)) in problem
    with pytest.raises(CorruptArtefactError, match="signature does not match") as caught:
        read_table(path)
    assert str(path) in str(caught.value) and "--forcerun" in str(caught.value)
    with pytest.raises(CorruptArtefactError, match="t.csv"):
        check_signed([path])


def test_a_sidecar_signed_for_another_file_or_key_or_stripped_is_refused(keyed, tmp_path):
    path = _result(tmp_path)
    record = read_sidecar(path)
    assert "does not match" in signature_problem(path.with_name("u.csv"), record, keyed)  # moved onto another name
    assert "does not match" in signature_problem(path, record, b"another key of 32 bytes........")
    stripped = {k: v for k, v in record.items() if k != SIGNATURE}
    assert "not signed" in signature_problem(path, stripped, keyed)
    assert "not an hmac-sha256" in signature_problem(path, {**record, SIGNATURE: "x"}, keyed)
    write_json(stripped, sidecar_path(path))
    with pytest.raises(CorruptArtefactError, match=f"not signed, but {KEY_ENV}"):
        check_artefacts([path])


def test_with_a_key_a_result_without_a_sidecar_is_not_rendered(keyed, tmp_path):
    path = _result(tmp_path)
    sidecar_path(path).unlink()
    check_artefacts([path])  # no record: nothing to compare for a plain reader
    with pytest.raises(CorruptArtefactError, match="no provenance sidecar") as caught:
        check_signed([path])
    assert str(path) in caught.value.problems


def test_without_a_key_nothing_is_signed_and_unsigned_sidecars_are_accepted(unkeyed, tmp_path):
    """Documented behaviour (docs/faults.md): the sidecars then guard against corruption
    only; an edit with a recomputed sidecar passes, a plain edit does not."""
    assert results_key() is None
    path = _result(tmp_path)
    assert SIGNATURE not in read_sidecar(path)
    check_signed([path])
    _forge(path, "a,value\n1,9.5\n")
    check_signed([path])  # a forged sidecar cannot be told from a true one without a key
    path.write_text("a,value\n1,7.5\n")
    with pytest.raises(CorruptArtefactError, match="SHA-256"):
        check_signed([path])


def test_a_signed_result_read_without_the_key_is_checked_as_before(monkeypatch, keyed, tmp_path):
    path = _result(tmp_path)
    monkeypatch.delenv(KEY_ENV)
    check_signed([path])
    assert sign_record(path, read_sidecar(path), keyed) == read_sidecar(path)  # signing is deterministic


def test_the_key_comes_from_the_environment_or_a_file_outside_the_checkout(tmp_path, repo):
    key_file = tmp_path / "results.key"
    key_file.write_text(KEY + "\n")
    assert results_key({KEY_FILE_ENV: str(key_file)}) == KEY.encode()
    assert results_key({KEY_ENV: KEY}) == KEY.encode()
    assert results_key({}) is None
    with pytest.raises(ValueError, match=f"both {KEY_ENV} and {KEY_FILE_ENV}"):
        results_key({KEY_ENV: KEY, KEY_FILE_ENV: str(key_file)})
    with pytest.raises(ValueError, match=f"{KEY_ENV}: the key has 5 bytes; .* at least 16"):
        results_key({KEY_ENV: "short"})
    with pytest.raises(ValueError, match=f"{KEY_FILE_ENV}=.*cannot be read"):
        results_key({KEY_FILE_ENV: str(tmp_path / "missing.key")})
    with pytest.raises(ValueError, match="inside the checkout"):
        results_key({KEY_FILE_ENV: str(repo / "config" / "config.yaml")})


def test_with_a_key_a_graph_cache_is_checked_against_its_signed_sidecar(keyed, tmp_path):
    """A ``.npz`` cache is checked as a zip (its CRC-32s); with a key, a well-formed cache
    written over a signed one, its sidecar's digest recomputed, is refused too."""
    import numpy as np

    from networkedfl.io import write_npz

    path = tmp_path / "results" / "cache" / "g.npz"
    path.parent.mkdir(parents=True)
    write_npz(path, {"name": "g"}, {"x": np.zeros(3)})
    write_sidecar(path, {"graph": "g"})
    check_artefacts([path])
    write_npz(path, {"name": "g"}, {"x": np.ones(3)})
    record = read_sidecar(path)
    record["output"] = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
    write_json(record, sidecar_path(path))
    with pytest.raises(CorruptArtefactError, match="signature does not match"):
        check_artefacts([path])
