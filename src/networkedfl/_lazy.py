"""Names a package loads on first use (PEP 562): a family whose heavy dependencies
(scikit-learn, PyTorch) only some of its names need keeps importing fast.

The package writes its table as a dict literal ``_LAZY = {"Name": ".module"}`` (the
provenance reads it from the source, :mod:`networkedfl.pipeline.provenance`) and installs
the module hooks with::

    __getattr__, __dir__ = lazy_module_hooks(globals(), _LAZY)

The optional dependencies (:data:`EXTRAS`) are not installed by ``pip install networkedfl``:
a name that needs a missing one raises an :class:`ImportError` that names the extra to
install (``pip install "networkedfl[torch]"``), from a lazy name or from :func:`require`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from importlib import import_module
from types import ModuleType
from typing import Any

__all__ = ["EXTRAS", "lazy_module_hooks", "missing_extra", "require"]

#: The optional dependencies (top-level module names) and the extra of ``pyproject.toml``
#: that installs each.
EXTRAS = {
    "torch": "torch",
    "openTSNE": "tsne",
    "matplotlib": "plot",
    "pandas": "plot",
    "numba": "fast",
    "yaml": "pipeline",
    "jsonschema": "pipeline",
    "snakemake": "pipeline",
    "papermill": "pipeline",
}


def missing_extra(error: ModuleNotFoundError, what: str) -> ImportError | None:
    """The :class:`ImportError` naming the extra that installs the module ``error`` misses
    (``what`` needs it), or ``None`` for a module that is no optional dependency."""
    missing = (error.name or "").split(".")[0]
    extra = EXTRAS.get(missing)
    if extra is None:
        return None
    return ImportError(f'{what} needs {missing}, which the core install leaves out: '
                       f'pip install "networkedfl[{extra}]"'
                       + (" (PyTorch's CPU build: README, 'Install the package alone')" if missing == "torch" else ""))


def require(module: str, what: str) -> ModuleType:
    """Import ``module``; if it is a missing optional dependency, an :class:`ImportError` that
    names its extra (:func:`missing_extra`)."""
    try:
        return import_module(module)
    except ModuleNotFoundError as error:
        raise (missing_extra(error, what) or error) from error


def lazy_module_hooks(
    namespace: MutableMapping[str, Any], lazy: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of the package whose globals are
    ``namespace``: ``__getattr__(name)`` imports ``lazy[name]`` (a module relative to the
    package) and keeps the name in the package; ``__dir__`` lists the package's globals and
    its ``__all__``."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        if name in lazy:
            try:
                module = import_module(lazy[name], package)
            except ModuleNotFoundError as error:
                raise (missing_extra(error, f"{package}.{name}") or error) from error
            value = getattr(module, name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace["__all__"]))

    return __getattr__, __dir__
