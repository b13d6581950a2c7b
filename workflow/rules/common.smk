# Config validation, wildcard constraints and helper functions shared by all stages.

import functools
import json
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod

# The package of this checkout (src/): imported here, and by every job through PYTHONPATH
# (put_package_on_pythonpath below), also in the --use-conda environment, which holds only
# the third-party dependencies (workflow/envs/networkedfl.yaml).
_SRC = os.path.abspath(os.path.join(workflow.basedir, "src"))
if os.path.isdir(os.path.join(_SRC, "networkedfl")):
    sys.path.insert(0, _SRC)

from networkedfl.pipeline._yaml import check_bounds

# Overlays named with `--config overlays=<file>` (or a list): their size and nesting depth,
# first, before the package's heavier imports (merge_overlays, below, reads and merges them,
# and names a value that is not a list of files).
_COMMAND_LINE = workflow.config_settings.config if workflow.config_settings is not None else {}
_overlays = _COMMAND_LINE.get("overlays")
for _overlay in [_overlays] if isinstance(_overlays, str) else _overlays if isinstance(_overlays, list) else []:
    if isinstance(_overlay, str) and os.path.isfile(_overlay):
        check_bounds(_overlay)

from networkedfl.datasets import get_dataset
from networkedfl.experiments import EXPERIMENTS, get_experiment
from networkedfl.experiments.papers import ordered_targets
from networkedfl.io import CorruptArtefactError, record_command, restore_previous
from networkedfl.pipeline.determinism import pin_environment
from networkedfl.pipeline.config import (
    check_command_line,
    merge_overlays,
    read_yaml,
    type_command_line_values,
    validate_config,
)
from networkedfl.io import Paths
from networkedfl.pipeline.environment import put_package_on_pythonpath, quote_job_commands, quote_script_interpreter
from networkedfl.pipeline.integrity import check_artefacts
from networkedfl.pipeline.runner import (
    group_params,
    job_groups,
    job_inputs,
    job_params,
    job_settings,
    seeds,
    tuning_settings,
    tuning_specs,
)
from networkedfl.pipeline.provenance import SUFFIX as PROVENANCE
from networkedfl.pipeline.provenance import code_hash, module_closure, notebook_modules, target_modules
from networkedfl.pipeline.scheduling import coalesce_reevaluations

# The main config and the overlays (--configfile, a profile's configfile), read here as the
# config is read (networkedfl.pipeline.config.read_yaml): a YAML syntax error, a key given
# twice (Snakemake's loader keeps the last silently) or aliases that expand without bound
# stop the run, named with the file, line and column; so do --config entries that give a
# key twice. Before any walk over the config (the schema, the DAG) expands it.
read_yaml(os.path.join(workflow.basedir, "config", "config.yaml"))
for _overlay in workflow.config_settings.configfiles if workflow.config_settings is not None else ():
    read_yaml(_overlay)
if workflow.is_main_process:
    check_command_line(sys.argv)


configfile: os.path.join(workflow.basedir, "config", "config.yaml")


#: The source the jobs run (a checkout's src/, else the installed package): code hashes
#: are taken from it.
_PACKAGE_ROOT = Path(_SRC) / "networkedfl" if os.path.isdir(os.path.join(_SRC, "networkedfl")) else None
put_package_on_pythonpath(_SRC)
# Snakemake removes PYTHONPATH from the jobs of a conda environment unless told not to (the
# profiles set conda-not-block-search-path-envvars); without it they would miss the package.
_deployment = workflow.deployment_settings
if (
    _deployment is not None
    and DeploymentMethod.CONDA in _deployment.deployment_method
    and not _deployment.conda_not_block_search_path_envvars
):
    raise WorkflowError(
        "--use-conda needs --conda-not-block-search-path-envvars (every profile in profiles/ "
        "sets it): the jobs' environment (workflow/envs/networkedfl.yaml) imports networkedfl "
        "from the checkout's src/ through PYTHONPATH, which Snakemake otherwise removes"
    )

