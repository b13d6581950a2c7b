"""YAML as the configuration reads it: exact and bounded (issue 37).

* a key given twice in one mapping is an error naming both places (YAML loaders keep the
  last silently); keys written beside a merge key (``<<: *anchor``) override the merged
  ones, as YAML intends, and are not duplicates;
* anchors and aliases may repeat a block, but the document with every alias replaced by
  what it names may hold at most :data:`MAX_YAML_VALUES` values (a "billion laughs" of a
  few hundred bytes would otherwise be expanded by every walk over the config), and an
  alias may not name a block that contains it.

Both are checked on the composed document, before any value is constructed.  Before that,
before any parser reads it (issue 45):

* a file may hold at most :data:`MAX_YAML_BYTES` bytes (checked on its size, before it is
  read: a 24 MB overlay kept Snakemake's loader busy for over 300 s);
* a document may nest at most :data:`MAX_YAML_DEPTH` levels of mappings and sequences,
  counted on YAML's tokens (the scanner is a loop, not a recursion, and stops at the first
  level too deep): the composer recurses once per level, and 100 000 levels ended in a
  ``RecursionError`` with a traceback of thousands of lines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MAX_YAML_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_VALUES", "YamlProblem", "check_bounds", "check_size",
           "load_yaml"]

#: Values (scalars, lists, mappings) a config document may hold with its aliases expanded:
#: 35 times the ~2,900 of config/config.yaml.
MAX_YAML_VALUES = 100_000
#: Bytes a config file may hold: 30 times the 34 kB of config/config.yaml.
MAX_YAML_BYTES = 1 << 20
#: Levels of nesting (mappings and sequences) a config document may hold: config/config.yaml
#: has 7; the loader and every walk over the config recurse once or more per level.
MAX_YAML_DEPTH = 100
_OPEN = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken, yaml.FlowMappingStartToken,
         yaml.FlowSequenceStartToken)
_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
_MERGE = "tag:yaml.org,2002:merge"


class YamlProblem(ValueError):
    """Text that is not valid, exact or bounded YAML; the message names where."""


def _at(where: str, mark: yaml.Mark) -> str:
    return f"{where}, line {mark.line + 1}, column {mark.column + 1}"


def check_size(size: int, where: str) -> None:
    """Refuse ``size`` bytes over :data:`MAX_YAML_BYTES`, naming ``where``."""
    if size > MAX_YAML_BYTES:
        raise YamlProblem(f"{where}: {size} bytes, over the limit of {MAX_YAML_BYTES} bytes for a config file "
                          "(refused before it is parsed)")


def check_bounds(path: str | os.PathLike) -> str:
    """The text of the file ``path`` if its size (checked before it is read) and nesting
    depth (before it is parsed) are within :data:`MAX_YAML_BYTES` and :data:`MAX_YAML_DEPTH`;
    else :class:`YamlProblem` naming the file and the limit."""
    check_size(os.stat(path).st_size, str(path))
    text = Path(path).read_text(encoding="utf-8")
    try:
        _check_depth(text, str(path))
    except yaml.YAMLError:
        pass  # a syntax error: named, with its line, when the file is loaded
    return text


def _check_depth(text: str, where: str) -> None:
    """Refuse nesting deeper than :data:`MAX_YAML_DEPTH`, counted on the scanner's tokens
    (a loop; an indentless sequence, ``key:`` then ``- item`` at the key's column, counts
    as no level, so a document passes with at most twice the limit)."""
    scanner = yaml.SafeLoader(text)
    try:
        depth = 0
        while scanner.check_token():
            token = scanner.get_token()
            if isinstance(token, _OPEN):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise YamlProblem(f"{_at(where, token.start_mark)}: nested more than {MAX_YAML_DEPTH} levels "
                                      f"deep, over the limit of {MAX_YAML_DEPTH} levels for a config file "
                                      "(refused before it is parsed)")
            elif isinstance(token, _CLOSE):
                depth -= 1
    finally:
        scanner.dispose()


def _check(root: yaml.Node, loader: yaml.SafeLoader, where: str) -> None:
    """Duplicate keys, recursive aliases and the expanded size, in one walk of the node
    graph (each node once; an alias is the node it names)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in open_nodes:
            raise YamlProblem(f"{_at(where, node.start_mark)}: an alias names a block that contains it "
                              "(a recursive alias)")
        open_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, yaml.Mark] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = loader.construct_object(key_node)
                if key in first:
                    raise YamlProblem(
                        f"{_at(where, key_node.start_mark)}: the key {key!r} is given twice (first at line "
                        f"{first[key].line + 1}, column {first[key].column + 1}); the later value would "
                        "silently replace the earlier")
                first[key] = key_node.start_mark
            total = 1 + sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(child) for child in node.value)
        else:
            total = 1
        open_nodes.discard(id(node))
        if total > MAX_YAML_VALUES:
            raise YamlProblem(f"{where}: its aliases expand it to more than {MAX_YAML_VALUES} values: the block "
                              f"at line {node.start_mark.line + 1} alone holds {total} (an anchor may repeat a "
                              "block, not multiply it without bound)")
        sizes[id(node)] = total
        return total

    size(root)


def load_yaml(text: str, where: str, *, bounded: bool = False) -> Any:
    """The value of the YAML document ``text`` (``None`` if empty), checked as the module
    says; ``where`` names it in errors (a file, or ``--config <entry>``); ``bounded``: its
    size and depth were checked already (:func:`check_bounds`).

    Raises
    ------
    YamlProblem
        For text over :data:`MAX_YAML_BYTES` bytes or nested deeper than
        :data:`MAX_YAML_DEPTH` (both before it is parsed), a syntax error (with its line and
        column), a key given twice, a recursive alias, or aliases that expand it past
        :data:`MAX_YAML_VALUES` values.
    """
    if not bounded:
        check_size(len(text.encode("utf-8", "surrogatepass")), where)
    loader = yaml.SafeLoader(text)
    try:
        if not bounded:
            _check_depth(text, where)
        root = loader.get_single_node()
        if root is None:
            return None
        _check(root, loader, where)
        return loader.construct_document(root)
    except yaml.YAMLError as err:
        mark, context = getattr(err, "problem_mark", None), getattr(err, "context_mark", None)
        since = (f" ({err.context} at line {context.line + 1}, column {context.column + 1})"
                 if context is not None and getattr(err, "context", None) else "")
        raise YamlProblem(f"{_at(where, mark) if mark else where}: not valid YAML: "
                          f"{getattr(err, 'problem', None) or err}{since}") from err
    except RecursionError as err:
        raise YamlProblem(f"{where}: nested too deeply to be read") from err
    finally:
        loader.dispose()
