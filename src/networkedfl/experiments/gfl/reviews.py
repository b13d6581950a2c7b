"""The chapter's Table 10.2: statistics of the 16 review domains, recomputed beside the
published values (Lu, Xing & Yu, Sec. 10.5.2, Table 10.2; target gfl_table10_2_review_stats).

The job reads the corpus files the pipeline fetched (``data/raw/reviews/``, see the
``download_reviews`` rule) and records, per domain, the published row of Table 10.2 and the
recomputed counts: documents (train + test lines), average length and distinct words
with whitespace tokens as the files are written, and the same after dropping tokens made
only of punctuation (and lowercasing) -- the published lengths lie between the two, so
the paper's tokenisation, which it does not describe, explains the differences.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ...datasets.reviews import (
    DOMAINS,
    LABELLED_SPLITS,
    PUBLISHED_TABLE_10_2,
    PUBLISHED_TOTAL_WORDS,
    SPLITS,
    domain_statistics,
    read_domain,
    review_files,
)
from ...io import Paths

__all__ = [
    "corpus_inputs",
    "run_review_stats",
]

Params = Mapping[str, Any]


def corpus_inputs(params: Params, splits: Sequence[str] = LABELLED_SPLITS) -> dict[str, list[str]]:
    """The corpus files a job reads (below ``data/raw/reviews/``), as the pipeline places them."""
    paths = Paths()
    return {"corpus": [paths.raw_data("reviews", name) for name in review_files(DOMAINS, splits)]}


def review_stats_inputs(params: Params) -> dict[str, list[str]]:
    """Train and test files of every domain, and the unlabelled ones if ``params["unlabelled"]``."""
    return corpus_inputs(params, SPLITS if params.get("unlabelled", True) else LABELLED_SPLITS)


def run_review_stats(params: Params, setting: str, seed: int, base_seed: int, *,
                     inputs: Mapping[str, Any], experiment_id: str) -> pd.DataFrame:
    """Published and recomputed statistics of every domain, one record per value.

    Columns: ``domain`` (file-name stem), ``dataset`` (the published name), ``source``
    (``published`` or ``recomputed``), ``metric``, ``value``, ``seed``.  Nothing is random.
    """
    with_unlabelled = bool(params.get("unlabelled", True))
    splits = SPLITS if with_unlabelled else LABELLED_SPLITS
    records: list[dict[str, Any]] = []
    union: set[str] = set()

    def add(domain: str, source: str, metric: str, value: float) -> None:
        records.append({"domain": domain, "dataset": PUBLISHED_TABLE_10_2[domain].dataset,
                        "source": source, "metric": metric, "value": value, "seed": seed})

    for domain in DOMAINS:
        files = read_domain(inputs["corpus"], domain, splits)
        stats, vocabulary = domain_statistics([files[s] for s in LABELLED_SPLITS])
        union |= vocabulary
        published = PUBLISHED_TABLE_10_2[domain]
        add(domain, "published", "documents", published.sentences)
        add(domain, "published", "avg_length", published.avg_length)
        add(domain, "published", "unique_words", published.unique_words)
        add(domain, "published", "total_words", PUBLISHED_TOTAL_WORDS)
        for metric in ("documents", "train_documents", "test_documents", "positive",
                       "avg_length", "avg_length_words", "unique_words",
                       "unique_words_normalised", "fallback_lines"):
            add(domain, "recomputed", metric, float(getattr(stats, metric)))
        if with_unlabelled:
            unlabelled = files["unlabel"]
            tokens = unlabelled.tokens(split_punctuation=domain not in ("imdb", "MR"))
            add(domain, "recomputed", "unlabelled_documents", unlabelled.n_documents)
            add(domain, "recomputed", "unlabelled_avg_length",
                sum(map(len, tokens)) / max(unlabelled.n_documents, 1))
            add(domain, "recomputed", "unlabelled_fallback_lines", len(unlabelled.fallback_lines))
    for domain in DOMAINS:
        add(domain, "recomputed", "total_words", len(union))
    return pd.DataFrame.from_records(records)


# ------------------------------------------------------------- reading the table back


def _values(table: pd.DataFrame, source: str, metric: str) -> pd.Series:
    rows = table[(table["source"] == source) & (table["metric"] == metric)]
    return rows.assign(value=rows["value"].astype(float)).groupby("domain")["value"].mean()


def stats_frame(table: pd.DataFrame) -> pd.DataFrame:
    """One row per domain (Table 10.2 order): published and recomputed columns side by side."""
    columns = {
        "documents (published)": ("published", "documents"),
        "documents": ("recomputed", "documents"),
        "avg length (published)": ("published", "avg_length"),
        "avg length, whitespace tokens": ("recomputed", "avg_length"),
        "avg length, without punctuation": ("recomputed", "avg_length_words"),
        "unique words (published)": ("published", "unique_words"),
        "unique words, whitespace tokens": ("recomputed", "unique_words"),
        "unique words, lowercased, without punctuation": ("recomputed", "unique_words_normalised"),
    }
    frame = pd.DataFrame({name: _values(table, *key) for name, key in columns.items()})
    names = table.drop_duplicates("domain").set_index("domain")["dataset"]
    frame.insert(0, "dataset", names)
    order = [d for d in DOMAINS if d in frame.index]
    return frame.loc[order]
