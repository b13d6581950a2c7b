"""Execution profiles: valid YAML, and every rule they size exists in the workflow."""

import subprocess
import sys

import pytest
import yaml

PROFILES = ["default", "test", "workstation", "slurm"]


@pytest.fixture(scope="module")
def rules(repo):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"),
                           "--list-rules"], capture_output=True, text=True, cwd=repo, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return set(proc.stdout.split())


@pytest.mark.parametrize("name", PROFILES)
def test_profile_rules_exist(repo, rules, name):
    profile = yaml.safe_load((repo / "profiles" / name / "config.yaml").read_text())
    assert isinstance(profile, dict) and profile
    for key in ("set-resources", "set-threads"):
        unknown = set(profile.get(key, {})) - rules
        assert not unknown, f"profile {name} sizes unknown rules {unknown}"


def test_slurm_profile_declares_cluster_resources(repo):
    profile = yaml.safe_load((repo / "profiles" / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    assert {"slurm_account", "slurm_partition", "runtime", "mem_mb"} <= set(profile["default-resources"])
    assert all({"runtime", "mem_mb"} <= set(r) for r in profile["set-resources"].values())


def test_the_default_profile_leaves_resources_to_cluster_profiles(repo):
    """profiles/default is read on every run and overrides a global --profile key by key: it
    must not set resources, or a cluster profile's default-resources would be replaced."""
    profile = yaml.safe_load((repo / "profiles" / "default" / "config.yaml").read_text())
    assert not {"default-resources", "set-resources", "resources"} & set(profile)
