# Computing: one job per (target, setting, seed) writes raw tidy records; the records of a
# target are collected into its table, on which the paper's claims are evaluated.


rule run_experiment:
    input:
        unpack(experiment_inputs),
    output:
        PATHS.raw(),
    log:
        PATHS.log("run", "{target}/{setting}/seed-{seed}"),
    conda:
        CONDA_ENV
    params:
        experiment=experiment_params,
        base_seed=config["seed"],
    resources:
        mem_mb=2000,
    script:
        "../scripts/run_experiment.py"


rule collect_table:
    input:
        raw_tables,
    output:
        report(PATHS.table(), caption="../report/table.rst", category="{target}"),
    log:
        PATHS.log("tables", "{target}"),
    params:
        caption=report_caption,
    conda:
        CONDA_ENV
    localrule: True
    script:
        "../scripts/collect_table.py"


rule evaluate_claims:
    input:
        table=PATHS.table(),
    output:
        PATHS.claims(),
    log:
        PATHS.log("claims", "{target}"),
    conda:
        CONDA_ENV
    params:
        experiment=experiment_params,
    localrule: True
    script:
        "../scripts/evaluate_claims.py"
