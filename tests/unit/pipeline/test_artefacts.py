"""Readable errors for every corrupt artefact the pipeline reads (issue 37 item 3): a graph
cache that is no longer a complete zip, a table or raw output that no longer has the bytes
its provenance sidecar records, an unreadable sidecar, a damaged last good copy in
``.previous/``: the path, what is wrong and the one command that rebuilds it (the run's own
Snakemake command with ``--forcerun <file>``). And the graph cache is byte-reproducible
(issue 37 item 6): no timings, fixed zip dates."""

import dataclasses  # noqa: I001 (networkedfl.pipeline.integrity is new: isort places it once it exists)
import json
import logging
import os
import time
import zipfile

import numpy as np
import pandas as pd
import pytest

from networkedfl.experiments.gtv.mnist_graph import MnistGraph, load_mnist_graph, save_mnist_graph
from networkedfl.io import (
    REPAIR_ENV,
    CorruptArtefactError,
    keep_previous,
    previous_path,
    record_command,
    write_csv,
)
from networkedfl.pipeline.integrity import check_artefacts, read_table
from networkedfl.pipeline.provenance import read_sidecar, sidecar_path, write_sidecar
from networkedfl.pipeline.runner import read_previous_tuning

COMMAND = "'/opt/it'\"'\"'s/python' -m snakemake --cores 2 gtv_table2_mnist_clusters"


@pytest.fixture(autouse=True)
def recorded_command(monkeypatch):
    """As the workflow records it for its jobs (common.smk)."""
    monkeypatch.setenv(REPAIR_ENV, COMMAND)


def _graph(**changes):
    rng = np.random.default_rng(0)
    graph = MnistGraph(name="g", clusters=np.array([[0, 1], [2, 3]]), indices=rng.integers(0, 100, (4, 6)),
                       n_train=4, node_cluster=np.array([0, 0, 1, 1]), embedding=rng.normal(size=(4, 4, 2)),
                       divergences=rng.random((4, 4)), distances=rng.random((4, 4)),
                       edges=np.array([[0, 1], [2, 3]]), weights=np.array([0.5, 0.25]),
                       seconds={"tsne": 1.5, "kl": 0.25, "knn": 0.01}, spec={"neighbours": 1})
    return dataclasses.replace(graph, **changes)


def _repair(path):
    return f"To rebuild it and everything made from it, run:\n    {COMMAND} --forcerun {path}"


def test_the_graph_cache_is_byte_reproducible(tmp_path, monkeypatch):
    """Saved again a year later from a run that took other times: the same bytes (zip
    entries dated 1980-01-01, no timings in the metadata), and it loads back."""
    first, second = tmp_path / "a.npz", tmp_path / "b.npz"
    save_mnist_graph(_graph(), first)
    later = time.time() + 365 * 86400
    monkeypatch.setattr(time, "time", lambda: later)
    save_mnist_graph(_graph(seconds={"tsne": 9.0, "kl": 2.0, "knn": 0.5}), second)
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as archive:
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert "seconds" not in json.loads(str(np.load(first)["meta"]))
    back = load_mnist_graph(first)
    assert np.array_equal(back.edges, _graph().edges) and back.spec == {"neighbours": 1}


