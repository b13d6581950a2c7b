"""The registry is the only written list of targets (issue 43): the schema's target ids and
blocks, the papers' lists, ``docs/targets.md`` and the deviations index are made from it, and a
target registered in-process appears in every one of them."""

import copy
import re
from pathlib import Path

import pytest
import yaml

from networkedfl.experiments import EXPERIMENTS, Experiment, get_experiment
from networkedfl.experiments.lists import (
    FILES,
    config_blocks,
    deviations_index,
    generated,
    main,
    targets_page,
)
from networkedfl.experiments.papers import PAPERS, ordered_targets, paper_of
from networkedfl.pipeline.config import ConfigError, load_schema, validate_config
from networkedfl.pipeline.runner import job_inputs, job_settings

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
DUMMY = "gtv_fig13b_star_lambda_dummy"


@pytest.fixture
def dummy(monkeypatch):
    """A target registered in-process between Fig. 13 and the ablations, with Fig. 13's block."""
    fig13 = get_experiment("gtv_fig13_star_lambda")
    after = min(e.order for e in EXPERIMENTS.values() if e.paper == "gtv" and e.order > fig13.order)
    experiment = Experiment(id=DUMMY, kind="figure", source="GTV Fig. 13 (a variant)", title="dummy",
                            run=fig13.run, claims=fig13.claims, deviations=("star-graph", "claims-means"),
                            order=(fig13.order + after) / 2, schema="star_lambda")
    monkeypatch.setitem(EXPERIMENTS, DUMMY, experiment)
    return experiment


def test_the_committed_lists_are_the_generated_ones():
    stale = [path for path, text in generated(ROOT).items() if (ROOT / path).read_text(encoding="utf-8") != text]
    assert not stale, "run `.venv/bin/python -m networkedfl.experiments.lists --write`: " + ", ".join(stale)
    assert main(["--root", str(ROOT)]) == 0


def test_a_registered_target_is_in_every_generated_list(dummy, repo):
    gtv = next(p for p in PAPERS if p.key == "gtv")
    assert gtv.targets[gtv.targets.index("gtv_fig13_star_lambda") + 1] == DUMMY  # its place, from `order`
    assert paper_of(DUMMY) is gtv and DUMMY in ordered_targets(list(EXPERIMENTS))
    page = targets_page((ROOT / "docs" / "targets.md").read_text(encoding="utf-8"))
    assert re.search(rf"^\| `gtv_fig13_star_lambda` .*\n\| `{DUMMY}` \| GTV Fig. 13 \(a variant\) \| figure \| "
                     r"\[2\]\(deviations/gtv.md\) \|$", page, re.M)
    index = deviations_index((ROOT / "docs" / "deviations" / "README.md").read_text(encoding="utf-8"))
    rows = dict(re.findall(r"^\| \[([a-z0-9-]+)\]\(\w+\.md#[a-z0-9-]+\) \|[^|]*\| (.*) \|$", index, re.M))
    assert {slug for slug, targets in rows.items() if f"`{DUMMY}`" in targets} == {"star-graph"}
    assert rows["claims-means"] == "every target"  # named by every target, the new one too
    assert f"`gtv_fig13_star_lambda`, `{DUMMY}`" in rows["star-graph"]  # in the papers' order
    blocks = config_blocks((ROOT / "config" / "README.md").read_text(encoding="utf-8"))
    assert f"`gtv_fig13_star_lambda`, `{DUMMY}`" in re.search(r"### `star_lambda`\n\nTargets: (.*)\.", blocks)[1]
    assert set(generated(ROOT)) == set(FILES)  # and the generated files are then stale
    assert [p for p, text in generated(ROOT).items() if (ROOT / p).read_text(encoding="utf-8") != text] == list(FILES)

    schema = load_schema(SCHEMA)
    assert DUMMY in schema["$defs"]["target_id"]["enum"]
    assert schema["properties"]["experiments"]["properties"][DUMMY] == {"$ref": "#/$defs/star_lambda"}
    config = {"base_seed": 0, "data": {"mnist": {"sources": ["vendored"]}, "reviews": {"sources": ["vendored"]}},
              "targets": [DUMMY], "experiments": {}}
    fig13 = copy.deepcopy(yaml.safe_load((repo / "config" / "config.yaml").read_text())
                          ["experiments"]["gtv_fig13_star_lambda"])
    validate_config({**config, "experiments": {DUMMY: fig13}}, SCHEMA)  # validated by its block
    with pytest.raises(ConfigError, match=r"\['sigma'\]"):
        validate_config({**config, "experiments": {DUMMY: {**fig13, "sigma": -1.0}}}, SCHEMA)


