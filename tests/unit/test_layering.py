"""The package's architecture, checked from its source (issue 18): one subpackage per
family, layers from the bottom up, and no module importing a layer above its own."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "networkedfl"

#: Bottom to top.  A module may import its own layer's modules and those below, never above.
LAYERS = (
    ("_lazy", "_validation", "_nodedata", "seeding", "progress"),
    ("io",),
    ("graphs",),
    ("gtv",),
    ("nn",),
    ("fedrelax",),
    ("algorithms",),
    ("datasets",),
    ("plotting",),
    ("experiments",),
    ("pipeline",),
)
LAYER = {name: level for level, names in enumerate(LAYERS) for name in names}
#: What each base module may import within the bottom layer (no cycle among them).
BASE_ORDER = ("_lazy", "_validation", "_nodedata", "seeding", "progress")


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        package = parts[:-1]
        yield ".".join(parts if parts[-1] != "__init__" else parts[:-1]), ".".join(package), path


def _imported(module: str, package: str, path: Path):
    """Every networkedfl module or package named by an import anywhere in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] == "networkedfl":
                for alias in node.names:
                    yield node.lineno, base, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "networkedfl":
                    yield node.lineno, alias.name, None


def _family(dotted: str) -> str | None:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else None


def test_the_top_level_holds_subpackages_and_at_most_six_modules():
    modules = sorted(p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert len(modules) <= 6, modules  # the base layer (shared checks, the node container) and plotting
    families = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert set(modules) | set(families) == set(LAYER), "every top-level module and subpackage has a layer"


def test_no_module_imports_a_layer_above_its_own():
    wrong = []
    for module, package, path in _modules():
        own = _family(module)
        if own is None:  # networkedfl/__init__.py: the public API, from the layers below experiments
            own_level = LAYER["experiments"] - 1
        else:
            own_level = LAYER[own]
        for line, base, name in _imported(module, package, path):
            target = (_family(base) or _family(f"{base}.{name}")) if name else _family(base)
            if target is None or target == "__version__":  # `from networkedfl import __version__`
                continue
            if LAYER[target] > own_level or (own in BASE_ORDER and target in BASE_ORDER
                                               and BASE_ORDER.index(target) > BASE_ORDER.index(own)):
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports networkedfl.{target}")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_no_private_name_is_imported_from_another_subpackage():
    """Families talk through their public ``__init__``: a name starting with ``_`` stays
    inside the subpackage that defines it."""
    wrong = []
    for module, package, path in _modules():
        for line, base, name in _imported(module, package, path):
            if name and name.startswith("_") and name != "__version__" and _family(base) != _family(module):
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports {name} from {base}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("family", ["graphs", "gtv", "io", "fedrelax", "nn", "algorithms", "datasets"])
def test_every_public_name_of_a_family_is_exported_by_its_package(family):
    """What a private module defines without a leading underscore is the family's API."""
    init = ast.parse((PACKAGE / family / "__init__.py").read_text(encoding="utf-8"))
    exported = next(ast.literal_eval(node.value) for node in init.body if isinstance(node, ast.Assign)
                    and [getattr(t, "id", None) for t in node.targets] == ["__all__"])
    missing = []
    for path in sorted((PACKAGE / family).glob("_*.py")):
        if path.name == "__init__.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                if node.name not in exported:
                    missing.append(f"{path.name}: {node.name}")
    assert not missing, missing


def test_the_node_data_container_sits_below_the_families_that_share_it():
    """``NodeData`` holds the local datasets of GTV, the torch clients (``ClientData.from_node_data``)
    and the partitions: it belongs to none of those families (issue 35 item 8)."""
    import networkedfl

    defined_in = networkedfl.NodeData.__module__.split(".")[1]
    assert LAYER[defined_in] == 0, defined_in
    wrong = [f"{path.relative_to(PACKAGE)}:{line}" for module, package, path in _modules()
             for line, base, name in _imported(module, package, path)
             if name == "NodeData" and _family(base) not in (None, defined_in)
             and _family(module) != _family(base)]
    assert not wrong, "NodeData imported from another family: " + ", ".join(wrong)
