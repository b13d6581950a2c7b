"""Progress bars for long loops: on when asked, or when the environment asks for them.

Every long-running function takes ``progress: bool | None``.  ``True``/``False`` decide;
``None`` (the default) defers to the environment variable ``NETWORKEDFL_PROGRESS``, which
the pipeline's experiment jobs set so that their logs show tqdm progress (updated every
``TQDM_MININTERVAL`` seconds) without any experiment passing the flag down.
"""

from __future__ import annotations

import importlib.util
import os

if importlib.util.find_spec("ipywidgets") is None:
    # tqdm.auto would warn "IProgress not found" in every notebook and fall back to text bars
    from tqdm.std import tqdm
else:  # notebook widgets where Jupyter can draw them, text bars elsewhere
    from tqdm.auto import tqdm

__all__ = ["ENV_VAR", "show_progress", "tqdm"]

ENV_VAR = "NETWORKEDFL_PROGRESS"
_FALSE = {"", "0", "false", "no", "off"}


def show_progress(progress: bool | None) -> bool:
    """Whether to show a progress bar: ``progress`` if given, else the environment's choice."""
    if progress is not None:
        return bool(progress)
    return os.environ.get(ENV_VAR, "").strip().lower() not in _FALSE
