"""A bounded, exact configuration (issue 37 item 4): a key given twice is an error naming the
file and both lines (the last no longer wins silently); YAML aliases are bounded (an alias
bomb is refused before it is expanded); every integer of the schema has a maximum, and a
value over it is named with the limit; grids are bounded in their number of points. The
Snakemake side (overlays, ``--config``) is in tests/integration/test_config_errors.py."""

import copy
import math
import os
import re
import resource
import subprocess
import sys

import pytest
import yaml
from conftest import alias_bomb, deep_overlay, large_overlay

from networkedfl.pipeline.config import (
    MAX_GRID_POINTS,
    MAX_YAML_BYTES,
    MAX_YAML_DEPTH,
    MAX_YAML_VALUES,
    ConfigError,
    load_config,
    merge_overlays,
    read_yaml,
    validate_config,
)


def _default(repo):
    return yaml.safe_load((repo / "config" / "config.yaml").read_text())


def test_a_key_given_twice_names_the_file_and_both_lines(tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("experiments:\n  gtv_fig13_star_lambda:\n    n_iter: 500\n    sigma: 0.1\n    n_iter: 50\n")
    with pytest.raises(ConfigError) as caught:
        read_yaml(overlay)
    message = str(caught.value)
    assert f"{overlay}, line 5" in message and "'n_iter'" in message and "line 3" in message, message


def test_merge_keys_may_override_what_they_merge(tmp_path):
    """YAML's merge key (`<<: *anchor`, as config.yaml uses) is not a duplicate: the keys
    written beside it override the merged ones."""
    path = tmp_path / "c.yaml"
    path.write_text("a: &base {x: 1, y: 2}\nb:\n  <<: *base\n  y: 3\n")
    assert read_yaml(path) == {"a": {"x": 1, "y": 2}, "b": {"x": 1, "y": 3}}


def test_the_config_checker_refuses_a_key_given_twice(repo, tmp_path):
    """`python -m networkedfl.pipeline.config overlay.yaml` used to call such a file valid."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("experiments:\n  gtv_fig13_star_lambda:\n    n_iter: 500\n    n_iter: 50\n")
    proc = subprocess.run([sys.executable, "-m", "networkedfl.pipeline.config", str(overlay)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and f"{overlay}, line 4" in proc.stderr, proc.stderr


def _memory_limit():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_an_alias_bomb_is_refused_before_it_is_expanded(repo, tmp_path):
    """9 levels of 9 aliases (387 million values from 0.6 KB): refused naming the file and the
    limit, in a process allowed 1 GiB (the values, expanded, would take tens)."""
    bomb = alias_bomb(tmp_path / "bomb.yaml")
    assert bomb.stat().st_size < 1500
    proc = subprocess.run([sys.executable, "-m", "networkedfl.pipeline.config", str(bomb)], capture_output=True,
                          text=True, timeout=300, preexec_fn=_memory_limit)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert str(bomb) in proc.stderr and f"{MAX_YAML_VALUES}" in proc.stderr and "alias" in proc.stderr, proc.stderr


def test_the_shipped_configs_are_far_below_the_alias_bound(repo):
    for name in ("config.yaml", "test.yaml"):
        read_yaml(repo / "config" / name)  # merge keys and anchors included


def test_a_recursive_alias_is_refused(tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text("a: &a [1, *a]\n")
    with pytest.raises(ConfigError, match="loop.yaml.*alias"):
        read_yaml(path)


def _integers(node, where="schema"):
    """Every integer subschema (type integer, alone or with null) and where it is."""
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "integer" or (isinstance(kind, list) and "integer" in kind):
            yield where, node
        for key, value in node.items():
            yield from _integers(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _integers(value, f"{where}/{i}")


def test_every_integer_of_the_schema_has_a_maximum(schema_path):
    schema = yaml.safe_load(schema_path.read_text())
    unbounded = [where for where, node in _integers(schema) if "maximum" not in node]
    assert not unbounded, unbounded
    assert len(list(_integers(schema))) > 90


@pytest.mark.parametrize(("target", "key", "value", "limit"), [
    ("gtv_fig13_star_lambda", "repetitions", 20_000_000, 1000),
    ("gtv_fig13_star_lambda", "n_iter", 1_000_000_000_000, 100_000),
    ("gtv_fig12_star_graph", "n_nodes", 10**9, 5000),
    ("fedrelax_fig04_noniid_trees", "max_depth", 10**6, 1000),
])
def test_a_count_over_its_maximum_names_the_key_and_the_limit(repo, schema_path, target, key, value, limit):
    config = copy.deepcopy(_default(repo))
    config["experiments"][target][key] = value
    with pytest.raises(ConfigError) as caught:
        validate_config(config, schema_path)
    assert f"config['experiments']['{target}']['{key}']: {value} is greater than the maximum of {limit}" \
        in str(caught.value)


def test_the_paper_scale_overlays_validate(repo, schema_path):
    for overlay in sorted((repo / "config" / "profiles").glob("*.yaml")):
        load_config(repo / "config" / "config.yaml", overlay, schema_path=schema_path)


def test_a_tuning_grid_over_the_point_limit_is_named(repo, schema_path):
    config = copy.deepcopy(_default(repo))
    grid = config["experiments"]["gfl_fig10_1_dfl"]["tuning"]["grid"]
    grid["fedavg"] = {"lr_scale": [0.1 * (i + 1) for i in range(200)], "local_steps": list(range(1, 101))}
    with pytest.raises(ConfigError) as caught:
        validate_config(config, schema_path)
    assert ("config['experiments']['gfl_fig10_1_dfl']['tuning']['grid']['fedavg']: 20000 points, more than "
            f"the limit of {MAX_GRID_POINTS}") in str(caught.value)


def test_a_sweep_grid_over_the_point_limit_is_named(repo, schema_path):
    config = copy.deepcopy(_default(repo))
    grid = config["experiments"]["gtv_fig09_sbm_sampling"]["grid"]
    grid.update(M=[i / 1000 for i in range(1, 1000)], sigma=[i / 100 for i in range(100)])
    with pytest.raises(ConfigError) as caught:
        validate_config(config, schema_path)
    points = math.prod(len(values) for values in grid.values())  # 999 x 100 x the other lists
    assert points > 99_900
    assert f"config['experiments']['gtv_fig09_sbm_sampling']['grid']: {points} points, more than the limit of " \
           f"{MAX_GRID_POINTS}" in str(caught.value)


def test_limits_leave_room_for_the_paper_scale(repo):
    assert MAX_GRID_POINTS >= 10_000 and MAX_YAML_VALUES >= 20 * 2855  # config.yaml's values, anchors expanded
    assert os.path.getsize(repo / "config" / "config.yaml") < 100_000


# ---------------------------------------------------------------- size and depth before parsing (issue 45 item 4)


def test_a_large_overlay_is_refused_by_its_size_before_it_is_read(tmp_path, monkeypatch):
    big = large_overlay(tmp_path / "big.yaml")
    assert big.stat().st_size > 50 * 10**6

    def no_parsing(*args, **kwargs):
        raise AssertionError("the overlay reached a YAML parser")

    monkeypatch.setattr(yaml, "SafeLoader", no_parsing)
    with pytest.raises(ConfigError) as caught:
        read_yaml(big)
    message = str(caught.value)
    assert "\n" not in message
    assert str(big) in message and f"limit of {MAX_YAML_BYTES} bytes" in message and str(big.stat().st_size) in message


@pytest.mark.parametrize("style", ["flow", "block", "indented"])
def test_a_deep_overlay_is_refused_by_its_depth_before_it_is_parsed(tmp_path, style):
    deep = deep_overlay(tmp_path / "deep.yaml", style, depth=100_000 if style != "indented" else 1000)
    assert deep.stat().st_size < MAX_YAML_BYTES
    with pytest.raises(ConfigError) as caught:
        read_yaml(deep)
    message = str(caught.value)
    assert "\n" not in message and "Recursion" not in message
    assert str(deep) in message and f"limit of {MAX_YAML_DEPTH} levels" in message, message


@pytest.mark.parametrize("style", ["flow", "block", "indented"])
def test_nesting_up_to_the_depth_limit_is_read(tmp_path, style):
    depth = MAX_YAML_DEPTH - 1  # the top-level mapping is a level too
    assert "seed" in read_yaml(deep_overlay(tmp_path / "deep.yaml", style, depth=depth))


def test_the_shipped_configs_are_far_below_the_size_and_depth_bounds(repo):
    for path in [repo / "config" / "config.yaml", repo / "config" / "test.yaml",
                 *sorted((repo / "config" / "profiles").glob("*.yaml"))]:
        assert path.stat().st_size * 10 < MAX_YAML_BYTES
        read_yaml(path)


def test_overlays_from_the_config_key_are_merged_in_order_and_the_command_line_wins(tmp_path):
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text("base_seed: 5\nexperiments: {a: {n: 1, m: 2}}\n")
    second.write_text("experiments: {a: {n: 3}}\n")
    config = {"base_seed": 1, "overlays": [str(first), str(second)], "experiments": {"a": {"n": 0, "k": 9}}}
    same = config
    merge_overlays(config, {"overlays": [str(first), str(second)], "base_seed": 7})
    assert same is config  # Snakemake's config object, changed in place
    assert config["experiments"] == {"a": {"n": 3, "m": 2, "k": 9}} and config["base_seed"] == 7
    one = {"base_seed": 1, "overlays": str(second)}
    merge_overlays(one, {})
    assert one["experiments"] == {"a": {"n": 3}}


@pytest.mark.parametrize(("overlays", "message"), [
    (3, "config['overlays']: expected a file or a list of files"),
    (["missing.yaml"], "config['overlays']: no file missing.yaml"),
])
def test_bad_overlays_are_named(overlays, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=re.escape(message)):
        merge_overlays({"base_seed": 1, "overlays": overlays}, {})


def test_an_overlay_is_a_mapping_and_names_no_further_overlays(tmp_path):
    listed, nested = tmp_path / "listed.yaml", tmp_path / "nested.yaml"
    listed.write_text("- 1\n")
    nested.write_text(f"overlays: [{listed}]\n")
    with pytest.raises(ConfigError, match="listed.yaml: an overlay must be a mapping"):
        merge_overlays({"overlays": [str(listed)]}, {})
    with pytest.raises(ConfigError, match="nested.yaml: an overlay cannot name further overlays"):
        merge_overlays({"overlays": [str(nested)]}, {})
