"""The job processes' environment: the interpreter's tools on ``PATH`` and the checkout's
package on ``PYTHONPATH`` (used by the Snakefile before any rule runs)."""

from __future__ import annotations

import os
import sys

__all__ = ["put_interpreter_on_path", "put_package_on_pythonpath"]


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
