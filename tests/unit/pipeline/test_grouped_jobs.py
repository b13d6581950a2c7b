"""Grouped jobs (issue 36): every setting of a target in one process, the same table as one
job per setting, and a setting whose run did not change taken from the job's last output."""

import dataclasses
import io

import pandas as pd
import pytest

from networkedfl.experiments import EXPERIMENTS
from networkedfl.io import write_csv
from networkedfl.pipeline import runner
from networkedfl.pipeline.runner import (
    GROUP_JOB,
    SETTING_KEY,
    collect_tables,
    group_params,
    job_groups,
    job_settings,
    run_group,
    seeds,
)

TARGET = "gtv_fig03_chain_sampling"


@pytest.fixture
def grouped(monkeypatch):
    monkeypatch.setitem(EXPERIMENTS, TARGET, dataclasses.replace(EXPERIMENTS[TARGET], group_settings=True))


def _bytes(table):
    buffer = io.StringIO()
    table.to_csv(buffer, index=False, float_format="%.17g")
    return buffer.getvalue()


def test_a_grouped_target_has_one_job_with_every_setting(test_config, grouped):
    settings = job_settings(test_config, TARGET)
    assert len(settings) > 1
    assert job_groups(test_config, TARGET) == {GROUP_JOB: settings}
    assert group_params(test_config, TARGET, GROUP_JOB) == test_config["experiments"][TARGET]
    assert job_groups(test_config, "gtv_fig13_star_lambda") == {"all": ["all"]}  # not grouped


def test_the_grouped_job_gives_the_table_of_one_job_per_setting(test_config, grouped, tmp_path):
    seed_list = seeds(test_config, TARGET)
    one_per_setting = collect_tables([run_group(test_config, TARGET, s, seed_list) for s in job_settings(
        test_config, TARGET)])
    job = run_group(test_config, TARGET, GROUP_JOB, seed_list, code="c")
    assert job[SETTING_KEY].nunique() == len(job_settings(test_config, TARGET))
    assert _bytes(collect_tables([job])) == _bytes(one_per_setting)


def test_unchanged_settings_are_taken_from_the_last_output(test_config, grouped, tmp_path, monkeypatch):
    seed_list = seeds(test_config, TARGET)
    first = run_group(test_config, TARGET, GROUP_JOB, seed_list, code="c")
    write_csv(first, tmp_path / "settings.csv")
    previous = pd.read_csv(tmp_path / "settings.csv")
    ran = []
    original = runner._run_view  # what run_group runs a setting's resolved job with

    def spy(view, *args, **kwargs):
        ran.append(view.setting)
        return original(view, *args, **kwargs)

    monkeypatch.setattr(runner, "_run_view", spy)
    again = run_group(test_config, TARGET, GROUP_JOB, seed_list, code="c", previous=previous)
    assert ran == [] and _bytes(again) == _bytes(first)
    # one variant's parameters edited: only its settings run again, the rest are the same rows
    edited = {**test_config, "experiments": dict(test_config["experiments"])}
    block = dict(edited["experiments"][TARGET])
    block["variants"] = {**block["variants"], "paper": {**(block["variants"].get("paper") or {}), "n_iter": 7}}
    edited["experiments"][TARGET] = block
    changed = run_group(edited, TARGET, GROUP_JOB, seed_list, code="c", previous=previous)
    assert ran and all(s.startswith("paper.") for s in ran)
    assert set(ran) == {s for s in job_settings(test_config, TARGET) if s.startswith("paper.")}
    kept = changed[changed["variant"] == "published"].reset_index(drop=True)
    assert _bytes(kept) == _bytes(first[first["variant"] == "published"].reset_index(drop=True).dropna(
        axis=1, how="all"))
    ran.clear()  # another code hash: everything runs again
    run_group(test_config, TARGET, GROUP_JOB, seed_list, code="d", previous=previous)
    assert sorted(ran) == sorted(job_settings(test_config, TARGET))
