"""Registration of the lecture's targets (EXPERIMENTS.md §7)."""

from __future__ import annotations

from functools import partial

from ..registry import Experiment, register
from .runs import (
    lecture_demo_claims,
    lecture_run_settings,
    lecture_table_claims,
    run_lecture_demo,
    run_lecture_table,
)

register(Experiment(
    id="lecture_table1_fedsgd_fedavg", kind="table", source="lecture, table",
    title="FedSGD vs FedAvg: what is computed locally, uploaded, aggregated and downloaded",
    run=partial(run_lecture_table, experiment_id="lecture_table1_fedsgd_fedavg"),
    claims=lecture_table_claims,
))
register(Experiment(
    id="lecture_fig1_fedsgd_vs_fedavg", kind="figure", source="lecture (demo)",
    title="FedSGD vs FedAvg, client-server vs peer-to-peer gossip: test loss vs rounds and messages",
    run=partial(run_lecture_demo, experiment_id="lecture_fig1_fedsgd_vs_fedavg"),
    claims=lecture_demo_claims, settings=lecture_run_settings,
))
