"""Registration of the GTV paper's synthetic targets and their claims (Sarcheshmehpour et al. 2023, Secs. VI-A, VI-B, IX)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..claims import (
    Case,
    above,
    all_of,
    below,
    check_all,
    claim,
    increasing_cases,
    per_seed,
    seed_values,
)
from ..registry import Claim, Experiment, register_target
from . import diagrams as gtv_diagrams
from . import star as gtv_star
from .linear import METHOD_NAMES, linear_settings, run_gtv_linear

Params = Mapping[str, Any]
MSE = "parameter_mse"
SPARSE = ("l1", "nlasso")

# Every claim below is decided by networkedfl.experiments.claims (docs/verdicts.md) from
# per-seed values, paired by seed.  All rows of one (seed, grid point) share one problem
# instance (graph, weights, data, sampling set: linear.run_gtv_linear draws it from
# rng_for(seed, grid point) in every job), so the penalties and baselines compared at one
# grid point are paired on the same data draw; rows of different grid points (another eps,
# M, p_out, sigma, k or |C2|) are independent draws, paired by seed only.  Errors are compared
# on the log scale: the effect is a ratio (a geometric mean over seeds).


def _pd(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["method"] == "primal_dual"]


def _name(method: str) -> str:
    return METHOD_NAMES.get(method, method)


def _by_row(table: pd.DataFrame) -> pd.DataFrame:
    """Name the primal-dual rows by their penalty (e.g. ``l1``), others by the method."""
    return table.assign(method=np.where(table["method"] == "primal_dual", table["penalty"], table["method"]))


def _below(name: str, wide: pd.DataFrame, a: Any, b: Any, what: str) -> Case:
    """``a`` below ``b`` (columns of a :func:`per_seed` table), paired by seed, log scale."""
    return below(name, *seed_values(wide, a, b), what=what)


def _ratio(a: str, b: str) -> str:
    return f"{_name(a)} / {_name(b)}"


# ------------------------------------------------------- Table I and Fig. 2 (IFCA comparison)

def highdim_sbm_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    rows = _by_row(table)
    label, mse = per_seed(rows, ["method"], "label_mse"), per_seed(rows, ["method"], MSE)
    alg = "l1"
    others = [m for m in label.columns if m != alg]
    baselines = ("fedavg", "pooled_linear")
    return [
        all_of("Alg. 1 (l1) has the lowest label MSE of the five rows",
               [_below("label MSE", label, alg, m, _ratio(alg, m)) for m in others]),
        all_of("Alg. 1 is below FedAvg and pooled linear regression (label and parameter MSE)",
               [_below(f"{name} MSE", wide, alg, b, _ratio(alg, b))
                for b in baselines for name, wide in (("label", label), ("parameter", mse))]),
        claim("the pooled tree is above pooled linear regression (label MSE)",
              above("label MSE", *seed_values(label, "pooled_tree", "pooled_linear"),
                    what=_ratio("pooled_tree", "pooled_linear"))),
    ]


def num_clusters_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = per_seed(_by_row(table), ["method", "n_clusters"], MSE)
    ks = sorted(table["n_clusters"].unique())
    k_lo, k_hi = ks[0], ks[-1]
    return [
        all_of("FedAvgC is at most FedAvg for every k",
               [below(f"k={k}", *seed_values(mse, ("fedavg_clusters", k), ("fedavg", k)), strict=False,
                      what=_ratio("fedavg_clusters", "fedavg")) for k in ks]),
        all_of("Alg. 1 is below FedAvg and IFCA for every k",
               [_below(f"k={k}", mse, ("l1", k), (b, k), _ratio("l1", b))
                for b in ("fedavg", "ifca") for k in ks]),
        claim(f"FedAvg at k = {k_hi} is above FedAvg at k = {k_lo}",
              above(f"k={k_hi} vs k={k_lo}", *seed_values(mse, ("fedavg", k_hi), ("fedavg", k_lo)),
                    what=f"FedAvg k={k_hi} / k={k_lo}")),
    ]


# ------------------------------------------------------------------- chain figures 3, 4

def _averaged_over(wide: pd.DataFrame, level: str) -> pd.DataFrame:
    """Each seed's mean over the values of column level ``level`` (e.g. over eps)."""
    keep = [n for n in wide.columns.names if n != level]
    return wide.T.groupby(level=keep).mean().T


