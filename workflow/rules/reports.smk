# Plotting and reports: each target's notebook is executed by papermill on the target's
# table and claims (no experiment reruns) and rendered to HTML, both through their Python
# APIs in script jobs (common.smk: every rule is a script rule, whatever the checkout's path).


rule notebook_parameters:
    input:
        table=PATHS.table(),
        claims=PATHS.claims(),
    output:
        PATHS.notebook_params(),
    log:
        PATHS.log("notebook_params", "{target}"),
    conda:
        CONDA_ENV
    params:
        experiment=experiment_params,
        figure_pdf=lambda wc: PATHS.figure(wc.target, "pdf"),
        figure_png=lambda wc: PATHS.figure(wc.target, "png"),
    localrule: True
    script:
        "../scripts/write_notebook_params.py"


rule render_figure_notebook:
    input:
        notebook=notebook,
        params=PATHS.notebook_params(),
        table=PATHS.table(),
        claims=PATHS.claims(),
    output:
        notebook=PATHS.executed_notebook(),
        pdf=report(
            PATHS.figure(ext="pdf"),
            caption="../report/figure.rst",
            category="{target}",
        ),
        png=report(
            PATHS.figure(ext="png"),
            caption="../report/figure.rst",
            category="{target}",
        ),
        notebook_provenance=PATHS.executed_notebook() + PROVENANCE,
        pdf_provenance=PATHS.figure(ext="pdf") + PROVENANCE,
        png_provenance=PATHS.figure(ext="png") + PROVENANCE,
    log:
        PATHS.log("notebooks", "{target}"),
    conda:
        CONDA_ENV
    params:
        caption=report_caption,
        code=notebook_code_version,
    wildcard_constraints:
        target=_alternation(FIGURE_TARGETS),
    script:
        "../scripts/render_notebook.py"


rule render_table_notebook:
    input:
        notebook=notebook,
        params=PATHS.notebook_params(),
        table=PATHS.table(),
        claims=PATHS.claims(),
    output:
        notebook=PATHS.executed_notebook(),
        notebook_provenance=PATHS.executed_notebook() + PROVENANCE,
    log:
        PATHS.log("notebooks", "{target}"),
    conda:
        CONDA_ENV
    params:
        code=notebook_code_version,
    wildcard_constraints:
        target=_alternation(TABLE_TARGETS),
    script:
        "../scripts/render_notebook.py"


rule render_html:
    input:
        PATHS.executed_notebook(),
    output:
        report(PATHS.report(), caption="../report/notebook.rst", category="{target}"),
        provenance=PATHS.report() + PROVENANCE,
    log:
        PATHS.log("html", "{target}"),
    params:
        caption=report_caption,
        code=notebook_code_version,
    conda:
        CONDA_ENV
    script:
        "../scripts/render_html.py"


# Claims at a glance and the index page over every configured target.


rule claims_summary:
    input:
        claims=expand(PATHS.claims(), target=TARGETS),
    output:
        PATHS.claims_summary(),
        provenance=PATHS.claims_summary() + PROVENANCE,
    log:
        PATHS.log("summary", "claims_summary"),
    conda:
        CONDA_ENV
    params:
        targets=TARGETS,
        code=summary_code_version,
    localrule: True
    script:
        "../scripts/summarize_claims.py"


rule index:
    input:
        summary=PATHS.claims_summary(),
        outputs=[path for target in TARGETS for path in target_outputs(target)],
    output:
        PATHS.index(),
    log:
        PATHS.log("summary", "index"),
    conda:
        CONDA_ENV
    params:
        targets=TARGETS,
    localrule: True
    script:
        "../scripts/render_index.py"


# The gallery (docs/gallery/README.md): the report of the default run, paper by paper in the papers'
# order: every figure's PNG and every table, with its verdicts, scale, claims, deviations and
# executed notebook (copied to docs/gallery/notebooks/, which GitHub renders), for the selected
# targets (config `targets`). Not part of `all`: run `snakemake --cores 1 gallery` after a
# default-config run and commit docs/gallery/.


rule gallery:
    input:
        claims=lambda wildcards: [PATHS.claims(t) for t in gallery_targets()],
        figures=lambda wildcards: [PATHS.figure(t, "png") for t in gallery_figures()],
        tables=lambda wildcards: [PATHS.table(t) for t in gallery_tables()],
        notebooks=lambda wildcards: [PATHS.executed_notebook(t) for t in gallery_targets()],
        ablation=lambda wildcards: [PATHS.table(t) for t in gallery_ablations()],
        tuned=lambda wildcards: [PATHS.table(t) for t in gallery_tuned()],
        printed=lambda wildcards: [PATHS.table(t) for t in gallery_printed()],
        diagnostics=lambda wildcards: [PATHS.table(t) for t in gallery_diagnostics()],
    output:
        page=PATHS.gallery("README.md"),
        claims=PATHS.gallery("claims.md"),
        tuning=PATHS.gallery("tuning.md"),
        images=[PATHS.gallery(f"{t}.png") for t in gallery_figures()],
        notebooks=[PATHS.gallery(f"notebooks/{t}.ipynb") for t in gallery_targets()],
        ablation=[PATHS.gallery(f"{t}.md") for t in gallery_ablations()],
    log:
        PATHS.log("summary", "gallery"),
    conda:
        CONDA_ENV
    params:
        targets=gallery_targets(),
        tables=gallery_tables(),
        tuned=gallery_tuned(),
        printed=gallery_printed(),
        diagnostics=gallery_diagnostics(),
        experiments=lambda wildcards: {t: config["experiments"][t] for t in gallery_targets()},
    localrule: True
    script:
        "../scripts/render_gallery.py"
