"""Registration of the chapter's review-corpus targets (Lu, Xing & Yu, Sec. 10.5.2: Table 10.2, Fig 10.4)."""

from __future__ import annotations

from ..registry import register_target
from .claims import review_nlp_claims, review_stats_claims
from .reviews import review_stats_inputs, run_review_stats
from .reviews_nlp import (
    METHOD_NAMES,
    review_nlp_inputs,
    review_nlp_settings,
    run_review_nlp,
)

register_target(
    "gfl_table10_2_review_stats", "table", "chapter, Table 10.2",
    "Statistics of the 16 review domains: recomputed from the corpus beside the published values",
    run_review_stats, review_stats_claims, inputs=review_stats_inputs,
    deviations=("claims-means", "table-10-2-tokenisation", "corpus-encodings"),
    order=6, schema="review_stats",
)
register_target(
    "gfl_fig10_4_reviews_nlp", "figure", "chapter, Fig 10.4",
    "Next-word prediction on 16 review domains: BiG-FL vs FeSEM, FedAvg and DFL (test loss vs rounds)",
    run_review_nlp, review_nlp_claims, settings=review_nlp_settings, inputs=review_nlp_inputs,
    method_names=METHOD_NAMES,
    deviations=(
        "claims-means", "glove-substitute", "tokens-and-vocabulary", "reviews-cpu-profile",
        "frozen-rows", "reviews-test-loss", "mask-average", "client-graph", "bigfl-on-text",
        "fesem-on-text", "reviews-fedavg", "corpus-encodings", "reviews-claims",
        # the synthetic experiments' methods, run on text
        "dfl-gt-tracker", "dfl-sgd-order", "fesem", "bigfl",
    ),
    paper_scale={
        "vocab_size": "63,144 words [paper]; 5,000 in the reproduction's CPU profile (EXPERIMENTS.md) [choice]",
        "rounds": "not stated [paper]; 50 in the reproduction's paper profile (EXPERIMENTS.md) [choice]",
        "local_steps": "not stated [paper]; one epoch per round in the reproduction's paper profile "
                       "(EXPERIMENTS.md) [choice]",
        "batch_size": "100 windows of 35 [paper]",
        "test_documents": "not stated [paper]; all 400 test reviews per domain in the reproduction's paper "
                          "profile (EXPERIMENTS.md) [choice]",
        "repetitions": "not stated [paper] (figure: one curve per method)",
    },
    order=5, schema="reviews_nlp",
)