def _below_mocha(avg: pd.DataFrame, keys: list[tuple[str, float]], at: str, over: str) -> list[Case]:
    """Penalty ``p`` below MOCHA at ``at = v`` for every key ``(p, v)`` of ``avg`` (columns
    (penalty, ``at``); each seed's mean over ``over``)."""
    return [_below(f"{at}={v:g}", avg, (p, v), ("mocha", v), f"{_ratio(p, 'mocha')} (mean over {over})")
            for p, v in keys]


def chain_sampling_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = per_seed(_pd(table), ["penalty", "M", "eps"], MSE)
    avg = _averaged_over(mse, "eps")
    m_values = sorted(table["M"].unique())
    eps_lo, eps_hi = table["eps"].min(), table["eps"].max()
    m_lo, m_hi = m_values[0], m_values[-1]
    return [
        all_of("for every M, l1 and nLasso are below MOCHA, averaged over eps",
               _below_mocha(avg, [(p, m) for p in SPARSE for m in m_values], "M", "eps")),
        all_of(f"for l1 and nLasso, M = {m_hi} lies below M = {m_lo} at eps = {eps_hi}",
               [_below(_name(p), mse, (p, m_hi, eps_hi), (p, m_lo, eps_hi), f"M={m_hi:g} / M={m_lo:g}")
                for p in SPARSE]),
        claim(f"for l1 at M = {m_lo}, MSE at eps = {eps_hi} is above eps = {eps_lo}",
              above(_name("l1"), *seed_values(mse, ("l1", m_lo, eps_hi), ("l1", m_lo, eps_lo)),
                    what=f"eps={eps_hi:g} / eps={eps_lo:g}")),
    ]


def _increasing_in_sigma(mse: pd.DataFrame, groups: list[tuple[Any, ...]], names: tuple[str, ...]) -> list[Case]:
    """MSE increases with sigma within every group (one case per adjacent pair of sigmas)."""
    sigmas = sorted(mse.columns.get_level_values("sigma").unique())
    cases = []
    for group in groups:
        at = ", ".join(f"{n}={_name(v) if n == 'penalty' else f'{v:g}'}" for n, v in zip(names, group, strict=True))
        cases += increasing_cases(mse, [(*group, s) for s in sigmas],
                                  lambda lo, hi, at=at: f"{at}: sigma {lo[-1]:g} < {hi[-1]:g}",
                                  what="MSE ratio (lower sigma / higher sigma)")
    return cases


def chain_noise_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = per_seed(_pd(table), ["penalty", "eps", "sigma"], MSE)
    penalties = sorted(table["penalty"].dropna().unique())
    eps_values = sorted(table["eps"].unique())
    s_lo = table["sigma"].min()
    at_lo = _averaged_over(mse.xs(s_lo, axis=1, level="sigma", drop_level=False), "eps")
    return [
        all_of("for every penalty and eps, MSE increases with sigma",
               _increasing_in_sigma(mse, [(p, e) for p in penalties for e in eps_values], ("penalty", "eps"))),
        all_of(f"at sigma = {s_lo}, l1 and nLasso are below MOCHA, averaged over eps",
               _below_mocha(at_lo, [(p, s_lo) for p in SPARSE], "sigma", "eps")),
    ]


# --------------------------------------------------------------------- SBM figures 9, 10

def sbm_sampling_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = per_seed(_pd(table), ["penalty", "M", "p_out"], MSE)
    p_lo, p_hi = table["p_out"].min(), table["p_out"].max()
    m_values = sorted(table["M"].unique())
    m_lo, m_hi = m_values[0], m_values[-1]
    penalties = sorted(table["penalty"].dropna().unique())
    small_p = sorted(v for v in table["p_out"].unique() if v <= 0.1)
    return [
        all_of(f"for every penalty and M, MSE at p_out = {p_lo} is below MSE at p_out = {p_hi}",
               [_below(f"{_name(p)}, M={m:g}", mse, (p, m, p_lo), (p, m, p_hi), f"p_out={p_lo:g} / p_out={p_hi:g}")
                for p in penalties for m in m_values]),
        all_of(f"for l1 and nLasso, M = {m_hi} lies below M = {m_lo} at every p_out <= 0.1",
               [_below(f"{_name(p)}, p_out={q:g}", mse, (p, m_hi, q), (p, m_lo, q), f"M={m_hi:g} / M={m_lo:g}")
                for p in SPARSE for q in small_p]),
        all_of(f"at p_out = {p_lo}, M = {m_hi}, l1 and nLasso are below MOCHA",
               [_below(_name(p), mse, (p, m_hi, p_lo), ("mocha", m_hi, p_lo), _ratio(p, "mocha"))
                for p in SPARSE]),
    ]


