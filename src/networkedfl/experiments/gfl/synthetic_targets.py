"""Registration of the graph-aware FL chapter's synthetic targets (EXPERIMENTS.md §6:
Figs 10.1-10.3, Table 10.1)."""

from __future__ import annotations

from functools import partial

from ..registry import Experiment, register
from .synthetic import (
    METHOD_NAMES,
    dfl_claims,
    homologous_graphs_claims,
    method_settings,
    run_dfl,
    run_homologous_graphs,
    run_settings_table,
    run_synthetic,
    settings_table_claims,
    synthetic_claims,
)

register(Experiment(
    id="gfl_fig10_1_dfl", kind="figure", source="chapter, Fig 10.1",
    title="FedAvg vs DFL-SGD vs DFL-GT on five heterogeneous nodes: test loss vs communication rounds",
    run=partial(run_dfl, experiment_id="gfl_fig10_1_dfl"), claims=dfl_claims,
    settings=method_settings, method_names=METHOD_NAMES,
))
register(Experiment(
    id="gfl_fig10_2_homologous_graphs", kind="diagram", source="chapter, Fig 10.2",
    title="Homologous graph generation and data synthesis: mixture, train and test 4-NN graphs, "
          "ground-truth weights",
    run=partial(run_homologous_graphs, experiment_id="gfl_fig10_2_homologous_graphs"),
    claims=homologous_graphs_claims,
))
register(Experiment(
    id="gfl_table10_1_settings", kind="table", source="chapter, Table 10.1",
    title="Synthetic experiment settings, emitted from the configuration of gfl_fig10_3_synthetic",
    run=partial(run_settings_table, experiment_id="gfl_table10_1_settings"),
    claims=settings_table_claims,
))
register(Experiment(
    id="gfl_fig10_3_synthetic", kind="figure", source="chapter, Fig 10.3",
    title="BiG-FL vs FeSEM, FedAvg, DFL-SGD and DFL-GT on the homologous-graph data: local test loss",
    run=partial(run_synthetic, experiment_id="gfl_fig10_3_synthetic"), claims=synthetic_claims,
    settings=method_settings, method_names=METHOD_NAMES,
))
