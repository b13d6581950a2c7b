"""Issue 35 item 6: an install that fits the user.  The core (graphs, GTV with GTVRegressor,
FedRelax with scikit-learn models, partitions) needs neither PyTorch nor openTSNE, matplotlib or
pandas; a name that needs a missing extra says which ``pip install`` brings it.  Checked in a
subprocess in which those packages cannot be imported."""

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "openTSNE", "matplotlib", "pandas")

BLOCKER = textwrap.dedent(f"""
    import importlib.abc, sys
    BLOCKED = {HEAVY!r}
    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
    sys.meta_path.insert(0, Blocker())
""")


def run_without_heavy(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKER + textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def requirement_names(requirements):
    return {r.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].split("~")[0]
            .strip().lower() for r in requirements}


def installed_by(extra, extras):
    """The packages an extra installs, with the extras of networkedfl it names expanded."""
    names = set()
    for requirement in extras[extra]:
        if requirement.startswith("networkedfl["):
            for inner in requirement[len("networkedfl["):].split("]")[0].split(","):
                names |= installed_by(inner.strip(), extras)
        else:
            names |= requirement_names([requirement])
    return names


def test_the_core_dependencies_leave_the_heavy_packages_to_extras():
    core = requirement_names(project()["dependencies"])
    assert not core & {name.lower() for name in HEAVY}, core
    extras = project()["optional-dependencies"]
    assert installed_by("torch", extras) == {"torch"}
    pipeline = installed_by("pipeline", extras)  # what the reproduction needs, as before
    assert {"torch", "opentsne", "matplotlib", "pandas", "numba", "snakemake", "papermill",
            "jsonschema", "pyyaml"} <= pipeline
    assert pipeline <= installed_by("test", extras)
    pinned = {line.split("==")[0].strip().lower() for line in (ROOT / "constraints.txt").read_text().splitlines()
              if "==" in line and not line.startswith("#")}
    assert core | installed_by("test", extras) <= pinned  # the reproduction pins every one


def test_the_core_works_without_the_heavy_packages():
    result = run_without_heavy("""
        import sys
        import networkx as nx
        import numpy as np
        from sklearn.tree import DecisionTreeRegressor
        import networkedfl
        from networkedfl import FedRelax, GTVRegressor, NodeData, stochastic_block_model
        from networkedfl.datasets import dirichlet_label_skew, node_data, quantity_skew
        from networkedfl.graphs import EmpiricalGraph, knn_graph, star

        rng = np.random.default_rng(0)
        graph = stochastic_block_model([5, 5], 0.9, 0.05, seed=rng)
        X = [rng.standard_normal((4, 2)) for _ in range(10)]
        y = [x @ np.ones(2) for x in X]
        assert GTVRegressor(graph, lam=0.1, n_iter=100).fit(X, y).score(X, y) > 0.9
        trees = FedRelax(DecisionTreeRegressor(max_depth=2), graph, alpha=0.1, n_iter=2, random_state=0)
        trees.fit(X, y, public=rng.standard_normal((6, 2)))
        parts = dirichlet_label_skew(rng.integers(0, 3, 60), 4, 0.5, seed=0)
        node_data(rng.standard_normal((60, 2)), rng.standard_normal(60), parts)
        EmpiricalGraph.from_networkx(nx.path_graph(4))
        print(sorted({m.split(".")[0] for m in sys.modules} & set(BLOCKED)))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("statement", "extra"), [
    ("from networkedfl.algorithms import fedavg", "torch"),
    ("import networkedfl.nn", "torch"),
    ("from networkedfl.datasets import client_data; client_data([[0.0]], [0], [[0]])", "torch"),
    ("from networkedfl.graphs import tsne_embedding; tsne_embedding([[0.0, 1.0]] * 5, seed=0)", "tsne"),
    ("import networkedfl.plotting", "plot"),
])
def test_a_missing_extra_names_the_pip_command(statement, extra):
    result = run_without_heavy(statement)
    assert result.returncode != 0
    assert f'pip install "networkedfl[{extra}]"' in result.stderr, result.stderr
    assert "ImportError" in result.stderr


def test_the_package_ships_its_type_information():
    assert (ROOT / "src" / "networkedfl" / "py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    # the wheel ships the package directory whole (hatchling), py.typed with it; the core
    # install's test (tests/integration/test_core_install.py) finds it in site-packages
    assert data["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["src/networkedfl"]


#: The extras each tutorial needs (the README's table of tutorials says the same).
TUTORIALS = {"tutorial_own_network.ipynb": ("tutorials",), "tutorial_torch.ipynb": ("tutorials", "torch")}


def notebook_imports(path):
    """Top-level modules imported by a notebook's code cells."""
    import ast
    import json

    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    modules = set()
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "\n".join(line for line in "".join(cell["source"]).splitlines()
                           if not line.lstrip().startswith(("!", "%")))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules.add(node.module.split(".")[0])
    return modules


def test_the_tutorials_extras_install_what_the_tutorials_import():
    """Issue 42 item 8: every module a tutorial imports comes with the core or the extras the
    README lists for it, and the tutorials extra runs notebooks (nbconvert, a kernel)."""
    from importlib.metadata import packages_distributions

    extras = project()["optional-dependencies"]
    core = requirement_names(project()["dependencies"])
    distributions = packages_distributions()
    assert set(TUTORIALS) == {p.name for p in (ROOT / "notebooks").glob("tutorial_*.ipynb")}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for notebook, needs in TUTORIALS.items():
        row = next(line for line in readme.splitlines() if f"`notebooks/{notebook}`" in line and "pip install" in line)
        assert f'pip install ".[{",".join(needs)}]"' in row, row
        installed = core | {"networkedfl"} | set().union(*(installed_by(extra, extras) for extra in needs))
        imports = notebook_imports(ROOT / "notebooks" / notebook) - set(sys.stdlib_module_names)
        needed = {name: {d.lower() for d in distributions.get(name, [name])} for name in imports}
        uncovered = {name: dists for name, dists in needed.items() if not dists & installed}
        assert not uncovered, f"{notebook} imports {uncovered}, which {needs} do not install"
    assert {"nbconvert", "ipykernel", "networkx", "matplotlib", "pandas"} <= installed_by("tutorials", extras)
    assert installed_by("tutorials", extras) <= installed_by("test", extras)  # CI runs them (pinned)
