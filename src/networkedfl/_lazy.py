"""Names a package loads on first use (PEP 562): a family whose heavy dependencies
(scikit-learn, PyTorch) only some of its names need keeps importing fast.

The package writes its table as a dict literal ``_LAZY = {"Name": ".module"}`` (the
provenance reads it from the source, :mod:`networkedfl.pipeline.provenance`) and installs
the module hooks with::

    __getattr__, __dir__ = lazy_module_hooks(globals(), _LAZY)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_module_hooks"]


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
            value = getattr(import_module(lazy[name], package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace["__all__"]))

    return __getattr__, __dir__
