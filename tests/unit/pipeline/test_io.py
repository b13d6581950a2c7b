"""The pipeline's writers: an output appears complete or not at all, and the last good
raw output survives a failed rerun (networkedfl.io._atomic)."""

import socket
from pathlib import Path

import pandas as pd
import pytest

from networkedfl.io import atomic_write, keep_previous, previous_path, write_csv


def test_an_interrupted_write_leaves_the_old_file_whole_and_no_temporary(tmp_path):
    out = tmp_path / "results" / "table.csv"
    write_csv(pd.DataFrame({"value": [1.0, 2.0]}), out)
    before = out.read_bytes()

    def half_then_fail(tmp):
        Path(tmp).write_text("value\n1.0\n")  # half of a new table, then the job dies
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(out, half_then_fail)
    assert out.read_bytes() == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["table.csv"]


def test_a_new_output_is_not_visible_until_it_is_complete(tmp_path):
    out = tmp_path / "new.csv"
    seen = []
    atomic_write(out, lambda tmp: (Path(tmp).write_text("a\n"), seen.append(out.exists())))
    assert seen == [False] and out.read_text() == "a\n"


def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path):
    """SIGKILL gives a writer no chance to clean up: its temporary stays until the next
    write of the same output, which removes it (its process is gone) but leaves the
    temporary of a writer that still runs."""
    import os
    import signal
    import subprocess
    import sys

    out = tmp_path / "table.csv"
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from networkedfl.io._atomic import atomic_write; "
         "atomic_write(sys.argv[1], lambda tmp: (open(tmp, 'w').write('half'), print('writing', flush=True), "
         "time.sleep(60)))", str(out)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert writer.stdout.readline().strip() == "writing"
    live = tmp_path / f".table.csv.{socket.gethostname().replace('.', '_')}-{os.getpid()}.abc.tmp"
    live.write_text("this process is alive")
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    left = [p.name for p in tmp_path.glob(".table.csv.*.tmp") if p != live]
    assert len(left) == 1 and f"-{writer.pid}." in left[0]  # what the killed writer left

    write_csv(pd.DataFrame({"value": [1.0]}), out)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, "table.csv"])


def test_keep_previous_survives_the_deletion_of_the_output(tmp_path):
    out = tmp_path / "raw" / "seed-0.csv"
    write_csv(pd.DataFrame({"value": [1.0]}), out)
    kept = keep_previous(out)
    assert kept == previous_path(out) == out.parent / ".previous" / "seed-0.csv"
    data = out.read_bytes()
    out.unlink()  # what Snakemake does when the job starts again
    assert kept.read_bytes() == data
    write_csv(pd.DataFrame({"value": [2.0]}), out)  # the next good result replaces it
    keep_previous(out)
    assert kept.read_bytes() == out.read_bytes() != data


def test_a_job_table_that_fails_to_compute_writes_nothing_and_names_the_last_good_one(tmp_path, caplog):
    import logging

    from networkedfl.io import write_job_table

    out = tmp_path / "raw" / "seed-0.csv"
    log = logging.getLogger("job")
    write_job_table(out, lambda: pd.DataFrame({"value": [1.0]}), log)
    good = out.read_bytes()
    assert previous_path(out).read_bytes() == good
    out.unlink()  # Snakemake, as the rerun starts

    def diverges():
        raise FloatingPointError("overflow")

    with caplog.at_level(logging.ERROR, logger="job"), pytest.raises(FloatingPointError):
        write_job_table(out, diverges, log)
    assert not out.exists() and previous_path(out).read_bytes() == good
    assert f"kept at {previous_path(out)}" in caplog.text


def test_job_seconds_sum_the_seeds_of_each_log_s_latest_run(tmp_path):
    """A setting's job log holds one finished line per seed and is appended to when the job
    reruns: the compute time is the sum over the seeds of its latest run; a log from one
    job per seed (no start line) counts its last finished line."""
    from networkedfl.pipeline.summary import job_seconds

    stamp = "2026-11-25 00:00:00,000 INFO networkedfl.pipeline.runner:"
    grouped = tmp_path / "a.log"
    grouped.write_text(
        f"{stamp} running t, setting a, seeds 0, 1\n{stamp} finished t/a/seed-0: 3 rows in 9.0 s\n"
        f"{stamp} finished t/a/seed-1: 3 rows in 9.0 s\n"  # an earlier run ...
        f"{stamp} running t, setting a, seeds 0, 1\n{stamp} finished t/a/seed-0: 3 rows in 1.5 s\n"
        f"{stamp} finished t/a/seed-1: 3 rows in 2.5 s\n", encoding="utf-8")  # ... and the latest
    old = tmp_path / "b.log"
    old.write_text(f"{stamp} finished t/b/seed-0: 3 rows in 7.0 s\n{stamp} finished t/b/seed-0: 3 rows in 3.0 s\n",
                   encoding="utf-8")
    unfinished = tmp_path / "c.log"
    unfinished.write_text(f"{stamp} running t, setting c, seeds 0\n", encoding="utf-8")
    assert job_seconds([grouped]) == 4.0
    assert job_seconds([grouped, old, unfinished]) == 7.0
    assert job_seconds([unfinished]) is None


def test_a_setting_job_without_seeds_is_an_error_naming_it():
    from networkedfl.pipeline.runner import run_setting

    with pytest.raises(ValueError, match=r"gtv_fig09_sbm_sampling, setting 'x': no repetition seed"):
        run_setting({"base_seed": 0, "experiments": {}}, "gtv_fig09_sbm_sampling", "x", [])


def test_restore_previous_puts_the_last_good_version_back_dated_before_its_input(tmp_path):
    """Issue 45: a failed claims job's deleted output comes back from ``.previous/``, older
    than the table it is made from (so the next run makes it again); an existing output and
    an output never kept are left alone."""
    from networkedfl.io import keep_previous, previous_path, restore_previous

    table, claims = tmp_path / "table.csv", tmp_path / "claims.json"
    table.write_text("a\n1\n")
    claims.write_text('["good"]')
    keep_previous(claims)
    claims.unlink()  # what Snakemake does to a failed job's output
    assert restore_previous(claims, made_from=table)
    assert claims.read_text() == '["good"]' and previous_path(claims).read_text() == '["good"]'
    assert claims.stat().st_mtime < table.stat().st_mtime
    claims.write_text('["new"]')
    assert not restore_previous(claims, made_from=table) and claims.read_text() == '["new"]'
    assert not restore_previous(tmp_path / "never.json", made_from=table)
