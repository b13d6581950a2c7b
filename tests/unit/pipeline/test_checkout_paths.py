"""A checkout may live under any path: spaces, quotes and ``$(...)`` in it are never split
or executed (issue 37).

Snakemake builds a ``script:`` job's command with the interpreter's path unquoted
(``{py_exec} {fname:q}``; snakemake/snakemake#2645), and pip's launchers (``.venv/bin/pip``,
``papermill``, ``jupyter``) run their interpreter through ``/bin/sh`` with its path in double
quotes, where ``$(...)`` is expanded. So every rule runs a Python script, whose interpreter
the workflow quotes (``networkedfl.pipeline.environment.quote_script_interpreter``), and no
command calls a launcher. The checks here are fast; ``tests/integration/test_hostile_checkout.py``
installs the package into a hostile checkout as the README does and runs a target there.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

#: A directory name with a space, both quotes and a command substitution.
HOSTILE = "it's \"sp ace\" $(touch PWNED)"

#: Loads the real workflow with Snakemake's API (as every run does), then prints every rule's
#: action and the command Snakemake's script runner builds for an interpreter at argv[3].
_LOAD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import OutputSettings, ResourceSettings
    import snakemake.script as script
    from snakemake.utils import format as snakemake_format

    with SnakemakeApi(OutputSettings()) as api:
        workflow = api.workflow(resource_settings=ResourceSettings(), snakefile=Path(sys.argv[1]),
                                workdir=Path(sys.argv[2]))._workflow
        rules = {rule.name: {"script": rule.script, "shell": rule.shellcmd, "notebook": rule.notebook,
                             "wrapper": rule.wrapper, "cwl": rule.cwl, "template": rule.template_engine,
                             "norun": rule.norun}
                 for rule in workflow.rules}
    commands = []
    script.shell = lambda cmd, **kwargs: commands.append(snakemake_format(cmd, **kwargs))
    runner = script.PythonScript.__new__(script.PythonScript)
    for name in ("bench_record", "conda_env", "conda_base_path", "container_img", "shadow_dir",
                 "env_modules", "singularity_args", "resources", "threads", "runtime_paths"):
        setattr(runner, name, None)
    sys.executable = sys.argv[3]
    runner.execute_script("job's script.py")
    print(json.dumps({"rules": rules, "command": commands[0]}))
""")


