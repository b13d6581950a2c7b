"""The GTV synthetic targets' claims under the verdict rule (docs/verdicts.md), on
constructed tables: a clear effect holds, its reverse fails, an effect inside the noise is
inconclusive, and every comparison is paired by seed."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pandas as pd
import pytest

from networkedfl.experiments.claims import FAILS, HOLDS, INCONCLUSIVE, design
from networkedfl.experiments.gtv import claims as gtv_claims
from networkedfl.experiments.gtv.ablation_summary import headline_per_seed
from networkedfl.experiments.gtv.claims import (
    ablation_claims,
    cluster_graph_claims,
    star_graph_claims,
    star_lambda_claims,
)

SEEDS = range(5)
PENALTIES = ("l1", "nlasso", "mocha")


def sweep(grid: dict[str, list], value, methods=PENALTIES, metrics=("parameter_mse",), seeds=SEEDS) -> pd.DataFrame:
    """A linear target's tidy table: ``value(method, point, seed, metric)`` for every
    method (a penalty of Alg. 1 or a baseline), grid point and seed."""
    rows = []
    for seed, method, values in itertools.product(seeds, methods, itertools.product(*grid.values())):
        point = dict(zip(grid, values, strict=True))
        alg = method in PENALTIES
        for metric in metrics:
            rows.append({**point, "method": "primal_dual" if alg else method, "penalty": method if alg else "none",
                         "seed": seed, "metric": metric, "value": value(method, point, seed, metric)})
    return pd.DataFrame(rows)


def verdicts(claims) -> list[str]:
    return [c.verdict for c in claims]


def seed_noise(seed: int, scale: float = 1.0) -> float:
    """A large factor shared by every arm of one seed (the seed's data draw)."""
    return float(np.exp(scale * np.random.default_rng(seed).normal()))


def test_claims_are_paired_by_seed_so_a_shared_draw_cancels():
    # every arm of a seed moves by a factor up to ~e^(+-3); l1 is always half of MOCHA
    table = sweep({"size_c2": [50, 100]}, lambda m, p, s, _: seed_noise(s, 3) * (0.5 if m != "mocha" else 1.0))
    claims = gtv_claims.unbalanced_claims(table, {})
    assert verdicts(claims) == [HOLDS, HOLDS]
    assert claims[0].effect == pytest.approx(0.5) and claims[0].n_seeds == 5
    assert claims[0].interval.startswith("t, 95 %, paired by seed")
    # the same values with the seeds of MOCHA shuffled: the pairing is lost, and the claim
    # can no longer be decided
    unpaired = table.copy()
    mocha = unpaired["penalty"] == "mocha"
    unpaired.loc[mocha, "seed"] = unpaired.loc[mocha, "seed"].map({0: 3, 1: 0, 2: 4, 3: 1, 4: 2})
    assert verdicts(gtv_claims.unbalanced_claims(unpaired, {})) == [INCONCLUSIVE, INCONCLUSIVE]


def _table1(values: dict[str, float], noise: float = 0.05) -> pd.DataFrame:
    def value(m, p, s, metric):
        jitter = np.exp(noise * np.random.default_rng([s, zlib.crc32(m.encode())]).normal())  # not hash(): salted per process
        return values[m] * jitter * (1.0 if metric == "label_mse" else 1.1)

    rows = sweep({"p_out": [0.01]}, value, methods=("l1", "ifca", "fedavg", "pooled_linear", "pooled_tree"),
                 metrics=("label_mse", "parameter_mse"))
    return rows[~((rows["method"] == "pooled_tree") & (rows["metric"] == "parameter_mse"))]


def test_table1_claims_hold_fail_and_stay_open():
    good = {"l1": 1e-6, "ifca": 0.5, "fedavg": 0.7, "pooled_linear": 0.7, "pooled_tree": 1.8}
    assert verdicts(gtv_claims.highdim_sbm_claims(_table1(good), {})) == [HOLDS, HOLDS, HOLDS]
    # the paper variant's situation: IFCA below Alg. 1 fails the headline claim only
    ifca_first = {**good, "ifca": 1e-7}
    claims = gtv_claims.highdim_sbm_claims(_table1(ifca_first), {})
    assert verdicts(claims) == [FAILS, HOLDS, HOLDS]
    assert "IFCA" in claims[0].effect_label and claims[0].effect > 1
    # a tree on par with the linear fit, within a noise of 40 % per seed: undecided
    tie = {**good, "pooled_tree": 0.7}
    assert verdicts(gtv_claims.highdim_sbm_claims(_table1(tie, noise=0.4), {}))[2] == INCONCLUSIVE


def test_fig02_claims_read_every_k_and_the_extremes():
    def value(m, p, s, _):
        k = p["n_clusters"]
        base = {"l1": 1e-5, "ifca": 3.0, "fedavg": 3.0 + k, "fedavg_clusters": 2e-7}[m]
        return base * seed_noise(s + 10 * k, 0.1)

    grid = {"n_clusters": [2, 5, 10]}
    methods = ("l1", "ifca", "fedavg", "fedavg_clusters")
    with design(DESIGN):
        assert verdicts(gtv_claims.num_clusters_claims(sweep(grid, value, methods), {})) == [HOLDS] * 3

    def ifca_wins_at_two(m, p, s, metric):
        return 1e-7 if (m == "ifca" and p["n_clusters"] == 2) else value(m, p, s, metric)

    with design(DESIGN):
        claims = gtv_claims.num_clusters_claims(sweep(grid, ifca_wins_at_two, methods), {})
    assert verdicts(claims) == [HOLDS, FAILS, HOLDS]
    assert "k=2" in claims[1].detail.split("deciding:")[1].split(";")[0]


#: The GTV synthetic targets' design (config: a ratio within 10 %).
DESIGN = {"ratio_margin": 0.10}


def _fig02(fedavg_clusters: float, jitter: float = 0.02) -> pd.DataFrame:
    """Fig. 2's table: FedAvgC at ``fedavg_clusters`` times FedAvg, each arm with its own
    per-seed jitter (sd ``jitter`` on the log scale) on a level shared by the seed."""
    def value(m, p, s, _):
        k = p["n_clusters"]
        own = np.exp(jitter * np.random.default_rng([s, k, zlib.crc32(m.encode())]).normal())
        base = {"l1": 1e-5, "ifca": 3.0, "fedavg": 3.0 + k, "fedavg_clusters": fedavg_clusters * (3.0 + k)}[m]
        return base * own * seed_noise(s + 10 * k, 0.5)

    return sweep({"n_clusters": [2, 5, 10]}, value, ("l1", "ifca", "fedavg", "fedavg_clusters"))


def test_fig02_fedavgc_at_most_fedavg_is_non_inferiority():
    # "at most": FedAvgC equal to FedAvg holds (a superiority test could only call it equivalent)
    with design(DESIGN):
        equal = gtv_claims.num_clusters_claims(_fig02(1.0), {})[0]
        assert equal.verdict == HOLDS and "non-inferiority" in equal.interval
        assert 0.95 < equal.effect < 1.05
        # worse by 30 %, beyond the 10 % margin at every k: fails
        assert gtv_claims.num_clusters_claims(_fig02(1.3), {})[0].verdict == FAILS
        assert gtv_claims.num_clusters_claims(_fig02(1e-3), {})[0].verdict == HOLDS
    with pytest.raises(ValueError, match="non-inferiority test needs a margin"):
        gtv_claims.num_clusters_claims(_fig02(1.0), {})  # no design: no margin


def test_chain_sampling_averages_each_seed_over_eps():
    # l1 lies above MOCHA at one eps, far below at the others: below on the average
    def value(m, p, s, _):
        if m == "mocha":
            return 0.1 * seed_noise(s, 0.2)
        return (0.12 if p["eps"] == 0.5 else 1e-6) * seed_noise(s + 100, 0.2) * (0.5 if p["M"] == 0.6 else 1.0) \
            * (1.0 + p["eps"])

    grid = {"eps": [0.1, 0.5, 0.9], "M": [0.2, 0.6], "sigma": [0.0]}
    claims = gtv_claims.chain_sampling_claims(sweep(grid, value), {})
    assert verdicts(claims) == [HOLDS, HOLDS, HOLDS]
    assert "mean over eps" in claims[0].effect_label


def test_noise_monotonicity_is_every_adjacent_pair():
    def value(m, p, s, _, flat_mocha=False):
        rng = np.random.default_rng([s, int(100 * p["eps"]), int(100 * p["sigma"])])
        if m == "mocha" and flat_mocha and p["sigma"] < 1:
            return 0.02 * np.exp(0.3 * rng.normal())  # the low noise levels change nothing
        return (1e-6 + p["sigma"] ** 2) * (10 if m == "mocha" else 1) * np.exp(0.1 * rng.normal())

    grid = {"eps": [0.1, 0.9], "M": [0.6], "sigma": [0.01, 0.1, 1.0]}
    assert verdicts(gtv_claims.chain_noise_claims(sweep(grid, value), {})) == [HOLDS, HOLDS]
    flat = gtv_claims.chain_noise_claims(sweep(grid, lambda *a: value(*a, flat_mocha=True)), {})
    assert flat[0].verdict == INCONCLUSIVE and "MOCHA" in flat[0].detail.split("deciding:")[1].split(";")[0]

    def decreasing(m, p, s, metric):
        return 1.0 / value(m, p, s, metric)

    assert verdicts(gtv_claims.chain_noise_claims(sweep(grid, decreasing), {}))[0] == FAILS


def test_sbm_claims_compare_the_grid_extremes():
    def value(m, p, s, _):
        penalty = {"l1": 1.0, "nlasso": 1.0, "mocha": 1000.0}[m]
        return penalty * 1e-4 * np.exp(10 * p["p_out"]) / p["M"] * (1 + p.get("sigma", 0)) * seed_noise(s, 0.3)

    sampling = sweep({"p_out": [0.01, 0.1, 0.6], "M": [0.2, 0.6], "sigma": [0.0]}, value)
    assert verdicts(gtv_claims.sbm_sampling_claims(sampling, {})) == [HOLDS, HOLDS, HOLDS]
    noise = sweep({"p_out": [0.01, 0.1, 0.6], "M": [0.6], "sigma": [0.01, 0.1, 1.0]}, value)
    assert verdicts(gtv_claims.sbm_noise_claims(noise, {})) == [HOLDS, HOLDS]
    reversed_p = sweep({"p_out": [0.01, 0.1, 0.6], "M": [0.6], "sigma": [0.01, 0.1, 1.0]},
                       lambda m, p, s, x: 1 / value(m, p, s, x))
    assert verdicts(gtv_claims.sbm_noise_claims(reversed_p, {})) == [FAILS, FAILS]


def test_covariance_claims_cover_both_node_sets():
    cov = [[[2.54, 0.41], [0.41, 0.51]], [[2.21, -0.81], [-0.81, 0.97]]]
    methods = ("l1", "nlasso", "mocha", "fedavg", "pooled_linear")
    level = {"l1": 1e-4, "nlasso": 1e-4, "mocha": 1e-2, "fedavg": 5.0, "pooled_linear": 5.0}

    def value(m, p, s, metric, outside_mocha=1e-2):
        base = outside_mocha if (m == "mocha" and metric == "label_mse_unsampled") else level[m]
        return base * seed_noise(s + 7 * methods.index(m), 0.2)

    data = pd.DataFrame([{"method": "data", "penalty": "none", "seed": 0, "metric": f"feature_cov_c{c + 1}_{i}{j}",
                          "value": cov[c][i][j]} for c in range(2) for i in range(2) for j in range(2)])
    sets = ("label_mse_sampled", "label_mse_unsampled")
    table = pd.concat([sweep({"p_out": [0.01]}, value, methods, sets), data], ignore_index=True)
    params = {"feature_cov": cov}
    assert verdicts(gtv_claims.covariance_claims(table, params)) == [HOLDS, HOLDS, HOLDS]
    # MOCHA below Alg. 1 on the nodes outside M (the set the sampling leaves to the graph)
    worse = pd.concat([sweep({"p_out": [0.01]}, lambda *a: value(*a, outside_mocha=1e-6), methods, sets), data])
    claims = gtv_claims.covariance_claims(worse, params)
    assert verdicts(claims) == [FAILS, HOLDS, HOLDS] and "outside M" in claims[0].detail.split("deciding:")[1][:40]
    assert verdicts(gtv_claims.covariance_claims(table, {"feature_cov": [cov[1], cov[0]]}))[2] == FAILS


def _spreads(fused_at: dict[int, int | None], n_lam: int = 6, critical: dict[int, float] | None = None
             ) -> pd.DataFrame:
    """Fig. 13's table: seed ``s`` fuses from grid index ``fused_at[s]`` (never: ``None``);
    Theorem 2's critical lambda per seed ``critical`` (default: the grid lambda where it fuses,
    or lambda_max)."""
    lams = np.logspace(-3, 2, n_lam)
    rows = []
    for seed, k in fused_at.items():
        crit = (critical or {}).get(seed, lams[k] if k is not None else lams[-1])
        rows.append({"lam": np.nan, "method": "theorem_2", "seed": seed, "metric": "critical_lambda", "value": crit})
        for i, lam in enumerate(lams):
            value = 2.0 * (1e-12 if k is not None and i >= k else 1.0 / (1 + i))
            rows.append({"lam": lam, "method": "primal_dual", "seed": seed, "metric": "spread", "value": value})
        for node in range(3):
            for method, lam in (("primal_dual", lams[0]), ("local_least_squares", np.nan)):
                rows.append({"lam": lam, "node": node, "component": 0, "method": method, "seed": seed,
                             "metric": "weight", "value": 1.0 + node + (0.01 if method == "primal_dual" else 0)})
    return pd.DataFrame(rows)


def test_star_lambda_claims_hold_on_every_seed_or_fail_on_one():
    params = {"fusion_level": 1e-3, "local_fit_tolerance": 0.05}
    claims = star_lambda_claims(_spreads({0: 3, 1: 4, 2: 2}), params)
    assert verdicts(claims) == [HOLDS, HOLDS, HOLDS, HOLDS] and claims[0].n_seeds == 3
    assert verdicts(star_lambda_claims(_spreads({0: 3, 1: None, 2: 2}), params))[:2] == [FAILS, FAILS]
    strict = star_lambda_claims(_spreads({0: 3}), {**params, "local_fit_tolerance": 0.001})
    assert strict[2].verdict == FAILS  # 0.01 / (1 + node) above 0.1 %


def test_fig13_fuses_beyond_theorem_2_s_critical_lambda_on_every_seed():
    """Issue 41 item 4: Theorem 2 (the star is one well-connected cluster once lambda reaches
    the critical lambda (35)) says every grid lambda at or above the seed's critical lambda is
    fused.  A seed fusing only above its critical lambda fails the claim (one seed suffices);
    fusing earlier than the critical lambda is allowed (the condition is sufficient)."""
    params = {"fusion_level": 1e-3, "local_fit_tolerance": 0.05}
    lams = np.logspace(-3, 2, 6)
    held = star_lambda_claims(_spreads({0: 3, 1: 2}, critical={0: lams[3], 1: lams[4]}), params)[3]
    assert held.verdict == HOLDS and held.kind == "paper" and "Theorem 2" in held.claim
    assert "critical lambda" in held.detail and not held.inferred
    late = star_lambda_claims(_spreads({0: 3, 1: 4}, critical={0: lams[3], 1: lams[2]}), params)[3]
    assert late.verdict == FAILS and "seed 1: critical lambda" in late.detail
    no_column = _spreads({0: 3})
    no_column = no_column[no_column["metric"] != "critical_lambda"]
    with pytest.raises(ValueError, match="no critical_lambda row .* seeds \\[0\\]"):
        star_lambda_claims(no_column, params)


def test_diagram_claims_are_exact():
    star = pd.DataFrame([{"graph": "star", "element": "node", "node": i, "cluster": 0, "metric": m, "value": 0.0}
                         for i in range(4) for m in ("x", "y")]
                        + [{"graph": "star", "element": "edge", "source": 0, "target": i, "metric": "weight",
                            "value": 1.0} for i in range(1, 4)])
    claims = star_graph_claims(star, {"n_nodes": 4})
    assert verdicts(claims) == [HOLDS, HOLDS] and claims[0].interval == "exact (no sampling noise)"
    assert verdicts(star_graph_claims(star.iloc[:-1], {"n_nodes": 4}))[0] == FAILS
    nodes = [{"graph": "empirical", "element": "node", "node": i, "cluster": i // 2, "metric": "x", "value": 0.0}
             for i in range(4)]
    edges = [{"graph": "empirical", "element": "edge", "source": s, "target": t, "metric": "weight", "value": w}
             for s, t, w in ((0, 1, 1.0), (1, 2, 0.25), (0, 3, 0.5), (2, 3, 1.0))]
    cluster = [{"graph": "cluster", "element": "node", "node": c, "cluster": c, "metric": "x", "value": 0.0}
               for c in range(2)]
    merged = [{"graph": "cluster", "element": "edge", "source": 0, "target": 1, "metric": "weight", "value": 0.75}]
    table = pd.DataFrame(nodes + edges + cluster + merged)
    assert verdicts(cluster_graph_claims(table, {})) == [HOLDS] * 4
    wrong = table.copy()
    wrong.loc[wrong.index[-1], "value"] = 0.7
    assert verdicts(cluster_graph_claims(wrong, {}))[1] == FAILS


def _ablation(effect: float, noise: float = 0.02) -> pd.DataFrame:
    rows = []
    for seed, switch in itertools.product(SEEDS, ("published", "loss_scale", "paper")):
        for method, penalty in (("primal_dual", "l1"), ("ifca", "none")):
            shift = {"published": effect, "loss_scale": 1.0, "paper": 1.0}[switch]
            value = 0.01 * seed_noise(seed, 1.0) * shift * np.exp(noise * np.random.default_rng([seed, len(switch)])
                                                                  .normal())
            rows.append({"case": "table1", "switch": switch, "method": method, "penalty": penalty, "seed": seed,
                         "metric": "label_mse", "value": value})
    return pd.DataFrame(rows)


def test_ablation_checks_are_diagnostics_of_a_two_sided_difference():
    params = {"cases": {"table1": {"variants": {"published": {"loss_scale": "sum"}, "paper": {}}}}}
    for effect in (3.0, 1 / 3):  # the published variant above or below the paper's: both differ
        claims = ablation_claims(_ablation(effect), params)
        assert verdicts(claims) == [HOLDS, HOLDS] and {c.kind for c in claims} == {"diagnostic"}
    assert verdicts(ablation_claims(_ablation(1.0, noise=0.0), params))[1] == FAILS  # identical ends
    assert verdicts(ablation_claims(_ablation(1.01, noise=0.3), params))[1] == INCONCLUSIVE
    missing = _ablation(3.0)
    assert verdicts(ablation_claims(missing[missing["switch"] != "loss_scale"], params))[0] == FAILS


def test_the_ablation_headline_is_a_geometric_mean_of_its_mses():
    """A large item that both ends share must not hide a small one that moves 100-fold (the
    fig09 case: p_out = 0.1 near 3 in both variants, p_out = 0.01 at 1e-5 vs 1e-3)."""
    params = {"cases": {"table1": {"variants": {"published": {"loss_scale": "sum"}, "paper": {}}}}}
    rows = []
    for seed, switch in itertools.product(SEEDS, ("published", "loss_scale", "paper")):
        noise = np.random.default_rng([seed, len(switch)]).normal(0, 0.05, 2)
        small = (1e-5 if switch == "published" else 1e-3) * np.exp(noise[0])
        for method, penalty, value in (("primal_dual", "l1", small), ("ifca", "none", 3.0 * np.exp(noise[1]))):
            rows.append({"case": "table1", "switch": switch, "method": method, "penalty": penalty, "seed": seed,
                         "metric": "label_mse", "value": value})
    heads = headline_per_seed(pd.DataFrame(rows))
    published = heads[heads["switch"] == "published"]["value"]
    assert np.allclose(published, np.sqrt(1e-5 * 3.0), rtol=0.2)  # the geometric mean of the two items
    claims = ablation_claims(pd.DataFrame(rows), params)
    assert claims[1].verdict == HOLDS and claims[1].effect == pytest.approx(0.1, rel=0.1)  # sqrt(1e-5 / 1e-3)
