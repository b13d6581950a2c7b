"""networkedfl.plotting.check_figure: each rule a reader applies, on small figures that break it."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from networkedfl.plotting import check_figure  # noqa: E402

X = np.arange(10.0)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _legend(ax):
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1))


def test_a_clean_figure_passes():
    fig, (a, b) = plt.subplots(1, 2)
    for ax in (a, b):
        ax.plot(X, X, color="C0", label="FedAvg")
        ax.fill_between(X, 0.9 * X, 1.1 * X, color="C0", alpha=0.2)
        ax.plot(X, 2 * X + 1, color="C1", ls="--", label="Oracle")
        ax.set_ylabel("test loss (MSE)")
    _legend(b)  # one legend for both panels: the same colours mean the same methods
    assert check_figure(fig) == []


def test_a_series_without_legend_entry_is_found():
    """Today's Fig. 10.1: the left panel draws methods that only the right panel's legend
    could name, and it names others."""
    fig, (a, b) = plt.subplots(1, 2)
    a.plot(X, X, color="C0", label="FedAvg")
    a.plot(X, X + 5, color="k", ls="--", label="Oracle")
    b.plot(X, X, color="C1", label="DFL-SGD")
    _legend(b)
    problems = check_figure(fig)
    assert any(p.startswith("an untitled axes: FedAvg") and "no legend entry" in p for p in problems), problems
    assert any("Oracle (#000000) has no legend entry" in p for p in problems), problems
    a.legend()
    assert check_figure(fig) == []


def test_a_series_named_by_a_text_of_its_colour_passes():
    fig, ax = plt.subplots()
    ax.plot(X, X, color="C0")
    ax.plot(X, X + 3, color="C1")
    ax.set_ylabel("weight")
    assert len([p for p in check_figure(fig) if "no legend entry" in p]) == 2
    ax.text(9, 9, "leaf 1", color="C0")
    ax.text(9, 12, "leaf 2", color="C1")
    assert check_figure(fig) == []


def test_the_only_curve_of_a_panel_is_named_by_its_axis_label():
    fig, ax = plt.subplots()
    ax.plot(X, X)
    ax.set_ylabel("spread")
    assert check_figure(fig) == []
    ax.set_ylabel("")
    assert any("no legend entry" in p for p in check_figure(fig))


def test_a_line_style_missing_from_the_legend_is_found():
    """A dashed twin (the paper variant) needs the dashed style in a legend."""
    fig, ax = plt.subplots()
    ax.plot(X, X, color="C0", label="lambda = 1")
    ax.plot(X, 2 * X + 1, color="C0", ls="--")
    _legend(ax)
    assert any("unlabelled line" in p for p in check_figure(fig))
    handles, labels = ax.get_legend_handles_labels()
    ax.legend([*handles, plt.Line2D([], [], color="0.2", ls="--")], [*labels, "paper"])
    assert check_figure(fig) == []


def test_two_series_of_one_colour_and_style_are_found():
    fig, ax = plt.subplots()
    ax.plot(X, X, color="C0", label="a")
    ax.plot(X, X + 4, color="C0", label="b")
    _legend(ax)
    assert any("share colour and style" in p for p in check_figure(fig))
    ax.get_lines()[1].set_linestyle(":")
    _legend(ax)
    assert not any("share colour and style" in p for p in check_figure(fig))


def test_a_curve_on_another_must_be_marked():
    fig, ax = plt.subplots()
    ax.plot(X, X + 1, color="C0", label="lambda = 1")
    ax.plot(X, (X + 1) * 1.005, color="C1", label="lambda = 10000")  # within 1 %: drawn on top
    _legend(ax)
    assert any("lies on" in p and "nothing says so" in p for p in check_figure(fig))
    assert check_figure(fig, tol=0.001) == []  # farther apart than that tolerance
    ax.annotate("lambda = 10000 lies on lambda = 1", (2, 3))
    assert check_figure(fig) == []


def test_a_marked_overlap_in_the_label_passes():
    fig, ax = plt.subplots()
    ax.plot(X, X + 1, color="C0", label="IFCA")
    ax.plot(X, X + 1, color="C1", ls="--", label="FedAvg (coincides with IFCA)")
    _legend(ax)
    assert check_figure(fig) == []


def test_a_note_in_a_label_no_legend_shows_does_not_mark_an_overlap():
    fig, (a, b) = plt.subplots(1, 2)
    for ax in (a, b):
        ax.plot(X, X + 1, color="C0", label="DFL-SGD")
    b.plot(X, X + 1, color="C1", label="DFL-GT (coincides with DFL-SGD)")  # the note is only in the label
    a.plot(X, 2 * X + 1, color="C1", label="DFL-GT")
    fig.legend(*a.get_legend_handles_labels(), loc="upper left", bbox_to_anchor=(1.0, 1.0))
    assert any("lies on" in p for p in check_figure(fig))


def test_curves_apart_somewhere_are_not_overlaps():
    fig, ax = plt.subplots()
    ax.plot(X, X + 1, color="C0", label="a")
    ax.plot(X, np.where(X < 5, X + 1, 2 * X), color="C1", label="b")
    _legend(ax)
    assert check_figure(fig) == []


def test_one_colour_with_two_meanings_across_panels_is_found():
    """Today's FedRelax Fig. 3: C0 is alpha = 0.01 in two panels and alpha = 0 in the third."""
    fig, (a, b) = plt.subplots(1, 2)
    a.plot(X, X, color="C0", label=r"$\alpha$ = 0.01")
    b.plot(X, X, color="C0", label=r"$\alpha$ = 0")
    b.plot(X, X + 4, color="C1", label=r"$\alpha$ = 0.01")
    a.legend(loc="upper left", bbox_to_anchor=(0, -0.2))
    b.legend(loc="upper left", bbox_to_anchor=(0, -0.2))
    assert any("means" in p and "= 0.01" in p for p in check_figure(fig)), check_figure(fig)
    b.get_lines()[1].set_color("C0")
    b.get_lines()[0].set_color("C2")
    a.legend(loc="upper left", bbox_to_anchor=(0, -0.2))
    b.legend(loc="upper left", bbox_to_anchor=(0, -0.2))
    assert check_figure(fig) == []


