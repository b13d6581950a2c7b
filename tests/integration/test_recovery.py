"""A plain run repairs holes (issue 37 item 2): a missing intermediate (a dataset file, a
job's raw or tuning output, a graph cache stage) is rebuilt by the next plain `snakemake`,
with everything made from it; a corrupt one (a dataset file that no longer matches its
checksum, a graph cache that is no zip) stops that run before any job, naming the file and
the one command that rebuilds it, and that command works. Every earlier result comes out
byte for byte as it was.

Snakemake alone says "Nothing to be done" when an intermediate is gone but the files made
from it are newer: the workflow's target rules name every intermediate of their target.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from networkedfl.io import PAUSE_ENV

GRAPH_TARGET = "gtv_table2_mnist_clusters"  # MNIST data -> three graph stages -> one job
GRAPH = "results/cache/mnist_graph/five_clusters.npz"
STAGES = ("results/cache/mnist_tsne/five_clusters.npz", "results/cache/mnist_kl/five_clusters.npz", GRAPH)
LABELS = "data/raw/mnist/train-labels-idx1-ubyte.gz"
RAW_TARGET = "gtv_fig13_star_lambda"
TUNED_TARGET = "fedrelax_fig01c_baselines"  # one tuning job, one run job
#: Outputs that hold timestamps (executed notebooks, pages, PDF metadata), or the working
#: directory's absolute path (a notebook's parameters).
UNSTABLE = (".ipynb", ".html", ".pdf", ".png", ".params.yaml")


def _env(**extra):
    return {**os.environ, "PATH": os.pathsep.join(["/usr/bin", "/bin"]), "OMP_NUM_THREADS": "1", **extra}


def _command(repo, workdir, *args):
    return [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(repo / "config" / "test.yaml"), "--cores", "2", *args]


def _snakemake(repo, workdir, *args, timeout=900):
    return subprocess.run(_command(repo, workdir, *args), capture_output=True, text=True, timeout=timeout,
                          env=_env())


def _results(workdir):
    """Every result a fault must leave as it was: data files, caches, raw and tuning
    outputs, tables, claims, their sidecars and last good copies."""
    root = Path(workdir)
    return {str(p.relative_to(root)): p.read_bytes()
            for p in [*root.glob("results/**/*"), *root.glob("data/raw/**/*")]
            if p.is_file() and not p.name.startswith(".")
            and not p.name.removesuffix(".provenance.json").endswith(UNSTABLE)}


def _assert_same(workdir, before):
    after = _results(workdir)
    assert sorted(after) == sorted(before), set(after) ^ set(before)
    changed = [name for name in before if after[name] != before[name]]
    assert not changed, changed


def _built(repo, tmp_path_factory, target):
    workdir = tmp_path_factory.mktemp(target)
    proc = _snakemake(repo, workdir, target)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return workdir


def _copy(built, tmp_path):
    """A copy of a built working directory (times kept, so nothing looks changed), as deep
    below the file system's root as the original: the notebook input's path relative to it
    (the rules' only path that leaves the working directory) stays the same."""
    shutil.copytree(built, tmp_path, symlinks=True, dirs_exist_ok=True)
    return tmp_path


def _repair_command(out):
    """The command a stopped run printed to rebuild what it found corrupt."""
    found = re.search(r"To rebuild (?:it|them) and everything made from (?:it|them), run:\n\s+(.+)", out)
    assert found, out[-3000:]
    return found.group(1)


def _up_to_date(repo, workdir, target):
    dry = _snakemake(repo, workdir, "-n", target)
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, (dry.stdout + dry.stderr)[-3000:]


@pytest.fixture(scope="module")
def graph_built(repo, tmp_path_factory):
    return _built(repo, tmp_path_factory, GRAPH_TARGET)


@pytest.mark.parametrize("missing", [(LABELS, f"results/raw/{GRAPH_TARGET}/all.csv"), (GRAPH,), STAGES[:1]],
                         ids=["dataset-file-and-raw-output", "graph-cache", "first-graph-stage"])
def test_a_missing_intermediate_is_rebuilt_by_a_plain_run(repo, graph_built, tmp_path, missing):
    """The issue's case first: a dataset file deleted (as a ChecksumError used to advise)
    after the job reading it failed, which took its raw output with it."""
    workdir = _copy(graph_built, tmp_path)
    before = _results(workdir)
    for name in missing:
        (workdir / name).unlink()
    if GRAPH in missing:  # run outside the pipeline, the job names the command that builds it
        from networkedfl.pipeline.config import load_config
        from networkedfl.pipeline.runner import run_setting

        config = load_config(repo / "config" / "config.yaml", repo / "config" / "test.yaml")
        with pytest.raises(FileNotFoundError, match=f"{GRAPH}.*`snakemake {GRAPH_TARGET}`"):
            run_setting(config, GRAPH_TARGET, "all", [0], {"graph": str(workdir / GRAPH)})
    proc = _snakemake(repo, workdir, GRAPH_TARGET)  # that command, with this run's config files
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    _assert_same(workdir, before)
    _up_to_date(repo, workdir, GRAPH_TARGET)


def _corrupt_zip(path):
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(64)  # inside a member: its CRC-32 no longer matches
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(("name", "damage", "problem"), [
    (LABELS, lambda p: p.write_bytes(p.read_bytes() + b"edited"), "does not match its checksum"),
    (GRAPH, _corrupt_zip, "CRC"),
    (GRAPH, lambda p: p.write_bytes(p.read_bytes()[:100]), "not a complete zip"),
], ids=["edited-dataset-file", "graph-cache-bad-crc", "graph-cache-truncated"])
def test_a_corrupt_intermediate_stops_the_run_and_the_printed_command_repairs_it(repo, graph_built, tmp_path,
                                                                                 name, damage, problem):
    workdir = _copy(graph_built, tmp_path)
    before = _results(workdir)
    damage(workdir / name)
    proc = _snakemake(repo, workdir, GRAPH_TARGET)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert name in out and problem in out, out[-3000:]
    assert "Job stats" not in out, out[-3000:]  # stopped before any job
    command = _repair_command(out)
    assert f"--forcerun {name}" in command, command
    repaired = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                              env=_env())
    assert repaired.returncode == 0, repaired.stdout[-2000:] + repaired.stderr[-3000:]
    _assert_same(workdir, before)
    _up_to_date(repo, workdir, GRAPH_TARGET)


