"""The deviations from the papers, by name: ``docs/deviations/<paper>.md`` documents each
under a heading ``### <name>``, and every :class:`~.registry.Experiment` lists the names it
depends on (its ``deviations``).

A deviation is cited by its name and a link to its heading, never by a number (the names stay
when deviations are added or removed); :func:`deviation_link` builds the link.
``tests/unit/experiments/test_deviations.py`` checks this table against the headings of the pages.
"""

from __future__ import annotations

__all__ = ["DEVIATIONS", "TARGETLESS", "deviation_link", "deviation_paper"]

#: The deviations of each paper's page, in the page's order.
_BY_PAPER: dict[str, tuple[str, ...]] = {
    "gtv": (
        "two-variants", "step-sizes", "label-noise-per-point", "local-loss-average",
        "mocha-dual-step", "fig11-perturbation", "parameter-mse", "sbm-iterations",
        "sbm-sampler", "sampling-set", "covariance-table", "diagrams", "star-graph",
        "claims-means", "fig03-seeds", "primal-dual-gap", "memory-layout", "ifca-linear", "table1-fig02-setup",
        "cluster-oracle", "linear-test-profile", "mnist-run-length", "real-proximal-term",
        "local-biases", "stacked-nlasso", "learnt-graph", "mnist-local-datasets",
        "mnist-baselines", "fig05-lambdas", "mnist-test-profile", "mnist-claims",
        "reproducible-graph",
    ),
    "fedrelax": (
        "alg2-rmsprop", "discrepancy", "alg1-weights", "self-distillation", "public-subsample",
        "repetitions", "weighted-resampling", "noniid-data", "paired-grid-points",
        "fig01c-baselines", "fig02-oracle", "fig05-variation", "fedrelax-claims",
    ),
    "gfl": (
        "glove-substitute", "tokens-and-vocabulary", "reviews-cpu-profile", "frozen-rows",
        "reviews-test-loss", "mask-average", "client-graph", "bigfl-on-text", "fesem-on-text",
        "reviews-fedavg", "table-10-2-tokenisation", "corpus-encodings", "reviews-claims",
        "fig10-1-step-size", "standardised-labels", "fig10-1-horizon", "dfl-gt-tracker",
        "dfl-sgd-order", "fesem", "bigfl", "homologous-graphs", "fig10-3-parameters",
        "fig10-3-validation", "extra-baselines", "synthetic-claims",
    ),
    "lecture": (
        "lecture-demo",
    ),
}

#: Paper (the page ``docs/deviations/<paper>.md``) of each deviation.
DEVIATIONS: dict[str, str] = {slug: paper for paper, slugs in _BY_PAPER.items() for slug in slugs}

#: Deviations that no target depends on (library behaviour outside the targets' defaults).
TARGETLESS = frozenset({"primal-dual-gap", "cluster-oracle", "weighted-resampling"})


def deviation_paper(slug: str) -> str:
    """The paper whose page documents deviation ``slug`` (``"gtv"``, ``"fedrelax"``, ...)."""
    try:
        return DEVIATIONS[slug]
    except KeyError:
        raise KeyError(f"unknown deviation {slug!r}; see docs/deviations/README.md") from None


def deviation_link(slug: str, root: str = "docs/deviations") -> str:
    """Link to deviation ``slug``'s heading: ``<root>/<paper>.md#<slug>``.

    ``root`` is the folder of the pages as seen from where the link is written (e.g.
    ``"../../docs/deviations"`` from a notebook two folders down).
    """
    return f"{root}/{deviation_paper(slug)}.md#{slug}"
