"""The linear GTV targets' ``solver`` option and Fig. 13's lambda path (issue 36, item 3)."""

import copy

import numpy as np
import pytest

from networkedfl.experiments.gtv.claims import star_lambda_claims
from networkedfl.experiments.gtv.linear import run_gtv_linear, solver_options
from networkedfl.experiments.gtv.star import run_star_lambda
from networkedfl.experiments.variants import variant_params


def _paper_params(test_config, target, **solver):
    params = variant_params(copy.deepcopy(test_config["experiments"][target]), "paper")
    params["solver"] = solver
    return params


def test_the_default_solver_is_the_fixed_step_iteration(test_config):
    for target in ("gtv_fig03_chain_sampling", "gtv_fig09_sbm_sampling", "gtv_table1_highdim_sbm"):
        params = test_config["experiments"][target]
        for variant in ("published", "paper"):
            assert solver_options(variant_params(params, variant))["method"] == "pdhg"
    assert solver_options({})["method"] == "pdhg"


@pytest.mark.parametrize(("solver", "message"), [
    ({"method": "pdlp"}, r"solver.method must be one of \('pdhg', 'restarted'\)"),
    ({"method": "restarted", "tol": 1e-6}, r"solver: unknown key\(s\) \['tol'\]"),
])
def test_bad_solver_blocks_are_named(solver, message):
    with pytest.raises(ValueError, match=message):
        solver_options({"solver": solver})


def test_restarted_is_refused_with_the_notebooks_prox_step(test_config):
    params = variant_params(test_config["experiments"]["gtv_fig09_sbm_sampling"], "published")
    params["solver"] = {"method": "restarted"}
    with pytest.raises(ValueError, match="needs step_degrees: node"):
        run_gtv_linear(params, "penalty-nlasso", 0, 2023, experiment_id="gtv_fig09_sbm_sampling")


@pytest.mark.parametrize("penalty", ["l1", "nlasso", "mocha"])
def test_restarted_paper_variant_converges_to_the_fixed_step_limit(test_config, penalty):
    """Fig. 3's paper variant with the restarted solver to a certified 1e-10 and with the fixed
    steps run long: the same parameter and label errors (the table's metrics)."""
    target = "gtv_fig03_chain_sampling"
    restarted = _paper_params(test_config, target, method="restarted", rel_gap_tol=1e-10)
    long = _paper_params(test_config, target, method="pdhg")
    long["n_iter"] = 60_000
    a = run_gtv_linear(restarted, f"penalty-{penalty}", 0, 2023, experiment_id=target)
    b = run_gtv_linear(long, f"penalty-{penalty}", 0, 2023, experiment_id=target)
    assert list(a.columns) == list(b.columns) and len(a) == len(b)
    finite = np.isfinite(b["value"].to_numpy())
    np.testing.assert_allclose(a["value"].to_numpy()[finite], b["value"].to_numpy()[finite], rtol=1e-4, atol=1e-9)


def test_fig13_solves_every_lambda_to_its_certified_gap(test_config):
    params = copy.deepcopy(test_config["experiments"]["gtv_fig13_star_lambda"])
    table = run_star_lambda(params, "all", 0, 2023, experiment_id="gtv_fig13_star_lambda")
    rel_gap = table.loc[table["metric"] == "rel_gap", "value"].to_numpy()
    iterations = table.loc[table["metric"] == "n_iter", "value"].to_numpy()
    assert rel_gap.size == params["n_lam"] and np.all(rel_gap <= params["rel_gap_tol"])
    assert np.all(iterations < params["n_iter"])
    assert all(claim.passed for claim in star_lambda_claims(table, params))
