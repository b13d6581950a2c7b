"""Issue 42 item 8: the package's docstrings and comments cite papers (author year, equation,
section) and files of this repository, never a file that is not in it (the reproduction's
specification beside the checkout, the authors' notebooks, a paper's file)."""

import ast
import io
import os
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: A path-like token naming a source, documentation, configuration or notebook file.
PATH = re.compile(r"(?<![\w/.$-])((?:\.\./|[\w.-]+/)*[\w-][\w.-]*\.(?:py|md|ipynb|ya?ml|toml|txt))(?![\w/])")
#: Directories that are not the repository's files (environments, caches, pipeline outputs).
SKIP = {".git", ".venv", "__pycache__", "results", ".snakemake", "node_modules"}


def repository_names(root: Path) -> set[str]:
    names = set()
    for _, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP and not d.startswith(".")]
        names.update(files)
    return names


def documentation(path: Path):
    """``(line, text)`` of every docstring and comment of a module."""
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield node.body[0].lineno, text
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def in_repository(name: str, module: Path, root: Path, names: set[str]) -> bool:
    if "/" not in name:
        return name in names or (module.parent / name).exists()
    for base in (root, module.parent):
        target = (base / name).resolve()
        if target.is_relative_to(root) and not set(target.relative_to(root).parts) & SKIP \
                and target.exists():
            return True
    return False


def missing_files(root: Path) -> list[str]:
    """``path:line: name`` of every file named in the package's documentation and not in the
    repository at ``root``."""
    root = root.resolve()
    names = repository_names(root)
    missing = []
    for module in sorted((root / "src").rglob("*.py")):
        for line, text in documentation(module):
            for match in PATH.finditer(text):
                if not in_repository(match.group(1), module, root, names):
                    missing.append(f"{module.relative_to(root)}:{line}: {match.group(1)}")
    return missing


def test_docstrings_name_only_files_of_the_repository():
    missing = missing_files(ROOT)
    assert not missing, "docstrings or comments name files that are not in the repository " \
                        "(cite the paper instead):\n" + "\n".join(missing)


def test_the_check_finds_a_file_outside_the_repository(tmp_path):
    """The scan itself: a module citing the specification beside the checkout, a paper's file
    or a notebook that does not exist is caught; files of the repository pass."""
    package = tmp_path / "src" / "networkedfl"
    package.mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "variants.md").write_text("")
    (package / "mod.py").write_text(
        '"""See ../shared/EXPERIMENTS.md §8, EXPERIMENTS.md and docs/variants.md."""\n'
        "# the authors' mnist_NN_experiment.ipynb; jung-2023-model-agnostic-fl-over-networks.txt\n"
        "x = 'EXPERIMENTS.md in code is not documentation'\n")
    found = [entry.split(": ", 1)[1] for entry in missing_files(tmp_path)]
    assert found == ["../shared/EXPERIMENTS.md", "EXPERIMENTS.md", "mnist_NN_experiment.ipynb",
                     "jung-2023-model-agnostic-fl-over-networks.txt"]
