"""The claims of the graph-aware FL chapter's targets (Lu, Xing & Yu, "Graph-aware federated
learning", Secs. 10.2-10.5: Figs 10.1-10.4, Tables 10.1, 10.2): one function
``<what>_claims(table, params) -> list[Claim]`` per target, registered in
:mod:`.synthetic_targets` and :mod:`.reviews_targets`; the helpers they share are here.

The per-seed statistics of the chapter's comparisons: each method's value at its first or
last recorded round, one row per seed, and "A ends below each of B, C, ..." as paired cases,
decided by :mod:`networkedfl.experiments.claims` (``docs/verdicts.md``); the methods of one
seed share its data, start and mini-batch stream, so every comparison is paired by seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...datasets.reviews import DOMAINS
from ..baselines import is_extra_baseline
from ..claims import (
    INCONCLUSIVE,
    LOCAL,
    MEAN,
    ORACLE,
    REFERENCE,
    REFERENCES,
    Case,
    all_of,
    below,
    check_all,
    exact,
    reference_claims,
    threshold,
)
from ..claims import claim as claim_of
from ..registry import Claim, inferred
from .reviews import stats_frame
from .synthetic import (
    SYNTHETIC_ID,
    TABLE_10_1,
    _upper_level_gains,
    settings_rows,
    synthetic_instance,
)

__all__ = [
    "below_each",
    "decided",
    "dfl_claims",
    "extra_baseline_claims",
    "homologous_graphs_claims",
    "review_nlp_claims",
    "review_stats_claims",
    "round_values",
    "seed_curves",
    "settings_table_claims",
    "synthetic_claims",
    "upper_level_claims",
]

Params = Mapping[str, Any]


# ------------------------------------------------------ per-seed values and paired cases

def _rows(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    rows = table[table["metric"] == metric]
    if "domain" in rows:  # per-client rows carry a domain; the averages have none
        rows = rows[rows["domain"].isna()]
    return rows.assign(value=rows["value"].astype(float), round=rows["round"].astype(float))


def seed_curves(table: pd.DataFrame, metric: str = "test_loss") -> pd.DataFrame:
    """``metric`` against rounds: index ``(seed, round)``, one column per method."""
    return _rows(table, metric).pivot_table(index=["seed", "round"], columns="method", values="value",
                                            aggfunc="mean").sort_index()


def round_values(table: pd.DataFrame, metric: str = "test_loss", at: str = "last") -> pd.DataFrame:
    """Each method's ``metric`` at its own ``last`` (or ``first``) recorded round: one row per
    seed, one column per method (a :func:`~networkedfl.experiments.claims.per_seed` table)."""
    rows = _rows(table, metric)
    if rows.empty:
        return pd.DataFrame()
    rounds = rows.groupby("method")["round"].transform("max" if at == "last" else "min")
    return rows[rows["round"] == rounds].pivot_table(index="seed", columns="method", values="value",
                                                     aggfunc="mean").sort_index()


def below_each(wide: pd.DataFrame, a: str, others: Iterable[str], *, scale: str = "log") -> list[Case]:
    """One paired case ``a`` below ``b`` for every ``b`` of ``others`` present in ``wide``
    (the effect: the ratio ``a/b`` on the log scale, the difference on the linear one)."""
    return [below(b, wide[a].to_numpy(float), wide[b].to_numpy(float), scale=scale,  # type: ignore[arg-type]
                  what=f"{a} / {b}" if scale == "log" else f"{a} - {b}")
            for b in others if b in wide.columns and b != a] if a in wide.columns else []


def decided(text: str, build: Callable[[], Claim], frames: Sequence[pd.DataFrame | Any] = ()) -> Claim:
    """``build()``, or an inconclusive claim naming the cause when its per-seed values are
    missing or not finite (a method absent from the table, or a run that diverged)."""
    for frame in frames:
        if isinstance(frame, pd.DataFrame) and not np.isfinite(frame.to_numpy(float)).all():
            bad = [str(c) for c in frame.columns if not np.isfinite(frame[c].to_numpy(float)).all()]
            return Claim(text, INCONCLUSIVE, f"non-finite per-seed values of {', '.join(bad)} (a run diverged "
                         "or a method is missing on some seed): no interval")
    return build()


# ----------------------------------------------------------------------- Fig. 10.1 (DFL)

#: The methods of Fig. 10.1, in the order the chapter ranks their speed.
DFL_ORDER = ("FedAvg", "DFL-GT", "DFL-SGD")


def _first_rounds(curves: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """Per seed (rows) and method: the first round whose loss is at most ``1.1 L*``, with
    ``L*`` the seed's largest final loss among ``methods`` (one past the last round if never)."""
    rows = {}
    for seed, block in curves.groupby(level="seed"):
        c = block.droplevel("seed")[list(methods)]
        finals = c.iloc[-1].to_numpy(float)
        l_star = float(np.max(finals[np.isfinite(finals)])) if np.isfinite(finals).any() else math.inf
        rows[seed] = {m: float(c.index[np.flatnonzero(c[m].to_numpy() <= 1.1 * l_star)[0]])
                      if (c[m].to_numpy() <= 1.1 * l_star).any() else float(c.index[-1] + 1) for m in methods}
    return pd.DataFrame.from_dict(rows, orient="index")


