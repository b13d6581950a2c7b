"""The papers the targets reproduce, and each paper's targets in the order the paper presents them.

The order is the papers' own order of figures and tables (docs/targets.md); targets that are not in a paper (the GTV quirk ablations and the step scan) come
after the paper's own.  The gallery, ``claims.md`` and the index page list targets in this
order; ``tests/unit/experiments/test_papers.py`` checks that every registered target is here
exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PAPERS", "Paper", "ordered_targets", "paper_of"]


@dataclass(frozen=True)
class Paper:
    """One paper: its key (the targets' id prefix), how it is cited and its targets in order."""

    key: str
    name: str
    citation: str
    file: str
    targets: tuple[str, ...]


PAPERS: tuple[Paper, ...] = (
    Paper("gtv", "GTV paper", "Sarcheshmehpour, Tian, Zhang & Jung, Clustered federated learning via generalized "
          "total variation minimization, IEEE TSP 2023", "sarcheshmehpour-2023-clustered-fl-gtv-minimization.txt", (
              "gtv_fig01_empirical_graph", "gtv_table1_highdim_sbm", "gtv_fig02_num_clusters",
              "gtv_fig03_chain_sampling", "gtv_fig04_chain_noise", "gtv_fig05_mnist_lambda",
              "gtv_fig06_mnist_methods", "gtv_table2_mnist_clusters", "gtv_fig07_mnist_five_clusters",
              "gtv_fig08_cluster_graph", "gtv_fig09_sbm_sampling", "gtv_fig10_sbm_noise", "gtv_table3_covariance",
              "gtv_fig11_unbalanced", "gtv_fig12_star_graph", "gtv_fig13_star_lambda",
              # not in the paper: the notebooks' behaviours switched one at a time, the step scan
              "gtv_quirk_ablation", "gtv_quirk_ablation_mnist", "gtv_mnist_step_scan",
          )),
    Paper("fedrelax", "FedRelax", "Abdurakhmanova, Sarcheshmehpour & Jung, Towards model-agnostic federated "
          "learning over networks (FedRelax), 2024", "abdurakhmanova-2024-fedrelax.md", (
              "fedrelax_fig01a_dm_ratio", "fedrelax_fig01b_convergence", "fedrelax_fig01c_baselines",
              "fedrelax_fig02a_trees_dm", "fedrelax_fig02b_trees_noise", "fedrelax_fig03_noniid_linear",
              "fedrelax_fig04_noniid_trees", "fedrelax_fig05a_variation_noise",
              "fedrelax_fig05b_variation_connectivity",
          )),
    Paper("gfl", "Graph-aware FL chapter", "Lu, Xing & Yu, graph-aware federated learning (book chapter)",
          "lu-xing-yu-graph-aware-fl-chapter.md", (
              "gfl_fig10_1_dfl", "gfl_fig10_2_homologous_graphs", "gfl_table10_1_settings", "gfl_fig10_3_synthetic",
              "gfl_fig10_4_reviews_nlp", "gfl_table10_2_review_stats",
          )),
    Paper("lecture", "Lecture", "Tham, distributed machine learning lecture: FedSGD and FedAvg",
          "tham-lecture-distributed-ml-fedavg.md", (
              "lecture_table1_fedsgd_fedavg", "lecture_fig1_fedsgd_vs_fedavg",
          )),
)


def paper_of(target: str) -> Paper:
    """The paper ``target`` reproduces (by its id's prefix)."""
    for paper in PAPERS:
        if target in paper.targets:
            return paper
    raise KeyError(f"target {target!r} is in no paper's list (networkedfl.experiments.papers.PAPERS)")


def ordered_targets(targets: list[str] | tuple[str, ...]) -> list[str]:
    """``targets`` in the papers' order (papers in :data:`PAPERS` order, then each paper's)."""
    rank = {t: i for i, t in enumerate(t for p in PAPERS for t in p.targets)}
    unknown = [t for t in targets if t not in rank]
    if unknown:
        raise KeyError(f"targets in no paper's list (networkedfl.experiments.papers.PAPERS): {unknown}")
    return sorted(targets, key=rank.__getitem__)
