"""Failing paper-variant claims carry their diagnosis (issue 41 item 3): the numbers come from
the ablation and step-scan tables, and the failures are split by kind."""

import numpy as np
import pandas as pd

from networkedfl.experiments.diagnosis import (
    DIAGNOSES,
    DIAGNOSTIC_TARGETS,
    claim_diagnoses,
    failure_kind,
    failures_markdown,
)

TABLE1_CLAIM = "Alg. 1 (l1) has the lowest label MSE of the five rows"


def _ablation():
    values = {("published", "l1"): 1e-5, ("loss_scale", "l1"): 9e-4, ("ifca.aggregation", "l1"): 1e-5,
              ("paper", "l1"): 1.4e-3, ("published", "none"): 2.9, ("loss_scale", "none"): 2.9,
              ("ifca.aggregation", "none"): 9e-7, ("paper", "none"): 8.8e-7}
    return pd.DataFrame([{"case": "table1", "switch": switch, "method": "primal_dual" if pen == "l1" else "ifca",
                          "penalty": pen, "p_out": 0.01, "sigma": 0.001, "seed": seed, "metric": "label_mse",
                          "value": v * (1 + 0.1 * seed), "iteration": np.nan}
                         for (switch, pen), v in values.items() for seed in (0, 1)])


def _scan():
    return pd.DataFrame([{"method": m, "seed": s, "iteration": it, "metric": "accuracy", "value": v}
                         for m, v in (("c_1", 0.72), ("c_10", 0.9), ("c_100", 0.983)) for s in (0, 1)
                         for it in (0, 49)])


def _claims(paper, published):
    return [{"claim": TABLE1_CLAIM, "variant": "published", "verdict": published, "kind": "paper", "detail": ""},
            {"claim": TABLE1_CLAIM, "variant": "paper", "verdict": paper, "kind": "paper", "detail": ""}]


def test_the_diagnosis_reads_the_switches_numbers_from_the_ablation_table():
    (text,) = claim_diagnoses("gtv_table1_highdim_sbm", TABLE1_CLAIM, {"gtv_quirk_ablation": _ablation()})
    assert text.startswith("gtv_quirk_ablation: table1, Alg. 1 l1 (label MSE): published 1.05e-05; "
                           "loss_scale → paper 0.000945; ifca.aggregation → paper 1.05e-05; paper 0.00147")
    assert "table1, ifca (label MSE): published 3.04; loss_scale → paper 3.04; ifca.aggregation → paper 9.45e-07" \
        in text


def test_without_the_diagnosing_table_the_diagnosis_says_it_did_not_run():
    (text,) = claim_diagnoses("gtv_table1_highdim_sbm", TABLE1_CLAIM, {})
    assert text.startswith("gtv_quirk_ablation: not run in this build.")
    assert claim_diagnoses("gtv_table1_highdim_sbm", "another claim", {}) == []


def test_the_step_scan_gives_the_accuracy_at_the_last_plotted_iteration_per_step_scale():
    texts = claim_diagnoses("gtv_fig06_mnist_methods", "Alg. 1's accuracy at iteration 49 is at least IFCA's",
                            {"gtv_mnist_step_scan": _scan()})
    scan = next(t for t in texts if t.startswith("gtv_mnist_step_scan"))
    assert "accuracy at iteration 49: c = 1 0.72; c = 10 0.9; c = 100 0.983" in scan


def test_failure_kinds_separate_the_papers_equations_from_every_variant():
    assert failure_kind(_claims("fails", "holds"), TABLE1_CLAIM) == "paper equations"
    assert failure_kind(_claims("fails", "inconclusive"), TABLE1_CLAIM) == "paper equations"
    assert failure_kind(_claims("fails", "fails"), TABLE1_CLAIM) == "every variant"
    assert failure_kind(_claims("holds", "fails"), TABLE1_CLAIM) == "published only"
    assert failure_kind(_claims("holds", "holds"), TABLE1_CLAIM) == ""


def test_the_failures_section_counts_each_kind_with_its_diagnosis():
    claims = {"gtv_table1_highdim_sbm": _claims("fails", "holds"),
              "gtv_fig05_mnist_lambda": [{"claim": "spread below 0.05", "variant": v, "verdict": "fails",
                                          "kind": "paper", "detail": ""} for v in ("published", "paper")],
              "fedrelax_fig01a_dm_ratio": [{"claim": "x", "verdict": "fails", "kind": "paper", "detail": ""}]}
    lines = failures_markdown(claims, {"gtv_quirk_ablation": _ablation()})
    text = "\n".join(lines)
    assert "(`paper` fails, `published` holds or is inconclusive)**: 1." in text
    assert "**Fail in every variant**: 1." in text
    assert "`gtv_table1_highdim_sbm`: Alg. 1 (l1) has the lowest label MSE" in text and "loss\\_scale → paper" in text
    assert "`gtv_fig05_mnist_lambda`: spread below 0.05 — no diagnosing ablation recorded" in text
    assert "fedrelax" not in text  # a target without variants is not split


