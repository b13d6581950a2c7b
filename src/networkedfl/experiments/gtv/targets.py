"""Registration of the GTV paper's synthetic targets (Sarcheshmehpour et al. 2023, Secs. VI-A, VI-B, IX)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ..registry import Experiment, register, register_target
from . import claims as gtv_claims
from . import diagrams as gtv_diagrams
from . import star as gtv_star
from .ablation import ablation_inputs, ablation_settings, run_quirk_ablation
from .linear import linear_settings, run_gtv_linear

Params = Mapping[str, Any]


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
        gtv_claims.highdim_sbm_claims, *_IFCA, order=2)
_linear("gtv_fig02_num_clusters", "figure", "GTV Fig. 2",
        "High-dimensional SBM: parameter MSE vs number of clusters k", gtv_claims.num_clusters_claims, *_IFCA, order=3)
_linear("gtv_fig03_chain_sampling", "figure", "GTV Fig. 3",
        "Chain, noiseless: parameter MSE vs bridge weight eps, per sampling fraction M",
        gtv_claims.chain_sampling_claims, *_SAMPLED, "fig03-seeds", paper_scale={"repetitions": "5 [official code]"}, order=4)
_linear("gtv_fig04_chain_noise", "figure", "GTV Fig. 4",
        "Chain, M = 0.6: parameter MSE vs bridge weight eps, per noise level sigma",
        gtv_claims.chain_noise_claims, *_SAMPLED, order=5)
_linear("gtv_fig09_sbm_sampling", "figure", "GTV Fig. 9",
        "2-d SBM, noiseless: parameter MSE vs p_out, per sampling fraction M", gtv_claims.sbm_sampling_claims,
        *_SBM, "sbm-iterations", order=11)
_linear("gtv_fig10_sbm_noise", "figure", "GTV Fig. 10",
        "2-d SBM, M = 0.6: parameter MSE vs p_out, per noise level sigma", gtv_claims.sbm_noise_claims,
        *_SBM, "sbm-iterations", order=12)
_linear("gtv_fig11_unbalanced", "figure", "GTV Sec. IX-B2 (figure number inferred)",
        "Unbalanced, perturbed clusters: parameter MSE vs |C2|", gtv_claims.unbalanced_claims,
        *_SBM, "fig11-perturbation", order=14)
_linear("gtv_table3_covariance", "table", "GTV Sec. IX-B1",
        "Cluster-specific feature covariances: Alg. 1 vs MOCHA, FedAvg and pooled models",
        gtv_claims.covariance_claims, *_SBM, "covariance-table", group_settings=True, order=13)  # 8 short numpy jobs
register_target(
    "gtv_fig13_star_lambda", "figure", "GTV Fig. 13", "Star graph: learnt parameters vs lambda",
    gtv_star.run_star_lambda, gtv_claims.star_lambda_claims,
    deviations=("step-sizes", "label-noise-per-point", "local-loss-average", "star-graph",
                "claims-means", "memory-layout", "linear-test-profile"),
    order=16, schema="star_lambda",
)
register_target(  # Fig. 13 with edge weight A = 10: Theorem 2's critical lambda (35) scales as 1/A
    "gtv_fig13_star_weight10", "figure", "GTV Fig. 13 (a variant: A = 10)",
    "Star graph, edge weight A = 10: learnt parameters vs lambda (fusion 10 times earlier)",
    gtv_star.run_star_lambda, gtv_claims.star_lambda_claims,
    deviations=("step-sizes", "label-noise-per-point", "local-loss-average", "star-graph",
                "claims-means", "memory-layout", "linear-test-profile"),
    order=16.25, schema="star_lambda", figure="fig13_star_lambda",
)
register_target(
    "gtv_fig01_empirical_graph", "diagram", "GTV Fig. 1", "Empirical graph with local datasets",
    gtv_diagrams.run_empirical_graph, gtv_claims.empirical_graph_claims,
    deviations=("label-noise-per-point", "sbm-sampler", "diagrams", "claims-means"),
    order=1, schema="empirical_graph",
)
register_target(
    "gtv_fig08_cluster_graph", "diagram", "GTV Fig. 8", "Empirical graph and its cluster graph",
    gtv_diagrams.run_cluster_graph, gtv_claims.cluster_graph_claims,
    deviations=("sbm-sampler", "diagrams", "claims-means"),
    order=10, schema="cluster_graph",
)
register_target(
    "gtv_fig12_star_graph", "diagram", "GTV Fig. 12", "Star graph",
    gtv_diagrams.run_star_graph, gtv_claims.star_graph_claims,
    deviations=("diagrams", "star-graph", "claims-means"),
    order=15, schema="star_graph",
)


register(Experiment(
    id="gtv_quirk_ablation", kind="figure", source="GTV (issue 16; not in the paper)",
    title="Notebook behaviours switched one at a time: effect on Fig. 9 and Table I",
    run=run_quirk_ablation, claims=gtv_claims.ablation_claims, settings=ablation_settings, inputs=ablation_inputs,
    # those of its cases' sources, gtv_fig09_sbm_sampling and gtv_table1_highdim_sbm
    deviations=("two-variants", "step-sizes", "label-noise-per-point", "local-loss-average",
                "mocha-dual-step", "parameter-mse", "sbm-iterations", "sbm-sampler", "sampling-set",
                "claims-means", "memory-layout", "ifca-linear", "table1-fig02-setup",
                "linear-test-profile"),
    order=17, schema="quirk_ablation", ablation_of=("gtv_fig09_sbm_sampling", "gtv_table1_highdim_sbm"),
))
