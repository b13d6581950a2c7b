"""YAML as the configuration reads it: exact and bounded (issue 37).

* a key given twice in one mapping is an error naming both places (YAML loaders keep the
  last silently); keys written beside a merge key (``<<: *anchor``) override the merged
  ones, as YAML intends, and are not duplicates;
* anchors and aliases may repeat a block, but the document with every alias replaced by
  what it names may hold at most :data:`MAX_YAML_VALUES` values (a "billion laughs" of a
  few hundred bytes would otherwise be expanded by every walk over the config), and an
  alias may not name a block that contains it.

Both are checked on the composed document, before any value is constructed.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["MAX_YAML_VALUES", "YamlProblem", "load_yaml"]

#: Values (scalars, lists, mappings) a config document may hold with its aliases expanded:
#: 35 times the ~2,900 of config/config.yaml.
MAX_YAML_VALUES = 100_000
_MERGE = "tag:yaml.org,2002:merge"


class YamlProblem(ValueError):
    """Text that is not valid, exact or bounded YAML; the message names where."""


def _at(where: str, mark: yaml.Mark) -> str:
    return f"{where}, line {mark.line + 1}, column {mark.column + 1}"


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


def load_yaml(text: str, where: str) -> Any:
    """The value of the YAML document ``text`` (``None`` if empty), checked as the module
    says; ``where`` names it in errors (a file, or ``--config <entry>``).

    Raises
    ------
    YamlProblem
        For a syntax error (with its line and column), a key given twice, a recursive
        alias, or aliases that expand it past :data:`MAX_YAML_VALUES` values.
    """
    loader = yaml.SafeLoader(text)
    try:
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