# `--config overlays=<file>` (or a list): overlays the workflow reads itself, their size and
# nesting depth checked before any YAML parser reads them (a --configfile is parsed by
# Snakemake before this file runs: a 24 MB one took over 300 s, one nested 100 000 deep
# ended in a RecursionError), merged in order over the config files, the other --config
# values still winning.
merge_overlays(config, _COMMAND_LINE)
# `--config 'experiments={<id>: {n_iter: 500}}'`: Snakemake leaves nested values strings
# ('500'); they get the types a config file gives them.
type_command_line_values(config, _COMMAND_LINE)
# Stops the run before any job starts; the message names every offending key (and shows
# --config values as the overlay file that sets them).
validate_config(config, workflow.source_path("../schemas/config.schema.yaml"), command_line=_COMMAND_LINE)

# Float results that do not depend on the machine (docs/determinism.md, "Across machines"):
# every job's process starts with `threads_per_job` threads in OpenMP, MKL, OpenBLAS and
# PyTorch and, with `cpu_kernels: avx2`, the libraries' AVX2 kernels whatever the CPU. Set
# in this process's environment, which the script jobs inherit (a cluster job's Snakemake
# reads this file again).
pin_environment(config)

# Any checkout path: every rule's action is a Python script (`script: "../scripts/<x>.py"`),
# never `shell:`, `run:` or `notebook:`, and Snakemake runs it as `<interpreter> <script>`
# with the interpreter quoted here (Snakemake leaves it unquoted, snakemake/snakemake#2645: a
# checkout whose path holds a space would fail, one holding $(cmd) would run cmd). Scripts call tools
# through their Python APIs (papermill, nbconvert), never through the console scripts pip
# writes, whose /bin/sh launchers expand "$(...)" in the path. A new or restructured rule
# gets this by being a script rule; tests/unit/pipeline/test_checkout_paths.py fails for a
# rule with any other action.
quote_script_interpreter()
# the same for the commands of cluster jobs (sbatch, srun): quoted with shlex, not repr
quote_job_commands()

# The command of this run, for the repair commands that errors print (the run's own command
# with --forcerun <file>); its jobs inherit it. Not in the processes a cluster job starts.
if workflow.is_main_process:
    record_command(sys.argv)

# At most one pending scheduler re-evaluation timer (networkedfl.pipeline.scheduling: Snakemake
# arms a new chain of them with every finished job while others wait for a core).
coalesce_reevaluations()

PATHS = Paths()
#: Priority of the jobs that many others wait on (downloads, the MNIST graph stages):
#: Snakemake starts ready jobs of higher priority first (default 0).
EARLY = 50
#: Priority of the tuning jobs (below EARLY, above the run jobs' 0).
TUNING_PRIORITY = 10
NOTEBOOKS = Path(workflow.basedir) / "notebooks"
#: The jobs' environment with --use-conda: third-party dependencies only (the package comes
#: from src/, see above); environment.yml is the one to work in by hand.
CONDA_ENV = str(Path(workflow.basedir) / "workflow" / "envs" / "networkedfl.yaml")

_unregistered = sorted(set(config["experiments"]) - set(EXPERIMENTS))
if _unregistered:
    raise ValueError(f"config['experiments'] names unregistered targets: {_unregistered}")
# A registered target missing from the config is not built: say so (once per run), rather
# than let it drop out of the default run unnoticed.
_unconfigured = sorted(set(EXPERIMENTS) - set(config["experiments"]))
if _unconfigured:
    print(
        f"note: {len(_unconfigured)} registered targets have no block under config['experiments'] "
        f"and are not built: {', '.join(_unconfigured)}",
        file=sys.stderr,
    )

#: Every configured target (each is also a rule of the same name, see targets.smk).
TARGETS = [t for t in EXPERIMENTS if t in config["experiments"]]
FIGURE_TARGETS = [t for t in TARGETS if get_experiment(t).has_figure]
TABLE_TARGETS = [t for t in TARGETS if not get_experiment(t).has_figure]


def _alternation(names):
    return "|".join(names) if names else "(?!)"


wildcard_constraints:
    target=_alternation(TARGETS),
    setting=r"[A-Za-z0-9_.\-]+",


def experiment_params(wildcards):
    """The target's parameters: a change reruns exactly that target's jobs."""
    return config["experiments"][wildcards.target]


