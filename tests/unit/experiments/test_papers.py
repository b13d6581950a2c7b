"""Every registered target belongs to exactly one paper, listed in the paper's order."""

import math

import pytest

from networkedfl.experiments import EXPERIMENTS
from networkedfl.experiments.papers import PAPERS, ordered_targets, paper_of


def test_every_registered_target_is_listed_once_under_its_paper():
    listed = [t for p in PAPERS for t in p.targets]
    assert sorted(listed) == sorted(EXPERIMENTS)
    assert len(listed) == len(set(listed))
    for paper in PAPERS:
        assert all(t.startswith(f"{paper.key}_") for t in paper.targets)


def test_every_target_has_a_place_of_its_own_in_its_paper():
    """Registered with a finite ``order``, no two targets of a paper at the same place."""
    for paper in PAPERS:
        orders = [EXPERIMENTS[t].order for t in paper.targets]
        assert all(math.isfinite(o) for o in orders), paper.key
        assert len(set(orders)) == len(orders), paper.key


def test_targets_sort_in_the_papers_order():
    shuffled = ["lecture_fig1_fedsgd_vs_fedavg", "gtv_fig13_star_lambda", "gtv_fig01_empirical_graph",
                "gfl_fig10_1_dfl", "gtv_table1_highdim_sbm"]
    assert ordered_targets(shuffled) == ["gtv_fig01_empirical_graph", "gtv_table1_highdim_sbm",
                                         "gtv_fig13_star_lambda", "gfl_fig10_1_dfl",
                                         "lecture_fig1_fedsgd_vs_fedavg"]
    assert paper_of("gfl_fig10_4_reviews_nlp").key == "gfl"
    with pytest.raises(KeyError, match="no paper"):
        ordered_targets(["gtv_fig99"])
