"""The linear quirk ablation reads its two ends (published, paper) from its source targets'
tables instead of running them again (``ends_from_source``): the rows it keeps are bit for
bit those that running the case gives, and every case is a restriction of its source."""

from __future__ import annotations

import copy
import io

import pandas as pd
import pytest

from networkedfl.experiments.gtv.ablation import SOURCES, ablation_inputs, source_rows
from networkedfl.experiments.gtv.linear import GRAPH_KEYS
from networkedfl.experiments.variants import variant_params
from networkedfl.io import Paths, write_csv
from networkedfl.pipeline.config import load_config
from networkedfl.pipeline.runner import collect_tables, job_settings, run_job, run_setting, seeds

TARGET = "gtv_quirk_ablation"
LINEAR = ("fig09", "table1")


def _text(table: pd.DataFrame) -> str:
    return table.to_csv(index=False, float_format="%.17g")


@pytest.fixture(scope="module")
def default_config(repo):
    return load_config(repo / "config" / "config.yaml", schema_path=repo / "workflow" / "schemas" / "config.schema.yaml")


@pytest.fixture(scope="module")
def sources(test_config, tmp_path_factory):
    """The source targets' tables of the test profile, written as the pipeline writes them."""
    root = tmp_path_factory.mktemp("results")
    paths = {}
    for case in LINEAR:
        target = SOURCES[case]
        table = collect_tables([run_setting(test_config, target, s, seeds(test_config, target))
                                for s in job_settings(test_config, target)])
        paths[f"{case}_source"] = str(root / f"{target}.csv")
        write_csv(table, paths[f"{case}_source"])
    return paths


@pytest.mark.parametrize("case", LINEAR)
@pytest.mark.parametrize("end", ["published", "paper"])
def test_the_ends_read_from_the_source_are_the_rows_running_them_gives(test_config, sources, case, end):
    computed = copy.deepcopy(test_config)
    computed["experiments"][TARGET]["ends_from_source"] = False
    read = copy.deepcopy(test_config)
    read["experiments"][TARGET]["ends_from_source"] = True
    for seed in seeds(test_config, TARGET):
        ran = run_job(computed, TARGET, f"{case}.{end}", seed)
        kept = run_job(read, TARGET, f"{case}.{end}", seed, inputs=sources)
        assert _text(kept) == _text(ran)  # bit for bit, in the same order and columns
    # a switch between the two ends still runs
    params = read["experiments"][TARGET]
    assert ablation_inputs(params) == {f"{c}_source": Paths().table(SOURCES[c]) for c in LINEAR}


def test_a_source_without_the_case_s_runs_is_refused(test_config, sources):
    params = variant_params(test_config["experiments"][TARGET]["cases"]["fig09"], "paper")
    source = pd.read_csv(io.StringIO(open(sources["fig09_source"]).read()))
    with pytest.raises(ValueError, match="is the case a restriction of its source"):
        source_rows(source[source["penalty"] != "mocha"], params, "paper", 0)
    with pytest.raises(ValueError, match="runs of the ablation case"):
        source_rows(source, params, "paper", 99)  # a seed the source did not run


@pytest.mark.parametrize("config_name", ["default", "test"])
def test_every_linear_case_is_a_restriction_of_its_source(config_name, test_config, default_config):
    """The ablation's ends equal its sources' rows only if each case is its source's block
    with fewer grid values (the same first value of each key that is not the graph's, which
    keys the published variant's shared graph) and a prefix of its baselines (they draw
    from the instance's stream in order)."""
    config = default_config if config_name == "default" else test_config
    ablation = config["experiments"][TARGET]
    for case in LINEAR:
        source = config["experiments"][SOURCES[case]]
        assert ablation["repetitions"] <= source["repetitions"]
        for variant in ("published", "paper"):
            mine, theirs = variant_params(ablation["cases"][case], variant), variant_params(source, variant)
            strip = ("grid", "methods", "repetitions")
            assert {k: v for k, v in mine.items() if k not in strip} == \
                {k: v for k, v in theirs.items() if k not in strip}, (case, variant)
            for key, values in mine["grid"].items():
                order = [v for v in theirs["grid"][key] if v in values]
                assert order == list(values), (case, key)  # a subset, in the source's order
                if key not in GRAPH_KEYS:
                    assert values[0] == theirs["grid"][key][0], (case, key)
            mine_b = [m for m in mine.get("methods", []) if m != "primal_dual"]
            theirs_b = [m for m in theirs.get("methods", []) if m != "primal_dual"]
            assert theirs_b[:len(mine_b)] == mine_b, case
