"""Configuration: the shipped configs validate, and bad keys or values are named in the error."""

import copy

import pytest
import yaml

from networkedfl.experiments import EXPERIMENTS
from networkedfl.pipeline.config import (
    ConfigError,
    deep_merge,
    load_config,
    load_schema,
    type_command_line_values,
    validate_config,
)


def _default(repo):
    return yaml.safe_load((repo / "config" / "config.yaml").read_text())


def test_shipped_configs_validate(repo, schema_path):
    validate_config(_default(repo), schema_path)
    merged = load_config(repo / "config" / "config.yaml", repo / "config" / "test.yaml", schema_path=schema_path)
    assert merged["experiments"]["gtv_fig09_sbm_sampling"]["n_iter"] < _default(repo)["experiments"][
        "gtv_fig09_sbm_sampling"]["n_iter"]


def test_the_old_seed_key_is_refused_with_its_new_name(repo, schema_path):
    """Issue 43 item 3: the base seed is ``base_seed``; a config or overlay still writing the
    old top-level ``seed`` is refused with a message naming the new key (not the schema's
    bare "additional property"), and ``seed`` stays the repetition index."""
    config = _default(repo)
    config["seed"] = config.pop("base_seed")
    with pytest.raises(ConfigError, match=r"config\['seed'\]: renamed 'base_seed'; write `base_seed: 2023`"):
        validate_config(config, schema_path)
    config["base_seed"] = 2023  # both: the old key is still refused
    with pytest.raises(ConfigError, match="renamed 'base_seed'"):
        validate_config(config, schema_path)


def test_every_registered_target_is_configured_and_in_the_schema(repo, schema_path):
    config = _default(repo)
    schema = load_schema(schema_path)  # the file's blocks with the registry's targets
    assert set(config["experiments"]) == set(EXPERIMENTS)
    assert set(schema["properties"]["experiments"]["properties"]) == set(EXPERIMENTS)
    assert set(schema["$defs"]["target_id"]["enum"]) == set(EXPERIMENTS)


def test_deep_merge_overrides_nested_keys_only():
    base = {"a": {"b": 1, "c": 2}, "d": [1, 2]}
    merged = deep_merge(base, {"a": {"b": 5}, "d": [3]})
    assert merged == {"a": {"b": 5, "c": 2}, "d": [3]}
    assert base == {"a": {"b": 1, "c": 2}, "d": [1, 2]}


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda c: c["experiments"]["gtv_fig03_chain_sampling"].update(n_iters=5), "n_iters"),
        (lambda c: c["experiments"]["gtv_fig09_sbm_sampling"]["grid"].update(M=[1.5]),
         "['gtv_fig09_sbm_sampling']['grid']['M'][0]"),
        (lambda c: c["experiments"]["gtv_fig04_chain_noise"]["lam"].update(l2=0.1), "l2"),
        (lambda c: c["experiments"]["gtv_fig13_star_lambda"].update(penalty="l7"),
         "['gtv_fig13_star_lambda']['penalty']"),
        (lambda c: c.update(seed="abc"), "config['seed']"),
        (lambda c: c.update(threads_per_job=0), "config['threads_per_job']"),
        (lambda c: c.update(cpu_kernels="avx512"), "config['cpu_kernels']"),
        (lambda c: c["experiments"].update(gtv_fig99_unknown={"repetitions": 1}), "gtv_fig99_unknown"),
        (lambda c: c["experiments"]["gtv_fig10_sbm_noise"].pop("p_in"), "p_in"),
        # NaN and infinities pass JSON Schema's "number": named by key (issue 22)
        (lambda c: c["experiments"]["fedrelax_fig01c_baselines"].update(lr=float("inf")),
         "config['experiments']['fedrelax_fig01c_baselines']['lr']: inf is not a finite number"),
        (lambda c: c["experiments"]["gtv_fig09_sbm_sampling"]["grid"].update(M=[0.5, float("nan")]),
         "config['experiments']['gtv_fig09_sbm_sampling']['grid']['M'][1]: nan is not a finite number"),
        # numbers the solvers cannot represent (issue 45 item 5): named by key, as the package names them
        (lambda c: c["experiments"]["gtv_fig13_star_lambda"].update(weight=1e200),
         "config['experiments']['gtv_fig13_star_lambda']['weight']: 1e+200 is beyond the magnitude 1e+150"),
        (lambda c: c["experiments"]["gtv_fig12_star_graph"].update(weight=5e-324),
         "config['experiments']['gtv_fig12_star_graph']['weight']: 5e-324 is below the smallest normal"),
        # the verdicts' design (docs/verdicts.md#design), accepted by every block
        (lambda c: c["experiments"]["gtv_fig12_star_graph"].update(design={"ratio_margin": -0.1}), "ratio_margin"),
        (lambda c: c["experiments"]["fedrelax_fig04_noniid_trees"]["design"].update(margin=0.1), "margin"),
        (lambda c: c["experiments"]["gtv_fig06_mnist_methods"]["design"].update(difference_margin={"area": "big"}),
         "difference_margin"),
    ],
)
def test_invalid_config_names_the_key(repo, schema_path, mutate, expected):
    config = copy.deepcopy(_default(repo))
    mutate(config)
    with pytest.raises(ConfigError) as err:
        validate_config(config, schema_path)
    assert expected in str(err.value)


