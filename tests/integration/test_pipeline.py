"""The real Snakemake DAG on the test profile, in a scratch working directory: every
registered target, the claims summary and the index page, as `snakemake --cores 2` builds them."""

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import copy_checkout

from networkedfl.experiments import EXPERIMENTS, get_experiment
from networkedfl.experiments.report import escape_markdown

TARGETS = sorted(EXPERIMENTS)


def _snakemake(repo, workdir, *args, timeout=900, configfiles=()):
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"),
           "--directory", str(workdir), "--configfile", str(repo / "config" / "test.yaml"),
           *map(str, configfiles), *args]
    # as a user who has not activated the venv: only the system's tools on PATH
    env = {**os.environ, "PATH": os.pathsep.join(["/usr/bin", "/bin"])}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def _machine_paths(text, *roots):
    """The absolute paths of this machine in a rendered report (issue 41 item 5): the checkout's
    and the working directory's, the venv's, the home's; base64 images aside (any four
    characters can occur in one)."""
    import re

    text = re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,", text)
    prefixes = {*map(str, roots), *(os.path.realpath(r) for r in roots), str(Path.home())}
    if sys.prefix != sys.base_prefix:
        prefixes |= {sys.prefix, os.path.realpath(sys.prefix)}
    # where a path starts (not inside a relative one, "../../checkout/notebooks/x.ipynb")
    return sorted(p for p in prefixes if re.search(r"(?<![\w.~-])" + re.escape(p) + r"(?![\w.-])", text))


# `built` (tests/conftest.py): the whole test profile, built once per session


@pytest.mark.parametrize("target", TARGETS)
def test_all_output_kinds_appear(repo, built, target):
    results = built / "results"
    table = pd.read_csv(results / "tables" / f"{target}.csv")
    assert {"metric", "value", "seed"} <= set(table.columns) and len(table) > 0
    claims = json.loads((results / "claims" / f"{target}.json").read_text())
    assert claims, "no claims evaluated"
    variants = "variant" in table.columns
    keys = {"claim", "verdict", "kind", "n_seeds", "effect", "effect_label", "interval", "interval_method", "detail",
            "test", "split", "inferred"}
    for claim in claims:
        assert set(claim) == keys | ({"variant"} if variants else set())
        assert claim["verdict"] in ("holds", "equivalent", "fails", "inconclusive") and claim["claim"] and claim["detail"]
        assert claim["kind"] in ("paper", "reference", "diagnostic")
        assert claim["interval"] is None or len(claim["interval"]) == 2
    if variants:  # both variants in the table, every claim evaluated for each
        assert table.columns[0] == "variant" and set(table["variant"]) == {"published", "paper"}
        by_variant = {v: [c["claim"] for c in claims if c["variant"] == v] for v in ("published", "paper")}
        assert by_variant["published"] == by_variant["paper"] and by_variant["paper"]
    html = (results / "reports" / f"{target}.html").read_text()
    assert target in html and "Claims" in html
    assert _machine_paths(html, built, repo) == []
    # the papermill parameters beside the report: the files relative to the working directory
    params = yaml.safe_load((results / "reports" / f"{target}.params.yaml").read_text())
    assert params["table"] == f"results/tables/{target}.csv" and params["claims"] == f"results/claims/{target}.json"
    executed = json.loads((results / "reports" / f"{target}.ipynb").read_text())
    assert any(cell.get("outputs") for cell in executed["cells"] if cell["cell_type"] == "code")
    assert any("injected-parameters" in cell.get("metadata", {}).get("tags", []) for cell in executed["cells"])
    if get_experiment(target).has_figure:
        assert (results / "figures" / f"{target}.pdf").read_bytes().startswith(b"%PDF")
        assert (results / "figures" / f"{target}.png").read_bytes().startswith(b"\x89PNG")
    else:
        assert not (results / "figures" / f"{target}.pdf").exists()


def test_sweep_table_has_one_column_per_varied_parameter(built):
    table = pd.read_csv(built / "results" / "tables" / "gtv_fig03_chain_sampling.csv")
    for column in ["eps", "M", "sigma", "penalty", "lam", "method", "seed", "metric", "value"]:
        assert column in table.columns
    assert set(table["penalty"]) == {"l1", "nlasso", "mocha"}
    assert set(table["metric"]) >= {"parameter_mse", "label_mse"}


