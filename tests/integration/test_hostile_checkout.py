"""A checkout whose path holds a space, both quotes and ``$(touch PWNED)``, set up exactly as
the README says (the venv inside the checkout, the package installed into it by pip), runs
a target with a figure: its script jobs, its notebook and the HTML page (issue 37).

One real ``pip install`` (about 2 minutes from pip's cache): the interpreter, the console
scripts pip writes and their ``/bin/sh`` launchers all live under the hostile path, as on a
user's machine. The fast checks of the mechanism are in
``tests/unit/pipeline/test_checkout_paths.py``.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import copy_checkout

HOSTILE = "it's \"sp ace\" $dollar $(touch PWNED)"  # $dollar: no such variable (setuptools failed on it)
TARGET = "gtv_fig12_star_graph"


def _readme_setup(repo):
    """The README's set-up: the "Reproduce everything" command up to Snakemake."""
    readme = (repo / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("**Reproduce everything**"):]
    command = re.search(r"```bash\n(.+?)\n```", section, re.S).group(1).strip()
    steps = command.split(" && ")
    assert "snakemake" in steps[-1], command
    return " && ".join(steps[:-1])


def test_a_checkout_under_a_hostile_path_installs_and_runs_a_target(repo, tmp_path):
    base = tmp_path / HOSTILE
    checkout = copy_checkout(base / "main", "src", "pyproject.toml", "constraints.txt", "README.md")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys._base_executable), "/usr/bin", "/bin"])
    env["OMP_NUM_THREADS"] = "1"
    setup = subprocess.run(["bash", "-c", _readme_setup(repo)], cwd=checkout, env=env, capture_output=True,
                           text=True, timeout=1200)
    assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-3000:]
    python = checkout / ".venv" / "bin" / "python"
    assert python.is_file()

    proc = subprocess.run([str(python), "-m", "snakemake", "--workflow-profile", "test", TARGET], cwd=checkout,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for output in (f"results/tables/{TARGET}.csv", f"results/figures/{TARGET}.png",
                   f"results/reports/{TARGET}.html"):
        assert (checkout / output).stat().st_size > 0, output
    pwned = [*tmp_path.rglob("PWNED"), *(p for p in (Path.cwd() / "PWNED", repo / "PWNED") if p.exists())]
    assert not pwned, pwned