def test_the_claims_page_gets_a_diagnosis_column_only_when_diagnostics_are_given():
    from networkedfl.pipeline.summary import claims_markdown

    claims = {"gtv_table1_highdim_sbm": _claims("fails", "holds")}
    plain = claims_markdown(claims)
    assert "| diagnosis |" not in plain
    page = claims_markdown(claims, {"gtv_quirk_ablation": _ablation()})
    row = next(line for line in page.splitlines() if line.startswith("| **fails** |"))
    assert "fails under the paper's equations as written; gtv\\_quirk\\_ablation: table1" in row
    held = next(line for line in page.splitlines() if line.startswith("| holds |"))
    assert held.endswith("|  |")   # a claim that holds has no diagnosis


def test_diagnoses_name_known_targets():
    from networkedfl.experiments import get_experiment

    for d in DIAGNOSES:
        get_experiment(d.target)
        assert d.source in DIAGNOSTIC_TARGETS


FUSION_CLAIM = "at lambda = 10000, max_i ||w_i - w_bar|| / ||w_bar|| < 0.05"


def _fig05_graph(cross):
    rows = [{"variant": v, "algorithm": "primal_dual", "iteration": np.nan, "method": "primal_dual", "lam": lam,
             "seed": s, "metric": metric, "value": value}
            for v, edges in (("published", 160), ("paper", 122)) for s in (0, 1, 2)
            for lam, metric, value in ((np.nan, "edges", edges), (np.nan, "cross_cluster_edges", cross),
                                       (0.0, "max_abs_dual", 3.0 if v == "published" else 0.0),
                                       (1e4, "max_abs_dual", 7.0))]
    return pd.DataFrame(rows)


def test_a_claim_failing_in_every_variant_is_diagnosed_by_its_own_graph():
    """GTV Fig. 5: no lambda fuses two clusters that no edge joins; the diagnosis shows the
    learnt graph's edges between the clusters from the target's own table, per variant."""
    (text,) = claim_diagnoses("gtv_fig05_mnist_lambda", FUSION_CLAIM, {"gtv_fig05_mnist_lambda": _fig05_graph(0)})
    assert text.startswith("gtv_fig05_mnist_lambda: published: edges 160, cross_cluster_edges 0 | "
                           "paper: edges 122, cross_cluster_edges 0.")
    assert "no edge between the two clusters" in text
    claims = {"gtv_fig05_mnist_lambda": [
        {"claim": FUSION_CLAIM, "variant": v, "verdict": "fails", "kind": "paper", "detail": ""}
        for v in ("published", "paper")]}
    lines = failures_markdown(claims, {"gtv_fig05_mnist_lambda": _fig05_graph(0)})
    (line,) = [x for x in lines if x.startswith("- `gtv_fig05_mnist_lambda`")]
    assert "cross\\_cluster\\_edges 0" in line and "no diagnosing ablation" not in line


def test_the_duals_diagnosis_reads_the_largest_dual_at_the_smallest_lambda():
    (text,) = claim_diagnoses("gtv_fig05_mnist_lambda", "at lambda = 0 the dual variables stay 0",
                              {"gtv_fig05_mnist_lambda": _fig05_graph(0)})
    assert text.startswith("gtv_fig05_mnist_lambda: published: max_abs_dual 3 | paper: max_abs_dual 0.")
    assert "project_at_zero_lambda" in text


STAR_CLAIM = ("at lambda_min every w_i is within 5% (relative l2) of node i's local least-squares fit")


def test_a_failing_claim_of_a_target_without_variants_shows_its_diagnosis():
    """GTV Fig. 13 at A = 10 checks A = 1's claims: its failing local-fit claim is diagnosed by
    its own critical lambdas (their range over seeds), on the claims page too."""
    from networkedfl.pipeline.summary import claims_markdown

    table = pd.DataFrame([{"node": np.nan, "method": "theorem_2", "lam": np.nan, "seed": s,
                           "metric": "critical_lambda", "value": v} for s, v in ((0, 0.292), (1, 0.404))]
                         + [{"node": np.nan, "method": "primal_dual", "lam": 0.001, "seed": 0, "metric": "spread",
                             "value": 2.2}])
    diagnostics = {"gtv_fig13_star_weight10": table}
    (text,) = claim_diagnoses("gtv_fig13_star_weight10", STAR_CLAIM, diagnostics)
    assert text.startswith("gtv_fig13_star_weight10: critical_lambda 0.292-0.404. GTV's objective")
    assert claim_diagnoses("gtv_fig13_star_lambda", STAR_CLAIM, diagnostics) == []  # A = 1's own claim: none
    entries = [{"claim": STAR_CLAIM, "verdict": "fails", "kind": "paper", "detail": "", "test": "every_seed"}]
    row = next(line for line in claims_markdown({"gtv_fig13_star_weight10": entries}, diagnostics).splitlines()
               if "local least-squares" in line)
    assert "critical\\_lambda 0.292-0.404" in row and "variant" not in row.split("|")[-2]