def setting_params(wildcards):
    """The target's parameters as one job sees them (one setting's: editing another method's
    tuning grid does not rerun it; a grouped job's: the target's, and its unchanged settings
    are taken from its last output), without `threads` and the verdicts' `design` (the results
    do not depend on them; a changed margin re-evaluates the claims only)."""
    params = group_params(config, wildcards.target, wildcards.setting)
    return {k: v for k, v in params.items() if k not in ("threads", "design")}


def job_threads(wildcards):
    """The cores of a target's job: its `threads` (worker processes, default 1) times
    `threads_per_job` (the threads of each). Snakemake gives the job at most that many
    (fewer with a smaller --cores): the job runs fewer worker processes then, never fewer
    threads in each (the results do not depend on the processes; docs/determinism.md)."""
    return int(config["experiments"][wildcards.target].get("threads", 1)) * THREADS_PER_JOB


#: The threads of every job's process in every library (config `threads_per_job`): a rule
#: parameter of the computing jobs, so a change reruns them (sums may round otherwise).
THREADS_PER_JOB = int(config.get("threads_per_job", 1))


def job_determinism(wildcards=None):
    """What a computing job's floats depend on besides its parameters: the threads of its
    process and the CPU kernels (config `threads_per_job`, `cpu_kernels`)."""
    return {"threads_per_job": THREADS_PER_JOB, "cpu_kernels": str(config.get("cpu_kernels", "avx2"))}


def dataset_files(name):
    """The verified files of a dataset below data/raw/<name>/."""
    return [PATHS.raw_data(name, f) for f in get_dataset(name).files]


def tuning_files(target, settings=None):
    """The tuning jobs' outputs of a target (of the given settings only)."""
    return [PATHS.tuning(target, s) for s in tuning_settings(config, target) if settings is None or s in settings]


def experiment_inputs(wildcards):
    """Named input files of a target's job (datasets, cached artefacts, the tuning results of
    its settings' methods); none if synthetic and untuned."""
    settings = job_groups(config, wildcards.target)[wildcards.setting]
    if len(settings) == 1:
        inputs = job_inputs(config, wildcards.target, settings[0])
    else:  # a grouped job: the files of every variant it runs, each once
        inputs = {}
        for setting in settings:
            for name, value in job_inputs(config, wildcards.target, setting).items():
                paths = inputs.setdefault(name, [])
                paths += [v for v in ([value] if isinstance(value, str) else value) if v not in paths]
    tuning = tuning_files(wildcards.target, settings)
    return {**inputs, "tuning": tuning} if tuning else inputs


def tuning_inputs(wildcards):
    """The files a tuning job reads: those of the target's jobs, without tuning results."""
    return job_inputs(config, wildcards.target, wildcards.setting)


def tuning_job_specs(wildcards):
    """What one tuning job depends on (every point of its method's grid): a change of
    anything else does not rerun it."""
    return tuning_specs(config, wildcards.target, wildcards.setting)


def raw_tables(wildcards):
    """Every job output of one target (one per setting or one for all, each with every seed)."""
    return [PATHS.raw(wildcards.target, job) for job in job_groups(config, wildcards.target)]


def table_inputs(wildcards):
    """The job outputs of a target and its tuning jobs' outputs (their rows join the table)."""
    return {"raw": raw_tables(wildcards), "tuning": tuning_files(wildcards.target)}


def report_caption(wildcards):
    """Paper, figure and the exact parameters of a target, for its report captions."""
    experiment = get_experiment(wildcards.target)
    params = json.dumps(config["experiments"][wildcards.target], sort_keys=True)
    return {"title": experiment.title, "source": experiment.source, "params": params, "base_seed": config["base_seed"]}


def notebook(wildcards):
    """The target's notebook, relative to the working directory: moving the checkout (with
    its results) changes no input path and reruns nothing."""
    return os.path.relpath(NOTEBOOKS / f"{wildcards.target}.ipynb")


