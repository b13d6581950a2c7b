"""`snakemake --use-conda`: the rules name an environment file that resolves, lists the
reproduction's exact third-party versions and not the package, and the jobs import
networkedfl from the checkout's src/ through PYTHONPATH.

There is no conda here (nor a conda channel to fetch from): a stand-in `conda` on PATH
answers what Snakemake asks and, for the one build below, "creates" the environment as a
venv that sees this interpreter's third-party packages but not networkedfl."""

import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tomllib

import pytest
import yaml

ENV_FILE = "workflow/envs/networkedfl.yaml"
TARGET = "gtv_fig01_empirical_graph"  # no data, one figure notebook

STAND_IN = r"""#!/bin/sh
# stand-in for conda (tests/integration/test_conda.py)
case "$1 $2" in
  "info --json") printf '{"conda_prefix": "%s", "platform": "linux-64"}\n' "$(dirname "$(dirname "$0")")" ;;
  "--version ") echo "conda 24.11.3" ;;
  "config --get") echo '{"get": {"channel_priority": "strict"}}' ;;
  "clean -y") ;;
  "env create")
    while [ $# -gt 0 ]; do [ "$1" = --prefix ] && prefix="$2"; shift; done
    __PYTHON__ -m venv --without-pip "$prefix" || exit 1
    # the third-party packages of this interpreter; its editable networkedfl is not among
    # them (a .pth names a directory, whose own .pth files are not read)
    printf '%s\n' __PURELIB__ > "$prefix/lib/python__VERSION__/site-packages/thirdparty.pth"
    mkdir -p "$prefix/share" && ln -s __JUPYTER__ "$prefix/share/jupyter"  # nbconvert's templates
    for tool in papermill nbconvert; do
      printf '#!/bin/sh\nexec "$(dirname "$0")/python" -m %s "$@"\n' "$tool" > "$prefix/bin/$tool"
    done
    printf '#!/bin/sh\ntool="$1"; shift\nexec "$(dirname "$0")/$tool" "$@"\n' > "$prefix/bin/jupyter"
    chmod +x "$prefix/bin/papermill" "$prefix/bin/nbconvert" "$prefix/bin/jupyter" ;;
  *) echo "stand-in conda: $*" >&2; exit 1 ;;
esac
"""


def _stand_in(tmp_path):
    bindir = tmp_path / "conda" / "bin"
    bindir.mkdir(parents=True)
    # paths as single shell words, nothing in them expanded (a checkout under "a $b" works)
    script = (STAND_IN.replace("__PYTHON__", shlex.quote(sys._base_executable))
              .replace("__PURELIB__", shlex.quote(sysconfig.get_path("purelib")))
              .replace("__JUPYTER__", shlex.quote(f"{sys.prefix}/share/jupyter"))
              .replace("__VERSION__", f"{sys.version_info.major}.{sys.version_info.minor}"))
    (bindir / "conda").write_text(script)
    (bindir / "conda").chmod(0o755)
    (bindir / "activate").write_text('PATH="$1/bin:$PATH"; export PATH\n')
    return bindir


def _snakemake(repo, workdir, bindir, *args, timeout=300):
    """From the repository root (profiles/default is read), as a user who has not activated
    the venv: only the stand-in and the system's tools on PATH."""
    env = {**os.environ, "PATH": os.pathsep.join([str(bindir), "/usr/bin", "/bin"])}
    env.pop("PYTHONPATH", None)
    cmd = [sys.executable, "-m", "snakemake", TARGET, "--use-conda", "--directory", str(workdir),
           *args, "--configfile", "config/test.yaml"]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_env_file_pins_the_third_party_dependencies_and_not_the_package(repo):
    """Snakemake copies the env file to .snakemake/conda/<hash>.yaml before creating it, so
    it must not install the package (a relative `-e .` would name .snakemake/conda)."""
    env = yaml.safe_load((repo / ENV_FILE).read_text(encoding="utf-8"))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    pins = dict(line.split("==") for line in pip if not line.startswith("-"))
    options = [line for line in pip if line.startswith("-")]
    assert all(line.startswith("--extra-index-url https://") for line in options), options  # no -e, no path
    assert "networkedfl" not in pins
    exact = dict(line.split("==") for line in (repo / "constraints.txt").read_text(encoding="utf-8").splitlines()
                 if line and not line.startswith("#"))
    assert {k: exact[k] for k in pins} == pins  # the reproduction's versions
    project = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]

    def expanded(deps):  # "networkedfl[torch,fast]" inside an extra stands for those extras' lists
        out = []
        for dep in deps:
            own = re.fullmatch(r"networkedfl\[([\w,]+)\]", dep)
            out += [d for name in own.group(1).split(",") for d in expanded(extras[name])] if own else [dep]
        return out

    needed = expanded(project["dependencies"] + extras["pipeline"])
    names = {re.split(r"[<>=!~ ]", d, maxsplit=1)[0].lower() for d in needed} - {"snakemake"}
    names |= {"llvmlite"}  # numba's compiler, pinned beside it as in constraints.txt
    assert names == {name.lower() for name in pins}, names ^ {name.lower() for name in pins}
    assert "python=3.11" in env["dependencies"]


@pytest.mark.parametrize("name", ["default", "test", "workstation", "slurm"])
def test_every_profile_lets_the_jobs_see_pythonpath(repo, name):
    profile = yaml.safe_load((repo / "profiles" / name / "config.yaml").read_text(encoding="utf-8"))
    assert profile["conda-not-block-search-path-envvars"] is True


def test_use_conda_dry_run_resolves_the_env_file(repo, tmp_path):
    bindir = _stand_in(tmp_path)
    proc = _snakemake(repo, tmp_path / "work", bindir, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert f"Conda environment {repo / ENV_FILE} will be created" in out
    assert not (tmp_path / "work" / "results").exists()


def test_use_conda_without_the_profile_names_the_missing_flag(repo, tmp_path):
    """Snakemake removes PYTHONPATH from conda jobs unless told not to: without the profile
    the run stops before any job and says what to add."""
    bindir = _stand_in(tmp_path)
    proc = _snakemake(repo, tmp_path / "work", bindir, "-n", "--workflow-profile", "none")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "--conda-not-block-search-path-envvars" in out
    proc = _snakemake(repo, tmp_path / "work", bindir, "-n", "--workflow-profile", "none",
                      "--conda-not-block-search-path-envvars")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def test_use_conda_runs_a_target_whose_environment_lacks_the_package(repo, tmp_path):
    """Every job of one target (scripts, the papermill notebook and its kernel, nbconvert)
    runs in the environment, which has the third-party packages only: networkedfl comes from
    src/ through PYTHONPATH."""
    bindir = _stand_in(tmp_path)
    work = tmp_path / "work"
    proc = _snakemake(repo, work, bindir, "--cores", "2", timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "Activating conda environment" in out
    (env,) = [p for p in (work / ".snakemake" / "conda").iterdir() if p.is_dir()]
    alone = subprocess.run([str(env / "bin" / "python"), "-c", "import networkedfl"], capture_output=True,
                           text=True, env={"PATH": "/usr/bin:/bin"})
    assert alone.returncode != 0 and "No module named 'networkedfl'" in alone.stderr
    for path in (f"results/reports/{TARGET}.html", f"results/figures/{TARGET}.png", f"results/tables/{TARGET}.csv"):
        assert (work / path).stat().st_size > 0, path