def test_notes_in_brackets_do_not_change_a_meaning():
    fig, (a, b) = plt.subplots(1, 2)
    a.plot(X, X, color="C0", label="FedAvg")
    b.plot(X, X, color="C0", label="FedAvg (≈ Oracle, within 1%)")
    a.legend()
    b.legend()
    assert not any("means" in p for p in check_figure(fig))


@pytest.mark.parametrize(("ylabel", "lower", "upper", "bad"), [
    ("validation accuracy", 0.8, 1.05, True),   # above 1
    ("validation accuracy", 0.8, 1.0, False),
    ("test loss (MSE)", -0.1, 1.0, True),       # below 0
    ("weights", -0.1, 2.0, False),              # a quantity of no known range
])
def test_bands_outside_the_quantitys_range_are_found(ylabel, lower, upper, bad):
    fig, ax = plt.subplots()
    ax.plot(X, np.full_like(X, 0.9), color="C0", label="Alg. 1")
    ax.fill_between(X, lower, upper, color="C0", alpha=0.2)
    ax.set_ylabel(ylabel)
    _legend(ax)
    assert any("outside the range" in p for p in check_figure(fig)) is bad


def test_a_log_axis_accepts_a_band_below_zero():
    fig, ax = plt.subplots()
    ax.plot(X, X + 1, color="C0", label="a")
    ax.fill_between(X, -X, 2 * X + 2, color="C0", alpha=0.2)
    ax.set_ylabel("parameter MSE")
    ax.set_yscale("log")
    _legend(ax)
    assert check_figure(fig) == []