def target_outputs(target):
    """Everything one target id promises: table, claims, report (and figure), each with its
    provenance sidecar."""
    outputs = [
        PATHS.table(target),
        PATHS.claims(target),
        PATHS.executed_notebook(target),
        PATHS.report(target),
    ]
    if get_experiment(target).has_figure:
        outputs += [PATHS.figure(target, "pdf"), PATHS.figure(target, "png")]
    return [f for output in outputs for f in (output, output + PROVENANCE)]


#: The caches the workflow builds (cache.smk adds each): name (`Experiment.caches`) -> the
#: files an input path of a target's job is made from when it is an artefact of the cache
#: (with the path itself), None when it is not.
CACHES = {}


def target_caches(target):
    """The caches the target reads (its registration's `caches`), each one the workflow builds."""
    caches = get_experiment(target).caches
    unknown = sorted(set(caches) - set(CACHES))
    if unknown:
        raise ValueError(f"target {target!r} is registered with unknown caches {unknown}; "
                         f"workflow/rules/cache.smk builds {sorted(CACHES)}")
    return caches


def cached_files(target, path):
    """The files ``path`` is made from (with it) when it is an artefact of a cache the target
    reads; None when it is not (a dataset file, an input of its own)."""
    for name in target_caches(target):
        files = CACHES[name](path)
        if files is not None:
            return files
    return None


def _files(inputs):
    return [f for value in inputs.values() for f in ([value] if isinstance(value, str) else value)]


def target_intermediates(target):
    """Every file a target's outputs are made from: the dataset files and graph cache stages
    its jobs read, its jobs' raw and tuning outputs, with their sidecars.

    The target rules (targets.smk) and `all` name them as inputs, so that one that is
    missing is rebuilt by a plain run with everything made from it: Snakemake alone rebuilds
    a missing intermediate only when a file made from it is rebuilt anyway."""
    files = []
    # one raw output per job (one per setting, or one for all of a grouped target's settings)
    outputs = [(settings, PATHS.raw(target, job)) for job, settings in job_groups(config, target).items()]
    outputs += [([setting], PATHS.tuning(target, setting)) for setting in tuning_settings(config, target)]
    for settings, output in outputs:
        for path in (p for setting in settings for p in _files(job_inputs(config, target, setting))):
            # a cached artefact of one of the target's caches (cache.smk): with what it is made from
            files += cached_files(target, path) or [path]
        files += [output, output + PROVENANCE]
    return list(dict.fromkeys(files))


#: Files checked before any job of this run (`checked_target_files`), each once.
_CHECKED = set()


def checked_target_files(targets):
    """The intermediates of ``targets`` (their rules' inputs besides their outputs), after
    checking every existing intermediate and output of theirs (networkedfl.pipeline.integrity):
    a corrupt one stops the run before any job, naming it and the command that rebuilds it,
    this run's own command with `--forcerun <file>` (files given to --forcerun, and every
    file with --forceall, are rebuilt anyway and not checked). Called while Snakemake builds
    the jobs (an input function), so `--unlock` and `--cleanup-metadata` never stop here."""
    intermediates = [f for target in targets for f in target_intermediates(target)]
    settings = workflow.dag_settings
    if not settings.forceall:
        todo = [f for f in intermediates + [f for t in targets for f in target_outputs(t)] if f not in _CHECKED]
        try:
            check_artefacts(todo, finished=False, skip=settings.forcerun or ())
        except CorruptArtefactError as err:
            raise WorkflowError(
                f"networkedfl: stopped before any job, files this run reads are corrupt:\n{err}"
            ) from None
        _CHECKED.update(todo)
    return intermediates


def selected_targets():
    chosen = config.get("targets", "all")
    return TARGETS if chosen == "all" else [t for t in TARGETS if t in chosen]


def gallery_targets():
    """The selected targets, figures and tables, in the papers' order."""
    return ordered_targets(selected_targets())


def gallery_figures():
    """The gallery's targets that have a figure (its PNG is copied to docs/gallery/)."""
    return [t for t in gallery_targets() if get_experiment(t).has_figure]


def gallery_tables():
    """The gallery's table targets (each shown as a table, from its table)."""
    return [t for t in gallery_targets() if not get_experiment(t).has_figure]


def gallery_ablations():
    """The selected ablation targets (registered with `ablation_of`): each gets a generated
    Markdown table."""
    return [t for t in gallery_targets() if get_experiment(t).ablation_of]


