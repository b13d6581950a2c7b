"""Every target names the deviations from its paper that it depends on, by the stable names
of ``docs/deviations/<paper>.md`` (issue 18): the names in the code, the headings of the
pages and the index agree, and nothing cites a deviation by a number."""

import re
from pathlib import Path

import pytest

from networkedfl.experiments import (
    DEVIATIONS,
    EXPERIMENTS,
    deviation_link,
    deviation_paper,
    get_experiment,
)
from networkedfl.experiments.deviations import TARGETLESS

ROOT = Path(__file__).resolve().parents[3]
PAGES = ROOT / "docs" / "deviations"
PAPERS = ("gtv", "fedrelax", "gfl", "lecture")


def _headings(paper: str) -> list[str]:
    return re.findall(r"^### (\S+)\s*$", (PAGES / f"{paper}.md").read_text(encoding="utf-8"), re.M)


def test_the_table_lists_the_headings_of_every_page_in_order():
    assert list(DEVIATIONS) == [slug for paper in PAPERS for slug in _headings(paper)]
    assert all(DEVIATIONS[slug] == paper for paper in PAPERS for slug in _headings(paper))


def test_every_deviation_a_target_names_is_a_heading_of_its_papers_page():
    wrong = [(target, slug) for target, e in EXPERIMENTS.items() for slug in e.deviations
             if slug not in _headings(deviation_paper(slug))]
    assert not wrong
    assert all(e.deviations for e in EXPERIMENTS.values()), "every target names at least claims-means"


def test_every_deviation_is_named_by_a_target_or_listed_as_targetless():
    named = {slug for e in EXPERIMENTS.values() for slug in e.deviations}
    assert named.isdisjoint(TARGETLESS)
    assert named | TARGETLESS == set(DEVIATIONS)


def test_the_index_lists_the_targets_that_name_each_deviation():
    index = (PAGES / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[([a-z0-9-]+)\]\((\w+)\.md#([a-z0-9-]+)\) \|[^|]*\| (.*) \|$", index, re.M)
    assert [slug for slug, *_ in rows] == list(DEVIATIONS)
    for slug, paper, anchor, targets in rows:
        assert (anchor, paper) == (slug, DEVIATIONS[slug])
        named = {t for t, e in EXPERIMENTS.items() if slug in e.deviations}
        listed = set(EXPERIMENTS) if targets == "every target" else set(re.findall(r"`(\w+)`", targets))
        assert listed == named, slug


def test_the_ablations_depend_on_what_their_sources_depend_on():
    linear = get_experiment("gtv_quirk_ablation").deviations
    assert set(linear) == (set(get_experiment("gtv_fig09_sbm_sampling").deviations)
                           | set(get_experiment("gtv_table1_highdim_sbm").deviations))
    mnist = get_experiment("gtv_quirk_ablation_mnist").deviations
    assert set(mnist) == set(get_experiment("gtv_fig06_mnist_methods").deviations) - {"mnist-claims"}


def test_deviations_are_kept_once_in_the_order_of_the_pages_and_unknown_names_are_refused():
    from networkedfl.experiments import Experiment

    e = Experiment(id="x", kind="table", source="", title="", run=None, claims=None,
                   deviations=("lecture-demo", "step-sizes", "lecture-demo"))
    assert e.deviations == ("step-sizes", "lecture-demo")
    with pytest.raises(ValueError, match="no-such-deviation"):
        Experiment(id="x", kind="table", source="", title="", run=None, claims=None,
                   deviations=("no-such-deviation",))


def test_links():
    assert deviation_paper("fesem") == "gfl"
    assert deviation_link("step-sizes") == "docs/deviations/gtv.md#step-sizes"
    assert deviation_link("lecture-demo", "../../docs/deviations") == "../../docs/deviations/lecture.md#lecture-demo"
    with pytest.raises(KeyError, match="unknown deviation"):
        deviation_paper("nope")


def test_no_file_cites_a_deviation_by_number():
    paths = [ROOT / "README.md"] + [path for folder in ("docs", "config", "src", "notebooks", "workflow")
                                    for path in sorted((ROOT / folder).rglob("*")) if path.is_file()]
    number = re.compile(r"deviations? (no\.? ?)?[0-9]", re.I)
    cited = []
    for path in paths:
        if any(part.endswith(".egg-info") or part == "__pycache__" for part in path.parts):
            continue  # built, not written
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        cited += [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
                  for n, line in enumerate(text.splitlines(), 1) if number.search(line)]
    assert not cited, "cite a deviation by its name and link (docs/deviations/):\n" + "\n".join(cited)
