"""The pipeline's writers: an output appears complete or not at all, and the last good
raw output survives a failed rerun (networkedfl.pipeline.io)."""

from pathlib import Path

import pandas as pd
import pytest

from networkedfl.pipeline.io import atomic_write, keep_previous, previous_path, write_csv


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