def sbm_noise_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = per_seed(_pd(table), ["penalty", "p_out", "sigma"], MSE)
    p_lo, p_hi = table["p_out"].min(), table["p_out"].max()
    penalties = sorted(table["penalty"].dropna().unique())
    small_p = sorted(v for v in table["p_out"].unique() if v <= 0.1)
    sigmas = sorted(table["sigma"].unique())
    return [
        all_of("for every penalty and p_out <= 0.1, MSE increases with sigma",
               _increasing_in_sigma(mse, [(p, q) for p in penalties for q in small_p], ("penalty", "p_out"))),
        all_of(f"for every penalty and sigma, MSE at p_out = {p_lo} is below MSE at p_out = {p_hi}",
               [_below(f"{_name(p)}, sigma={s:g}", mse, (p, p_lo, s), (p, p_hi, s),
                       f"p_out={p_lo:g} / p_out={p_hi:g}") for p in penalties for s in sigmas]),
    ]


# ------------------------------------------------------------ covariance table, Fig. 11

COVARIANCE_SETS = {"label_mse_sampled": "in M", "label_mse_unsampled": "outside M"}


def covariance_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    rows = _by_row(table[table["method"] != "data"])
    label = {s: per_seed(rows, ["method"], s) for s in COVARIANCE_SETS}

    def cases(p: str, b: str) -> list[Case]:
        return [_below(f"label MSE {where}", label[s], p, b, _ratio(p, b))
                for s, where in COVARIANCE_SETS.items()]

    cov = table[table["method"] == "data"]
    expected = np.asarray(params["feature_cov"], float)
    ok, shown = {}, {}
    for c in range(expected.shape[0]):
        got = np.array([[cov.loc[cov["metric"] == f"feature_cov_c{c + 1}_{i}{j}", "value"].iloc[0]
                         for j in range(expected.shape[2])] for i in range(expected.shape[1])])
        ok[f"cluster {c + 1}"] = bool(
            np.allclose(got, got.T) and np.all(np.linalg.eigvalsh(got) > 0) and np.allclose(got, expected[c])
        )
        shown[f"cluster {c + 1}"] = f"eigenvalues {np.round(np.linalg.eigvalsh(got), 3).tolist()}"
    return [
        all_of("Alg. 1 (l1 and nLasso) is below MOCHA on both node sets (label MSE)",
               [c for p in SPARSE for c in cases(p, "mocha")]),
        all_of("Alg. 1 is below FedAvg and pooled regression (label MSE, both node sets)",
               [c for p in SPARSE for b in ("fedavg", "pooled_linear") for c in cases(p, b)]),
        check_all("the covariances used are symmetric positive definite and equal the table's", ok, shown),
    ]


def unbalanced_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = per_seed(_pd(table), ["penalty", "size_c2"], MSE)
    sizes = sorted(table["size_c2"].unique())
    return [
        all_of(f"{p} is below MOCHA for every |C2|",
               [_below(f"|C2|={s}", mse, (p, s), ("mocha", s), _ratio(p, "mocha")) for s in sizes])
        for p in SPARSE
    ]


# --------------------------------------------------------------------------- registry

#: The deviations of every linear target (Alg. 1 on synthetic data, the parameter MSE, the
#: test profile), and what each kind of sweep adds.
LINEAR_DEVIATIONS = (
    "two-variants", "step-sizes", "label-noise-per-point", "local-loss-average", "parameter-mse",
    "claims-means", "memory-layout", "linear-test-profile",
)
_IFCA = ("sbm-sampler", "ifca-linear", "table1-fig02-setup")  # Table I and Fig. 2
_SAMPLED = ("mocha-dual-step", "sampling-set")  # MOCHA on a sampling set M
_SBM = (*_SAMPLED, "sbm-sampler")


