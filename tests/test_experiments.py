"""Experiment registry and jobs: determinism, independence of batching, tidy output."""

import numpy as np
import pandas as pd
import pytest

from networkedfl.experiments import EXPERIMENTS, get_experiment, rng_for
from networkedfl.experiments.gtv_linear import build_instance, grid_points
from networkedfl.pipeline.runner import (
    collect_tables,
    evaluate_claims,
    job_settings,
    run_job,
    seeds,
)


def test_unknown_target_is_named():
    with pytest.raises(KeyError, match="gtv_fig99"):
        get_experiment("gtv_fig99")


def test_rng_streams_depend_on_every_key():
    draw = lambda *a: rng_for(*a).standard_normal(4)  # noqa: E731
    assert np.array_equal(draw(1, "x", 0, {"a": 1}), draw(1, "x", 0, {"a": 1}))
    for other in [(2, "x", 0, {"a": 1}), (1, "y", 0, {"a": 1}), (1, "x", 1, {"a": 1}), (1, "x", 0, {"a": 2})]:
        assert not np.array_equal(draw(1, "x", 0, {"a": 1}), draw(*other))


@pytest.mark.parametrize("target", sorted(EXPERIMENTS))
def test_jobs_are_deterministic_and_tidy(test_config, target):
    setting = job_settings(test_config, target)[0]
    first = run_job(test_config, target, setting, 0)
    again = run_job(test_config, target, setting, 0)
    pd.testing.assert_frame_equal(first, again)
    assert {"metric", "value", "seed"} <= set(first.columns)
    assert len(first) > 0
    assert (first["seed"] == 0).all()


def test_instances_do_not_depend_on_the_penalty_job(test_config):
    """Penalties of one seed see the same graphs and data (paired comparison)."""
    target = "gtv_fig09_sbm_sampling"
    params = test_config["experiments"][target]
    point = grid_points(params)[1]
    a = build_instance(params, point, rng_for(test_config["seed"], target, 0, point))
    b = build_instance(params, point, rng_for(test_config["seed"], target, 0, point))
    assert np.array_equal(a.graph.edges, b.graph.edges)
    assert np.array_equal(a.data.labels, b.data.labels)
    assert np.array_equal(a.mask, b.mask)
    tables = [run_job(test_config, target, s, 0) for s in job_settings(test_config, target)]
    assert sorted(pd.concat(tables)["penalty"].unique()) == ["l1", "mocha", "nlasso"]


def test_grid_covers_the_product_of_values(test_config):
    params = test_config["experiments"]["gtv_fig03_chain_sampling"]
    points = grid_points(params)
    sizes = [len(v) for v in params["grid"].values()]
    assert len(points) == int(np.prod(sizes))
    assert len({tuple(sorted(p.items())) for p in points}) == len(points)


def test_claims_are_evaluated_on_a_collected_table(test_config):
    target = "gtv_fig12_star_graph"
    table = collect_tables([run_job(test_config, target, s, seed)
                            for s in job_settings(test_config, target) for seed in seeds(test_config, target)])
    claims = evaluate_claims(test_config, target, table)
    assert claims and all(set(c) == {"claim", "passed", "detail"} for c in claims)
    assert all(c["passed"] for c in claims)
    # A star with one edge removed breaks the claim: the claims really read the table.
    broken = table.drop(table[(table["element"] == "edge")].index[:1])
    assert not all(c["passed"] for c in evaluate_claims(test_config, target, broken))


def test_a_failing_claim_computation_is_reported_not_raised(test_config):
    claims = evaluate_claims(test_config, "gtv_fig03_chain_sampling", pd.DataFrame({"metric": [], "value": []}))
    assert claims and not any(c["passed"] for c in claims)
