# Computing: one job per (target, setting) writes the raw tidy records of every repetition
# seed (one process per setting, not per seed: a job's start-up is paid once; the seeds are
# part of the setting's parameters, so an edit reruns the same jobs as before); the records
# of a target are collected into its table, on which the paper's claims are evaluated.  A target
# with a tuning grid first runs one job per (setting, grid point) on a validation split; the
# setting's jobs read them and use the chosen point (networkedfl.experiments.tuning).


rule tune_experiment:
    input:
        unpack(tuning_inputs),
    output:
        PATHS.tuning(),
        provenance=PATHS.tuning() + PROVENANCE,
    log:
        PATHS.log("tuning", "{target}/{setting}/point-{point}"),
    conda:
        CONDA_ENV
    params:
        spec=tuning_job_spec,
        base_seed=config["seed"],
        code=code_version,
    resources:
        mem_mb=2000,
    script:
        "../scripts/tune_experiment.py"


rule run_experiment:
    input:
        unpack(experiment_inputs),
    output:
        PATHS.raw(),
        provenance=PATHS.raw() + PROVENANCE,
    log:
        PATHS.log("run", "{target}/{setting}"),
    conda:
        CONDA_ENV
    params:
        experiment=setting_params,
        seeds=lambda wildcards: seeds(config, wildcards.target),
        base_seed=config["seed"],
        code=code_version,
    threads: job_threads
    resources:
        mem_mb=2000,
    script:
        "../scripts/run_experiment.py"


rule collect_table:
    input:
        unpack(table_inputs),
    output:
        report(PATHS.table(), caption="../report/table.rst", category="{target}"),
        provenance=PATHS.table() + PROVENANCE,
    log:
        PATHS.log("tables", "{target}"),
    params:
        caption=report_caption,
        experiment=experiment_params,
        code=code_version,
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
        code=code_version,
    localrule: True
    script:
        "../scripts/evaluate_claims.py"
