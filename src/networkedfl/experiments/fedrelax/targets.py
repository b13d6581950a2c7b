"""Registration of the FedRelax paper's targets (Abdurakhmanova et al. 2024, Figs 1-5; docs/targets.md)."""

from __future__ import annotations

from ..registry import register_target
from .claims import (
    baselines_claims,
    convergence_claims,
    dm_ratio_claims,
    noniid_linear_claims,
    noniid_trees_claims,
    trees_dm_claims,
    trees_noise_claims,
    variation_connectivity_claims,
    variation_noise_claims,
)
from .runs import (
    run_baselines,
    run_linear_convergence,
    run_linear_final,
    run_trees,
    run_variation,
    single_job,
)

#: The deviations of every FedRelax target, of those that run Algorithm 2 (linear models)
#: and of those that run Algorithm 1 (decision trees).
_ALL = ("claims-means", "paired-grid-points", "fedrelax-claims")
_LINEAR = (*_ALL, "alg2-rmsprop", "discrepancy")
_TREES = (*_ALL, "alg1-weights", "self-distillation", "public-subsample")


_TARGETS = [
    ("fedrelax_fig01a_dm_ratio", "FedRelax Fig 1a",
     "Clustered data, linear models (Alg. 2): MSE(w) vs d/m per alpha",
     run_linear_final, dm_ratio_claims, _LINEAR),
    ("fedrelax_fig01b_convergence", "FedRelax Fig 1b",
     "Clustered data, linear models (Alg. 2), d/m = 1: MSE(w) vs iteration per sigma and alpha",
     run_linear_convergence, convergence_claims, _LINEAR),
    ("fedrelax_fig01c_baselines", "FedRelax Fig 1c",
     "FedRelax vs local training, Oracle, FedAvg, IFCA with correct and incorrect k: MSE(w) vs round",
     run_baselines, baselines_claims, (*_LINEAR, "fig01c-baselines", "repetitions")),
    ("fedrelax_fig02a_trees_dm", "FedRelax Fig 2a",
     "Clustered data, decision trees (Alg. 1): MSE_val / MSE_val(Oracle) vs d/m",
     run_trees, trees_dm_claims, (*_TREES, "fig02-oracle")),
    ("fedrelax_fig02b_trees_noise", "FedRelax Fig 2b",
     "Clustered data, decision trees (Alg. 1), d/m = 1: MSE_val / MSE_val(Oracle) vs sigma",
     run_trees, trees_noise_claims, (*_TREES, "fig02-oracle")),
    ("fedrelax_fig03_noniid_linear", "FedRelax Fig 3",
     "Non-i.i.d. data (Alg. 3), linear models (Alg. 2): MSE_val relative to local training",
     run_linear_final, noniid_linear_claims, (*_LINEAR, "noniid-data")),
    ("fedrelax_fig04_noniid_trees", "FedRelax Fig 4",
     "Non-i.i.d. data (Alg. 3), decision trees (Alg. 1): MSE_val relative to local training",
     run_trees, noniid_trees_claims, (*_TREES, "noniid-data")),
    ("fedrelax_fig05a_variation_noise", "FedRelax Fig 5a",
     "Single cluster: variation (22) and its bound (25) vs iteration, per sigma and alpha",
     run_variation, variation_noise_claims, (*_LINEAR, "fig05-variation", "repetitions")),
    ("fedrelax_fig05b_variation_connectivity", "FedRelax Fig 5b",
     "Single cluster: variation (22) and its bound (25) vs iteration, per p_in",
     run_variation, variation_connectivity_claims, (*_LINEAR, "fig05-variation", "repetitions")),
]

#: The paper's value of each scale parameter the default config changes (Experiment.paper_scale).
_TREE_SCALE = {"public_subsample": "all 100 public points of every neighbour, every iteration [paper] "
                                   "(config/profiles/fedrelax_paper.yaml)"}
_RUNS_SCALE = {"repetitions": "50 runs [paper] (here 5 seeds x runs_per_seed 10 = 50 runs; a claim's "
                              "per-seed value is the mean of the seed's 10 runs)"}
_PAPER_SCALE = {
    "fedrelax_fig01c_baselines": {"repetitions": "5 [paper] (40 here: IFCA-correct's final MSE over the "
                                                 "Oracle's varies from 1.1 to 1.7e4 between seeds)"},
    "fedrelax_fig02a_trees_dm": _TREE_SCALE,
    "fedrelax_fig02b_trees_noise": _TREE_SCALE,
    "fedrelax_fig04_noniid_trees": _TREE_SCALE,
    "fedrelax_fig05a_variation_noise": _RUNS_SCALE,
    "fedrelax_fig05b_variation_connectivity": _RUNS_SCALE,
}

#: The function of .figures that draws each target's figure (Experiment.figure).
_FIGURE = {"fedrelax_fig01a_dm_ratio": "plot_dm_ratio", "fedrelax_fig01b_convergence": "plot_convergence",
           "fedrelax_fig01c_baselines": "plot_baselines", "fedrelax_fig02a_trees_dm": "plot_tree_ratio",
           "fedrelax_fig02b_trees_noise": "plot_tree_ratio", "fedrelax_fig03_noniid_linear": "plot_noniid",
           "fedrelax_fig04_noniid_trees": "plot_noniid", "fedrelax_fig05a_variation_noise": "plot_variation",
           "fedrelax_fig05b_variation_connectivity": "plot_variation"}
#: The schema block of each run's config (Experiment.schema).
_SCHEMA = {run_linear_final: "fedrelax_linear", run_linear_convergence: "fedrelax_linear",
           run_baselines: "fedrelax_baselines", run_trees: "fedrelax_trees", run_variation: "fedrelax_variation"}

# in the paper's order (Experiment.order)
for _order, (_id, _source, _title, _run, _claims, _deviations) in enumerate(_TARGETS, 1):
    register_target(_id, "figure", _source, _title, _run, _claims, settings=single_job,
                    deviations=_deviations, paper_scale=_PAPER_SCALE.get(_id, {}), order=_order,
                    schema=_SCHEMA[_run], figure=_FIGURE[_id])
