"""The build machine's paths out of what the pipeline renders (issue 41 item 5).

An executed notebook records where it ran: papermill's parameters name the table and the
figures by absolute path, warnings name the installed module that raised them. Committed to
the gallery or opened as a report, those paths tell a reader about the builder's disk, not the
experiment. :func:`redact_paths` rewrites every absolute prefix of this machine to a short
relative stand-in: the checkout (and the working directory) become ``.``, the virtual
environment ``<venv>``, the temporary directory ``<tmp>`` and the home directory ``~``;
:func:`redact_notebook` does it to every text of a notebook, leaving images alone.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["path_replacements", "redact_notebook", "redact_paths"]

#: Outputs stored as base64: never text a path could be in (and "/" is a base64 digit).
BINARY_OUTPUTS = frozenset({"image/png", "image/jpeg", "image/gif", "application/pdf"})

# a prefix is replaced only where it starts a path and ends at a path separator or the end of
# the name: "/a/b" is not replaced in "x/a/b" nor in "/a/bc"
_NAME_CHAR = r"[\w.~-]"


def _spellings(path: str | Path) -> list[str]:
    """``path`` as written and with its symbolic links resolved (both can appear in a text)."""
    written = os.path.abspath(os.fspath(path))
    return list(dict.fromkeys([written, os.path.realpath(written)]))


def path_replacements(roots: Iterable[str | Path] = ()) -> dict[str, str]:
    """The absolute prefixes of this machine and their stand-ins: every root given (the
    checkout, the working directory) ``.``, the virtual environment ``<venv>`` (if Python runs
    in one), the temporary directory ``<tmp>``, the home directory ``~``. :func:`redact_paths`
    tries the longest first, so a venv inside the checkout becomes ``<venv>``."""
    pairs = [(root, ".") for root in roots]
    if sys.prefix != sys.base_prefix:
        pairs.append((sys.prefix, "<venv>"))
    pairs += [(tempfile.gettempdir(), "<tmp>"), (os.path.expanduser("~"), "~")]
    table: dict[str, str] = {}
    for path, stand_in in pairs:
        if not os.path.isabs(path):  # no home known: "~" stays "~"
            continue
        for spelling in _spellings(path):
            if spelling != os.sep:  # "/" is the prefix of everything
                table.setdefault(spelling, stand_in)
    return table


def redact_paths(text: str, roots: Iterable[str | Path] = (), replacements: Mapping[str, str] | None = None) -> str:
    """``text`` with every absolute prefix of :func:`path_replacements` (``roots``), or of
    ``replacements`` (prefix to stand-in) if given, rewritten to its stand-in."""
    table = path_replacements(roots) if replacements is None else dict(replacements)
    return _substitute(_pattern(table), table, text)


def redact_notebook(notebook, roots: Iterable[str | Path] = (), replacements: Mapping[str, str] | None = None):
    """The notebook (nbformat's node or its JSON as loaded) with :func:`redact_paths` applied to
    every string in it (sources, outputs, metadata such as papermill's parameters) except
    the base64 data of images; changed in place and returned."""
    table = path_replacements(roots) if replacements is None else dict(replacements)
    pattern = _pattern(table)

    def walk(node):
        if isinstance(node, str):
            return _substitute(pattern, table, node)
        if isinstance(node, dict):
            for key, value in node.items():
                if key not in BINARY_OUTPUTS:
                    node[key] = walk(value)
        elif isinstance(node, list):
            node[:] = [walk(item) for item in node]
        return node

    return walk(notebook)


def _pattern(table: Mapping[str, str]) -> re.Pattern | None:
    if not table:
        return None
    prefixes = "|".join(re.escape(p) for p in sorted(table, key=len, reverse=True))
    return re.compile(rf"(?<!{_NAME_CHAR})(?:{prefixes})(?!{_NAME_CHAR})")


def _substitute(pattern: re.Pattern | None, table: Mapping[str, str], text: str) -> str:
    return text if pattern is None else pattern.sub(lambda match: table[match.group(0)], text)
