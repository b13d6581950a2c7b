"""The notebooks' figure functions and their helper (issue 18 items 3 and 5).

Every public function of ``experiments/<paper>/figures.py`` is smoke-tested on the test
profile's real table of the target that calls it (marker ``pipeline``: the session fixture
``built`` runs the whole test profile once); the report helper is tested on small tables.
"""

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from networkedfl.experiments import get_experiment  # noqa: E402
from networkedfl.experiments.fedrelax import figures as fedrelax  # noqa: E402
from networkedfl.experiments.gfl import figures as gfl  # noqa: E402
from networkedfl.experiments.gtv import figures as gtv  # noqa: E402
from networkedfl.experiments.lecture import figures as lecture  # noqa: E402
from networkedfl.experiments.report import DEVIATIONS_ROOT, Report, load_target  # noqa: E402

MODULES = {"gtv": gtv, "fedrelax": fedrelax, "gfl": gfl, "lecture": lecture}


# --- checks: each takes the target's table and returns nothing; they fail on a wrong result


#: (function, target, extra arguments ("params", "title" from the target's notebook parameters), check)
#: Helpers tested elsewhere or not figure functions (tests/unit/experiments/test_graph_aware_figures.py: the
#: chapter's curve helpers, drawn on axes the figures above create).


def test_every_paper_s_figures_module_offers_the_notebooks_helper():
    assert all(module.load_target is load_target for module in MODULES.values())


# --- the report helper, on small tables


@pytest.fixture
def outputs(tmp_path):
    """A results folder holding one GTV target's table and claims (two variants)."""
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    (results / "claims").mkdir()
    target = "gtv_fig03_chain_sampling"
    pd.DataFrame({"variant": ["published", "paper"], "metric": ["parameter_mse"] * 2, "value": [1.0, 2.0],
                  "seed": [0, 0]}).to_csv(results / "tables" / f"{target}.csv", index=False)
    verdicts = (("published", ("holds", "holds", "holds")), ("paper", ("holds", "fails", "inconclusive")))
    claims = [{"variant": v, "claim": f"{'[reference] ' if k == 2 else ''}claim {k}", "verdict": verdict,
               "kind": "reference" if k == 2 else "paper", "detail": "d"}
              for v, verdicts_ in verdicts for k, verdict in enumerate(verdicts_)]
    (results / "claims" / f"{target}.json").write_text(json.dumps(claims))
    (results / "reports").mkdir()
    (results / "reports" / f"{target}.params.yaml").write_text("target: x\nparams:\n  repetitions: 2\n")
    return target, results


def test_load_target_reads_the_pipeline_s_outputs_and_the_registry(outputs):
    target, results = outputs
    report = load_target(target, results=results, show=False)
    assert isinstance(report, Report) and len(report.table) == 2 and len(report.claims) == 6
    experiment = get_experiment(target)
    assert (report.title, report.source) == (experiment.title, experiment.source)
    assert report.figure_png == str(results / "figures" / f"{target}.png")
    assert report.claims_counts() == ["published: the paper's 2 statistical claims: 2 holds (checks: 1 holds)",
                                      "paper: the paper's 2 statistical claims: 1 holds, 1 fails (checks: 1 inconclusive)"]
    fixed = report.claims.assign(test=["fixed", "statistical", "statistical"] * 2,
                                 verdict=["holds", "equivalent", "holds", "holds", "equivalent", "inconclusive"])
    report.claims = fixed
    assert report.claims_counts()[1] == ("paper: the paper's 1 statistical claims: 1 equivalent; "
                                         "1 fixed or every-seed checks: 1 holds (checks: 1 inconclusive)")
    shown = report.show_claims().data
    assert list(shown.columns[:3]) == ["variant", "verdict", "claim"]
    assert report.deviations == tuple(experiment.deviations)
    assert report.params == {"repetitions": 2}  # what the pipeline passed to the notebook
    assert load_target(target, results=results, params={"a": 1}, show=False).params == {"a": 1}


def test_papermill_s_parameters_win_over_the_defaults(outputs, tmp_path):
    target, results = outputs
    table, claims = results / "tables" / f"{target}.csv", results / "claims" / f"{target}.json"
    report = load_target(target, str(table), str(claims), tmp_path / "f.pdf", tmp_path / "f.png", "T", "S",
                         {"plot_iterations": 3}, show=False)
    assert (report.title, report.source, report.params) == ("T", "S", {"plot_iterations": 3})
    assert report.table_path == str(table) and report.figure_pdf == str(tmp_path / "f.pdf")
    with pytest.raises(ValueError, match="without its claims"):
        load_target(target, str(table), show=False)


