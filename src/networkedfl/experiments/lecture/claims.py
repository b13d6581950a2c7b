"""The claims of the distributed-ML lecture's targets (Tham, FedSGD vs FedAvg lecture;
client-server vs peer-to-peer): one function ``<what>_claims(table, params) -> list[Claim]``
per target, registered in :mod:`.targets`; the helpers they share are here.

* ``lecture_table1_fedsgd_fedavg``: the uploads in the runs' logs, an exact check.
* ``lecture_fig1_fedsgd_vs_fedavg``: a demonstration the lecture does not run; its claims
  are decided by :mod:`networkedfl.experiments.claims` (``docs/verdicts.md``) from per-seed
  values paired by seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..claims import all_of, at_least, below, claim, exact, per_seed
from ..registry import Claim, inferred
from .runs import LECTURE_TABLE, _run_name

__all__ = ["lecture_demo_claims", "lecture_table_claims"]

Params = Mapping[str, Any]


def lecture_table_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    """The uploads in the runs' logs against the lecture's table: an exact check.  The table's
    cells are written by the run from :data:`~.runs.LECTURE_TABLE`; comparing them with it
    would compare a constant with itself (issue 40), so no claim does."""
    got = {(r.method, r.metric): str(r.value) for r in table.itertuples()}
    uploads = {m: got.get((m, "run_log_upload")) for m in LECTURE_TABLE}
    return [
        exact("the run log shows FedSGD uploading gradients and FedAvg models, as the lecture's Upload "
              "column says", uploads == {"FedSGD": "gradients", "FedAvg": "models"}, f"uploaded: {uploads}"),
    ]


def _runs_table(table: pd.DataFrame) -> pd.DataFrame:
    """The demo's numeric rows with a ``run`` column (``fedsgd``, ``fedavg-E5-B10``, ...)."""
    t = table[table["metric"] != "uploaded"]
    names = [_run_name({"method": m, "local_epochs": _int(e), "batch_size": _int(b)})
             for m, e, b in zip(t["method"], t["E"], t["B"], strict=True)]
    return t.assign(value=t["value"].astype(float), run=names)


def _at_round(t: pd.DataFrame, metric: str, round_: int) -> pd.DataFrame:
    """Per seed (rows) and run (columns): ``metric`` at ``round_``."""
    return per_seed(t[t["round"] == round_], ["run"], metric)


def _messages_to_reach(t: pd.DataFrame, run: str, target: pd.Series, last: int) -> pd.Series:
    """Per seed: the messages ``run`` had sent in all when its test loss first reached the
    seed's ``target``; a run that never reaches it counts ``last + 1`` rounds' messages (a
    lower bound of what it would need, so the comparison stays conservative)."""
    part = t[t["run"] == run]
    loss = part[part["metric"] == "test_loss"].pivot_table(index="seed", columns="round", values="value")
    sent = part[part["metric"] == "messages_total"].pivot_table(index="seed", columns="round", values="value")
    out = {}
    for seed, curve in loss.iterrows():
        reached = curve.index[curve.to_numpy() <= target.get(seed, -np.inf)]
        per_round = sent.loc[seed, last] / last
        out[seed] = sent.loc[seed, reached[0]] if len(reached) else per_round * (last + 1)
    return pd.Series(out, dtype=float)


def lecture_demo_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    """The demo's claims, from per-seed values paired by seed (every run of a seed trains on
    the same data).  Losses and message counts are compared on the log scale.

    The consensus distance of gossip starts at zero (every client starts from one model) and
    rises while local training pulls the clients apart; with a constant step the exchange
    holds it at a level set by the step, the gradient noise and the ring's spectral gap
    rather than driving it to zero.  What the exchange does is measured against the same
    local training without it (``local-E1-B10``): the claim compares the two at round T.
    """
    t = _runs_table(table)
    final = int(t["round"].max())
    first = int(t["round"].min())
    last_loss, first_loss = _at_round(t, "test_loss", final), _at_round(t, "test_loss", first)
    runs = sorted(set(last_loss.columns) & set(first_loss.columns))
    gossip, alone, cs = "gossip-E1-B10", "local-E1-B10", "fedavg-E1-B10"
    spread = _at_round(t, "consensus_distance", final)
    target = _at_round(t, "test_loss", 10)[cs] if cs in set(t["run"]) and 10 <= final else pd.Series(dtype=float)
    sent_cs = _at_round(t, "messages_total", 10)[cs] if len(target) else pd.Series(dtype=float)
    sent_p2p = _messages_to_reach(t, gossip, target, final) if gossip in set(t["run"]) else pd.Series(dtype=float)
    ratio = pd.concat([sent_p2p, sent_cs], axis=1).dropna()

    def case_of(fn, name, a, b, **kw):
        pair = pd.concat([a, b], axis=1).dropna()
        return fn(name, pair.iloc[:, 0], pair.iloc[:, 1], **kw)

    def column(frame: pd.DataFrame, run: str) -> pd.Series:
        return frame[run] if run in frame.columns else pd.Series(dtype=float)

    return [
        *inferred(claim(f"at round T = {final}, FedAvg (E = 5, B = 10) is below FedSGD in test loss",
              case_of(below, "FedAvg E5 B10 / FedSGD", column(last_loss, "fedavg-E5-B10"),
                      column(last_loss, "fedsgd"), what="test loss ratio"))),
        *inferred(all_of(f"every curve's test loss ends below its round-{first} value",
               [case_of(below, run, last_loss[run], first_loss[run], what=f"round {final} / round {first}")
                for run in runs])),
        *inferred(claim("gossip keeps the clients' models together: its consensus distance (zero at the common "
              f"start) ends at round T = {final} below that of the same local training without exchange",
              case_of(below, "gossip / no exchange", column(spread, gossip), column(spread, alone),
                      what="consensus distance ratio"))),
        claim("to reach client-server FedAvg's (E = 1, B = 10) round-10 test loss, "
              "peer-to-peer sends at least as many messages",  # "at least": non-inferiority (docs/verdicts.md)
              at_least("peer-to-peer / client-server messages", ratio.iloc[:, 0], ratio.iloc[:, 1],
                       what="messages ratio (a run never reaching the loss counts T + 1 rounds)")),
    ]


def _int(value: Any) -> Any:
    return value if pd.isna(value) else int(value)
