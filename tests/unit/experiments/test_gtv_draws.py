"""Which arms of a linear GTV target share a data draw (docs/deviations/gtv.md#claims-means):
the rows of one (seed, grid point) share one instance, and the published variant's shared
graph (`graph_draw: per_grid_point`, the notebooks' networkx SBM with seed 0) is one graph
per graph parameter (p_out), the same for every M and noise level, as in the notebooks."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from networkedfl.experiments.gtv import linear
from networkedfl.experiments.variants import variant_params


def _instances(monkeypatch, params, setting, seed, target):
    built = []
    original = linear.build_instance

    def capture(*args, **kwargs):
        inst = original(*args, **kwargs)
        built.append(inst)
        return inst

    monkeypatch.setattr(linear, "build_instance", capture)
    linear.run_gtv_linear(params, setting, seed, 7, experiment_id=target)
    monkeypatch.setattr(linear, "build_instance", original)
    return built


def _edges(inst) -> set[tuple[int, int]]:
    return set(map(tuple, inst.graph.edges.tolist()))


@pytest.mark.parametrize(("target", "swept"), [("gtv_fig10_sbm_noise", "sigma"), ("gtv_fig09_sbm_sampling", "M")])
def test_the_published_graph_is_one_per_p_out_for_every_m_and_sigma(monkeypatch, test_config, target, swept):
    params = copy.deepcopy(variant_params(test_config["experiments"][target], "published"))
    params["grid"][swept] = [0.2, 0.6] if swept == "M" else [0.01, 1.0]
    params["n_iter"] = 2
    runs = [_instances(monkeypatch, params, "penalty-l1", seed, target) for seed in (0, 1)]
    for insts in runs:
        by_point = {tuple(sorted(i.point.items())): i for i in insts}
        p_outs = sorted({i.point["p_out"] for i in insts})
        for p in p_outs:
            same = [i for i in by_point.values() if i.point["p_out"] == p]
            assert len(same) == 2 and _edges(same[0]) == _edges(same[1])  # one graph for both values
            assert not np.array_equal(same[0].data.features, same[1].data.features)  # data still per point
        assert _edges(next(i for i in insts if i.point["p_out"] == p_outs[0])) != \
            _edges(next(i for i in insts if i.point["p_out"] == p_outs[-1]))
    # the same graph in every repetition, data and M redrawn
    assert [_edges(i) for i in runs[0]] == [_edges(i) for i in runs[1]]
    assert not np.array_equal(runs[0][0].mask, runs[1][0].mask)


def test_every_job_of_a_seed_draws_the_same_instance_at_a_grid_point(monkeypatch, test_config):
    """Penalties and baselines of one (seed, grid point) are paired on one data draw."""
    target = "gtv_table3_covariance"
    params = copy.deepcopy(variant_params(test_config["experiments"][target], "paper"))
    params["n_iter"] = 2
    a = _instances(monkeypatch, params, "penalty-l1", 3, target)
    b = _instances(monkeypatch, params, "baselines", 3, target)
    for x, y in zip(a, b, strict=True):
        assert _edges(x) == _edges(y)
        np.testing.assert_array_equal(x.data.labels, y.data.labels)
        np.testing.assert_array_equal(x.mask, y.mask)
