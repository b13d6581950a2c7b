"""The lecture demo: the no-exchange reference run, the busiest participant's messages, and
the claims under the verdict rule on constructed per-seed tables."""

import itertools

import numpy as np
import pandas as pd
import pytest

from networkedfl.experiments.claims import FAILS, HOLDS, INCONCLUSIVE, design
from networkedfl.experiments.lecture import figures as lf
from networkedfl.experiments.lecture.claims import lecture_demo_claims
from networkedfl.experiments.lecture.runs import run_lecture_demo

RUNS = {("fedsgd", np.nan, np.nan): 2.0, ("fedavg", 1, 10): 1.0, ("fedavg", 5, 10): 0.8,
        ("gossip", 1, 10): 1.1, ("local", 1, 10): 1.5}


def _demo(final=None, spread=(1.0, 30.0), gossip_reach=1.0, seeds=range(4), rounds=20, noise=0.02):
    """Test loss falling from 3 to the run's final value, the messages of 2N = 20 per round
    (none for local training), and the consensus distances of gossip and local training
    levelling off at ``spread``."""
    final = {**RUNS, **(final or {})}
    rng = np.random.default_rng(0)
    rows = []
    for seed, ((method, e, b), end) in itertools.product(seeds, final.items()):
        end = end * (gossip_reach if method == "gossip" else 1.0) * np.exp(rng.normal(0, noise))
        for r in range(1, rounds + 1):
            base = {"method": method, "E": e, "B": b, "seed": seed, "round": r}
            rows.append({**base, "metric": "test_loss", "value": end + (3 - end) * np.exp(-r / 3)})
            rows.append({**base, "metric": "messages_total", "value": 0.0 if method == "local" else 20.0 * r})
            if method in ("gossip", "local"):
                level = spread[method == "local"] * np.exp(rng.normal(0, noise))
                rows.append({**base, "metric": "consensus_distance", "value": level * (1 - np.exp(-r / 4))})
        rows.append({"method": method, "E": e, "B": b, "seed": seed, "round": np.nan, "metric": "uploaded",
                     "value": "models"})
    return pd.DataFrame(rows)


def demo_claims(table, params):
    """The demo's claims under its design (config: a ratio within 10 %)."""
    with design({"ratio_margin": 0.10}):
        return lecture_demo_claims(table, params)


def test_lecture_demo_claims_hold_on_a_clear_table():
    claims = demo_claims(_demo(), {})
    assert [c.verdict for c in claims] == [HOLDS] * 4
    assert claims[2].effect == pytest.approx(1 / 30, rel=0.05) and claims[2].n_seeds == 4
    # gossip reaches FedAvg E1 B10's round-10 loss later than round 10: more messages
    assert claims[3].effect > 1


def test_lecture_demo_claims_fail_when_reversed():
    claims = demo_claims(_demo(final={("fedavg", 5, 10): 2.5}, spread=(30.0, 1.0), gossip_reach=0.5), {})
    assert claims[0].verdict == FAILS  # FedAvg E5 B10 above FedSGD
    assert claims[1].verdict == HOLDS  # every loss still falls
    assert claims[2].verdict == FAILS  # gossip's clients spread more than without exchange
    assert claims[3].verdict == FAILS  # gossip reaches the loss with fewer messages


def test_lecture_demo_claims_inside_the_noise_are_inconclusive():
    claims = demo_claims(_demo(final={("fedavg", 5, 10): 2.0}, spread=(30.0, 30.0), noise=0.3,
                                       seeds=range(2)), {})
    assert claims[0].verdict == INCONCLUSIVE and claims[2].verdict == INCONCLUSIVE


def test_a_gossip_run_that_never_reaches_the_loss_counts_one_round_more():
    table = _demo(gossip_reach=3.0)  # gossip ends far above FedAvg E1 B10's round-10 loss
    claim = demo_claims(table, {})[3]
    assert claim.verdict == HOLDS and claim.effect == pytest.approx(21 * 20 / 200)


def test_the_local_run_and_the_busiest_participant_s_messages():
    """Local training sends nothing and records its consensus distance every E epochs;
    the server handles every message of client-server FedAvg, a ring client 4 per round."""
    params = {"data": {"dim": 3, "n_classes": 3, "separation": 3.0}, "n_clients": 5, "samples_per_client": 20,
              "n_test": 30, "rounds": 4, "lr": 0.1,
              "runs": [{"method": "fedavg", "local_epochs": 1, "batch_size": 10},
                       {"method": "gossip", "local_epochs": 1, "batch_size": 10},
                       {"method": "local", "local_epochs": 2, "batch_size": 10}]}
    tables = {s: run_lecture_demo(params, s, 0, 1, experiment_id="x")
              for s in ("fedavg-E1-B10", "gossip-E1-B10", "local-E2-B10")}

    def series(table, metric):
        rows = table[table["metric"] == metric]
        return rows.set_index("round")["value"].astype(float)

    cs, p2p, alone = tables["fedavg-E1-B10"], tables["gossip-E1-B10"], tables["local-E2-B10"]
    pd.testing.assert_series_equal(series(cs, "messages_busiest_node"), series(cs, "messages_total"),
                                   check_names=False)
    assert series(p2p, "messages_total").tolist() == [10.0, 20.0, 30.0, 40.0]  # 2 per ring edge
    assert series(p2p, "messages_busiest_node").tolist() == [4.0, 8.0, 12.0, 16.0]
    assert series(alone, "messages_total").eq(0).all() and list(series(alone, "test_loss").index) == [1, 2, 3, 4]
    spread = series(alone, "consensus_distance")
    assert (spread > 0).all() and spread.is_monotonic_increasing  # alone, the clients drift apart
    assert set(alone.loc[alone["metric"] == "uploaded", "value"]) == {"none"}


def test_coinciding_runs_are_named_in_the_legend():
    table = _demo(final={("fedavg", 5, 10): 1.0}, noise=0.0)  # FedAvg E5 B10 on E1 B10's curve
    together = lf.coinciding_runs(table)
    assert together["FedAvg E=5 B=10"] == ["FedAvg E=1 B=10"] and together["FedSGD"] == []
    fig = lf.plot_communication(table)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "FedAvg E=5 B=10 (coincides with FedAvg E=1 B=10)" in labels


def test_at_least_as_many_messages_is_non_inferiority():
    # gossip's curve equal to client-server FedAvg's (E = 1, B = 10): it reaches the round-10
    # loss at round 10 with as many messages, and "at least as many" holds
    equal = demo_claims(_demo(final={("gossip", 1, 10): 1.0}, noise=0.0), {})[3]
    assert equal.verdict == HOLDS and equal.effect == pytest.approx(1.0) and "non-inferiority" in equal.interval
    # half the messages, beyond the 10 % margin: fails
    assert demo_claims(_demo(gossip_reach=0.5), {})[3].verdict == FAILS
    with pytest.raises(ValueError, match="non-inferiority test needs a margin"):
        lecture_demo_claims(_demo(), {})  # no design: no margin
