"""Registration of the graph-aware FL chapter's synthetic targets (Lu, Xing & Yu, Secs. 10.2-10.4:
Figs 10.1-10.3, Table 10.1)."""

from __future__ import annotations

from ..registry import register_target
from .claims import dfl_claims, homologous_graphs_claims, settings_table_claims, synthetic_claims
from .synthetic import (
    METHOD_NAMES,
    method_settings,
    run_dfl,
    run_homologous_graphs,
    run_settings_table,
    run_synthetic,
)

_SYNTHETIC = ("claims-means", "synthetic-claims")
_DFL = ("dfl-gt-tracker", "dfl-sgd-order")

register_target(
    "gfl_fig10_1_dfl", "figure", "chapter, Fig 10.1",
    "FedAvg vs DFL-SGD vs DFL-GT on five heterogeneous nodes: test loss vs communication rounds",
    run_dfl, dfl_claims, settings=method_settings, method_names=METHOD_NAMES,
    deviations=(*_SYNTHETIC, *_DFL, "fig10-1-step-size", "standardised-labels", "fig10-1-horizon"),
    paper_scale={"repetitions": "not stated [paper]; 5 in the reproduction's spec (EXPERIMENTS.md) [choice]",
                 "lr_scale": "15, i.e. alpha^t = 15/sqrt(t) [paper] (diverges: tuned)"},
    order=1, schema="gfl_dfl",
)
register_target(
    "gfl_fig10_2_homologous_graphs", "diagram", "chapter, Fig 10.2",
    "Homologous graph generation and data synthesis: mixture, train and test 4-NN graphs, "
    "ground-truth weights",
    run_homologous_graphs, homologous_graphs_claims, deviations=(*_SYNTHETIC, "homologous-graphs"),
    order=2, schema="gfl_synthetic_view",
)
register_target(
    "gfl_table10_1_settings", "table", "chapter, Table 10.1",
    "Synthetic experiment settings, emitted from the configuration of gfl_fig10_3_synthetic",
    run_settings_table, settings_table_claims, deviations=(*_SYNTHETIC, "homologous-graphs"),
    order=3, schema="gfl_synthetic_view",
)
register_target(
    "gfl_fig10_3_synthetic", "figure", "chapter, Fig 10.3",
    "BiG-FL vs FeSEM, FedAvg, DFL-SGD and DFL-GT on the homologous-graph data: local test loss",
    run_synthetic, synthetic_claims, settings=method_settings, method_names=METHOD_NAMES,
    deviations=(*_SYNTHETIC, *_DFL, "fesem", "bigfl", "homologous-graphs", "fig10-3-parameters",
                "fig10-3-validation", "extra-baselines"),
    paper_scale={"repetitions": "not stated [paper]; 5 in the reproduction's spec (EXPERIMENTS.md) [choice]"},
    order=4, schema="gfl_synthetic",
)