def _log_areas(curves: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """Per seed (rows) and method: the area under the log test loss against rounds
    (trapezoids; ``inf`` for a curve that diverged)."""
    rows = {}
    for seed, block in curves.groupby(level="seed"):
        c = block.droplevel("seed")
        with np.errstate(all="ignore"):
            rows[seed] = {m: float(np.trapezoid(np.log(c[m].to_numpy(float)), c.index.to_numpy(float)))
                          for m in methods}
    return pd.DataFrame.from_dict(rows, orient="index").replace(-math.inf, math.nan).fillna(math.inf)


def dfl_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    """Fig. 10.1 [paper: FedAvg fastest; DFL-GT faster than DFL-SGD], decided per seed
    (:mod:`~networkedfl.experiments.claims`; the methods share a seed's data and start):
    the first round within 10 % of the slowest method's final loss (paired differences in
    rounds, strictly ordered: a tie is not "faster", docs/verdicts.md), the area under the log-loss curve (paired differences), each method's final
    against its initial loss (log scale), and the reference checks
    (:func:`~networkedfl.experiments.claims.reference_claims`)."""
    curves = seed_curves(table, "test_loss")
    order = [m for m in DFL_ORDER if m in curves.columns]
    pairs = list(zip(order[:-1], order[1:], strict=True))
    first, area = _first_rounds(curves, order), _log_areas(curves, order)
    final, start = round_values(table, "test_loss"), round_values(table, "test_loss", at="first")
    texts = ("with L* the largest final loss of the three, the first round with loss <= 1.1 L* "
             "is ordered FedAvg < DFL-GT < DFL-SGD (the chapter: FedAvg fastest, DFL-GT faster than DFL-SGD)",
             "the area under the log-loss curve is smallest for FedAvg and smaller for DFL-GT than DFL-SGD",
             "every method ends below its initial loss")
    return [
        decided(texts[0], lambda: all_of(texts[0], [
            below(f"{a} < {b}", first[a], first[b], scale="linear",
                  what=f"first round {a} - {b} (L* per seed)") for a, b in pairs]), [first]),
        decided(texts[1], lambda: all_of(texts[1], [
            below(f"{a} < {b}", area[a], area[b], scale="linear", what=f"area {a} - {b}")
            for a, b in [("FedAvg", "DFL-SGD"), *pairs] if a in area and b in area]), [area]),
        decided(texts[2], lambda: all_of(texts[2], [
            below(m, final[m], start[m], what="final / initial") for m in order]), [final[order]]),
        *decided_references(final),
    ]


def decided_references(final: pd.DataFrame, *, oracle: str | None = ORACLE) -> list[Claim]:
    """:func:`~networkedfl.experiments.claims.reference_claims` on the per-seed final losses
    (rows seeds, columns methods); inconclusive, and saying why, where a run diverged."""
    if np.isfinite(final.to_numpy(float)).all():
        return reference_claims(final, oracle=oracle)
    texts = ["[reference] every method ends below the predict-the-mean loss"] if MEAN in final.columns else []
    if oracle is not None and oracle in final.columns:
        texts.append(f"[reference] the {oracle.lower()} reference ends below every method")
    return [decided(text, lambda: exact("", False, ""), [final]) for text in texts]


# --------------------------------------------------------- Fig. 10.2 (homologous graphs)

def homologous_graphs_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    spec = params["synthetic"]
    n, k = int(spec["n_nodes"]), int(spec["n_neighbours"])
    nodes = table[(table["element"] == "node") & (table["metric"] == "x")]
    edges = table[table["element"] == "edge"]
    sizes, degree_ok = {}, {}
    for g in ("train", "test"):
        sizes[g] = int(nodes[nodes["graph"] == g]["node"].nunique())
        e = edges[edges["graph"] == g]
        deg = np.bincount(np.concatenate([e["source"].astype(int), e["target"].astype(int)]), minlength=n)
        degree_ok[g] = bool(sizes[g] == n and deg.min() >= k)
    dist = table[table["element"] == "component_distance"]
    nearest = {}
    for (g, comp), block in dist.groupby(["graph", "component"]):
        nearest[f"{g} component {int(comp)}"] = int(block.loc[block["value"].idxmin(), "centre"]) == int(comp)
    seed = int(table["seed"].iloc[0])
    base_seed = int(table[table["element"] == "base_seed"]["value"].iloc[0])
    inst = synthetic_instance(spec, seed, base_seed)
    same = {}
    for g, graph in (("train", inst.graphs.train_graph), ("test", inst.graphs.test_graph)):
        e = edges[edges["graph"] == g]
        got = {(int(a), int(b)) for a, b in zip(e["source"], e["target"], strict=True)}
        same[f"{g} edges"] = got == {(int(a), int(b)) for a, b in graph.edges}
        comp = nodes[nodes["graph"] == g].sort_values("node")["component"].astype(int).to_numpy()
        same[f"{g} node components"] = bool(np.array_equal(comp, inst.graphs.components))
    return [
        check_all(f"both graphs have {n} nodes, each with >= {k} neighbours", degree_ok,
                  {g: f"{sizes[g]} nodes" for g in sizes}),
        check_all("same mixture centres: in both graphs each component's node mean is nearest "
                  "its own (shared) centre", nearest),
        check_all(f"nodes and edges equal those {SYNTHETIC_ID} uses (instance of seed {seed})", same),
    ]


# ---------------------------------------------------------------------------- Table 10.1

def settings_table_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    expected = settings_rows(params["synthetic"])
    rows = {(r.group, r.item): r for r in table.itertuples()}
    missing = [f"{g} / {i}" for g, i, _ in TABLE_10_1 if (g, i) not in rows]
    present = [(g, i) for g, i, _ in TABLE_10_1 if (g, i) in rows]
    wrong = [f"{g} / {i}: {rows[(g, i)].value} vs {expected[(g, i)]}" for g, i in present
             if str(rows[(g, i)].value) != expected[(g, i)]]
    flags = [f"{g} / {i}" for g, i in present
             if (str(rows[(g, i)].value) != str(rows[(g, i)].paper)) != (rows[(g, i)].provenance == "choice")]
    choices = [f"{g} / {i} = {rows[(g, i)].value} (paper {rows[(g, i)].paper})" for g, i in present
               if rows[(g, i)].provenance == "choice"]
    return [
        exact("every row of Table 10.1 is present", not missing,
              f"all {len(TABLE_10_1)} rows" if not missing else f"missing: {missing}"),
        exact(f"each value equals the {SYNTHETIC_ID} configuration", not wrong and not missing,
              "all values match" if not wrong else f"differ: {wrong}"),
        exact("values differing from the paper's are flagged as choices", not flags,
              ("no value differs from the paper" if not choices else "choices: " + "; ".join(choices))
              if not flags else f"wrongly flagged: {flags}"),
    ]


# ----------------------------------------------------------------- Fig. 10.3 (synthetic)

#: Fig. 10.3's consensus methods (the chapter: "consensus methods worst").
CONSENSUS = ("FedAvg", "DFL-SGD", "DFL-GT")


def synthetic_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    """Fig. 10.3 [paper: consensus methods worst, FeSEM better, BiG-FL best]: the final test
    losses compared per seed (paired: the methods share a seed's instance and start; log
    scale, the effect a ratio), the reference checks
    (:func:`~networkedfl.experiments.claims.reference_claims`) and BiG-FL's UL diagnostics
    (:func:`upper_level_claims`).  The extra baselines (:mod:`~networkedfl.experiments.baselines`)
    take no part in the chapter's claims; :func:`extra_baseline_claims` compares them."""
    final = round_values(table, "test_loss")
    extras = [m for m in final.columns if is_extra_baseline(m)]
    extra_final, final = final[extras], final.drop(columns=extras)
    rows = table[table["metric"] == "test_loss"]
    last = int(rows["round"].max()) if len(rows) else 0
    others = [m for m in final.columns if m not in ("BiG-FL", *REFERENCES)]
    texts = (f"BiG-FL ends (round {last}) with the lowest test loss",
             "FeSEM ends below FedAvg and both DFL variants")
    return [
        decided(texts[0], lambda: all_of(texts[0], below_each(final, "BiG-FL", others)), [final]),
        decided(texts[1], lambda: all_of(texts[1], below_each(final, "FeSEM", CONSENSUS)), [final]),
        *decided_references(final),
        *upper_level_claims(table),
        *extra_baseline_claims(final, extra_final, "BiG-FL"),
    ]


def extra_baseline_claims(final: pd.DataFrame, extra_final: pd.DataFrame, method: str) -> list[Claim]:
    """``[reference]`` ``method`` (the paper's proposal) ends below each extra baseline,
    decided per seed as the paper's claims are (paired, log scale); none without extra
    baselines or without ``method``."""
    if extra_final.empty or method not in final.columns:
        return []
    both = pd.concat([final[[method]], extra_final], axis=1)
    names = ", ".join(extra_final.columns)
    text = f"[reference] {method} ends below each extra baseline ({names}; not the paper's methods)"
    return [decided(text, lambda: all_of(text, below_each(both, method, extra_final.columns)), [both])]


def _ends(frame: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray, str]:
    """Per seed: the first and the last recorded value of ``column`` of a ``(seed, round)``
    frame, and the rounds they are at."""
    groups = frame[column].groupby(level="seed")
    first, last = groups.first(), groups.last()
    rounds = frame.index.get_level_values("round")
    return first.to_numpy(float), last.to_numpy(float), f"rounds {int(rounds.min())} -> {int(rounds.max())}"


def upper_level_claims(table: pd.DataFrame) -> list[Claim]:
    """[diagnostic] The UL steps of BiG-FL lower the UL loss (10.14), issue 17 item 3,
    decided per seed (linear scale: the differences of a loss that starts at 1)."""
    gains = _upper_level_gains(table)
    if gains.empty:
        return []
    claims = []
    recorded = seed_curves(table, "upper_loss")
    if "BiG-FL" in recorded.columns:
        text = "[diagnostic] BiG-FL's recorded UL loss (10.14) at the LL iterate ends below its round-1 value"
        first, last, span = _ends(recorded.dropna(subset=["BiG-FL"]), "BiG-FL")
        claims.append(decided(text, lambda: claim_of(text, below(
            "UL loss", last, first, scale="linear", what=f"UL loss, last - first ({span})")), [recorded[["BiG-FL"]]]))
    text = ("[diagnostic] BiG-FL's UL steps lower the UL loss (10.14): at the round's LL models "
            "the learnt phi gives a lower loss than phi = I, by more at the end than after round 1")
    first, last, span = _ends(gains, "gain")
    claims.append(decided(text, lambda: all_of(text, [
        threshold("final gain below 0", last, lt=0.0, what=f"f(phi, Theta) - f(I, Theta) at the end ({span})"),
        below("final gain below the first", last, first, scale="linear", what="gain, last - first"),
    ]), [gains]))
    return claims


# -------------------------------------------------------- Table 10.2 (review statistics)

def review_stats_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    """Table 10.2 of Lu, Xing & Yu (target gfl_table10_2_review_stats): rows, document counts,
    average lengths within 25 %.  The published columns are written by the run from the
    package's copy of the table (``PUBLISHED_TABLE_10_2``): comparing them with that copy
    would compare a constant with itself (issue 40), so no claim does."""
    frame = stats_frame(table)
    domains = list(frame.index)
    docs_equal = {d: frame.loc[d, "documents"] == frame.loc[d, "documents (published)"] for d in domains}
    rel = (frame["avg length, whitespace tokens"] / frame["avg length (published)"] - 1.0)
    within = rel.abs() <= 0.25
    worst = rel.abs().idxmax() if len(rel) else None
    mismatched = [f"{d}: {frame.loc[d, 'documents']:.0f} vs {frame.loc[d, 'documents (published)']:.0f}"
                  for d, ok in docs_equal.items() if not ok]
    return [
        exact("16 rows", len(domains) == 16 and set(domains) == set(DOMAINS),
              f"{len(domains)} domains in the table"),
        exact("recomputed document counts equal the published ones in every domain",
              len(domains) == 16 and all(docs_equal.values()),
              "all 16 equal (train + test lines)" if not mismatched else "differ: " + "; ".join(mismatched)),
        exact("recomputed average length within 25 % of the published one in every domain",
              bool(len(rel) == 16 and within.all()),
              (f"largest relative difference {rel[worst]:+.1%} ({worst}); range "
               f"{rel.min():+.1%} .. {rel.max():+.1%}") if worst is not None else "no rows"),
    ]


# --------------------------------------------- Fig. 10.4 (reviews, next-word prediction)

def review_nlp_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    """Fig. 10.4 of Lu, Xing & Yu (target gfl_fig10_4_reviews_nlp), decided per seed
    (:mod:`~networkedfl.experiments.claims`): the final test losses (mean over the 16
    domains of each seed) compared on the log scale, paired by seed (the methods of a seed
    share its task, start and mini-batch stream), the reference checks without an
    oracle (:func:`~networkedfl.experiments.claims.reference_claims`) and, beside the
    chapter's comparison set, whether local training ends lower than BiG-FL
    (:data:`LOCAL_WINS`).  The extra baselines take no part in the chapter's claims;
    :func:`extra_baseline_claims` compares them with BiG-FL."""
    final, start = round_values(table, "test_loss"), round_values(table, "test_loss", at="first")
    if final.empty:
        return [exact("test losses recorded", False, "no test_loss rows in the table")]
    extras = [m for m in final.columns if is_extra_baseline(m)]
    extra_final, final, start = final[extras], final.drop(columns=extras), start.drop(columns=extras, errors="ignore")
    methods = [m for m in final.columns if m != MEAN]
    texts = ("every method ends below its round-0 test loss", "BiG-FL ends lowest",
             "FeSEM ends below FedAvg and DFL")
    claims = inferred(decided(texts[0], lambda: all_of(texts[0], [
        below(m, final[m], start[m], what="final / round 0") for m in methods]), [final, start]))
    if "BiG-FL" in final.columns:
        others = [m for m in final.columns if m not in ("BiG-FL", *REFERENCES)]
        claims.append(decided(texts[1], lambda: all_of(texts[1], below_each(final, "BiG-FL", others)), [final]))
    if "FeSEM" in final.columns:
        rivals = ("FedAvg", "DFL-SGD", "DFL-GT")
        claims.append(decided(texts[2], lambda: all_of(texts[2], below_each(final, "FeSEM", rivals)), [final]))
    if "BiG-FL" in final.columns and LOCAL in final.columns:
        claims.append(decided(LOCAL_WINS, lambda: claim_of(LOCAL_WINS, below(
            f"{LOCAL} vs BiG-FL", final[LOCAL], final["BiG-FL"], what=f"{LOCAL} / BiG-FL"), kind=REFERENCE),
            [final[[LOCAL, "BiG-FL"]]]))
    return claims + decided_references(final, oracle=None) + extra_baseline_claims(final, extra_final, "BiG-FL")


#: Fig. 10.4's reference beside "BiG-FL ends lowest" (issue 40 item 5): the chapter compares
#: BiG-FL with FeSEM, FedAvg and DFL only; each client training alone is the reference any
#: exchange must beat.
LOCAL_WINS = (f"[reference] {LOCAL} (each client alone, no exchange) ends lower than BiG-FL: where this "
              "holds, training alone beats the chapter's method on this run")
