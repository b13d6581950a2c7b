"""Provenance (issue 22 item 1): the modules each target's jobs run and the hash of their
code; docstrings and comments change nothing (the reruns themselves:
``tests/integration/test_reruns.py``)."""

import os
import subprocess
import sys

from networkedfl.experiments import EXPERIMENTS
from networkedfl.pipeline.provenance import (
    code_hash,
    module_closure,
    notebook_modules,
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
    # the claims job hashes its family's claims module; the experiment's jobs do not
    claims = "networkedfl.experiments.gtv.claims"
    assert claims in target_modules(NO_SOLVER, jobs="claims") and claims not in target_modules(NO_SOLVER)
    assert "networkedfl.experiments.gtv.diagrams" in target_modules(NO_SOLVER)


def test_no_run_or_claims_job_hashes_the_plotting():
    """Computing apart from plotting: a change of ``networkedfl.plotting`` reruns figures and
    reports only.  (The quirk ablations' run jobs and Table II's imported it through the
    ablation's headline summary, so a legend change reran three targets' runs.)"""
    hashed = {(target, jobs) for target in EXPERIMENTS for jobs in ("run", "claims")
              if "networkedfl.plotting" in target_modules(target, jobs=jobs)}
    assert not hashed, sorted(hashed)


def test_the_ablation_summary_names_its_quantities_as_the_sweep_figures_label_them():
    from networkedfl.experiments.gtv.ablation_summary import QUANTITIES
    from networkedfl.plotting import PARAM_LABELS

    assert {key: PARAM_LABELS[key] for key in QUANTITIES} == QUANTITIES


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