def test_one_log_per_job(built):
    logs = list((built / "logs").rglob("*.log"))
    assert any("run" in p.parts for p in logs) and any("notebooks" in p.parts for p in logs)


def test_claims_summary_lists_every_registered_target(built):
    from networkedfl.experiments.papers import ordered_targets

    summary = pd.read_csv(built / "results" / "claims" / "summary.csv", keep_default_na=False)
    assert list(dict.fromkeys(summary["target"])) == ordered_targets([t for t in EXPERIMENTS if t in TARGETS])
    for (target, variant), rows in summary.groupby(["target", "variant"], sort=False):
        (row,) = rows.itertuples(index=False)
        claims = [c for c in json.loads((built / "results" / "claims" / f"{target}.json").read_text())
                  if c.get("variant", "") == variant]
        every = [c for c in claims if c["kind"] == "paper"]
        paper = [c for c in every if c["test"] == "statistical"]  # the headline counts these (docs/verdicts.md)
        assert row.claims == len(paper) and row.checks == len(claims) - len(every)
        assert row.fixed + row.every_seed == len(every) - len(paper)
        for verdict in ("holds", "equivalent", "fails", "inconclusive"):
            assert getattr(row, verdict) == sum(c["verdict"] == verdict for c in paper)
        for c in claims:
            assert c["verdict"] in ("holds", "equivalent", "fails", "inconclusive")
            assert {"n_seeds", "effect", "interval", "interval_method", "test", "split"} <= set(c)
    assert set(summary.loc[summary["target"] == "gtv_fig09_sbm_sampling", "variant"]) == {"published", "paper"}
    page = (built / "results" / "index.html").read_text()
    assert "published" in page and "inconclusive" in page


def test_index_links_every_output_of_every_target(built):
    page = (built / "results" / "index.html").read_text()
    for target in TARGETS:
        for href in [f"reports/{target}.html", f"reports/{target}.ipynb", f"tables/{target}.csv",
                     f"claims/{target}.json"]:
            assert f'href="{href}"' in page
            assert (built / "results" / href).is_file()
        if get_experiment(target).has_figure:
            assert f'src="figures/{target}.png"' in page


def test_second_run_has_nothing_to_do(repo, built):
    proc = _snakemake(repo, built, "--cores", "1", "--dry-run")
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr


def _planned_jobs(proc):
    """``{rule: count}`` from the job-stats table of a dry run."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    if "Nothing to be done" in out:
        return {}
    table = out.split("Job stats:", 1)[1].split("Reasons:", 1)[0]
    rows = [line.split() for line in table.splitlines()]
    return {r[0]: int(r[1]) for r in rows
            if len(r) == 2 and r[0].isidentifier() and r[1].isdigit() and r[0] != "total"}


@pytest.mark.parametrize("change, reruns", [
    ({"neighbours": 3}, {"learn_mnist_graph"}),
    ({"rescale": "minmax"}, {"learn_mnist_graph"}),
    ({"kl_k": 2}, {"mnist_kl", "learn_mnist_graph"}),
    ({"tsne": {"perplexity": 10}}, {"mnist_tsne", "mnist_kl", "learn_mnist_graph"}),
])
def test_a_graph_change_reruns_only_its_stage_and_the_later_ones(repo, built, tmp_path, change, reruns):
    """Issue 16 item 5: t-SNE, KL matrix and kNN graph are three cached DAG stages; each
    reads only its part of the spec, so changing k or the kernel reruns only the last."""
    import yaml

    from networkedfl.experiments.gtv.mnist_graph import graph_file

    extra = tmp_path / "change.yaml"
    extra.write_text(yaml.safe_dump({"mnist_graphs": {"two_clusters": change}}))
    target = graph_file("two_clusters")
    assert _planned_jobs(_snakemake(repo, built, "--cores", "1", "--dry-run", target)) == {}
    planned = _planned_jobs(_snakemake(repo, built, "--cores", "1", "--dry-run", target, configfiles=[extra]))
    assert planned == {rule: 1 for rule in reruns}


TUNED = ["gfl_fig10_1_dfl", "gfl_fig10_3_synthetic", "gfl_fig10_4_reviews_nlp"]


@pytest.mark.parametrize("target", TUNED)
def test_a_tuned_target_table_holds_its_grid_the_chosen_values_and_the_references(built, test_config, target):
    """Issue 17: the tuning protocol's rows (every grid point's validation loss, the chosen
    values) are in the target's table, and the tuned runs used the chosen values."""
    from networkedfl.experiments.baselines import EXTRA_BASELINES, extra_baselines
    from networkedfl.experiments.tuning import grid_points

    table = pd.read_csv(built / "results" / "tables" / f"{target}.csv")
    params = test_config["experiments"][target]
    tuning = table[table["metric"].str.startswith("tuning_")]
    losses = tuning[tuning["metric"] == "tuning_validation_loss"]
    # every grid point at the first rung of successive halving (tuning.halving), the best of
    # the last rung chosen
    rung = losses["tuning_rung"].fillna(0) if "tuning_rung" in losses else pd.Series(0, index=losses.index)
    # the grids of the methods that run: an extra baseline's grid is in the config whether or
    # not the target lists the baseline (experiments.baselines)
    running = [s for s in params["tuning"]["grid"] if s not in EXTRA_BASELINES or s in extra_baselines(params)]
    assert (rung == 0).sum() == sum(len(grid_points(params, s)) for s in running)
    chosen = tuning[tuning["metric"] == "tuning_chosen"]
    assert set(chosen["method"]) == set(losses["method"])
    for method, block in losses.groupby("method"):
        last = block[rung[block.index] == rung[block.index].max()]
        best = last.loc[last["value"].idxmin(), "tuning_point"]
        assert (chosen[chosen["method"] == method]["tuning_point"] == best).all(), method
    assert {"Local", "Predict the mean"} <= set(table["method"])
    assert not (table["metric"] == "validation_loss").any()  # validation stays in the tuning jobs


def test_a_tuning_grid_change_reruns_only_that_methods_tuning_and_runs(repo, built, tmp_path):
    """Issue 17: a changed grid reruns only that method's tuning job (which runs only the
    changed points: tests/unit/pipeline/test_tuning_jobs.py) and what depends on it."""
    import yaml

    extra = tmp_path / "grid.yaml"
    extra.write_text(yaml.safe_dump({"experiments": {"gfl_fig10_3_synthetic": {
        "tuning": {"grid": {"fedavg": {"lr": [0.1, 0.3]}}}}}}))
    target = "gfl_fig10_3_synthetic"
    planned = _planned_jobs(_snakemake(repo, built, "--cores", "1", "--dry-run", target, configfiles=[extra]))
    assert planned["tune_experiment"] == 1     # FedAvg's grid; the other methods' are unchanged
    assert planned["run_experiment"] == 1      # FedAvg's one repetition; other methods untouched
    assert planned["collect_table"] == 1


def test_gallery_shows_every_figure_with_the_paper_figure_it_reproduces(repo, built):
    proc = _snakemake(repo, built, "--cores", "1", "gallery")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    page = (built / "docs" / "gallery" / "README.md").read_text()
    figures = [t for t in TARGETS if get_experiment(t).has_figure]
    assert figures
    for target in TARGETS:
        shown = f"[![{target}]({target}.png)]({target}.png)" in page  # opens at full size
        assert shown == (target in figures), target
        if shown:
            assert get_experiment(target).source in page
            copy = built / "docs" / "gallery" / f"{target}.png"
            assert copy.read_bytes() == (built / "results" / "figures" / f"{target}.png").read_bytes()
    ablation = (built / "docs" / "gallery" / "gtv_quirk_ablation.md").read_text()
    assert "| result | quantity | published |" in ablation and "loss\\_scale → paper" in ablation  # Markdown-escaped
    mnist = (built / "docs" / "gallery" / "gtv_quirk_ablation_mnist.md").read_text()
    assert "methods.primal\\_dual.prox\\_scale → paper" in mnist and "validation accuracy" in mnist
    claims = (built / "docs" / "gallery" / "claims.md").read_text()
    for target in figures:  # every claim with what was measured
        entries = json.loads((built / "results" / "claims" / f"{target}.json").read_text())
        assert f"## `{target}`" in claims
        assert all(escape_markdown(e["detail"].replace("\n", " ")) in claims for e in entries), target
    tuning = (built / "docs" / "gallery" / "tuning.md").read_text()
    assert all(f"## `{t}`" in tuning for t in TUNED) and "**chosen**" in tuning
    for copy in (built / "docs" / "gallery" / "notebooks").glob("*.ipynb"):  # committed: no path of the machine
        assert _machine_paths(copy.read_text(encoding="utf-8"), built, repo) == [], copy.name