@pytest.fixture(scope="module")
def raw_built(repo, tmp_path_factory):
    return _built(repo, tmp_path_factory, RAW_TARGET)


def test_a_kill_during_a_forced_rerun_leaves_a_hole_that_unlock_and_a_plain_run_fill(repo, raw_built, tmp_path):
    """`--forcerun <raw output>` deletes the output first; Snakemake killed (SIGKILL) while the
    job writes it leaves it missing and the directory locked. The documented recovery:
    `--unlock`, then the plain run, which rebuilds the output and what is made from it."""
    workdir = _copy(raw_built, tmp_path)
    before = _results(workdir)
    raw = f"results/raw/{RAW_TARGET}/all.csv"
    proc = subprocess.Popen(_command(repo, workdir, RAW_TARGET, "--forcerun", raw), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=_env(**{PAUSE_ENV: "30"}), start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not list((workdir / raw).parent.glob(".all.csv.*.tmp")):
            assert time.monotonic() < deadline and proc.poll() is None, "the forced job never wrote"
            time.sleep(0.05)
        assert not (workdir / raw).exists()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    locked = _snakemake(repo, workdir, RAW_TARGET)
    assert locked.returncode != 0 and "--unlock" in locked.stdout + locked.stderr
    unlocked = _snakemake(repo, workdir, RAW_TARGET, "--unlock")
    assert unlocked.returncode == 0, unlocked.stderr[-2000:]
    proc = _snakemake(repo, workdir, RAW_TARGET)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    _assert_same(workdir, before)
    _up_to_date(repo, workdir, RAW_TARGET)


def test_a_missing_tuning_table_and_sidecar_are_rebuilt_by_a_plain_run(repo, tmp_path_factory, tmp_path):
    built = _built(repo, tmp_path_factory, TUNED_TARGET)
    workdir = _copy(built, tmp_path)
    before = _results(workdir)
    tuning = workdir / "results" / "tuning" / TUNED_TARGET / "all.csv"
    tuning.unlink()
    (workdir / f"results/raw/{TUNED_TARGET}/all.csv.provenance.json").unlink()
    proc = _snakemake(repo, workdir, TUNED_TARGET)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    _assert_same(workdir, before)
    _up_to_date(repo, workdir, TUNED_TARGET)


@pytest.mark.parametrize("when", ["edited", "damaged-in-place"])
def test_a_raw_output_that_is_not_what_its_sidecar_records_is_refused_and_the_command_rebuilds_it(
        repo, raw_built, tmp_path, when):
    """Edited (newer than the table: the table job reruns and refuses it) or damaged in
    place (its time kept: the run stops before any job): the file, what is wrong and the
    command, which rebuilds it (issue 37 item 3)."""
    workdir = _copy(raw_built, tmp_path)
    before = _results(workdir)
    raw = workdir / "results" / "raw" / RAW_TARGET / "all.csv"
    stamp = raw.stat().st_mtime_ns
    text = raw.read_text()
    raw.unlink()  # a hard link with .previous/: damage the output alone
    raw.write_text(text.replace("e-", "e+", 1))
    if when == "damaged-in-place":
        os.utime(raw, ns=(stamp, stamp))
    proc = _snakemake(repo, workdir, RAW_TARGET)
    out = proc.stdout + proc.stderr
    if when == "edited":
        out += "".join(p.read_text() for p in (workdir / "logs" / "tables").glob("*.log"))
    assert proc.returncode != 0
    assert f"results/raw/{RAW_TARGET}/all.csv: " in out and "SHA-256" in out, out[-3000:]
    command = _repair_command(out)
    repaired = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                              env=_env())
    assert repaired.returncode == 0, repaired.stdout[-2000:] + repaired.stderr[-3000:]
    _assert_same(workdir, before)
    _up_to_date(repo, workdir, RAW_TARGET)