def test_the_header_links_every_deviation_from_the_rendered_report(outputs, repo, capsys, monkeypatch):
    target, results = outputs
    report = load_target(target, results=results, show=False)
    assert report.deviations, "the target depends on deviations"
    links = report.deviation_links()
    slug = report.deviations[0]
    assert links[0] == f"[{slug}]({DEVIATIONS_ROOT}/gtv.md#{slug})"
    # the link resolves from results/reports/<id>.html to the repository's page and heading
    page = (repo / "results" / "reports" / DEVIATIONS_ROOT / "gtv.md").resolve()
    assert f"### {slug}\n" in page.read_text(encoding="utf-8")
    shown = []
    monkeypatch.setattr("networkedfl.experiments.report._display", lambda *objs: shown.extend(objs))
    assert report.show_header() is report
    assert shown[0].data.startswith(f"**{report.source}**: {report.title}") and links[-1] in shown[0].data
    assert capsys.readouterr().out == f"2 rows from {results / 'tables' / f'{target}.csv'}\n"


def test_claims_are_counted_per_variant_or_in_total(outputs, capsys):
    target, results = outputs
    report = load_target(target, results=results, show=False)
    styled = report.show_claims()
    assert capsys.readouterr().out.splitlines() == report.claims_counts()
    html = styled.to_html()
    assert "color: red" in html and "color: green" in html and "color: darkorange" in html
    report.claims = report.claims.drop(columns="variant")
    assert report.claims_counts() == ["the paper's 4 statistical claims: 3 holds, 1 fails (checks: 1 holds, 1 inconclusive)"]
    report.claims = report.claims.assign(verdict=report.claims["verdict"].replace("fails", "equivalent"))
    assert "color: steelblue" in report.show_claims().to_html()  # the equivalent verdict has its colour


def test_show_figure_writes_the_pdf_and_png(outputs, tmp_path):
    target, results = outputs
    report = load_target(target, results=results, show=False)
    report.figure_pdf, report.figure_png = str(tmp_path / "a" / "x.pdf"), str(tmp_path / "a" / "x.png")
    (tmp_path / "a").mkdir()
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    report.show_figure(fig)
    assert (tmp_path / "a" / "x.pdf").read_bytes().startswith(b"%PDF")
    assert (tmp_path / "a" / "x.png").read_bytes().startswith(b"\x89PNG")
    report.figure_pdf = None
    with pytest.raises(ValueError, match="no figure paths"):
        report.show_figure(fig)
    plt.close(fig)


def test_show_tuning_shows_the_chosen_points_and_returns_the_grid(outputs, monkeypatch):
    target, results = outputs
    report = load_target(target, results=results, show=False)
    report.table = pd.DataFrame([
        {"method": "A", "tuning_point": k, "tuning_values": f"lr={v}", "metric": "tuning_validation_loss", "value": v}
        for k, v in enumerate((2.0, 1.0))] + [
        {"method": "A", "tuning_point": 1, "tuning_values": "lr=1.0", "metric": "tuning_chosen", "value": 1.0}])
    shown = []
    monkeypatch.setattr("networkedfl.experiments.report._display", lambda *objs: shown.extend(objs))
    grid = report.show_tuning()
    assert list(shown[0].index) == ["A"] and shown[0].loc["A", "grid point"] == "lr=1.0"
    assert list(grid.index) == ["lr=2.0", "lr=1.0"] and list(grid["A"]) == [2.0, 1.0]


def test_the_reader_s_check_is_printed_under_a_result_figure_and_names_each_problem():
    """show_figure's check (issue 41: the default build checks the figures it draws): a clean
    result figure says so, an unlabelled curve is named, a diagram is not checked."""
    from networkedfl.experiments.report import FIGURE_CHECK, figure_check_lines

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="FedAvg")
    ax.legend()
    assert figure_check_lines(fig, "figure") == [f"{FIGURE_CHECK} no problems"]
    ax.plot([0, 1], [1, 3], color="tab:red")  # no legend entry, no direct label
    lines = figure_check_lines(fig, "figure")
    assert lines[0] == f"{FIGURE_CHECK} 1 problem(s)" and "legend" in lines[1]
    assert figure_check_lines(fig, "diagram") == []
    plt.close(fig)
