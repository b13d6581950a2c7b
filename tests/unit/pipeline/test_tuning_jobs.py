"""One tuning job per tuned method (issue 20): every grid point in one process, and the
points unchanged since the job's last good table taken from it instead of run again."""

import copy
import io

import pandas as pd
import pytest

from networkedfl.experiments.tuning import select_point
from networkedfl.io import write_csv
from networkedfl.pipeline import runner
from networkedfl.pipeline.runner import POINT_KEY, run_tuning_setting, tuning_settings, tuning_specs

TARGET = "gfl_fig10_1_dfl"


def _config(test_config, values):
    """The test config with ``local``'s grid set to ``values``, without successive halving."""
    config = copy.deepcopy(test_config)
    config["experiments"][TARGET]["tuning"]["grid"]["local"] = {"lr_scale": list(values)}
    config["experiments"][TARGET]["tuning"].pop("halving", None)
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


def _halved(config, values, eta=3):
    config = _config(config, values)
    config["experiments"][TARGET]["tuning"]["halving"] = {"eta": eta, "horizon": "iterations"}
    return config


def _slow_starters(monkeypatch, full):
    """A stand-in run whose score depends on the step and the horizon: at short horizons the
    largest steps look best, at the full horizon ``full`` the middle one (0.5) is.  Returns
    the list of every run's (step, horizon)."""
    horizons = []

    def fake(target, spec, base_seed, inputs=None):
        scale, horizon = spec["params"]["lr_scale"], spec["params"]["iterations"]
        horizons.append((scale, horizon))
        value = abs(scale - 0.5) if horizon == full else -scale
        return pd.DataFrame({"method": "Local", "tuning_point": spec["point"], "tuning_values": spec["label"],
                             "seed": spec["seeds"], "metric": "tuning_validation_loss", "value": value})

    monkeypatch.setattr(runner, "run_tuning_job", fake)
    return horizons

def test_successive_halving_runs_the_best_third_to_the_full_horizon(test_config, runs, tmp_path, monkeypatch):
    """Nine points: all run to R/9, the best three to R/3, the best two to R; the score of a
    point is a function of its step and its horizon, so each rung's ranking is known."""
    values = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    config = _halved(test_config, values)
    full = config["experiments"][TARGET]["iterations"]
    horizons = _slow_starters(monkeypatch, full)
    specs = tuning_specs(config, TARGET, "local")
    table = run_tuning_setting(TARGET, specs, 7, code="c")
    rungs = [round(full / 9), round(full / 3), full]
    assert [h for _, h in horizons] == [rungs[0]] * 9 + [rungs[1]] * 3 + [rungs[2]] * 2
    assert [s for s, h in horizons if h == rungs[1]] == [0.7, 0.8, 0.9]  # the best third of rung 0
    assert [s for s, h in horizons if h == full] == [0.8, 0.9]  # at least two at the full horizon
    assert table.groupby("tuning_point")["tuning_rung"].max().tolist() == [0] * 6 + [1, 2, 2]
    assert select_point(config["experiments"][TARGET], "local", [table]) == 7  # 0.8: nearest 0.5 at R
    # rerun: every run reused, the same bytes
    previous, data = _file(table, tmp_path)
    horizons.clear()
    _, again = _file(run_tuning_setting(TARGET, specs, 7, code="c", previous=previous), tmp_path, "b.csv")
    assert horizons == [] and again == data


def test_the_full_horizon_run_keeps_its_cache_key_with_or_without_halving(test_config, runs, tmp_path):
    """A table of the whole grid (no halving) gives the full-horizon runs of a halved job."""
    values = [0.1, 1.0, 10.0, 100.0]  # four points: 4 runs at R/3 and 2 at R are cheaper than 4 at R
    plain = run_tuning_setting(TARGET, tuning_specs(_config(test_config, values), TARGET, "local"), 7, code="c")
    runs.clear()
    halved = run_tuning_setting(TARGET, tuning_specs(_halved(test_config, values), TARGET, "local"), 7,
                                code="c", previous=plain)
    full = halved[halved["tuning_rung"] == 1]
    assert len(runs) == 4  # the first rung ran (shorter horizon: new keys) ...
    assert len(full) == 2 and set(full[POINT_KEY]) <= set(plain[POINT_KEY])  # ... the survivors' full runs reused


def test_halving_no_cheaper_than_the_grid_runs_the_whole_grid(test_config, runs, tmp_path):
    """Three points (3 runs at R/3 and 2 at R cost the grid's 3 runs at R): the cost rule runs
    the whole grid instead, the same runs (every key reused from a whole-grid table, nothing
    run) and the same chosen point, in one rung at the full horizon."""
    values = [0.1, 1.0, 10.0]
    plain = run_tuning_setting(TARGET, tuning_specs(_config(test_config, values), TARGET, "local"), 7, code="c")
    assert len(runs) == 3
    runs.clear()
    config = _halved(test_config, values)
    halved = run_tuning_setting(TARGET, tuning_specs(config, TARGET, "local"), 7, code="c", previous=plain)
    assert runs == []  # every run is the whole grid's
    full = config["experiments"][TARGET]["iterations"]
    assert halved["tuning_rung"].tolist() == [0, 0, 0] and set(halved["tuning_horizon"]) == {full}
    assert halved.drop(columns=["tuning_rung", "tuning_horizon"]).equals(plain)
    params = config["experiments"][TARGET]
    assert select_point(params, "local", [halved]) == select_point(params, "local", [plain])


def test_the_whole_grid_completed_from_a_halved_table_chooses_among_all_its_points(test_config, monkeypatch):
    """A halved job's full-horizon runs reused by a tuning without halving (the halving block
    removed from the config, or ``benchmarks/bench_tuning.py`` completing the whole grid) take
    that tuning's rung: one rung for every point.  (They kept the halved job's rung 2, every
    point run afresh counted as rung 0, and the "whole grid" chose among halving's survivors
    only: its choice was halving's by construction.)"""
    values = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    config = _halved(test_config, values)
    _slow_starters(monkeypatch, config["experiments"][TARGET]["iterations"])
    halved = run_tuning_setting(TARGET, tuning_specs(config, TARGET, "local"), 7, code="c")
    params = config["experiments"][TARGET]
    assert select_point(params, "local", [halved]) == 7  # halving: 0.8, the best survivor
    whole = run_tuning_setting(TARGET, tuning_specs(_config(test_config, values), TARGET, "local"), 7, code="c",
                               previous=halved)
    assert "tuning_rung" not in whole or whole["tuning_rung"].isna().all()
    assert select_point(params, "local", [whole]) == 4  # the whole grid: 0.5