def test_missing_config_file_is_named(tmp_path, schema_path):
    with pytest.raises(ConfigError, match="nope.yaml"):
        load_config(tmp_path / "nope.yaml", schema_path=schema_path)


def test_nested_command_line_values_get_the_types_of_a_config_file():
    """Snakemake reads a nested --config value with YAML's base loader: every scalar a string."""
    given = {"n_iter": "500", "sigma": "1e-3", "penalty": "nlasso", "lam_range": ["0.01", "10"],
             "sweeps": [{"d": ["2"]}], "flag": "true", "glove_path": "null"}
    config = {"base_seed": 1, "experiments": {"x": {**copy.deepcopy(given), "kept": "7"}, "y": {"a": "3"}}}
    type_command_line_values(config, {"experiments": {"x": given}})
    assert config["experiments"]["x"] == {"n_iter": 500, "sigma": 0.001, "penalty": "nlasso", "lam_range": [0.01, 10],
                                          "sweeps": [{"d": [2]}], "flag": True, "glove_path": None, "kept": "7"}
    assert config["experiments"]["y"] == {"a": "3"}  # not given on the command line: as its file has it


def test_ci_runs_exactly_the_readme_test_command_and_the_library_does_not_pin_torch(repo):
    """`.ci/run` runs the README's "Run the tests" command; the reproduction's exact versions
    live in constraints.txt, the package declares ranges (installable beside other stacks)."""
    import re
    import tomllib

    readme = (repo / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("**Run the tests**"):]
    command = re.search(r"```bash\n(.+?)\n```", section, re.S).group(1).strip()
    ci = [line for line in (repo / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == [command]
    assert "-c constraints.txt" in command
    assert 'pytest -m ""' in command  # CI runs every test, the pipeline ones included
    pins = dict(line.split("==") for line in (repo / "constraints.txt").read_text(encoding="utf-8").splitlines()
                if line and not line.startswith("#"))
    assert pins["torch"] == "2.13.0"
    project = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    deps = project["dependencies"] + [d for extra in project["optional-dependencies"].values() for d in extra]
    assert not [d for d in deps if "==" in d], deps  # ranges only: the pins live in constraints.txt
    assert "torch>=2.1,<3" in project["optional-dependencies"]["torch"]  # an extra (issue 35), not the core


def test_a_value_that_fits_no_form_names_the_key_inside_it(repo, schema_path):
    """oneOf/anyOf: the bad item is named, not only the whole value (issue 22)."""
    config = copy.deepcopy(_default(repo))
    config["targets"] = ["gtv_fig01_empirical_graph", "../escape"]
    with pytest.raises(ConfigError, match=r"config\['targets'\]\[1\]: '\.\./escape' is not one of"):
        validate_config(config, schema_path)




def test_every_target_block_accepts_a_design(repo, schema_path):
    config = copy.deepcopy(_default(repo))
    for block in config["experiments"].values():
        block["design"] = {"ratio_margin": 0.1, "difference_margin": {"accuracy": 0.01}, "seeds": 7}
    validate_config(config, schema_path)
