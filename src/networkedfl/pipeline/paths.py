"""The single source of the pipeline's directory layout.

Every file the workflow reads or writes is named here; rules, scripts and tests use
these helpers (or the Snakemake wildcard patterns they return) rather than spelling paths.
All paths are relative to the Snakemake working directory (the repository root).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Paths", "find_repo_root", "put_interpreter_on_path"]


def put_interpreter_on_path() -> None:
    """Put the running interpreter's directory first on ``PATH`` (for shell rules).

    The tools the shell rules call (papermill, jupyter) are installed beside the Python
    that runs Snakemake, e.g. in ``.venv/bin``; this finds them without activating the
    venv.  With ``--use-conda`` the rule's own environment is activated in front of it.
    """
    bindir = os.path.dirname(sys.executable)
    entries = os.environ.get("PATH", "").split(os.pathsep)
    if entries[0] != bindir:
        os.environ["PATH"] = os.pathsep.join([bindir, *entries])


def find_repo_root(start: str | Path = ".") -> Path:
    """The nearest directory at or above ``start`` that holds the workflow's ``Snakefile``."""
    here = Path(start).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "Snakefile").is_file():
            return candidate
    raise FileNotFoundError(f"no Snakefile found at or above {here}")


@dataclass(frozen=True)
class Paths:
    """Output layout below ``results`` (default ``results/``) and ``logs``."""

    results: Path = Path("results")
    logs: Path = Path("logs")

    def raw(self, target: str = "{target}", setting: str = "{setting}", seed: str | int = "{seed}") -> str:
        return str(self.results / "raw" / target / setting / f"seed-{seed}.csv")

    def table(self, target: str = "{target}") -> str:
        return str(self.results / "tables" / f"{target}.csv")

    def figure(self, target: str = "{target}", ext: str = "pdf") -> str:
        return str(self.results / "figures" / f"{target}.{ext}")

    def claims(self, target: str = "{target}") -> str:
        return str(self.results / "claims" / f"{target}.json")

    def notebook_params(self, target: str = "{target}") -> str:
        return str(self.results / "reports" / f"{target}.params.yaml")

    def executed_notebook(self, target: str = "{target}") -> str:
        return str(self.results / "reports" / f"{target}.ipynb")

    def report(self, target: str = "{target}") -> str:
        return str(self.results / "reports" / f"{target}.html")

    def log(self, stage: str, name: str) -> str:
        return str(self.logs / stage / f"{name}.log")