def test_without_registration_the_id_is_refused(repo):
    config = {"base_seed": 0, "data": {"mnist": {"sources": ["vendored"]}, "reviews": {"sources": ["vendored"]}},
              "targets": [DUMMY], "experiments": {}}
    with pytest.raises(ConfigError, match=DUMMY):
        validate_config(config, SCHEMA)


def test_a_target_naming_no_block_of_the_schema_is_named(monkeypatch):
    fig13 = get_experiment("gtv_fig13_star_lambda")
    monkeypatch.setitem(EXPERIMENTS, DUMMY, Experiment(id=DUMMY, kind="figure", source="", title="", run=fig13.run,
                                                       claims=fig13.claims, order=16.5, schema="no_such_block"))
    with pytest.raises(ConfigError, match=rf"{DUMMY}.*no_such_block"):
        load_schema(SCHEMA)


def test_no_other_file_lists_the_targets():
    """The schema file holds the blocks, not the targets; the papers' module and the
    workflow's rules name no target: the registry says which there are, and which caches and
    gallery tables each needs."""
    raw = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    assert raw["properties"]["experiments"]["properties"] == {} and "enum" not in raw["$defs"]["target_id"]
    files = [ROOT / "src" / "networkedfl" / "experiments" / "papers.py", *sorted((ROOT / "workflow").rglob("*.smk"))]
    named = {f"{path.relative_to(ROOT)}: {target}" for path in files for target in EXPERIMENTS
             if target in path.read_text(encoding="utf-8")}
    assert not named


def test_every_target_reading_a_cached_graph_registers_the_cache(test_config):
    """The workflow builds a target's caches from its registration (cache.smk): a target
    whose jobs read a learnt MNIST graph (results/cache/mnist_graph/) registers ``mnist_graph``."""
    readers = {target for target in test_config["experiments"] for setting in job_settings(test_config, target)
               for value in job_inputs(test_config, target, setting).values()
               for path in ([value] if isinstance(value, str) else value) if "/cache/mnist_graph/" in path}
    assert readers == {t for t, e in EXPERIMENTS.items() if "mnist_graph" in e.caches}
    assert len(readers) == 6


def test_the_ablations_name_their_sources():
    ablations = {t: e.ablation_of for t, e in EXPERIMENTS.items() if e.ablation_of}
    assert ablations == {"gtv_quirk_ablation": ("gtv_fig09_sbm_sampling", "gtv_table1_highdim_sbm"),
                         "gtv_quirk_ablation_mnist": ("gtv_fig06_mnist_methods",)}
    assert all(set(sources) <= set(EXPERIMENTS) for sources in ablations.values())


def test_every_figure_is_drawn_by_its_registered_function_in_its_notebook():
    """``Experiment.figure`` names a function of the paper's figures module, and the target's
    notebook shows the figure that function draws; a table has none."""
    import importlib

    for target, e in EXPERIMENTS.items():
        if not e.has_figure:
            assert e.figure == "", target
            continue
        assert callable(getattr(importlib.import_module(f"networkedfl.experiments.{e.paper}.figures"), e.figure)), target
        notebook = (ROOT / "notebooks" / f"{target}.ipynb").read_text(encoding="utf-8")
        assert set(re.findall(r"show_figure\(figures\.(\w+)\(", notebook)) == {e.figure}, target