def test_every_output_a_reader_uses_has_a_sidecar_that_names_its_bytes(graph_built, raw_built):
    """Claims, figures, executed notebooks, pages and the three graph cache stages (issue 37
    item 6), besides raw outputs and tables: each sidecar names the package, the code hash
    and the output's size and SHA-256."""
    import hashlib
    import json

    outputs = [*(graph_built / stage for stage in STAGES)]
    for workdir, target in ((graph_built, GRAPH_TARGET), (raw_built, RAW_TARGET)):
        outputs += [workdir / f"results/claims/{target}.json", workdir / f"results/reports/{target}.ipynb",
                    workdir / f"results/reports/{target}.html", workdir / f"results/tables/{target}.csv"]
    outputs += [raw_built / f"results/figures/{RAW_TARGET}.{ext}" for ext in ("pdf", "png")]
    for output in outputs:
        record = json.loads(Path(f"{output}.provenance.json").read_text())
        assert record["package"] == "networkedfl" and record["code_hash"], output
        assert record["output"] == {"bytes": output.stat().st_size,
                                    "sha256": hashlib.sha256(output.read_bytes()).hexdigest()}, output


def _file_size_limit(limit):
    """In the child: writes past ``limit`` bytes fail (EFBIG), as on a full disk."""
    def apply():
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error from write(), not a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_write_that_fails_names_the_last_good_output_and_loses_nothing(repo, raw_built, tmp_path):
    """The HTML page rebuilt on a device that takes no more than 64 KiB per file (its page is
    larger): the job fails naming where the last good page is kept, which is the earlier page
    byte for byte; a plain run on a device with room rebuilds everything as it was."""
    workdir = _copy(raw_built, tmp_path)
    page = workdir / "results" / "reports" / f"{RAW_TARGET}.html"
    assert page.stat().st_size > 64 * 1024
    good_page, before = page.read_bytes(), _results(workdir)
    proc = subprocess.run(_command(repo, workdir, RAW_TARGET, "--forcerun", f"results/reports/{RAW_TARGET}.html"),
                          capture_output=True, text=True, timeout=900, env=_env(),
                          preexec_fn=_file_size_limit(64 * 1024))
    log = (workdir / "logs" / "html" / f"{RAW_TARGET}.log").read_text()
    assert proc.returncode != 0
    kept = f"results/reports/.previous/{RAW_TARGET}.html"
    assert "File too large" in log and f"the last good results/reports/{RAW_TARGET}.html is kept at {kept}" in log, log
    assert (workdir / kept).read_bytes() == good_page
    again = _snakemake(repo, workdir, RAW_TARGET)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    _assert_same(workdir, before)