def _linear(eid: str, kind: Literal["figure", "table"], source: str, title: str, claims,
            *deviations: str, order: float, paper_scale: Mapping[str, str] | None = None,
            group_settings: bool = False) -> Experiment:
    return register_target(eid, kind, source, title, run_gtv_linear, claims, settings=linear_settings,
                           deviations=(*LINEAR_DEVIATIONS, *deviations), paper_scale=dict(paper_scale or {}),
                           group_settings=group_settings, order=order, schema="linear_sweep")


_linear("gtv_table1_highdim_sbm", "table", "GTV Table I",
        "High-dimensional SBM (d = 100): Alg. 1 vs IFCA, FedAvg and pooled models",
        highdim_sbm_claims, *_IFCA, order=2)
_linear("gtv_fig02_num_clusters", "figure", "GTV Fig. 2",
        "High-dimensional SBM: parameter MSE vs number of clusters k", num_clusters_claims, *_IFCA, order=3)
_linear("gtv_fig03_chain_sampling", "figure", "GTV Fig. 3",
        "Chain, noiseless: parameter MSE vs bridge weight eps, per sampling fraction M",
        chain_sampling_claims, *_SAMPLED, "fig03-seeds", paper_scale={"repetitions": "5 [official code]"}, order=4)
_linear("gtv_fig04_chain_noise", "figure", "GTV Fig. 4",
        "Chain, M = 0.6: parameter MSE vs bridge weight eps, per noise level sigma",
        chain_noise_claims, *_SAMPLED, order=5)
_linear("gtv_fig09_sbm_sampling", "figure", "GTV Fig. 9",
        "2-d SBM, noiseless: parameter MSE vs p_out, per sampling fraction M", sbm_sampling_claims,
        *_SBM, "sbm-iterations", order=11)
_linear("gtv_fig10_sbm_noise", "figure", "GTV Fig. 10",
        "2-d SBM, M = 0.6: parameter MSE vs p_out, per noise level sigma", sbm_noise_claims,
        *_SBM, "sbm-iterations", order=12)
_linear("gtv_fig11_unbalanced", "figure", "GTV Sec. IX-B2 (figure number inferred)",
        "Unbalanced, perturbed clusters: parameter MSE vs |C2|", unbalanced_claims,
        *_SBM, "fig11-perturbation", order=14)
_linear("gtv_table3_covariance", "table", "GTV Sec. IX-B1",
        "Cluster-specific feature covariances: Alg. 1 vs MOCHA, FedAvg and pooled models",
        covariance_claims, *_SBM, "covariance-table", group_settings=True, order=13)  # 8 short numpy jobs
register_target(
    "gtv_fig13_star_lambda", "figure", "GTV Fig. 13", "Star graph: learnt parameters vs lambda",
    gtv_star.run_star_lambda, gtv_star.star_lambda_claims,
    deviations=("step-sizes", "label-noise-per-point", "local-loss-average", "star-graph",
                "claims-means", "memory-layout", "linear-test-profile"),
    order=16, schema="star_lambda",
)
register_target(
    "gtv_fig01_empirical_graph", "diagram", "GTV Fig. 1", "Empirical graph with local datasets",
    gtv_diagrams.run_empirical_graph, gtv_diagrams.empirical_graph_claims,
    deviations=("label-noise-per-point", "sbm-sampler", "diagrams", "claims-means"),
    order=1, schema="empirical_graph",
)
register_target(
    "gtv_fig08_cluster_graph", "diagram", "GTV Fig. 8", "Empirical graph and its cluster graph",
    gtv_diagrams.run_cluster_graph, gtv_diagrams.cluster_graph_claims,
    deviations=("sbm-sampler", "diagrams", "claims-means"),
    order=10, schema="cluster_graph",
)
register_target(
    "gtv_fig12_star_graph", "diagram", "GTV Fig. 12", "Star graph",
    gtv_diagrams.run_star_graph, gtv_diagrams.star_graph_claims,
    deviations=("diagrams", "star-graph", "claims-means"),
    order=15, schema="star_graph",
)
