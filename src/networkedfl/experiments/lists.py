"""The written lists of targets, made from the registry (:data:`.registry.EXPERIMENTS`).

The registry is the only list of targets written by hand; the docs that list them are
generated here:

* ``docs/targets.md``: the table of targets (between ``<!-- targets:begin -->`` and
  ``<!-- targets:end -->``), in the papers' order (:mod:`.papers`);
* ``docs/deviations/README.md``: the ``targets`` column of every deviation's row;
* ``config/README.md``: the ``Targets:`` list of every config block (the targets registered
  with it as their ``schema``).

The config schema's target ids and per-target blocks are added when a config is validated
(:func:`networkedfl.pipeline.config.load_schema`), the papers' target lists are read from
the registry (:attr:`.papers.Paper.targets`); neither is written. Run::

    .venv/bin/python -m networkedfl.experiments.lists --write   # rewrite the files
    .venv/bin/python -m networkedfl.experiments.lists           # exit 1 if one is stale

``tests/unit/experiments/test_lists.py`` fails when a committed file differs from what
this writes.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from ..io import atomic_write, find_repo_root
from .deviations import DEVIATIONS
from .papers import ordered_targets
from .registry import EXPERIMENTS, Experiment

__all__ = ["FILES", "config_blocks", "deviations_index", "generated", "targets_page"]

BEGIN, END = "<!-- targets:begin -->", "<!-- targets:end -->"
#: A deviation's row of docs/deviations/README.md: link, what, targets.
_ROW = re.compile(r"^(\| \[([a-z0-9-]+)\]\(\w+\.md#[a-z0-9-]+\) \|[^|]*\| )(.*)( \|)$", re.M)
#: A config block's heading in config/README.md and the list of targets in its first paragraph.
_BLOCK = re.compile(r"^(### `(\w+)`\n\n[^\n]*?Targets: )((?:`\w+`(?:, )?)+)\.", re.M)


def _registered(experiments: Mapping[str, Experiment] | None) -> dict[str, Experiment]:
    experiments = EXPERIMENTS if experiments is None else experiments
    return {t: experiments[t] for t in ordered_targets(list(experiments))}


def targets_table(experiments: Mapping[str, Experiment] | None = None) -> str:
    """The table of ``docs/targets.md``: id, source, kind and the deviations it depends on."""
    lines = ["| id | paper | kind | deviations |", "|---|---|---|---|"]
    lines += [f"| `{t}` | {e.source} | {e.kind} | [{len(e.deviations)}](deviations/{e.paper}.md) |"
              for t, e in _registered(experiments).items()]
    return "\n".join(lines)


def targets_page(text: str, experiments: Mapping[str, Experiment] | None = None) -> str:
    """``text`` (``docs/targets.md``) with its table between the markers made anew."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"docs/targets.md: the markers {BEGIN} and {END} are missing")
    head, rest = text.split(BEGIN, 1)
    return f"{head}{BEGIN}\n{targets_table(experiments)}\n{END}{rest.split(END, 1)[1]}"


def deviations_index(text: str, experiments: Mapping[str, Experiment] | None = None) -> str:
    """``text`` (``docs/deviations/README.md``) with the targets column of every deviation's
    row made anew: the targets registered with it, in the papers' order (``every target``
    when all are); a deviation no target names keeps its text (why none does)."""
    registered = _registered(experiments)

    def row(match: re.Match[str]) -> str:
        slug = match.group(2)
        if slug not in DEVIATIONS:
            raise ValueError(f"docs/deviations/README.md: {slug!r} is not a deviation (networkedfl.experiments."
                             "deviations.DEVIATIONS)")
        named = [t for t, e in registered.items() if slug in e.deviations]
        if not named:
            return match.group(0)
        listed = "every target" if len(named) == len(registered) else ", ".join(f"`{t}`" for t in named)
        return f"{match.group(1)}{listed}{match.group(4)}"

    return _ROW.sub(row, text)


def config_blocks(text: str, experiments: Mapping[str, Experiment] | None = None) -> str:
    """``text`` (``config/README.md``) with the ``Targets:`` list of every config block made
    anew: the targets whose ``schema`` is the block, in the papers' order."""
    registered = _registered(experiments)

    def block(match: re.Match[str]) -> str:
        named = [t for t, e in registered.items() if e.schema == match.group(2)]
        if not named:
            raise ValueError(f"config/README.md: no registered target has the config block {match.group(2)!r}")
        return f"{match.group(1)}{', '.join(f'`{t}`' for t in named)}."

    return _BLOCK.sub(block, text)


#: The generated files (relative to the repository) and how each is made from its text.
FILES: dict[str, Callable[..., str]] = {
    "docs/targets.md": targets_page,
    "docs/deviations/README.md": deviations_index,
    "config/README.md": config_blocks,
}


def generated(root: Path, experiments: Mapping[str, Experiment] | None = None) -> dict[str, str]:
    """Each generated file's text as the registry makes it (path relative to ``root``)."""
    return {path: make((root / path).read_text(encoding="utf-8"), experiments) for path, make in FILES.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m networkedfl.experiments.lists", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the stale files (default: only check them)")
    parser.add_argument("--root", type=Path, help="the repository (default: the one holding the working directory)")
    args = parser.parse_args(argv)
    root = args.root or find_repo_root()
    made = generated(root)
    stale = [path for path, text in made.items() if (root / path).read_text(encoding="utf-8") != text]
    for path in stale:
        if args.write:
            atomic_write(root / path, lambda tmp, text=made[path]: Path(tmp).write_text(text, encoding="utf-8"))
        print(f"{'wrote' if args.write else 'stale'}: {path}")
    return 1 if stale and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
