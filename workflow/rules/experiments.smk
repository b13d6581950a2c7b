# Computing: one job per (target, setting) writes the raw tidy records of every repetition
# seed (one process per setting, not per seed: a job's start-up is paid once; the seeds are
# part of the setting's parameters, so an edit reruns the same jobs as before); the records
# of a target are collected into its table, on which the paper's claims are evaluated.  A target
# with a tuning grid first runs one job per tuned setting, every grid point on a validation
# split (points unchanged since the job's last good table are taken from it); the setting's
# jobs read it and use the chosen point (networkedfl.experiments.tuning).


rule tune_experiment:
    input:
        unpack(tuning_inputs),
    output:
        PATHS.tuning(),
        provenance=PATHS.tuning() + PROVENANCE,
    log:
        PATHS.log("tuning", "{target}/{setting}"),
    conda:
        CONDA_ENV
    params:
        specs=tuning_job_specs,
        base_seed=config["base_seed"],
        code=code_version,
        determinism=job_determinism,
    # before the run jobs: the longest jobs (a method's whole grid), and its runs wait on it
    priority: TUNING_PRIORITY
    threads: lambda wildcards: THREADS_PER_JOB
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
        base_seed=config["base_seed"],
        code=code_version,
        determinism=job_determinism,
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
        provenance=PATHS.claims() + PROVENANCE,
    log:
        PATHS.log("claims", "{target}"),
    conda:
        CONDA_ENV
    params:
        experiment=experiment_params,
        code=claims_code_version,
    localrule: True
    script:
        "../scripts/evaluate_claims.py"
