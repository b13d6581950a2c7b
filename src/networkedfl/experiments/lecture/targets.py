"""Registration of the lecture's targets (Tham, FedSGD vs FedAvg lecture; docs/targets.md)."""

from __future__ import annotations

from ..registry import register_target
from .claims import lecture_demo_claims, lecture_table_claims
from .runs import lecture_run_settings, run_lecture_demo, run_lecture_table

register_target(
    "lecture_table1_fedsgd_fedavg", "table", "lecture, table",
    "FedSGD vs FedAvg: what is computed locally, uploaded, aggregated and downloaded",
    run_lecture_table, lecture_table_claims, deviations=("claims-means",),
    order=1, schema="lecture_table",
)
register_target(
    "lecture_fig1_fedsgd_vs_fedavg", "figure", "lecture (demo)",
    "FedSGD vs FedAvg, client-server vs peer-to-peer gossip: test loss vs rounds and messages",
    run_lecture_demo, lecture_demo_claims, settings=lecture_run_settings,
    deviations=("claims-means", "lecture-demo"),
    group_settings=True,  # seven runs of seconds each: one process pays torch's start-up once
    order=2, schema="lecture_demo",
)
