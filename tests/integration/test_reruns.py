"""Code-aware reruns on the real workflow: a code change reruns exactly the jobs whose code changed."""
import json
import subprocess
import sys

from conftest import copy_checkout

from networkedfl import __version__
from networkedfl.pipeline.provenance import (
    code_hash,
    read_sidecar,
    sidecar_path,
    target_modules,
)

USES_SOLVER = "gtv_fig13_star_lambda"  # the star graph solved over a lambda grid
NO_SOLVER = "gtv_fig01_empirical_graph"  # a diagram: no solver


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
        raws = sorted((checkout / "results" / "raw" / target).glob("*.csv"))  # not .previous/
        assert raws and all(read_sidecar(r)["code_hash"] == expected for r in raws)
        assert json.loads(sidecar_path(raws[0]).read_text())["libraries"]["numpy"]
    assert "Nothing to be done" in snakemake(*tables, "-n")

    solver = root / "gtv" / "_primal_dual.py"
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