def _flip_middle(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2:len(data) // 2 + 32] = bytes(32)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(("damage", "problem"), [
    (lambda p: p.write_bytes(p.read_bytes()[:200]), "not a complete zip file"),
    (lambda p: p.write_text("edges,weights\n"), "not a complete zip file"),
    (_flip_middle, "is damaged"),
], ids=["truncated", "not-a-zip", "damaged-member"])
def test_a_corrupt_graph_cache_names_the_file_what_is_wrong_and_the_command(tmp_path, damage, problem):
    path = tmp_path / "results" / "cache" / "mnist_graph" / "g.npz"
    save_mnist_graph(_graph(), path)
    damage(path)
    with pytest.raises(CorruptArtefactError) as caught:
        load_mnist_graph(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and problem in message, message
    assert message.endswith(_repair(path)), message
    with pytest.raises(CorruptArtefactError, match=problem):  # what the run checks before any job
        check_artefacts([path])


def test_a_cache_without_its_metadata_is_named(tmp_path):
    path = tmp_path / "g.npz"
    np.savez(path, edges=np.zeros((1, 2)))
    with pytest.raises(CorruptArtefactError, match=r"g\.npz: .*no member meta"):
        load_mnist_graph(path)


def _job_output(tmp_path, name="results/raw/t/all.csv"):
    out = tmp_path / name
    write_csv(pd.DataFrame({"metric": ["mse", "mse"], "value": [0.5, 0.25], "seed": [0, 1]}), out)
    write_sidecar(out, {"target": "t", "code_hash": "abc"})
    return out


def test_a_sidecar_records_the_bytes_of_its_output(tmp_path):
    import hashlib

    out = _job_output(tmp_path)
    record = read_sidecar(out)
    assert record["output"] == {"bytes": out.stat().st_size, "sha256": hashlib.sha256(out.read_bytes()).hexdigest()}
    check_artefacts([out])
    assert read_table(out)["value"].tolist() == [0.5, 0.25]


@pytest.mark.parametrize(("edit", "problem"), [
    (lambda p: p.write_text(p.read_text().replace("0.25", "0.35")), "SHA-256"),
    (lambda p: p.write_text(p.read_text()[:15]), "bytes"),
], ids=["same-size-edit", "truncated"])
def test_an_output_that_is_not_what_its_sidecar_records_is_refused(tmp_path, edit, problem):
    out = _job_output(tmp_path)
    edit(out)
    with pytest.raises(CorruptArtefactError) as caught:
        read_table(out)
    message = str(caught.value)
    assert message.startswith(f"{out}: ") and problem in message and "sidecar" in message, message
    assert message.endswith(_repair(out))


def test_an_unreadable_table_without_a_sidecar_is_named(tmp_path):
    path = tmp_path / "results" / "tables" / "t.csv"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    with pytest.raises(CorruptArtefactError) as caught:
        read_table(path)
    assert str(caught.value).startswith(f"{path}: ") and str(caught.value).endswith(_repair(path))


@pytest.mark.parametrize("content", ["{\"target\": \"t\", ", "[1, 2]"], ids=["cut-off", "not-a-record"])
def test_an_unreadable_sidecar_is_named_with_the_command_that_rebuilds_it(tmp_path, content):
    out = _job_output(tmp_path)
    sidecar_path(out).write_text(content)
    with pytest.raises(CorruptArtefactError) as caught:
        read_sidecar(out)
    message = str(caught.value)
    assert message.startswith(f"{sidecar_path(out)}: ") and "provenance" in message, message
    assert message.endswith(_repair(sidecar_path(out)))


def test_a_damaged_last_good_tuning_copy_is_named_and_ignored(tmp_path, caplog):
    """`.previous/` holds the last good table and its sidecar: a copy that no longer matches
    is not reused (a cut-off copy would reuse a point's missing rows); the job reruns every
    point and replaces it."""
    out = _job_output(tmp_path, "results/tuning/t/all.csv")
    keep_previous(out)
    keep_previous(sidecar_path(out))
    assert read_previous_tuning(previous_path(out)) is not None
    kept = previous_path(out)
    kept.unlink()  # a hard link: write a damaged copy without touching the output
    kept.write_text(out.read_text()[:-8])
    with caplog.at_level(logging.WARNING):
        assert read_previous_tuning(kept) is None
    assert str(kept) in caplog.text and "provenance sidecar" in caplog.text and "everything runs again" in caplog.text


def test_the_repair_command_is_the_run_s_own_command_quoted(monkeypatch, tmp_path):
    monkeypatch.delenv(REPAIR_ENV)
    argv = ["/venv/lib/python3.11/site-packages/snakemake/__main__.py", "--configfile", "a b.yaml", "--cores", "2",
            "gtv_fig12_star_graph"]
    recorded = record_command(argv)
    assert recorded == f"{os.environ[REPAIR_ENV]}"
    import shlex
    import sys

    assert shlex.split(recorded) == [sys.executable, "-m", "snakemake", *argv[1:]]
    out = _job_output(tmp_path, "results/x y/all.csv")
    out.write_text("edited\n")
    with pytest.raises(CorruptArtefactError) as caught:
        read_table(out)
    command = str(caught.value).splitlines()[-1].strip()
    assert shlex.split(command)[-2:] == ["--forcerun", str(out)]
    monkeypatch.delenv(REPAIR_ENV)
    assert record_command(["-c"]) is None and REPAIR_ENV not in os.environ  # not Snakemake's command line


def test_before_any_job_an_output_newer_than_its_sidecar_is_left_to_snakemake(tmp_path):
    """The check at the start of a run (``finished=False``) compares an output with its
    sidecar only where the sidecar was written after it, as a finished job writes them: an
    output renamed into place by a job killed before its sidecar, or rewritten by a run going
    on, is Snakemake's to redo, and the job that reads it checks it then."""
    out = _job_output(tmp_path)
    out.write_text(out.read_text().replace("0.25", "0.35"))  # newer than its sidecar
    check_artefacts([out], finished=False)
    with pytest.raises(CorruptArtefactError, match="SHA-256"):
        check_artefacts([out])
    stamp = sidecar_path(out).stat().st_mtime_ns
    os.utime(out, ns=(stamp, stamp))  # damaged without a write: as old as its sidecar
    with pytest.raises(CorruptArtefactError, match="SHA-256"):
        check_artefacts([out], finished=False)


def test_an_edited_dataset_file_names_itself_and_the_command_that_fetches_it_again(tmp_path):
    from networkedfl.datasets.verify import ChecksumError, check_raw_file

    path = tmp_path / "data" / "raw" / "mnist" / "train-labels-idx1-ubyte.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not the labels")
    with pytest.raises(ChecksumError) as caught:
        check_raw_file(path)
    assert isinstance(caught.value, CorruptArtefactError)
    message = str(caught.value)
    assert message.startswith(f"{path}: does not match its checksum") and message.endswith(_repair(path)), message
    with pytest.raises(CorruptArtefactError, match="does not match its checksum"):
        check_artefacts([path])
