# Config validation, wildcard constraints and helper functions shared by all stages.

from pathlib import Path

from networkedfl.experiments import EXPERIMENTS, get_experiment
from networkedfl.pipeline.config import validate_config
from networkedfl.pipeline.paths import Paths, put_interpreter_on_path
from networkedfl.pipeline.runner import job_settings, seeds

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
    setting=r"[A-Za-z0-9_\-]+",
    seed=r"\d+",


def experiment_params(wildcards):
    """The target's parameters: a change reruns exactly that target's jobs."""
    return config["experiments"][wildcards.target]


def raw_tables(wildcards):
    """Every job output of one target (settings x seeds)."""
    target = wildcards.target
    return [
        PATHS.raw(target, setting, seed)
        for setting in job_settings(config, target)
        for seed in seeds(config, target)
    ]


def notebook(wildcards):
    return str(NOTEBOOKS / f"{wildcards.target}.ipynb")


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


def all_outputs():
    return [path for target in selected_targets() for path in target_outputs(target)]
