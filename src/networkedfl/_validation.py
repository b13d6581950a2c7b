"""Argument checks shared across the package: integers, integer arrays, boolean masks, finite
floats (step sizes and the other float arguments of the solvers), and weights and data of
magnitudes the solvers can represent.

One rule for what counts as an integer, wherever a count or an index is taken (node and
edge indices of :class:`~networkedfl.graphs.EmpiricalGraph`, sample ``counts`` of
:class:`~networkedfl.gtv.NodeData` and :class:`~networkedfl.nn.ClientData`, round and
step counts of the algorithms): an ``int``, a numpy integer, or a float whose value is
integral (``3.0``, as a config file or a float array gives it).  ``bool`` is not an
integer, nor are ``2.7``, NaN or a string: nothing is truncated or coerced, and every error
names the argument.

It also holds :func:`renamed`, :func:`renamed_function` and :func:`renamed_keywords`, the
one way the package keeps an old public name (an attribute, a function, a keyword) working
after a rename, and :func:`warn_renamed`, which they call (and any other renamed thing: an
environment variable, a protocol attribute): one warning class, :data:`RENAMED_WARNING`, a
:class:`FutureWarning` that names the new name.  ``FutureWarning`` rather than
``DeprecationWarning``: Python shows it by default wherever it is raised, while it hides a
``DeprecationWarning`` unless the calling code is ``__main__`` (PEP 565: ``FutureWarning`` is
the class for deprecations meant for the users of a library, the researchers calling these
functions from their own modules); scikit-learn warns of its renamed keywords the same way.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["MAX_MAGNITUDE", "RENAMED_WARNING", "check_finite", "check_int", "check_int_array", "check_node_mask",
           "check_representable", "renamed", "renamed_function", "renamed_keywords", "unrepresentable",
           "warn_renamed"]

#: The class of every warning about a renamed public name (module docstring: why not
#: ``DeprecationWarning``).
RENAMED_WARNING = FutureWarning

#: The largest magnitude of an edge weight or a data value: the solvers square and sum them
#: (``||x||^2``, ``A_e ||w_i - w_j||``, Lipschitz constants ``sum_e A_e^2``), and a square of
#: anything beyond ``1e154`` overflows float64 (``1.8e308``).
MAX_MAGNITUDE = 1e150
#: The smallest magnitude of a nonzero value: float64's smallest normal number; below it
#: (subnormals, down to ``5e-324``) a value has lost digits and its products vanish.
MIN_MAGNITUDE = float(np.finfo(np.float64).tiny)

_BOUNDS = {0: "a non-negative integer", 1: "a positive integer"}


def check_int(value: Any, name: str, *, minimum: int | None = None,
              error: type[ValueError] = ValueError) -> int:
    """``value`` as an ``int``, if it is an integer (see the module docstring) of at least
    ``minimum``; else ``error`` naming ``name``."""
    if isinstance(value, bool | np.bool_):
        number = None
    elif isinstance(value, float | np.floating):
        number = int(value) if math.isfinite(value) and float(value).is_integer() else None
    else:
        try:
            number = operator.index(value)
        except TypeError:
            number = None
    if number is None or (minimum is not None and number < minimum):
        what = "an integer" if minimum is None else _BOUNDS.get(minimum, f"an integer >= {minimum}")
        raise error(f"{name} must be {what}, got {value!r}")
    return number


def check_int_array(values: Any, name: str, *, error: type[ValueError] = ValueError) -> np.ndarray:
    """``values`` as an int64 array, if every entry is an integer (integral floats allowed
    below ``2**63``); booleans, ``1.7``, NaN and strings are an ``error`` naming ``name``."""
    arr = np.asarray(values)
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        if arr.size:
            raise error(f"{name} must hold integers, got dtype {arr.dtype}")
        return arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr) | (arr != np.round(arr)) | (np.abs(arr) >= 2.0**63)
        if np.any(bad):
            raise error(f"{name} must hold integers, got {arr[bad].ravel()[0]!r}")
    return arr.astype(np.int64)


def check_node_mask(mask: Any, n: int, name: str = "mask") -> np.ndarray:
    """A boolean mask of shape ``(n,)`` (``None``: all ``True``).  Entries must be booleans
    or the numbers 0 and 1: an index array or fractions are an error naming ``name``, not
    read as ``value != 0``."""
    if mask is None:
        return np.ones(n, bool)
    arr = np.asarray(mask)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if arr.dtype == np.bool_:
        return arr
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be a boolean mask, got dtype {arr.dtype}")
    other = (arr != 0) & (arr != 1)
    if np.any(other):
        raise ValueError(f"{name} must be a boolean mask (True/False or 1/0 per node), "
                         f"got {arr[other][:3].tolist()}")
    return arr.astype(bool)


_SIGNS = {None: "finite", "positive": "finite and positive", "non-negative": "finite and non-negative"}


def check_finite(value: Any, name: str, *, sign: str | None = None, element: str = "entry",
                 error: type[ValueError] = ValueError) -> np.ndarray:
    """``value`` (a number or an array) as a float array, if every entry is finite and, with
    ``sign``, ``"positive"`` or ``"non-negative"``; else ``error`` naming ``name`` and, for
    an array, the first bad ``element`` (``"node"``, ``"edge"``: the index along the first
    axis).  The check of every step size and float argument of the solvers."""
    if sign not in _SIGNS:
        raise ValueError(f"sign must be one of {sorted(map(str, _SIGNS))}, got {sign!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise error(f"{name} must be {_SIGNS[sign]} numbers, got {type(value).__name__}") from None
    bad = ~np.isfinite(arr)
    if sign == "positive":
        bad |= ~(arr > 0)
    elif sign == "non-negative":
        bad |= ~(arr >= 0)
    if bad.any():
        if arr.ndim == 0:
            raise error(f"{name} must be {_SIGNS[sign]}, got {value!r}")
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise error(f"{name} must be {_SIGNS[sign]}; {element} {first[0]} has {arr[first]!r} "
                    f"({int(bad.sum())} bad entries)")
    return arr


def unrepresentable(value: float) -> str | None:
    """Why the number ``value`` is beyond what the solvers represent (see
    :data:`MAX_MAGNITUDE`, :data:`MIN_MAGNITUDE`), or ``None`` if it is not."""
    size = abs(value)
    if size > MAX_MAGNITUDE:
        return (f"is beyond the magnitude {MAX_MAGNITUDE:.0e} the solvers can square and sum "
                "(float64 overflows at 1.8e+308): rescale")
    if 0 < size < MIN_MAGNITUDE:
        return (f"is below the smallest normal float64 {MIN_MAGNITUDE!r} (a subnormal number loses "
                "its digits): use 0 or rescale")
    return None


def check_representable(value: Any, name: str, *, element: str = "entry",
                        error: type[ValueError] = ValueError) -> np.ndarray:
    """``value`` as a float array, if no entry has a magnitude beyond :data:`MAX_MAGNITUDE`
    or a nonzero one below :data:`MIN_MAGNITUDE`; else ``error`` naming ``name``, the first
    bad ``element`` (its index) and its value.  NaN passes (the finiteness checks name it);
    infinities do not."""
    arr = np.asarray(value, dtype=float)
    size = np.abs(arr)
    bad = (size > MAX_MAGNITUDE) | ((size > 0) & (size < MIN_MAGNITUDE))
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        at = "" if arr.ndim == 0 else f"{element} {first[0] if len(first) == 1 else first} has "
        number = float(arr[first])
        raise error(f"{name}: {at}{number!r}, which {unrepresentable(number)} "
                    f"({int(bad.sum())} such entries)")
    return arr


def warn_renamed(message: str, *, stacklevel: int = 2) -> None:
    """Warn that a public name was renamed (``message`` names the new one), with
    :data:`RENAMED_WARNING`; ``stacklevel`` as :func:`warnings.warn`'s, counted from the caller
    of this function (2: the caller's caller)."""
    warnings.warn(message, RENAMED_WARNING, stacklevel=stacklevel + 1)


def renamed(new: str, old: str) -> property:
    """A read-only attribute ``old`` kept after its rename to ``new``: reading it warns
    (:data:`RENAMED_WARNING` naming ``new``) and returns ``getattr(self, new)``."""

    def getter(self: Any) -> Any:
        warn_renamed(f"{type(self).__name__}.{old} is deprecated; use {type(self).__name__}.{new}")
        return getattr(self, new)

    getter.__name__ = old
    getter.__doc__ = f"Deprecated name of :attr:`{new}` (warns)."
    return property(getter)


def renamed_function(function: Callable[..., Any], old: str) -> Callable[..., Any]:
    """``function`` under its old name ``old``: a call warns (:data:`RENAMED_WARNING`
    naming ``function``'s name) and returns what ``function`` returns."""

    @functools.wraps(function)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warn_renamed(f"{old} is deprecated; use {function.__name__}")
        return function(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated name of :func:`{function.__name__}` (warns)."
    return alias


def renamed_keywords(**renames: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: keyword ``old`` of ``renames`` (``old="new"``) is still accepted for ``new``
    and warns (:data:`RENAMED_WARNING` naming ``new``); giving both (``new`` by keyword or by
    position) is a TypeError naming them."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        positions = {name: i for i, name in enumerate(inspect.signature(function).parameters)}

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs or positions.get(new, len(args)) < len(args):
                        raise TypeError(f"{function.__name__}() got {old!r} and {new!r}: {old!r} is the old name "
                                        f"of {new!r}, give {new!r} only")
                    warn_renamed(f"{function.__name__}({old}=...) is deprecated; use {new}=...")
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper

    return decorate
