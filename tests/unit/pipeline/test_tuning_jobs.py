"""One tuning job per tuned method (issue 20): every grid point in one process, and the
points unchanged since the job's last good table taken from it instead of run again."""

import copy
import io

import pandas as pd
import pytest

from networkedfl.io import write_csv
from networkedfl.pipeline import runner
from networkedfl.pipeline.runner import POINT_KEY, run_tuning_setting, tuning_settings, tuning_specs

TARGET = "gfl_fig10_1_dfl"


def _config(test_config, values):
    config = copy.deepcopy(test_config)
    config["experiments"][TARGET]["tuning"]["grid"]["local"] = {"lr_scale": list(values)}
    return config


@pytest.fixture
def runs(monkeypatch):
    """A stand-in for one point's run: its score is a function of the point's step, and
    every run is recorded."""
    seen = []

    def fake(target, spec, base_seed, inputs=None):
        scale = spec["params"]["lr_scale"]
        seen.append(scale)
        return pd.DataFrame({"method": "Local", "tuning_point": spec["point"], "tuning_values": spec["label"],
                             "seed": spec["seeds"], "metric": "tuning_validation_loss",
                             "value": [1.0 / 3.0 + scale + s for s in spec["seeds"]]})

    monkeypatch.setattr(runner, "run_tuning_job", fake)
    return seen


def _file(table, tmp_path, name="t.csv"):
    write_csv(table, tmp_path / name)
    return pd.read_csv(tmp_path / name), (tmp_path / name).read_bytes()


def test_a_tuning_job_runs_every_point_once_and_reuses_unchanged_points(test_config, runs, tmp_path):
    config = _config(test_config, [0.1, 1.0])
    assert "local" in tuning_settings(config, TARGET)
    specs = tuning_specs(config, TARGET, "local")
    first = run_tuning_setting(TARGET, specs, 7, code="c1")
    assert runs == [0.1, 1.0] and first["tuning_point"].drop_duplicates().tolist() == [0, 1]
    assert first[POINT_KEY].nunique() == 2
    previous, data = _file(first, tmp_path)

    runs.clear()  # nothing changed: nothing runs, the same bytes
    again, again_data = _file(run_tuning_setting(TARGET, specs, 7, code="c1", previous=previous), tmp_path, "a.csv")
    assert runs == [] and again_data == data

    # a value inserted before the others: only it runs; the old points are renumbered
    specs = tuning_specs(_config(test_config, [0.01, 0.1, 1.0]), TARGET, "local")
    grown = run_tuning_setting(TARGET, specs, 7, code="c1", previous=previous)
    assert runs == [0.01]
    assert grown["tuning_point"].drop_duplicates().tolist() == [0, 1, 2]
    old = grown[grown["tuning_point"] > 0].drop(columns="tuning_point").reset_index(drop=True)
    assert old.equals(previous.drop(columns="tuning_point"))

    # another code hash or base seed: every point runs again
    for code, seed in (("c2", 7), ("c1", 8)):
        runs.clear()
        run_tuning_setting(TARGET, tuning_specs(config, TARGET, "local"), seed, code=code, previous=previous)
        assert runs == [0.1, 1.0]


def test_a_changed_input_file_reruns_every_point(test_config, runs, tmp_path):
    config = _config(test_config, [0.1])
    specs = tuning_specs(config, TARGET, "local")
    data = tmp_path / "corpus.txt"
    data.write_text("one")
    previous = run_tuning_setting(TARGET, specs, 7, {"corpus": [str(data)]}, code="c")
    runs.clear()
    run_tuning_setting(TARGET, specs, 7, {"corpus": [str(data)]}, code="c", previous=previous)
    assert runs == []
    data.write_text("two")
    run_tuning_setting(TARGET, specs, 7, {"corpus": [str(data)]}, code="c", previous=previous)
    assert runs == [0.1]


def test_an_unreadable_last_table_is_ignored(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\x00\x01")
    assert runner.read_previous_tuning(tmp_path / "missing.csv") is None
    unreadable = runner.read_previous_tuning(bad)
    assert unreadable is None or POINT_KEY not in unreadable


def test_reused_rows_are_the_bytes_of_a_real_run(test_config, tmp_path):
    """Without the stand-in: two points of a real method, then the same job again from
    its table; the point's rows read back are the ones run_tuning_job gave."""
    specs = tuning_specs(_config(test_config, [0.1, 1.0]), TARGET, "local")
    first = run_tuning_setting(TARGET, specs, 3, code="c")
    direct = runner.run_tuning_job(TARGET, specs[1], 3)
    text = direct.to_csv(index=False, float_format="%.17g")
    assert first[first["tuning_point"] == 1].drop(columns=POINT_KEY).reset_index(drop=True).equals(
        pd.read_csv(io.StringIO(text)))
    previous, data = _file(first, tmp_path)
    _, again = _file(run_tuning_setting(TARGET, specs, 3, code="c", previous=previous), tmp_path, "b.csv")
    assert again == data