def test_error_bar_caps_and_reference_lines_are_decorations():
    fig, ax = plt.subplots()
    ax.errorbar(X, X + 1, yerr=0.5, color="C0", capsize=2, label="alpha = 1")
    ax.axhline(1.0, color="0.5", ls="--")  # unlabelled: a reference line
    _legend(ax)
    assert check_figure(fig) == []
    ax.axhline(2.0, color="C3", label="Predict the mean")  # labelled: a series, needs its entry
    assert any("Predict the mean" in p for p in check_figure(fig))


def test_coinciding_curves_within_one_percent_across_variants():
    """GTV Fig. 5: lambda = 1e4 lies on lambda = 1 within 1 % (not exactly); the paper
    variant's curve is compared with the published ones too."""
    import pandas as pd

    from networkedfl.plotting import coinciding_curves

    it = [0, 1, 2]
    rows = [("published", "lambda = 1", [0.5, 0.9, 0.97]), ("published", "lambda = 10000", [0.5, 0.905, 0.975]),
            ("published", "lambda = 0", [0.5, 0.7, 0.8]), ("paper", "lambda = 1", [0.5, 0.7, 0.801]),
            ("paper", "lambda = 0", [0.5, 0.6, 0.6])]
    stats = pd.DataFrame([{"variant": v, "curve": c, "iteration": i, "mean": m}
                          for v, c, means in rows for i, m in zip(it, means, strict=True)])
    assert coinciding_curves(stats) == {("published", "lambda = 10000"): ("published", "lambda = 1"),
                                        ("paper", "lambda = 1"): ("published", "lambda = 0")}
    assert coinciding_curves(stats, rtol=0.001) == {}


def test_overlap_start_is_where_two_curves_run_together_to_the_end():
    """Issue 41: GTV Fig. 6's published IFCA parts from Alg. 1 in the first iterations and
    lies on it for the rest; a whole-curve rule never saw it."""
    from networkedfl.plotting import OVERLAP_MIN_POINTS, overlap_start

    a = np.column_stack([X, X + 10.0])
    joins = np.column_stack([X, np.where(X < 3, 2 * X + 20.0, X + 10.0)])
    parts = np.column_stack([X, np.where(X < 7, X + 10.0, 3 * X)])
    assert overlap_start(a, joins) == 3.0  # apart at 0, 1, 2; together from 3 to the end (7 of 10)
    assert overlap_start(a, parts) is None  # together first, apart at the end: distinguishable
    assert overlap_start(a, a[:2]) == 0.0  # together throughout, at any number of points
    late = np.column_stack([X, np.where(X < 10 - OVERLAP_MIN_POINTS + 1, X + 30.0, X + 10.0)])
    assert overlap_start(a, late) is None  # together at fewer than OVERLAP_MIN_POINTS: not counted


def test_a_curve_that_joins_another_must_be_marked_with_where():
    fig, ax = plt.subplots()
    ax.plot(X, X + 10.0, color="C0", label="Alg. 1")
    ax.plot(X, np.where(X < 3, 2 * X + 20.0, X + 10.0), color="C1", label="IFCA")
    _legend(ax)
    (problem,) = check_figure(fig)
    assert "lies on" in problem and "from x = 3" in problem
    ax.get_lines()[1].set_label("IFCA\n(coincides with Alg. 1 from iteration 3)")  # a wrapped note counts
    _legend(ax)
    assert check_figure(fig) == []


def test_a_statement_that_all_curves_coincide_marks_every_pair():
    fig, ax = plt.subplots()
    for k in range(3):
        ax.plot(X, np.where(X < 3, X + 10.0 * k, X), color=f"C{k}", label=f"node {k}")
    _legend(ax)
    assert len(check_figure(fig)) == 3  # three pairs lie together from x = 3
    ax.legend(title="all nodes coincide once fused", loc="upper left", bbox_to_anchor=(1.02, 1))
    assert check_figure(fig) == []
