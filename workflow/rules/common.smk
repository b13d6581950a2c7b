# Config validation, wildcard constraints and helper functions shared by all stages.

import json
import os
from pathlib import Path

from networkedfl.datasets import get_dataset
from networkedfl.experiments import EXPERIMENTS, get_experiment
from networkedfl.experiments.gtv_mnist_graph import STAGE_KINDS, graph_names, mnist_train_files, stage_spec
from networkedfl.pipeline.config import validate_config
from networkedfl.pipeline.paths import Paths, put_interpreter_on_path
from networkedfl.pipeline.runner import job_inputs, job_params, job_settings, seeds, tuning_jobs, tuning_spec

# Stops the run before any job starts; the message names every offending key.
validate_config(config, workflow.source_path("../schemas/config.schema.yaml"))

# Shell rules call papermill and jupyter, installed beside the interpreter running Snakemake
# (e.g. .venv/bin): an unactivated venv works too.
put_interpreter_on_path()

PATHS = Paths()
NOTEBOOKS = Path(workflow.basedir) / "notebooks"
#: The project environment (used with --use-conda; pip users have it already).
CONDA_ENV = str(Path(workflow.basedir) / "environment.yml")

_unregistered = sorted(set(config["experiments"]) - set(EXPERIMENTS))
if _unregistered:
    raise ValueError(f"config['experiments'] names unregistered targets: {_unregistered}")

#: Every configured target (each is also a rule of the same name, see targets.smk).
TARGETS = [t for t in EXPERIMENTS if t in config["experiments"]]
FIGURE_TARGETS = [t for t in TARGETS if get_experiment(t).has_figure]
TABLE_TARGETS = [t for t in TARGETS if not get_experiment(t).has_figure]


def _alternation(names):
    return "|".join(names) if names else "(?!)"


wildcard_constraints:
    target=_alternation(TARGETS),
    setting=r"[A-Za-z0-9_.\-]+",
    seed=r"\d+",
    point=r"\d+",


def experiment_params(wildcards):
    """The target's parameters: a change reruns exactly that target's jobs."""
    return config["experiments"][wildcards.target]


def setting_params(wildcards):
    """The target's parameters as one setting's jobs see them: editing another method's
    tuning grid does not rerun them."""
    return job_params(config, wildcards.target, wildcards.setting)


def dataset_files(name):
    """The verified files of a dataset below data/raw/<name>/."""
    return [PATHS.raw_data(name, f) for f in get_dataset(name).files]


def tuning_files(target, setting=None):
    """The tuning jobs' outputs of a target (of one setting when given)."""
    return [PATHS.tuning(target, s, k) for s, k in tuning_jobs(config, target) if setting in (None, s)]


def experiment_inputs(wildcards):
    """Named input files of a target's jobs (datasets, cached artefacts, the method's tuning
    results); none if synthetic and untuned."""
    inputs = job_inputs(config, wildcards.target, wildcards.setting)
    tuning = tuning_files(wildcards.target, wildcards.setting)
    return {**inputs, "tuning": tuning} if tuning else inputs


def tuning_inputs(wildcards):
    """The files a tuning job reads: those of the target's jobs, without tuning results."""
    return job_inputs(config, wildcards.target, wildcards.setting)


def tuning_job_spec(wildcards):
    """What one tuning job depends on: a change of anything else does not rerun it."""
    return tuning_spec(config, wildcards.target, wildcards.setting, int(wildcards.point))


def raw_tables(wildcards):
    """Every job output of one target (settings x seeds)."""
    target = wildcards.target
    return [
        PATHS.raw(target, setting, seed)
        for setting in job_settings(config, target)
        for seed in seeds(config, target)
    ]


def table_inputs(wildcards):
    """The job outputs of a target and its tuning jobs' outputs (their rows join the table)."""
    return {"raw": raw_tables(wildcards), "tuning": tuning_files(wildcards.target)}


def report_caption(wildcards):
    """Paper, figure and the exact parameters of a target, for its report captions."""
    experiment = get_experiment(wildcards.target)
    params = json.dumps(config["experiments"][wildcards.target], sort_keys=True)
    return {"title": experiment.title, "source": experiment.source, "params": params, "seed": config["seed"]}


def notebook(wildcards):
    """The target's notebook, relative to the working directory: moving the checkout (with
    its results) changes no input path and reruns nothing."""
    return os.path.relpath(NOTEBOOKS / f"{wildcards.target}.ipynb")


def target_outputs(target):
    """Everything one target id promises: table, claims, report (and figure)."""
    outputs = [
        PATHS.table(target),
        PATHS.claims(target),
        PATHS.executed_notebook(target),
        PATHS.report(target),
    ]
    if get_experiment(target).has_figure:
        outputs += [PATHS.figure(target, "pdf"), PATHS.figure(target, "png")]
    return outputs


def selected_targets():
    chosen = config.get("targets", "all")
    return TARGETS if chosen == "all" else [t for t in TARGETS if t in chosen]


def gallery_targets():
    """The selected targets that have a figure, in registry order."""
    return [t for t in selected_targets() if get_experiment(t).has_figure]


#: Quirk-ablation targets: the gallery writes each one's table as Markdown.
ABLATIONS = ["gtv_quirk_ablation", "gtv_quirk_ablation_mnist"]


def gallery_ablations():
    """The selected quirk-ablation targets: each gets a generated Markdown table."""
    return [t for t in ABLATIONS if t in gallery_targets()]


def gallery_tuned():
    """The selected figure targets with a tuning grid: the gallery lists their tuning."""
    return [t for t in gallery_targets() if tuning_jobs(config, t)]


def all_outputs():
    """Every selected target's outputs, plus the claims summary and index when all are built."""
    outputs = [path for target in selected_targets() for path in target_outputs(target)]
    if selected_targets() == TARGETS:
        outputs += [PATHS.claims_summary(), PATHS.index()]
    return outputs


def report_timings(log_file):
    """Print, per target, the compute time of its jobs (from their logs) when a run ends."""
    from networkedfl.pipeline.summary import job_seconds

    lines = []
    for target in selected_targets():
        seconds = job_seconds(sorted(Path(PATHS.logs, "run", target).glob("*/*.log")))
        if seconds is not None:
            lines.append(f"  {target}: {seconds:.1f} s of compute in its experiment jobs")
    if lines:
        print("networkedfl: compute time per target\n" + "\n".join(lines))
