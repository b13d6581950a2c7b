"""Provenance and code-aware reruns (issue 22 item 1): every raw output and table records
the package version and the hash of the code it ran; a code change reruns the jobs whose
code changed, and only those; docstrings and comments change nothing."""

import json
import os
import subprocess
import sys

import pytest
from conftest import copy_checkout

from networkedfl import __version__
from networkedfl.experiments import EXPERIMENTS
from networkedfl.pipeline.provenance import (
    code_hash,
    module_closure,
    notebook_modules,
    read_sidecar,
    sidecar_path,
    target_modules,
)

SOLVER = "networkedfl.gtv._primal_dual"
USES_SOLVER = "gtv_fig13_star_lambda"  # the star graph solved over a lambda grid
NO_SOLVER = "gtv_fig01_empirical_graph"  # a diagram: no solver


def test_closures_follow_the_imports_of_each_target():
    assert SOLVER in target_modules(USES_SOLVER)
    assert SOLVER not in target_modules(NO_SOLVER)
    assert "networkedfl.nn._nplm" in target_modules("gfl_fig10_4_reviews_nlp")
    assert "networkedfl.nn._nplm" not in target_modules(USES_SOLVER)
    assert "networkedfl.plotting" in notebook_modules("notebooks/gtv_fig13_star_lambda.ipynb")
    # a package's __init__ counts, but a name imported from it pulls in only its module
    closure = module_closure(["networkedfl.gtv._estimator"])
    assert "networkedfl.gtv" in closure and "networkedfl.gtv._primal_dual" in closure
    assert "networkedfl.gtv._pooled" not in closure
    # a name re-exported by a package's __init__ (or loaded on first use) pulls in its module
    assert "networkedfl.gtv._estimator" in notebook_modules("notebooks/tutorial_own_network.ipynb")
    assert "networkedfl.fedrelax._nonparametric" in target_modules("fedrelax_fig02a_trees_dm")


def test_the_code_hashes_do_not_depend_on_the_interpreter_s_hash_seed(repo):
    """Every process computes the same hashes (set order varies with PYTHONHASHSEED): a
    hash that differed between runs would rerun jobs for nothing."""
    script = ("from networkedfl.experiments import EXPERIMENTS\n"
              "from networkedfl.pipeline.provenance import code_hash, notebook_modules, target_modules\n"
              "for t in sorted(EXPERIMENTS):\n"
              "    print(t, code_hash(target_modules(t)), code_hash(notebook_modules(f'notebooks/{t}.ipynb')))\n")
    outputs = {subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (0, 1, 2, 3)}
    assert len(outputs) == 1 and len(outputs.pop().splitlines()) == len(EXPERIMENTS)


def test_the_code_hash_ignores_docstrings_comments_and_formatting(tmp_path):
    pkg = tmp_path / "networkedfl"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    mod = pkg / "solver.py"
    mod.write_text('"""Doc."""\nSIGMA = 0.45\n\n\ndef f(x):\n    """Doc."""\n    return SIGMA * x\n')
    modules = ["networkedfl", "networkedfl.solver"]
    before = code_hash(modules, tmp_path / "networkedfl")
    mod.write_text('"""Other doc."""\n# a comment\nSIGMA = 0.45  # why\n\ndef f( x ):\n    return SIGMA*x\n')
    assert code_hash(modules, tmp_path / "networkedfl") == before
    mod.write_text('"""Doc."""\nSIGMA = 0.5\n\n\ndef f(x):\n    return SIGMA * x\n')
    assert code_hash(modules, tmp_path / "networkedfl") != before


@pytest.mark.pipeline
def test_a_code_change_reruns_exactly_the_jobs_that_run_it(repo, tmp_path):
    checkout = copy_checkout(tmp_path / "checkout", "src")  # the jobs run this copy's code
    tables = [f"results/tables/{t}.csv" for t in (USES_SOLVER, NO_SOLVER)]

    def snakemake(*args):
        proc = subprocess.run([sys.executable, "-m", "snakemake", *args, "--cores", "2", "--configfile",
                               "config/test.yaml"], cwd=checkout, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout + proc.stderr

    snakemake(*tables)
    # every raw output and table has its sidecar, with the code of the checkout's src/
    root = checkout / "src" / "networkedfl"
    for target in (USES_SOLVER, NO_SOLVER):
        expected = code_hash(target_modules(target, root), root)
        table = checkout / f"results/tables/{target}.csv"
        record = read_sidecar(table)
        assert record["version"] == __version__ and record["code_hash"] == expected
        assert record["job_code_hashes"] == [expected] and record["target"] == target
        raws = sorted((checkout / "results" / "raw" / target).glob("*/seed-*.csv"))  # not .previous/
        assert raws and all(read_sidecar(r)["code_hash"] == expected for r in raws)
        assert json.loads(sidecar_path(raws[0]).read_text())["libraries"]["numpy"]
    assert "Nothing to be done" in snakemake(*tables, "-n")

    solver = root / "algorithms" / "primal_dual.py"
    source = solver.read_text()
    solver.write_text(source.replace("DEFAULT_SIGMA = 0.45", "DEFAULT_SIGMA = 0.45  # a comment", 1))
    assert "Nothing to be done" in snakemake(*tables, "-n")  # comments change nothing

    solver.write_text(source.replace("DEFAULT_SIGMA = 0.45", "DEFAULT_SIGMA = 0.4", 1))
    plan = snakemake(*tables, "-n")
    jobs = [line.strip() for line in plan.splitlines() if line.strip().startswith("output: ")]
    assert any(f"results/raw/{USES_SOLVER}/" in j for j in jobs), plan[-3000:]
    assert any(f"results/tables/{USES_SOLVER}.csv" in j for j in jobs), plan[-3000:]
    assert not any(NO_SOLVER in j for j in jobs), jobs  # its jobs do not run the solver
    assert "provenance triggered jobs: collect_table evaluate_claims run_experiment" in plan or \
        "Params have changed" in plan, plan[-3000:]
