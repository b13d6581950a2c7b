"""Which code produced a result: code hashes for reruns, provenance sidecars for readers.

A job's result depends on the package modules it imports, not only on its parameters.  For
every target this module finds those modules statically (the import graph of the package,
read with :mod:`ast`, starting from the modules that define the target's run and claims
functions, plus the pipeline's runner) and hashes their code:

* the hash is a rule ``param`` of the experiment, tuning, table, claims and notebook rules,
  so Snakemake's ``params`` rerun trigger reruns exactly the jobs whose code changed;
* the hash covers each module's syntax tree without docstrings, so comments, docstrings
  and formatting change nothing, while any change to the code does;
* it is computed from the files under a source directory (the checkout's ``src/``), so
  moving the checkout changes nothing.

Every output a job writes for a reader or a later job (raw and tuning outputs, tables,
claims, executed notebooks, figures, HTML pages, the graph cache stages) gets a sidecar
``<file>.provenance.json``: the package version, the code hash (and, for a table, the
modules it covers), the versions of Python and the numerical libraries in the job's
environment (reported, not hashed: another machine's numpy does not rerun anything), the
SHA-256 of the files it was made from where it reads files, and the size and SHA-256 of the
output itself, which every job reading the output checks
(:mod:`networkedfl.pipeline.integrity`).  That record detects corruption, not a deliberate
edit (whoever edits a result can rewrite its sidecar); with a results key set, each sidecar
is also signed (HMAC-SHA256, :mod:`networkedfl.pipeline.signing`).  The sidecars contain no time stamps: a rerun
rewrites them byte for byte wherever it rewrites their outputs byte for byte.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import json
import os
import platform
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..io import CorruptArtefactError, file_sha256, write_json
from .signing import results_key, sign_record

__all__ = [
    "LIBRARIES",
    "artefact_provenance",
    "code_hash",
    "input_digests",
    "job_provenance",
    "module_closure",
    "notebook_modules",
    "provenance",
    "read_sidecar",
    "sidecar_path",
    "table_provenance",
    "target_modules",
    "write_sidecar",
]

PACKAGE = "networkedfl"
#: Modules every pipeline job runs through (the job entry points).
PIPELINE_MODULES = ("networkedfl.pipeline.runner",)
#: Libraries whose versions a sidecar reports.
LIBRARIES = ("numpy", "scipy", "pandas", "scikit-learn", "torch", "openTSNE")
SUFFIX = ".provenance.json"


def default_root() -> Path:
    """The source directory of the imported package (``.../src/networkedfl``)."""
    return Path(__file__).resolve().parents[1]


def _module_file(root: Path, module: str) -> Path | None:
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_package(root: Path, module: str) -> bool:
    path = _module_file(root, module)
    return path is not None and path.name == "__init__.py"


@functools.cache
def _read(path: Path, mtime_ns: int, size: int) -> tuple[str, tuple[tuple[int, str | None, tuple[str, ...]], ...]]:
    """Digest of the docstring-free syntax tree, and the import statements, of one file
    (parsed once per process and file version)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    imports: list[tuple[int, str | None, tuple[str, ...]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.extend((0, alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imports.append((node.level, node.module, tuple(alias.name for alias in node.names)))
    for node in ast.walk(tree):  # docstrings do not count
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    digest = hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()
    return digest, tuple(imports)


def _info(root: Path, module: str) -> tuple[str, tuple[tuple[int, str | None, tuple[str, ...]], ...]]:
    path = _module_file(root, module)
    if path is None:
        raise KeyError(module)
    stat = path.stat()
    return _read(path, stat.st_mtime_ns, stat.st_size)


def _reexports(root: Path, package: str) -> dict[str, str]:
    """Names a package's ``__init__`` imports from its own modules: name -> module, also
    the names it loads on first use (a ``_LAZY = {"Name": ".module"}`` table, PEP 562)."""
    found = {}
    for level, base, names in _info(root, package)[1]:
        if level == 1 and base:
            for name in names:
                found[name] = f"{package}.{base}"
    found.update(_lazy_exports(_module_file(root, package), package))
    return found


@functools.cache
def _lazy_exports(path: Path, package: str) -> dict[str, str]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["_LAZY"]
                and isinstance(node.value, ast.Dict)):
            return {key.value: package + value.value for key, value in zip(node.value.keys, node.value.values, strict=True)
                    if isinstance(key, ast.Constant) and isinstance(value, ast.Constant)
                    and str(value.value).startswith(".")}
    return {}


def _resolve(root: Path, imports: Iterable[tuple[int, str | None, tuple[str, ...]]],
             package: str | None) -> set[str]:
    """The package modules that import statements ``(level, module, names)`` run, seen
    from ``package`` (for relative imports).

    A name imported from a package resolves to the submodule of that name or to the
    module its ``__init__`` re-exports it from; the package itself is hashed (as a parent)
    but not followed: its ``__init__`` imports every family of the package, which code
    using one name of it does not run.
    """
    found: set[str] = set()
    for level, base, names in imports:
        if level:
            if package is None:
                continue
            anchor = package.split(".")[: len(package.split(".")) - level + 1]
            base = ".".join(anchor + ([base] if base else []))
        if not base or base.split(".")[0] != PACKAGE:
            continue
        if not _is_package(root, base):
            found.add(base)
            continue
        exported = _reexports(root, base)
        for name in names or ():
            sub = f"{base}.{name}"
            found.add(sub if _module_file(root, sub) is not None else exported.get(name, base))
        if not names:  # `import networkedfl.x`: the package's own code runs
            found.add(base)
    return {name for name in found if _module_file(root, name) is not None}


def _imports(root: Path, module: str) -> set[str]:
    """The package modules whose code ``module`` runs by its imports (anywhere in its code)."""
    path = _module_file(root, module)
    if path is None:
        return set()
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    return _resolve(root, _info(root, module)[1], package)


def module_closure(modules: Iterable[str], root: Path | None = None) -> list[str]:
    """``modules`` and every package module they import, directly or not, with the
    ``__init__`` of every package on the way (Python runs them on import); sorted.

    The result does not depend on the order of the search: a package's ``__init__`` is
    followed only when it is one of ``modules`` itself.
    """
    root = root or default_root()
    roots = set(modules)
    todo, seen, expanded = sorted(roots), set(), set()
    while todo:
        name = todo.pop()
        if _module_file(root, name) is None:
            continue
        seen.add(name)
        parts = name.split(".")
        seen.update(".".join(parts[:k]) for k in range(1, len(parts)))  # parents' __init__
        if name in expanded or (_is_package(root, name) and name not in roots):
            continue
        expanded.add(name)
        todo.extend(sorted(_imports(root, name)))
    return sorted(seen)


def code_hash(modules: Iterable[str], root: Path | None = None) -> str:
    """SHA-256 (first 16 hex digits) of the code of ``modules`` (module names with their
    docstring-free syntax trees; comments and formatting do not count)."""
    root = root or default_root()
    digest = hashlib.sha256()
    for name in sorted(set(modules)):
        digest.update(f"{name}\0{_info(root, name)[0]}\n".encode())
    return digest.hexdigest()[:16]


def _defining_module(fn: Any) -> str | None:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__module__", None)


def target_modules(target: str, root: Path | None = None, *, jobs: str = "run") -> list[str]:
    """The package modules a target's jobs run, and everything they import: with
    ``jobs="run"`` those of its run, settings and inputs functions and the pipeline's runner
    (its tuning, run and table jobs); with ``jobs="claims"`` its claims function's (its
    claims job).  A family keeps every target's claims in one module
    (``experiments/<family>/claims.py``): editing a claim reruns the claims jobs, not the
    experiments."""
    from ..experiments import get_experiment

    experiment = get_experiment(target)
    if jobs not in ("run", "claims"):
        raise ValueError(f"jobs must be 'run' or 'claims', not {jobs!r}")
    functions = (experiment.claims,) if jobs == "claims" else (experiment.run, experiment.settings, experiment.inputs)
    roots = {_defining_module(fn) for fn in functions if fn is not None}
    return module_closure({r for r in roots if r} | set(PIPELINE_MODULES), root)


def notebook_modules(notebook: str | Path, root: Path | None = None) -> list[str]:
    """The package modules a notebook imports (from its code cells), and their imports."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    root = root or default_root()
    imports: list[tuple[int, str | None, tuple[str, ...]]] = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        try:
            tree = ast.parse("".join(source) if isinstance(source, list) else source)
        except SyntaxError:  # magics: no package imports to find there
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imports.extend((0, alias.name, ()) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                imports.append((node.level, node.module, tuple(alias.name for alias in node.names)))
    return module_closure(_resolve(root, imports, None), root)


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def provenance(code: str, modules: Iterable[str] | None = None) -> dict[str, Any]:
    """The provenance record of a result computed by code with hash ``code``: the package
    version, the hash, ``modules`` (where given) and the versions of Python and the
    numerical libraries."""
    from .. import __version__

    record: dict[str, Any] = {"package": PACKAGE, "version": __version__, "code_hash": code}
    if modules is not None:
        record["modules"] = sorted(set(modules))
    return {**record, "python": platform.python_version(),
            "libraries": {name: _version(name) for name in LIBRARIES}}


def input_digests(inputs: Mapping[str, str | Sequence[str]] | None) -> dict[str, list[str]]:
    """SHA-256 of every input file's bytes, by input name (sorted; each name's files in the
    order given)."""
    return {name: [file_sha256(path) for path in ([value] if isinstance(value, str | os.PathLike) else value)]
            for name, value in sorted((inputs or {}).items())}


def artefact_provenance(code: str, inputs: Mapping[str, str | Sequence[str]] | None = None,
                        **identity: Any) -> dict[str, Any]:
    """The sidecar record of an output: what it is (``identity``: target, setting, graph,
    spec, ...), :func:`provenance` with ``code``, the hash its rule computed when Snakemake
    built the DAG (the job's ``code`` param: the modules are not read again in every job; a
    target's table sidecar lists them), and, with ``inputs`` (name -> file or files), the
    SHA-256 of the files it was made from (:func:`input_digests`)."""
    record = {**identity, **provenance(code)}
    return {**record, "inputs": input_digests(inputs)} if inputs else record


def job_provenance(target: str, code: str, inputs: Mapping[str, str | Sequence[str]] | None = None,
                   **identity: Any) -> dict[str, Any]:
    """The sidecar record of one job of ``target`` (:func:`artefact_provenance`; ``identity``:
    the job's ``setting``, ``seeds``, ...)."""
    return artefact_provenance(code, inputs, target=target, **identity)


def table_provenance(target: str, code: str, job_hashes: Iterable[str | None]) -> dict[str, Any]:
    """The sidecar record of a target's table: :func:`provenance` with the modules the
    target runs, and the code hashes of the job files it collects (one, unless some were
    computed by other code, e.g. after a run with ``--rerun-triggers mtime``)."""
    return {"target": target, **provenance(code, target_modules(target)),
            "job_code_hashes": sorted({h for h in job_hashes if h is not None})}


def sidecar_path(output: str | Path) -> Path:
    """``results/tables/x.csv`` -> ``results/tables/x.csv.provenance.json``."""
    return Path(f"{output}{SUFFIX}")


def write_sidecar(output: str | Path, record: dict[str, Any]) -> Path:
    """Write ``record`` and the size and SHA-256 of ``output`` as it is now (key
    ``output``) atomically beside ``output``, signed when a results key is set
    (:mod:`networkedfl.pipeline.signing`); returns the sidecar's path."""
    path = sidecar_path(output)
    full = {**record, "output": {"bytes": os.stat(output).st_size, "sha256": file_sha256(output)}}
    key = results_key()
    write_json(sign_record(output, full, key) if key is not None else full, path)
    return path


def read_sidecar(output: str | Path) -> dict[str, Any]:
    """The provenance record beside ``output`` (``{}`` where there is none, e.g. a file
    from before provenance was recorded).

    Raises
    ------
    CorruptArtefactError
        If the sidecar is not a readable JSON object, naming it and the command that
        rebuilds it with its output.
    """
    path = sidecar_path(output)
    if not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptArtefactError({path: f"not a readable provenance record ({exc})"}) from exc
    if not isinstance(record, dict):
        raise CorruptArtefactError({path: f"not a provenance record (a JSON {type(record).__name__}, "
                                          "not an object)"})
    return record
