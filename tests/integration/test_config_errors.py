"""Configuration errors as Snakemake reports them: a bad key, value or YAML line stops the run before any job, named."""
import subprocess
import sys

import pytest
import yaml

from networkedfl.pipeline.config import (
    ConfigError,
    load_config,
)


def test_snakemake_stops_before_any_job_on_a_bad_key(repo, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiments:\n  gtv_fig03_chain_sampling:\n    n_iters: 5\n")
    workdir = tmp_path / "work"
    workdir.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory",
         str(workdir), "--configfile", str(bad), "--cores", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode != 0
    assert "n_iters" in proc.stdout + proc.stderr
    assert "gtv_fig03_chain_sampling" in proc.stdout + proc.stderr
    assert not (workdir / "results").exists()


def test_nested_config_from_the_command_line_is_typed_validated_and_shown_as_an_overlay(repo, tmp_path):
    """README: `--config 'experiments={<id>: {...}}'` works with numbers; a bad value is named,
    with the overlay file that sets the same; the overlay works; Snakemake refuses dotted keys."""
    def dry_run(*args):
        return subprocess.run([sys.executable, "-m", "snakemake", "gtv_fig13_star_lambda", "-n", "--snakefile",
                               str(repo / "Snakefile"), "--directory", str(tmp_path), *args],
                              capture_output=True, text=True, timeout=300)

    test_profile = str(repo / "config" / "test.yaml")
    ok = dry_run("--configfile", test_profile, "--config", "experiments={gtv_fig13_star_lambda: {n_iter: 500, sigma: 0.2}}")
    assert ok.returncode == 0, (ok.stdout + ok.stderr)[-3000:]
    bad = dry_run("--configfile", test_profile, "--config", "experiments={gtv_fig13_star_lambda: {n_iter: 500, sigma: -1}}")
    out = bad.stdout + bad.stderr
    assert bad.returncode != 0
    assert "config['experiments']['gtv_fig13_star_lambda']['sigma']: -1 is less than the minimum of 0" in out
    assert "    experiments:\n      gtv_fig13_star_lambda:\n        n_iter: 500\n        sigma: -1\n" in out
    assert "--configfile config/test.yaml overlay.yaml" in out
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("experiments: {gtv_fig13_star_lambda: {n_iter: 500, sigma: 0.2}}\n")
    ok = dry_run("--configfile", test_profile, str(overlay))
    assert ok.returncode == 0, (ok.stdout + ok.stderr)[-3000:]
    dotted = dry_run("--configfile", test_profile, "--config", "experiments.gtv_fig13_star_lambda.n_iter=500")
    assert dotted.returncode != 0
    assert "Config entry must start with a valid identifier" in dotted.stdout + dotted.stderr
    assert not (tmp_path / "results").exists()


def test_a_yaml_syntax_error_names_the_file_and_line(repo, tmp_path):
    bad = tmp_path / "overlay.yaml"
    bad.write_text("experiments:\n  gtv_fig13_star_lambda:\n    n_iter: [1, 2\n    sigma: 0.1\n")
    with pytest.raises(ConfigError, match=r"overlay\.yaml, line 4, column \d+: not valid YAML"):
        load_config(bad)
    # Snakemake parses --configfile itself and names neither; config/README.md and docs/faults.md point here
    proc = subprocess.run([sys.executable, "-m", "networkedfl.pipeline.config", str(bad)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and "overlay.yaml, line 4" in proc.stderr
    good = subprocess.run([sys.executable, "-m", "networkedfl.pipeline.config", str(repo / "config" / "test.yaml")],
                          capture_output=True, text=True, timeout=120)
    assert good.returncode == 0 and good.stdout.startswith("valid:")
    # Snakemake's --verbose prints the YAML error it wraps, with the file and line
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--verbose", "-n", "--snakefile", str(repo / "Snakefile"),
                           "--directory", str(tmp_path), "--configfile", str(repo / "config" / "test.yaml"), str(bad)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert f'in "{bad}", line 4' in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-2000:]


def test_a_registered_target_missing_from_the_config_is_reported(repo, tmp_path):
    from conftest import copy_checkout

    checkout = copy_checkout(tmp_path / "checkout")
    config = yaml.safe_load((checkout / "config" / "config.yaml").read_text())
    del config["experiments"]["gtv_fig12_star_graph"]
    if isinstance(config.get("targets"), list):
        config["targets"].remove("gtv_fig12_star_graph")
    (checkout / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "gtv_fig01_empirical_graph"], cwd=checkout,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "1 registered targets have no block under config['experiments'] and are not built: " \
           "gtv_fig12_star_graph" in proc.stderr


def test_snakemake_names_the_line_of_a_yaml_error_in_the_main_config(tmp_path):
    from conftest import copy_checkout

    checkout = copy_checkout(tmp_path / "checkout")
    path = checkout / "config" / "config.yaml"
    lines = path.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("base_seed:"))
    lines[at] = "base_seed: [unclosed"
    path.write_text("\n".join(lines) + "\n")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n"], cwd=checkout, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode != 0
    assert "config.yaml, line " in proc.stdout + proc.stderr, proc.stdout[-2000:]
    assert f"at line {at + 1}, column 12" in proc.stdout + proc.stderr  # where the list opened
    assert "not valid YAML" in proc.stdout + proc.stderr


def _dry_run(repo, workdir, *args, timeout=300, **kwargs):
    return subprocess.run([sys.executable, "-m", "snakemake", "gtv_fig13_star_lambda", "-n", "--snakefile",
                           str(repo / "Snakefile"), "--directory", str(workdir), *args],
                          capture_output=True, text=True, timeout=timeout, **kwargs)


def test_a_key_given_twice_in_an_overlay_or_on_the_command_line_stops_the_run(repo, tmp_path):
    """Issue 37 item 4: Snakemake reads overlays and --config itself, the last of two equal
    keys winning; the run stops before any job, naming the file (or --config) and the lines."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("experiments:\n  gtv_fig13_star_lambda:\n    n_iter: 500\n    n_iter: 50\n")
    proc = _dry_run(repo, tmp_path, "--configfile", str(repo / "config" / "test.yaml"), str(overlay))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"{overlay}, line 4" in out and "'n_iter'" in out, out[-3000:]
    proc = _dry_run(repo, tmp_path, "--configfile", str(repo / "config" / "test.yaml"), "--config",
                    "experiments={gtv_fig13_star_lambda: {n_iter: 500, n_iter: 50}}")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "--config experiments=" in out and "'n_iter'" in out, out[-3000:]
    proc = _dry_run(repo, tmp_path, "--configfile", str(repo / "config" / "test.yaml"), "--config", "base_seed=1",
                    "base_seed=2")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "'base_seed'" in out and "--config" in out, out[-3000:]
    assert not (tmp_path / "results").exists()


def test_an_alias_bomb_overlay_is_refused_before_it_is_expanded(repo, tmp_path):
    """0.6 KB whose aliases expand to 387 million values, given with --configfile: the run
    stops before any job, naming the file and the limit, in a process allowed 2 GiB."""
    import resource

    from conftest import alias_bomb

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    bomb = alias_bomb(tmp_path / "bomb.yaml")
    proc = _dry_run(repo, tmp_path, "--configfile", str(repo / "config" / "test.yaml"), str(bomb), preexec_fn=limit)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and str(bomb) in out and "alias" in out, out[-3000:]
    # the same document as a --config value (flow style): refused naming the entry
    value = yaml.safe_load(bomb.read_text())["experiments"]  # shares its lists: not expanded
    lines = bomb.read_text().splitlines()[3:]
    flow = "experiments={gtv_fig13_star_lambda: {lam_range: [" + ", ".join(
        "{" + line.strip()[2:] + "}" for line in lines) + "]}}"
    assert value and len(flow) < 1000
    proc = _dry_run(repo, tmp_path, "--configfile", str(repo / "config" / "test.yaml"), "--config", flow,
                    preexec_fn=limit)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "--config experiments=" in out and "alias" in out, out[-3000:]


def test_overlays_given_to_the_workflow_are_bounded_before_any_parser_reads_them(repo, tmp_path):
    """Issue 45 item 4: `--config overlays=<file>` is read by the workflow, its size and
    nesting depth checked before YAML parses it: a 50 MB overlay and ones nested 100 000
    deep (flow and block style) are refused with one line naming the file and the limit
    (Snakemake's loader ran over 300 s on 24 MB, and a RecursionError printed 4000 lines)."""
    from conftest import deep_overlay, large_overlay

    from networkedfl.pipeline.config import MAX_YAML_BYTES, MAX_YAML_DEPTH

    cases = [(large_overlay(tmp_path / "big.yaml"), f"limit of {MAX_YAML_BYTES} bytes"),
             (deep_overlay(tmp_path / "flow.yaml", "flow"), f"limit of {MAX_YAML_DEPTH} levels"),
             (deep_overlay(tmp_path / "block.yaml", "block"), f"limit of {MAX_YAML_DEPTH} levels")]
    for overlay, limit in cases:
        proc = _dry_run(repo, tmp_path, "--configfile", str(repo / "config" / "test.yaml"), "--config",
                        f"overlays={overlay}", timeout=60)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0
        assert any(str(overlay) in line and limit in line for line in out.splitlines()), out[-3000:]
        assert "RecursionError" not in out and len(out.splitlines()) < 100
    assert not (tmp_path / "results").exists()


def test_overlays_given_to_the_workflow_are_merged_and_validated(repo, tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("experiments: {gtv_fig13_star_lambda: {n_iter: 500, sigma: -1}}\n")
    proc = _dry_run(repo, tmp_path, "--configfile", str(repo / "config" / "test.yaml"), "--config",
                    f"overlays={overlay}")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config['experiments']['gtv_fig13_star_lambda']['sigma']: -1 is less than the minimum of 0" in out
    # the command line wins over the overlay, as over --configfile
    proc = _dry_run(repo, tmp_path, "--configfile", str(repo / "config" / "test.yaml"), "--config",
                    f"overlays={overlay}", "experiments={gtv_fig13_star_lambda: {sigma: 0.2}}")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
