"""The papers the targets reproduce, and each paper's targets in the order the paper presents them.

A target's paper is its id's prefix and its place is the ``order`` it is registered with
(:class:`.registry.Experiment`): the papers' own order of figures and tables; targets that are not in a paper (the GTV quirk ablations and
the step scan) come after the paper's own. The gallery, ``claims.md``, the index page and
``docs/targets.md`` list targets in this order; ``tests/unit/experiments/test_papers.py``
checks that every registered target belongs to a paper and has a place of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from .registry import EXPERIMENTS

__all__ = ["PAPERS", "Paper", "ordered_targets", "paper_of"]


@dataclass(frozen=True)
class Paper:
    """One paper: its key (the targets' id prefix), how it is cited and the file it is in."""

    key: str
    name: str
    citation: str
    file: str

    @property
    def targets(self) -> tuple[str, ...]:
        """The registered targets of this paper, in their registered order."""
        mine = [e for e in EXPERIMENTS.values() if e.paper == self.key]
        return tuple(e.id for e in sorted(mine, key=lambda e: (e.order, e.id)))


PAPERS: tuple[Paper, ...] = (
    Paper("gtv", "GTV paper", "Sarcheshmehpour, Tian, Zhang & Jung, Clustered federated learning via generalized "
          "total variation minimization, IEEE TSP 2023", "sarcheshmehpour-2023-clustered-fl-gtv-minimization.txt"),
    Paper("fedrelax", "FedRelax", "Abdurakhmanova, Sarcheshmehpour & Jung, Towards model-agnostic federated "
          "learning over networks (FedRelax), 2024", "abdurakhmanova-2024-fedrelax.md"),
    Paper("gfl", "Graph-aware FL chapter", "Lu, Xing & Yu, graph-aware federated learning (book chapter)",
          "lu-xing-yu-graph-aware-fl-chapter.md"),
    Paper("lecture", "Lecture", "Tham, distributed machine learning lecture: FedSGD and FedAvg",
          "tham-lecture-distributed-ml-fedavg.md"),
)


def paper_of(target: str) -> Paper:
    """The paper ``target`` reproduces (by its id's prefix)."""
    for paper in PAPERS:
        if target in EXPERIMENTS and EXPERIMENTS[target].paper == paper.key:
            return paper
    raise KeyError(f"target {target!r} is in no paper's list (a registered target whose id starts with a key "
                   "of networkedfl.experiments.papers.PAPERS)")


def ordered_targets(targets: list[str] | tuple[str, ...]) -> list[str]:
    """``targets`` in the papers' order (papers in :data:`PAPERS` order, then each paper's)."""
    rank = {t: i for i, t in enumerate(t for p in PAPERS for t in p.targets)}
    unknown = [t for t in targets if t not in rank]
    if unknown:
        raise KeyError(f"targets in no paper's list (a registered target whose id starts with a key of "
                       f"networkedfl.experiments.papers.PAPERS): {unknown}")
    return sorted(targets, key=rank.__getitem__)
