"""Registration of the GTV paper's MNIST targets (EXPERIMENTS.md §4: Figs 5-7, Table II)."""

from __future__ import annotations

from functools import partial

from ..registry import Experiment, register
from .mnist import (
    mnist_inputs,
    mnist_lambda_claims,
    mnist_method_claims,
    mnist_settings,
    mnist_table2_claims,
    run_mnist,
    run_mnist_table2,
    step_scan_claims,
)


def _table2_inputs(params):
    return {"graph": mnist_inputs(params)["graph"]}


register(Experiment(
    id="gtv_table2_mnist_clusters", kind="table", source="GTV Table II",
    title="The digits of the five MNIST clusters (read from gtv_fig07's graph)",
    run=partial(run_mnist_table2, experiment_id="gtv_table2_mnist_clusters"),
    claims=mnist_table2_claims, inputs=_table2_inputs,
))
register(Experiment(
    id="gtv_fig05_mnist_lambda", kind="figure", source="GTV Fig. 5",
    title="MNIST, two clusters: validation accuracy vs iteration of Alg. 1, per lambda",
    run=partial(run_mnist, experiment_id="gtv_fig05_mnist_lambda"),
    claims=mnist_lambda_claims, settings=mnist_settings, inputs=mnist_inputs,
))
register(Experiment(
    id="gtv_fig06_mnist_methods", kind="figure", source="GTV Fig. 6",
    title="MNIST, two clusters: Alg. 1 vs IFCA, pFedMe, local SGD (and FedAvg)",
    run=partial(run_mnist, experiment_id="gtv_fig06_mnist_methods"),
    claims=partial(mnist_method_claims, baselines=("ifca", "pfedme", "local_sgd")),
    settings=mnist_settings, inputs=mnist_inputs,
))
register(Experiment(
    id="gtv_fig07_mnist_five_clusters", kind="figure", source="GTV Fig. 7",
    title="MNIST, five clusters: Alg. 1 vs IFCA (5 and 2 models) and local SGD",
    run=partial(run_mnist, experiment_id="gtv_fig07_mnist_five_clusters"),
    claims=partial(mnist_method_claims, baselines=("ifca", "local_sgd")),
    settings=mnist_settings, inputs=mnist_inputs,
))
register(Experiment(
    id="gtv_mnist_step_scan", kind="figure", source="GTV Fig. 6 (issue 16; not in the paper)",
    title="MNIST, two clusters: Alg. 1 (paper variant, lambda = 1) with tau = c/deg, sigma = 0.45/c",
    # Fig. 6's streams: the same start as its Alg. 1, so c = 1 repeats its paper variant
    run=partial(run_mnist, experiment_id="gtv_fig06_mnist_methods"),
    claims=step_scan_claims, settings=mnist_settings, inputs=mnist_inputs,
))
