"""Every text from a results file that reaches HTML is escaped (issue 45): the reports (the
notebook's claims table and header, through papermill and nbconvert as the pipeline renders
them), the index page and the gallery's Markdown."""

import json
import re

import pandas as pd
import pytest

from networkedfl.experiments.report import escape_markdown, escaped_style, load_target
from networkedfl.pipeline.summary import (
    ablation_markdown,
    claims_markdown,
    gallery_markdown,
    markdown_table,
    render_index,
    summarize_claims,
    tuning_markdown,
)

TARGET = "gtv_fig03_chain_sampling"
SCRIPT, IMAGE, LINK = "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[click](javascript:alert(1))"
HOSTILE = f"{SCRIPT} {IMAGE} {LINK}"


def _no_markup_survives(page: str) -> None:
    """No tag or link made from the hostile text: neither its raw tags, nor an element of
    the HTML they would make, nor a javascript: link."""
    assert "<script>alert" not in page and "<img src=x" not in page and "onerror=alert(1)>" not in page
    assert not re.search(r"<img[^>]*onerror", page) and not re.search(r'href="javascript:', page)


def _hostile_claims():
    return [{"variant": "published", "claim": f"claim {HOSTILE}", "verdict": "fails", "kind": "paper",
             "detail": HOSTILE, "effect_label": SCRIPT, "effect": IMAGE, "interval": [SCRIPT, IMAGE],
             "n_seeds": 3},
            {"variant": f"v{SCRIPT}", "claim": "c", "verdict": f"holds{IMAGE}", "kind": "paper", "detail": "d"}]


@pytest.fixture
def outputs(tmp_path):
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    (results / "claims").mkdir()
    pd.DataFrame({"metric": ["parameter_mse"], "value": [1.0], "seed": [0]}).to_csv(
        results / "tables" / f"{TARGET}.csv", index=False)
    (results / "claims" / f"{TARGET}.json").write_text(json.dumps(_hostile_claims()))
    return results