@pytest.fixture(scope="module")
def loaded(repo, tmp_path_factory):
    """The workflow's rules and the script command for an interpreter at a hostile path."""
    tmp = tmp_path_factory.mktemp("paths")
    interpreter = tmp / HOSTILE / "bin" / "python"
    interpreter.parent.mkdir(parents=True)
    # records its arguments where the test finds them, whatever the shell passes
    interpreter.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > '{tmp}/called'\n")
    interpreter.chmod(0o755)
    proc = subprocess.run([sys.executable, "-c", _LOAD, str(repo / "Snakefile"), str(tmp / "work"),
                           str(interpreter)], capture_output=True, text=True, timeout=300, cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp, json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_rule_runs_a_python_script_and_no_shell_command(loaded):
    """The one mechanism every rule goes through: ``script:`` with a ``.py`` file, whose
    interpreter is quoted. A rule with ``shell:``, ``run:`` (spawned through an unquoted
    command line), ``notebook:`` or a wrapper bypasses it and fails here; rules without an
    action (targets, ``all``) run nothing."""
    _, found = loaded
    bypassing = {name: {k: v for k, v in rule.items() if v and k != "norun"}
                 for name, rule in found["rules"].items()
                 if not rule["norun"] and not (str(rule["script"] or "").endswith(".py")
                                               and not any(rule[k] for k in ("shell", "notebook", "wrapper",
                                                                             "cwl", "template")))}
    assert not bypassing, f"rules that do not run a Python script through script: {bypassing}"
    assert {"run_experiment", "collect_table", "render_html"} <= set(found["rules"])


def test_the_script_interpreter_is_one_quoted_word(loaded):
    """Snakemake's command for a script job, from an interpreter under a hostile path, runs
    that interpreter with the script as its one argument, and executes nothing in the path."""
    tmp, found = loaded
    command = found["command"]
    proc = subprocess.run(["bash", "-c", "set -euo pipefail; " + command], cwd=tmp, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, (command, proc.stderr)
    assert (tmp / "called").read_text().splitlines() == ["job's script.py"], command
    assert not list(tmp.rglob("PWNED")), command


#: Stand-in for ``python3``: records its working directory and arguments; for ``-m venv DIR`` it
#: creates DIR/bin/python, a recorder too, and DIR/bin/pip, pip's console script for it, made
#: by pip's own script maker (the launcher every ``pip install`` writes).
_PYTHON3 = """#!{python}
import json, os, sys
open({record!r}, "a").write(json.dumps([os.getcwd(), sys.argv[1:]]) + "\\n")
if sys.argv[1:3] == ["-m", "venv"]:
    from pip._vendor.distlib.scripts import ScriptMaker
    bindir = os.path.abspath(os.path.join(sys.argv[3], "bin"))
    os.makedirs(bindir)
    python = os.path.join(bindir, "python")
    with open(python, "w") as fh:
        fh.write(open(__file__).read())
    os.chmod(python, 0o755)
    maker = ScriptMaker(None, bindir)
    maker.executable = python
    maker.make("pip = pip._internal.cli.main:main")
"""


def test_ci_run_works_from_a_checkout_whose_path_has_spaces_quotes_and_a_substitution(repo, tmp_path):
    """`.ci/run` from a hostile path: its `cd`, the venv it creates and the two commands it
    runs there get the path whole, and nothing in it runs. A stand-in ``python3`` creates the
    venv with a recording interpreter and pip's own launcher, which would expand ``$(...)``
    (the commands must call the interpreter: ``.venv/bin/python -m pip``)."""
    checkout = tmp_path / HOSTILE / "main"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy(repo / ".ci" / "run", checkout / ".ci" / "run")
    record = tmp_path / "calls.jsonl"
    stand_ins = tmp_path / "bin"
    stand_ins.mkdir()
    # the base interpreter in the shebang: a venv's own may lie under a path with spaces (CI's
    # clone), which a shebang line cannot hold
    (stand_ins / "python3").write_text(_PYTHON3.format(python=sys._base_executable, record=str(record)))
    (stand_ins / "python3").chmod(0o755)
    env = {**os.environ, "PATH": os.pathsep.join([str(stand_ins), "/usr/bin", "/bin"])}
    proc = subprocess.run(["bash", str(checkout / ".ci" / "run")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    calls = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    assert proc.returncode == 0, (calls, proc.stdout[-2000:] + proc.stderr[-2000:])
    assert [cwd for cwd, _ in calls] == [str(checkout)] * 3, calls
    assert calls[0][1] == ["-m", "venv", ".venv"]
    assert calls[1][1][:3] == ["-m", "pip", "install"], calls  # the interpreter, not .venv/bin/pip
    assert calls[2][1][:3] == ["-m", "pytest", "-m"], calls
    assert not list(tmp_path.rglob("PWNED"))



def test_cluster_job_commands_quote_any_path():
    """Issue 37, cluster jobs: the interpreter and the string arguments of the command that
    sbatch and srun run are quoted as a shell reads them back (Python's repr, which the
    executor interface uses, is not: a path with both quotes, or a $name in double quotes)."""
    import shlex

    from snakemake_interface_executor_plugins import utils
    from snakemake_interface_executor_plugins.executors.real import RealExecutor

    from networkedfl.pipeline.environment import quote_job_commands, with_quoted_interpreter

    path = f"/tmp/{HOSTILE}/$dollar/Snakefile"
    quote_job_commands()
    quote_job_commands()  # once per process
    assert RealExecutor.format_job_exec.__name__ == "quoted_job_exec"
    assert shlex.split(utils.format_cli_arg("--snakefile", path)) == ["--snakefile", path]
    assert utils.format_cli_value(3) == "3" and utils.format_cli_value("plain") == "plain"

    class Executor:
        def get_python_executable(self):
            return f"/{HOSTILE}/.venv/bin/python"

    def format_job_exec(self, job):  # as RealExecutor's: the interpreter joined unquoted
        return f"{self.get_python_executable()} -m snakemake"

    executor = Executor()
    quoted = with_quoted_interpreter(format_job_exec)
    command = quoted(executor, None)
    assert shlex.split(command) == [f"/{HOSTILE}/.venv/bin/python", "-m", "snakemake"]
    # stateless: calls from the executor's submitting threads never quote twice
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(lambda _: quoted(executor, None), range(200))) == {command}
    assert format_job_exec(executor, None) != command  # unquoted, a shell could not read it back
    assert executor.get_python_executable() == f"/{HOSTILE}/.venv/bin/python"  # unchanged after
