"""Registration of the chapter's review-corpus targets (EXPERIMENTS.md §6: Table 10.2, Fig 10.4)."""

from __future__ import annotations

from functools import partial

from ..registry import Experiment, register
from .reviews import review_stats_claims, review_stats_inputs, run_review_stats
from .reviews_nlp import (
    METHOD_NAMES,
    review_nlp_claims,
    review_nlp_inputs,
    review_nlp_settings,
    run_review_nlp,
)

register(Experiment(
    id="gfl_table10_2_review_stats", kind="table", source="chapter, Table 10.2",
    title="Statistics of the 16 review domains: recomputed from the corpus beside the published values",
    run=partial(run_review_stats, experiment_id="gfl_table10_2_review_stats"),
    claims=review_stats_claims, inputs=review_stats_inputs,
))
register(Experiment(
    id="gfl_fig10_4_reviews_nlp", kind="figure", source="chapter, Fig 10.4",
    title="Next-word prediction on 16 review domains: BiG-FL vs FeSEM, FedAvg and DFL (test loss vs rounds)",
    run=partial(run_review_nlp, experiment_id="gfl_fig10_4_reviews_nlp"),
    claims=review_nlp_claims, settings=review_nlp_settings, inputs=review_nlp_inputs,
    method_names=METHOD_NAMES,
))