def _report_contents(path):
    import zipfile

    return {os.path.basename(name) for name in zipfile.ZipFile(path).namelist()}


def test_a_bare_report_after_the_full_build_holds_every_target(repo, built, tmp_path):
    """README: `snakemake --report report.zip` after a full run, with the run's config files."""
    proc = _snakemake(repo, built, "--report", str(tmp_path / "report.zip"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    names = _report_contents(tmp_path / "report.zip")
    assert "report.html" in names
    for target in TARGETS:
        expected = {f"{target}.csv", f"{target}.html"}
        if get_experiment(target).has_figure:
            expected |= {f"{target}.pdf", f"{target}.png"}
        assert expected <= names, (target, expected - names)


def test_the_readme_report_of_some_targets_works_after_building_only_them(repo, tmp_path):
    """After a partial build a bare `--report` stops at an output not built; the README's
    invocation, which names the targets built, makes the report of those."""
    import re

    readme = (repo / "README.md").read_text(encoding="utf-8")
    row = readme[readme.index("| the report of some targets |"):].split("\n", 1)[0]
    command = re.search(r"`\.venv/bin/snakemake ([^`]*--report report\.zip)`", row).group(1).split()
    ids = command[:command.index("--configfile")]
    assert ids and set(ids) <= set(TARGETS), command
    checkout = copy_checkout(tmp_path / "checkout")

    def snakemake(*args):
        return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=checkout, capture_output=True,
                              text=True, timeout=900)

    proc = snakemake(*ids, "--cores", "2", "--configfile", "config/test.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    bare = snakemake("--report", "report.zip")
    assert bare.returncode != 0 and "marked for report but does not exist" in bare.stdout + bare.stderr
    proc = snakemake(*command)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    names = _report_contents(checkout / "report.zip")
    for target in ids:
        assert {f"{target}.csv", f"{target}.html", f"{target}.png"} <= names, (target, names)


def test_the_default_profile_is_read_without_flags(repo, tmp_path):
    """A bare `snakemake <target>` from the repository root reads profiles/default (where
    Snakemake looks for the workflow profile, next to the Snakefile), which sets the cores."""
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "gtv_fig03_chain_sampling",
                           "--directory", str(tmp_path)], cwd=repo, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Using workflow specific profile profiles/default" in proc.stdout + proc.stderr
    assert "cores: all" in (repo / "profiles" / "default" / "config.yaml").read_text(encoding="utf-8")


def test_a_checkout_whose_path_has_a_space_and_a_dollar_renders_its_notebooks(repo, tmp_path):
    """The shell rules quote every path ({...:q}): from a checkout under "my check$HOME out"
    papermill and nbconvert get the notebook's path whole, and nothing in it is expanded."""
    checkout = copy_checkout(tmp_path / "my check$HOME out")
    target = "gtv_fig01_empirical_graph"  # no data, one figure notebook
    proc = subprocess.run([sys.executable, "-m", "snakemake", target, "--cores", "1", "--configfile",
                           "config/test.yaml"], cwd=checkout, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (checkout / "results" / "reports" / f"{target}.html").stat().st_size > 0
    assert (checkout / "results" / "figures" / f"{target}.png").stat().st_size > 0
    for report in (f"{target}.html", f"{target}.ipynb"):  # no path of this machine; the table's relative
        text = (checkout / "results" / "reports" / report).read_text(encoding="utf-8")
        assert _machine_paths(text, checkout) == [] and f"./results/tables/{target}.csv" in text
    params = (checkout / "results" / "reports" / f"{target}.params.yaml").read_text(encoding="utf-8")
    assert _machine_paths(params, checkout) == [] and f"figure_png: results/figures/{target}.png" in params


def test_moving_the_checkout_or_adding_a_mirror_reruns_nothing(repo, tmp_path):
    """No absolute path is a rule parameter or input: a checkout moved with its results (and
    a dataset source added) is up to date.  Covers the downloads, the MNIST graph cache,
    experiment jobs and notebooks."""
    first = copy_checkout(tmp_path / "first", "data/vendored")
    targets = ["gtv_fig01_empirical_graph", "gfl_table10_2_review_stats", "gtv_table2_mnist_clusters"]

    def snakemake(checkout, *args, overlays=()):
        return subprocess.run([sys.executable, "-m", "snakemake", *targets, "--cores", "2", *args,
                               "--configfile", "config/test.yaml", *overlays], cwd=checkout,
                              capture_output=True, text=True, timeout=900)

    built = snakemake(first)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    first.rename(moved)
    (tmp_path / "mirror.yaml").write_text(yaml.safe_dump(
        {"data": {"mnist": {"sources": ["vendored", "https://mirror.example.org/mnist/"]}}}))
    for overlays in ([], [str(tmp_path / "mirror.yaml")]):
        dry = snakemake(moved, "-n", overlays=overlays)
        assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
        assert "Nothing to be done" in dry.stdout + dry.stderr, (dry.stdout + dry.stderr)[-3000:]


def test_lint_is_clean(repo, tmp_path):
    proc = _snakemake(repo, tmp_path, "--lint")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@contextlib.contextmanager
def _threads_of_a_job(config):
    """This process's BLAS, OpenMP and PyTorch threads as the pipeline's jobs have them
    (``threads_per_job``, networkedfl.pipeline.determinism), restored after."""
    import torch
    from threadpoolctl import threadpool_limits

    threads, previous = int(config.get("threads_per_job", 1)), torch.get_num_threads()
    with threadpool_limits(limits=threads):
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.set_num_threads(previous)


@pytest.mark.parametrize("target", TARGETS)
def test_a_job_rerun_in_process_gives_byte_identical_records(built, test_config, inputs_for, tmp_path, target):
    """Determinism: the first job of every target (its first setting, or every setting of a
    grouped target; every seed), run again outside Snakemake, writes exactly the bytes the
    pipeline wrote; its records are tidy, seed after seed."""
    import networkedfl
    from networkedfl.io import Paths, write_csv
    from networkedfl.pipeline.provenance import code_hash, target_modules
    from networkedfl.pipeline.runner import job_groups, run_group, seeds, tuning_settings

    job, settings = next(iter(job_groups(test_config, target).items()))
    tuning = {s: [pd.read_csv(built / Paths().tuning(target, s))]
              for s in settings if s in tuning_settings(test_config, target)}
    inputs = {}  # as the workflow gives them (experiment_inputs): each variant's files, each once
    for setting in settings:
        for name, value in (inputs_for(target, setting=setting) or {}).items():
            if len(settings) == 1:
                inputs[name] = value
                continue
            paths = inputs.setdefault(name, [])
            paths += [v for v in ([value] if isinstance(value, str) else value) if v not in paths]
    # another target's table (the quirk ablation's sources) is the built one
    tables = os.path.dirname(Paths().table("x"))

    def built_table(path):
        return str(built / path[path.index(tables):]) if tables in path else path

    inputs = {k: built_table(v) if isinstance(v, str) else [built_table(p) for p in v] for k, v in inputs.items()}
    root = Path(networkedfl.__file__).parent
    seed_list = seeds(test_config, target)
    with _threads_of_a_job(test_config):
        table = run_group(test_config, target, job, seed_list, inputs or None, tuning,
                          code=code_hash(target_modules(target, root), root))
    assert {"metric", "value", "seed"} <= set(table.columns) and len(table) > 0
    if len(settings) == 1:
        assert table["seed"].drop_duplicates().tolist() == seed_list and table["seed"].is_monotonic_increasing
    write_csv(table, tmp_path / "again.csv")
    assert (tmp_path / "again.csv").read_bytes() == (built / Paths().raw(target, job)).read_bytes()
