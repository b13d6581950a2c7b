"""The job processes' environment: the checkout's package on ``PYTHONPATH`` and a quoted
interpreter in every script job's command (used by the Snakefile before any rule runs)."""

from __future__ import annotations

import inspect
import os
import shlex
import sys

__all__ = ["put_package_on_pythonpath", "quote_job_commands", "quote_script_interpreter"]

#: How Snakemake (9.x) runs a ``script:`` job: the interpreter's path unquoted
#: (snakemake/snakemake#2645), so a checkout under ``/a b/`` fails and one under
#: ``/$(cmd)/`` runs ``cmd``.
_UNQUOTED = "{py_exec} {fname:q}"
_QUOTED = "{py_exec:q} {fname:q}"


def quote_script_interpreter() -> None:
    """Make Snakemake quote the interpreter of every ``script:`` job, whatever its path.

    Snakemake runs a Python script job as the shell command ``{py_exec} {fname:q}`` with
    ``py_exec`` the path of the interpreter running it (e.g. ``<checkout>/.venv/bin/python``):
    unquoted, a space in the checkout's path splits it and a ``$(...)`` in it is executed.
    This rewrites that one command to ``{py_exec:q} {fname:q}`` in Snakemake's script runner
    (``snakemake.script.PythonScript``), once per process; the interpreter Snakemake picks
    (its own, or a conda environment's ``python``) is unchanged.  Where Snakemake quotes it
    already, nothing changes.  Where its runner no longer builds the command this way and the
    interpreter's path needs quoting, the run stops here, naming the path, rather than let
    the shell split it.
    """
    from snakemake import script

    runner = script.PythonScript
    if getattr(runner, "_networkedfl_quoted", False):
        return
    source = inspect.getsource(runner.execute_script)
    if _QUOTED in source:
        return
    if _UNQUOTED not in source:
        if shlex.quote(sys.executable) != sys.executable:
            raise RuntimeError(
                f"this Snakemake's script runner builds its command in a way networkedfl does not "
                f"know, and the interpreter's path {sys.executable!r} holds characters a shell would "
                f"split or expand: run from a checkout whose path holds letters, digits and "
                f"'/._-+' only, or use the Snakemake version pinned in constraints.txt"
            )
        return
    execute = runner._execute_cmd

    def _execute_cmd(self, cmd, **kwargs):
        if kwargs.get("is_python_script") and cmd == _UNQUOTED:
            cmd = _QUOTED
        return execute(self, cmd, **kwargs)

    runner._execute_cmd = _execute_cmd
    runner._networkedfl_quoted = True


def quote_job_commands() -> None:
    """Make the commands Snakemake hands to a cluster (``sbatch``, ``srun``) hold any path.

    A job on a cluster (``--workflow-profile slurm``) is the shell command
    ``<interpreter> -m snakemake --snakefile <path> ...`` built by Snakemake's executor
    interface (``RealExecutor.format_job_exec``): the interpreter's path goes in unquoted
    and string arguments are quoted with Python's ``repr``, which a shell reads wrongly for a
    path with both quotes and leaves ``$name`` to expand inside double quotes.  This quotes
    the interpreter and every quoted string argument with :func:`shlex.quote` (what a POSIX
    shell reads back as the one word it was), once per process.  Local runs do not build
    these commands; nothing else changes.
    """
    try:
        from snakemake_interface_executor_plugins import utils
        from snakemake_interface_executor_plugins.executors.real import RealExecutor
    except ImportError:  # no executor interface: nothing builds such commands
        return
    if getattr(RealExecutor, "_networkedfl_quoted", False):
        return
    format_cli_value = utils.format_cli_value

    def quoted_cli_value(value, quote=False, base64_encode=False):
        if isinstance(value, str) and quote and not base64_encode and not utils.is_quoted(value):
            return shlex.quote(value)
        return format_cli_value(value, quote=quote, base64_encode=base64_encode)

    RealExecutor.format_job_exec = with_quoted_interpreter(RealExecutor.format_job_exec)
    utils.format_cli_value = quoted_cli_value
    RealExecutor._networkedfl_quoted = True


class _QuotedInterpreter:
    """An executor seen through ``format_job_exec``: its interpreter shell-quoted, everything
    else its own (no state is changed: the executor submits jobs from several threads)."""

    def __init__(self, executor) -> None:
        object.__setattr__(self, "_executor", executor)

    def __getattr__(self, name):
        return getattr(self._executor, name)

    def __setattr__(self, name, value) -> None:
        setattr(self._executor, name, value)

    def get_python_executable(self) -> str:
        return shlex.quote(self._executor.get_python_executable())


def with_quoted_interpreter(format_job_exec):
    """``format_job_exec(executor, job)`` with the executor's interpreter shell-quoted."""

    def quoted_job_exec(self, job):
        return format_job_exec(_QuotedInterpreter(self), job)

    return quoted_job_exec


def put_package_on_pythonpath(src: str | os.PathLike) -> None:
    """Put ``src`` (a checkout's ``src/``, holding networkedfl) first on ``PYTHONPATH``.

    Every job process inherits it: the workflow's scripts and the notebooks' kernels import
    the package of the checkout whose workflow runs, also in a ``--use-conda`` environment
    that holds only the third-party dependencies.  An environment variable, not a rule
    parameter or input, so moving the checkout reruns nothing.  Without a package in
    ``src`` (a workflow copied on its own) nothing changes: the jobs use the installed one.
    """
    src = os.path.abspath(src)
    if not os.path.isdir(os.path.join(src, "networkedfl")):
        return
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != src]
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *rest])
