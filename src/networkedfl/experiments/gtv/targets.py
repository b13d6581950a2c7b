"""Registration of the GTV paper's synthetic targets and their claims (EXPERIMENTS.md §4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..claims import check_all, mean_over_seeds, strictly_increasing
from ..registry import Claim, Experiment, register_target
from . import diagrams as gtv_diagrams
from . import star as gtv_star
from .linear import linear_settings, run_gtv_linear

Params = Mapping[str, Any]
MSE = "parameter_mse"
SPARSE = ("l1", "nlasso")


def _pd(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["method"] == "primal_dual"]


def _fmt(x: float) -> str:
    return f"{x:.3g}"


# ------------------------------------------------------- Table I and Fig. 2 (IFCA comparison)

def _by_row(table: pd.DataFrame) -> pd.DataFrame:
    """Name the primal-dual rows by their penalty (e.g. ``l1``), others by the method."""
    return table.assign(method=np.where(table["method"] == "primal_dual", table["penalty"], table["method"]))


def highdim_sbm_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    rows = _by_row(table)
    label = rows[rows["metric"] == "label_mse"].groupby("method")["value"].mean()
    mse = rows[rows["metric"] == MSE].groupby("method")["value"].mean()
    alg = "l1"
    others = [m for m in label.index if m != alg]
    return [
        check_all("Alg. 1 (l1) has the lowest label MSE of the five rows",
                  {m: label[alg] < label[m] for m in others},
                  {m: f"{_fmt(label[alg])} vs {_fmt(label[m])}" for m in others}),
        check_all("Alg. 1 is below FedAvg and pooled linear regression (label and parameter MSE)",
                  {f"{b} ({name})": s[alg] < s[b] for b in ("fedavg", "pooled_linear")
                   for name, s in (("label", label), ("parameter", mse))},
                  {f"{b} ({name})": f"{_fmt(s[alg])} vs {_fmt(s[b])}" for b in ("fedavg", "pooled_linear")
                   for name, s in (("label", label), ("parameter", mse))}),
        Claim("the pooled tree is above pooled linear regression (label MSE)",
              bool(label["pooled_tree"] > label["pooled_linear"]),
              f"{_fmt(label['pooled_tree'])} vs {_fmt(label['pooled_linear'])}"),
    ]


def num_clusters_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = mean_over_seeds(_by_row(table), ["method", "n_clusters"])
    ks = sorted(table["n_clusters"].unique())
    k_lo, k_hi = ks[0], ks[-1]
    return [
        check_all("FedAvgC is at most FedAvg for every k",
                  {f"k={k}": mse[("fedavg_clusters", k)] <= mse[("fedavg", k)] for k in ks},
                  {f"k={k}": f"{_fmt(mse[('fedavg_clusters', k)])} vs {_fmt(mse[('fedavg', k)])}"
                   for k in ks}),
        check_all("Alg. 1 is below FedAvg and IFCA for every k",
                  {f"{b} at k={k}": mse[("l1", k)] < mse[(b, k)] for b in ("fedavg", "ifca") for k in ks},
                  {f"{b} at k={k}": f"{_fmt(mse[('l1', k)])} vs {_fmt(mse[(b, k)])}"
                   for b in ("fedavg", "ifca") for k in ks}),
        Claim(f"FedAvg at k = {k_hi} is above FedAvg at k = {k_lo}",
              bool(mse[("fedavg", k_hi)] > mse[("fedavg", k_lo)]),
              f"{_fmt(mse[('fedavg', k_hi)])} vs {_fmt(mse[('fedavg', k_lo)])}"),
    ]


# ------------------------------------------------------------------- chain figures 3, 4

def chain_sampling_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = mean_over_seeds(_pd(table), ["penalty", "M", "eps"])
    avg = mse.groupby(["penalty", "M"]).mean()
    m_values = sorted(table["M"].unique())
    eps_lo, eps_hi = table["eps"].min(), table["eps"].max()
    m_lo, m_hi = m_values[0], m_values[-1]
    below_mocha = {f"{p} at M={m}": avg[(p, m)] < avg[("mocha", m)] for p in SPARSE for m in m_values}
    below_details = {f"{p} at M={m}": f"{_fmt(avg[(p, m)])} vs mocha {_fmt(avg[('mocha', m)])}"
                     for p in SPARSE for m in m_values}
    more_samples = {p: mse[(p, m_hi, eps_hi)] < mse[(p, m_lo, eps_hi)] for p in SPARSE}
    more_details = {p: f"{_fmt(mse[(p, m_hi, eps_hi)])} vs {_fmt(mse[(p, m_lo, eps_hi)])}" for p in SPARSE}
    lo, hi = mse[("l1", m_lo, eps_lo)], mse[("l1", m_lo, eps_hi)]
    return [
        check_all("for every M, l1 and nLasso are below MOCHA, averaged over eps", below_mocha, below_details),
        check_all(f"for l1 and nLasso, M = {m_hi} lies below M = {m_lo} at eps = {eps_hi}",
                  more_samples, more_details),
        Claim(f"for l1 at M = {m_lo}, MSE at eps = {eps_hi} is above eps = {eps_lo}", bool(hi > lo),
              f"{_fmt(hi)} at eps={eps_hi} vs {_fmt(lo)} at eps={eps_lo}"),
    ]


def _increasing_in_sigma(mse: pd.Series, groups: list[str]) -> tuple[dict, dict]:
    cases, details = {}, {}
    for key, series in mse.groupby(level=groups):
        values = series.droplevel(groups).sort_index()
        name = ", ".join(f"{g}={k}" for g, k in zip(groups, np.atleast_1d(key), strict=True))
        cases[name] = strictly_increasing(values.to_numpy())
        details[name] = " < ".join(_fmt(v) for v in values)
    return cases, details


def chain_noise_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = mean_over_seeds(_pd(table), ["penalty", "eps", "sigma"])
    cases, details = _increasing_in_sigma(mse, ["penalty", "eps"])
    s_lo = table["sigma"].min()
    avg = mse.xs(s_lo, level="sigma").groupby("penalty").mean()
    below = {p: avg[p] < avg["mocha"] for p in SPARSE}
    return [
        check_all("for every penalty and eps, MSE increases with sigma", cases, details),
        check_all(f"at sigma = {s_lo}, l1 and nLasso are below MOCHA, averaged over eps", below,
                  {p: f"{_fmt(avg[p])} vs mocha {_fmt(avg['mocha'])}" for p in SPARSE}),
    ]


# --------------------------------------------------------------------- SBM figures 9, 10

def sbm_sampling_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = mean_over_seeds(_pd(table), ["penalty", "M", "p_out"])
    p_lo, p_hi = table["p_out"].min(), table["p_out"].max()
    m_values = sorted(table["M"].unique())
    m_lo, m_hi = m_values[0], m_values[-1]
    penalties = sorted(table["penalty"].unique())
    sparse_graph = {f"{p} at M={m}": mse[(p, m, p_lo)] < mse[(p, m, p_hi)]
                    for p in penalties for m in m_values}
    small_p = sorted(v for v in table["p_out"].unique() if v <= 0.1)
    more = {f"{p} at p_out={q}": mse[(p, m_hi, q)] < mse[(p, m_lo, q)] for p in SPARSE for q in small_p}
    vs_mocha = {p: mse[(p, m_hi, p_lo)] < mse[("mocha", m_hi, p_lo)] for p in SPARSE}
    return [
        check_all(f"for every penalty and M, MSE at p_out = {p_lo} is below MSE at p_out = {p_hi}",
                  sparse_graph),
        check_all(f"for l1 and nLasso, M = {m_hi} lies below M = {m_lo} at every p_out <= 0.1", more),
        check_all(f"at p_out = {p_lo}, M = {m_hi}, l1 and nLasso are below MOCHA", vs_mocha,
                  {p: f"{_fmt(mse[(p, m_hi, p_lo)])} vs mocha {_fmt(mse[('mocha', m_hi, p_lo)])}"
                   for p in SPARSE}),
    ]


def sbm_noise_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = mean_over_seeds(_pd(table), ["penalty", "p_out", "sigma"])
    small = mse[mse.index.get_level_values("p_out") <= 0.1]
    cases, details = _increasing_in_sigma(small, ["penalty", "p_out"])
    p_lo, p_hi = table["p_out"].min(), table["p_out"].max()
    by = mean_over_seeds(_pd(table), ["penalty", "sigma", "p_out"])
    sparse_graph = {
        f"{p} at sigma={s}": by[(p, s, p_lo)] < by[(p, s, p_hi)]
        for p in sorted(table["penalty"].unique()) for s in sorted(table["sigma"].unique())
    }
    return [
        check_all("for every penalty and p_out <= 0.1, MSE increases with sigma", cases, details),
        check_all(f"for every penalty and sigma, MSE at p_out = {p_lo} is below MSE at p_out = {p_hi}",
                  sparse_graph),
    ]


# ------------------------------------------------------------ covariance table, Fig. 11

def covariance_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    runs = table[table["method"] != "data"]
    label = runs.assign(method=np.where(runs["method"] == "primal_dual", runs["penalty"], runs["method"]))
    sets = ("label_mse_sampled", "label_mse_unsampled")
    mean = {s: label[label["metric"] == s].groupby("method")["value"].mean() for s in sets}
    vs_mocha = {f"{p} on {s}": mean[s][p] < mean[s]["mocha"] for p in SPARSE for s in sets}
    vs_baselines = {
        f"{p} vs {b} on {s}": mean[s][p] < mean[s][b]
        for p in SPARSE for b in ("fedavg", "pooled_linear") for s in sets
    }
    cov = table[table["method"] == "data"]
    expected = np.asarray(params["feature_cov"], float)
    ok = {}
    for c in range(expected.shape[0]):
        got = np.array([[cov.loc[cov["metric"] == f"feature_cov_c{c + 1}_{i}{j}", "value"].iloc[0]
                         for j in range(expected.shape[2])] for i in range(expected.shape[1])])
        ok[f"cluster {c + 1}"] = bool(
            np.allclose(got, got.T) and np.all(np.linalg.eigvalsh(got) > 0) and np.allclose(got, expected[c])
        )
    return [
        check_all("Alg. 1 (l1 and nLasso) is below MOCHA on both node sets (label MSE)", vs_mocha),
        check_all("Alg. 1 is below FedAvg and pooled regression (label MSE, both node sets)", vs_baselines),
        check_all("the covariances used are symmetric positive definite and equal the table's", ok),
    ]


def unbalanced_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    mse = mean_over_seeds(_pd(table), ["penalty", "size_c2"])
    sizes = sorted(table["size_c2"].unique())
    return [
        check_all(f"{p} is below MOCHA for every |C2|",
                  {f"|C2|={s}": mse[(p, s)] < mse[("mocha", s)] for s in sizes},
                  {f"|C2|={s}": f"{_fmt(mse[(p, s)])} vs {_fmt(mse[('mocha', s)])}" for s in sizes})
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
            *deviations: str) -> Experiment:
    return register_target(eid, kind, source, title, run_gtv_linear, claims, settings=linear_settings,
                           deviations=(*LINEAR_DEVIATIONS, *deviations))


_linear("gtv_table1_highdim_sbm", "table", "GTV Table I",
        "High-dimensional SBM (d = 100): Alg. 1 vs IFCA, FedAvg and pooled models",
        highdim_sbm_claims, *_IFCA)
_linear("gtv_fig02_num_clusters", "figure", "GTV Fig. 2",
        "High-dimensional SBM: parameter MSE vs number of clusters k", num_clusters_claims, *_IFCA)
_linear("gtv_fig03_chain_sampling", "figure", "GTV Fig. 3",
        "Chain, noiseless: parameter MSE vs bridge weight eps, per sampling fraction M",
        chain_sampling_claims, *_SAMPLED)
_linear("gtv_fig04_chain_noise", "figure", "GTV Fig. 4",
        "Chain, M = 0.6: parameter MSE vs bridge weight eps, per noise level sigma",
        chain_noise_claims, *_SAMPLED)
_linear("gtv_fig09_sbm_sampling", "figure", "GTV Fig. 9",
        "2-d SBM, noiseless: parameter MSE vs p_out, per sampling fraction M", sbm_sampling_claims,
        *_SBM, "sbm-iterations")
_linear("gtv_fig10_sbm_noise", "figure", "GTV Fig. 10",
        "2-d SBM, M = 0.6: parameter MSE vs p_out, per noise level sigma", sbm_noise_claims,
        *_SBM, "sbm-iterations")
_linear("gtv_fig11_unbalanced", "figure", "GTV Sec. IX-B2 (figure number inferred)",
        "Unbalanced, perturbed clusters: parameter MSE vs |C2|", unbalanced_claims,
        *_SBM, "fig11-perturbation")
_linear("gtv_table3_covariance", "table", "GTV Sec. IX-B1",
        "Cluster-specific feature covariances: Alg. 1 vs MOCHA, FedAvg and pooled models",
        covariance_claims, *_SBM, "covariance-table")
register_target(
    "gtv_fig13_star_lambda", "figure", "GTV Fig. 13", "Star graph: learnt parameters vs lambda",
    gtv_star.run_star_lambda, gtv_star.star_lambda_claims,
    deviations=("step-sizes", "label-noise-per-point", "local-loss-average", "star-graph",
                "claims-means", "memory-layout", "linear-test-profile"),
)
register_target(
    "gtv_fig01_empirical_graph", "diagram", "GTV Fig. 1", "Empirical graph with local datasets",
    gtv_diagrams.run_empirical_graph, gtv_diagrams.empirical_graph_claims,
    deviations=("label-noise-per-point", "sbm-sampler", "diagrams", "claims-means"),
)
register_target(
    "gtv_fig08_cluster_graph", "diagram", "GTV Fig. 8", "Empirical graph and its cluster graph",
    gtv_diagrams.run_cluster_graph, gtv_diagrams.cluster_graph_claims,
    deviations=("sbm-sampler", "diagrams", "claims-means"),
)
register_target(
    "gtv_fig12_star_graph", "diagram", "GTV Fig. 12", "Star graph",
    gtv_diagrams.run_star_graph, gtv_diagrams.star_graph_claims,
    deviations=("diagrams", "star-graph", "claims-means"),
)