def test_markdown_escaping_keeps_the_text_and_drops_the_markup():
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    escaped = escape_markdown(HOSTILE + " a|b *c* `d` \\")
    page = markdown2html_mistune(escaped)
    _no_markup_survives(page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "[click](javascript:alert(1))" in page
    assert "a|b *c* `d` \\" in page  # shown as typed
    assert escape_markdown("plain text, 0.5") == "plain text, 0.5"


def test_the_claims_table_and_the_header_of_a_report_are_escaped(outputs):
    report = load_target(TARGET, results=outputs, show=False)
    report.title, report.source = f"title {HOSTILE}", SCRIPT
    page = report.show_claims().to_html()
    _no_markup_survives(page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "color: red" in page  # shown, styled
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    _no_markup_survives(markdown2html_mistune(report.header_markdown()))
    table = pd.DataFrame({SCRIPT: [IMAGE]}, index=pd.Index([SCRIPT]))
    _no_markup_survives(escaped_style(table).format({SCRIPT: str}, escape="html").to_html())


def test_a_report_rendered_as_the_pipeline_renders_it_holds_no_tag_from_the_claims(outputs, tmp_path):
    """The notebook path: papermill executes the report helper's calls on a claims file
    holding markup and nbconvert's HTML exporter renders it (workflow/scripts/
    render_notebook.py, render_html.py); the text is on the page, its tags are not."""
    import nbformat
    import papermill
    from nbconvert import HTMLExporter

    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                 "display_name": "Python 3"}})
    notebook.cells = [
        nbformat.v4.new_code_cell("results = None", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("from networkedfl.experiments.report import load_target\n"
                                  f"report = load_target({TARGET!r}, results=results, title={HOSTILE!r})\n"
                                  "report.show_claims()"),
    ]
    source = tmp_path / "report.ipynb"
    nbformat.write(notebook, source)
    executed = papermill.execute_notebook(str(source), None, parameters={"results": str(outputs)},
                                          progress_bar=False, kernel_name="python3")
    page, _ = HTMLExporter().from_notebook_node(executed)
    _no_markup_survives(page)  # nbconvert's own <script> tags aside, none from the claims or the title
    shown = [o for cell in executed.cells for o in cell.get("outputs", []) if "data" in o]
    assert any("text/markdown" in o["data"] for o in shown) and any("text/html" in o["data"] for o in shown)
    assert "&lt;img src=x onerror=alert(1)&gt;" in page  # the claims' text is shown


def test_the_index_page_escapes_every_text_of_the_summary():
    summary = summarize_claims({TARGET: _hostile_claims()})
    summary["title"], summary["source"] = HOSTILE, SCRIPT
    links = {TARGET: {"report": "reports/x.html", "png": "figures/x.png"}}
    page = render_index(summary, links)
    _no_markup_survives(page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_gallery_s_markdown_shows_markup_as_text():
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    claims = {TARGET: _hostile_claims()}
    table = pd.DataFrame({"method": [HOSTILE], SCRIPT: [1.0]})
    pages = [gallery_markdown(summarize_claims(claims), {TARGET: {"repetitions": 2}}),
             claims_markdown(claims), markdown_table(table)]
    tuning = pd.DataFrame({"metric": ["tuning_validation_loss", "tuning_chosen"], "method": [HOSTILE, HOSTILE],
                           "tuning_point": [0, 0], "tuning_values": [SCRIPT, SCRIPT], "value": [1.0, 1.0]})
    pages.append(tuning_markdown({TARGET: tuning}))
    for page in pages:
        html = markdown2html_mistune(page)
        _no_markup_survives(html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown2html_mistune(pages[1])
    assert "`published`" in pages[0]  # a plain variant name stays code


def test_the_ablation_page_escapes_its_table_s_text():
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    table = pd.DataFrame({"case": [SCRIPT] * 2, "method": [IMAGE] * 2, "switch": ["published", LINK],
                          "metric": ["label_mse"] * 2, "value": [1.0, 2.0], "seed": [0, 0]})
    page = ablation_markdown(table)
    _no_markup_survives(markdown2html_mistune(page))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown2html_mistune(page)


def test_an_inferred_claim_carries_its_tag_to_the_report_and_the_gallery(outputs):
    """Issue 40 item 4: EXPERIMENTS.md's [inferred] tag is a field set where the claim is
    built (registry.inferred), written to the claims file and shown beside the claim text,
    escaped, in the notebook's claims table and the gallery's claims page."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    from networkedfl.experiments.gtv.claims import chain_sampling_claims
    from networkedfl.experiments.registry import Claim, inferred

    tagged = inferred(Claim(f"c {SCRIPT}", "holds", "d"))[0]
    assert tagged.inferred and tagged.as_dict()["inferred"] is True and not Claim("c", "holds", "d").inferred
    rows = [{"penalty": p, "M": m, "eps": e, "seed": s, "method": "primal_dual", "metric": "parameter_mse",
             "value": (1 + s) * (2.0 if p == "mocha" else 1.0) * (1 + e) / m}
            for p in ("l1", "nlasso", "mocha") for m in (0.2, 0.6) for e in (0.1, 0.9) for s in range(3)]
    flags = [c.inferred for c in chain_sampling_claims(pd.DataFrame(rows), {})]
    assert flags == [False, True, True]  # Fig. 3: the first [paper], the others [inferred]
    entries = [{**tagged.as_dict(), "variant": "published"}, Claim("plain", "holds", "d").as_dict()]
    (outputs / "claims" / f"{TARGET}.json").write_text(json.dumps(entries))
    page = load_target(TARGET, results=outputs, show=False).show_claims().to_html()
    _no_markup_survives(page)
    assert "[inferred]" in page and page.count("[inferred]") == 1
    gallery = claims_markdown({TARGET: entries})
    html = markdown2html_mistune(gallery)
    _no_markup_survives(html)
    assert html.count("[inferred]") == 1 and "&lt;script&gt;alert(1)&lt;/script&gt; [inferred]" in html