def gallery_printed():
    """The selected GTV targets running a `published` variant whose counterparts the
    authors' notebooks print (docs/printed.md): the gallery shows ours beside them."""
    from networkedfl.experiments.gtv.printed import printed_targets

    printed = set(printed_targets())
    return [t for t in gallery_targets()
            if t in printed and "published" in (config["experiments"][t].get("variants") or {})]


def gallery_diagnostics():
    """The selected ablation and step-scan targets whose tables diagnose failing claims
    (networkedfl.experiments.diagnosis): the gallery shows their numbers beside the verdicts."""
    from networkedfl.experiments.diagnosis import DIAGNOSTIC_TARGETS

    return [t for t in gallery_targets() if t in DIAGNOSTIC_TARGETS]


def gallery_tuned():
    """The selected targets with a tuning grid: the gallery lists their tuning."""
    return [t for t in gallery_targets() if tuning_settings(config, t)]


def all_outputs():
    """Every selected target's outputs, plus the claims summary and index when all are built."""
    outputs = [path for target in selected_targets() for path in target_outputs(target)]
    if selected_targets() == TARGETS:
        outputs += [PATHS.claims_summary(), PATHS.claims_summary() + PROVENANCE, PATHS.index()]
    return outputs


def report_timings(log_file):
    """Print, per target, the compute time of its jobs (from their logs) when a run ends."""
    from networkedfl.pipeline.summary import job_seconds

    lines = []
    for target in selected_targets():
        seconds = job_seconds(sorted(Path(PATHS.logs, "run", target).glob("*.log")))
        if seconds is not None:
            lines.append(f"  {target}: {seconds:.1f} s of compute in its experiment jobs")
    if lines:
        print("networkedfl: compute time per target\n" + "\n".join(lines))


def restore_failed_claims():
    """After a failed run: put back the last good claims (and their sidecars) of every target
    whose claims job failed, so that an error in claim code never leaves a target without
    its earlier verdicts (issue 45); each is dated before its table, so the next run
    evaluates it again."""
    restored = []
    for target in selected_targets():
        claims, table = PATHS.claims(target), PATHS.table(target)
        sidecar_back = restore_previous(claims + PROVENANCE, made_from=table)
        if restore_previous(claims, made_from=table) or sidecar_back:
            restored.append(target)
    if restored:
        print("networkedfl: the claims of " + ", ".join(restored) + " could not be evaluated; their last good "
              "claims are back in results/claims/ and are evaluated again by the next run", file=sys.stderr)


# ------------------------------------------------------------------ code-aware reruns
# A rule param holding the hash of the package code its jobs run
# (networkedfl.pipeline.provenance): Snakemake's params trigger then reruns exactly the jobs
# whose code changed. Docstrings, comments and formatting do not count.


# Snakemake evaluates a job's params again in every scheduling pass while the job waits for a
# core: each hash is computed once per Snakemake process (the code a run uses is the code it
# started with).


@functools.cache
def _target_code(target, jobs="run"):
    return code_hash(target_modules(target, _PACKAGE_ROOT, jobs=jobs), _PACKAGE_ROOT)


@functools.cache
def module_code(module):
    """Code of a package module and what it imports (a cache's stages, cache.smk)."""
    return code_hash(module_closure([module], _PACKAGE_ROOT), _PACKAGE_ROOT)


@functools.cache
def _notebook_code(path):
    return code_hash(notebook_modules(path, _PACKAGE_ROOT), _PACKAGE_ROOT)


def code_version(wildcards):
    """Code of a target's experiment, tuning and table jobs."""
    return _target_code(wildcards.target)


def claims_code_version(wildcards):
    """Code of a target's claims job (its family's claims module)."""
    return _target_code(wildcards.target, "claims")


def notebook_code_version(wildcards):
    """Code a target's notebook imports (its figure and table functions)."""
    return _notebook_code(notebook(wildcards))


def summary_code_version(wildcards):
    """Code of the claims summary."""
    return code_hash(module_closure(["networkedfl.pipeline.summary"], _PACKAGE_ROOT), _PACKAGE_ROOT)
