"""Issue 35's install bar: ``pip install .`` without extras, in a fresh virtual environment,
holds no PyTorch, stays under 500 MB and runs the core (GTVRegressor, FedRelax with a
scikit-learn tree, graphs, partitions); a torch name says which extra to install."""

import shutil
import subprocess
import sys
import textwrap
import venv

LIMIT = 500 * 2**20

CORE = textwrap.dedent("""
    import numpy as np
    from sklearn.tree import DecisionTreeRegressor
    from networkedfl import FedRelax, GTVRegressor, stochastic_block_model
    from networkedfl.datasets import dirichlet_label_skew

    rng = np.random.default_rng(0)
    graph = stochastic_block_model([5, 5], 0.9, 0.05, seed=rng)
    X = [rng.standard_normal((4, 2)) for _ in range(10)]
    y = [x @ np.ones(2) for x in X]
    assert GTVRegressor(graph, lam=0.1, n_iter=100).fit(X, y).score(X, y) > 0.9
    FedRelax(DecisionTreeRegressor(max_depth=2), graph, n_iter=2, random_state=0).fit(
        X, y, public=rng.standard_normal((5, 2)))
    dirichlet_label_skew(rng.integers(0, 3, 50), 3, 0.5, seed=0)
    try:
        from networkedfl.algorithms import fedavg
    except ImportError as error:
        assert 'pip install "networkedfl[torch]"' in str(error), error
    else:
        raise AssertionError("torch is importable in the core install")
    print("core ok")
""")


def site_packages_bytes(env):
    found = list(env.glob("lib/python*/site-packages"))
    return sum(p.stat().st_size for p in found[0].rglob("*") if p.is_file())


def test_the_core_install_is_small_and_works(repo, tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "constraints.txt"):
        shutil.copy(repo / name, source / name)
    shutil.copytree(repo / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(source), "-c",
                              str(source / "constraints.txt")], capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True,
                            text=True, check=True).stdout.lower()
    for heavy in ("torch", "opentsne", "matplotlib", "pandas"):
        assert f"\n{heavy}==" not in f"\n{listed}", heavy
    installed = next(env.glob("lib/python*/site-packages")) / "networkedfl"
    assert (installed / "py.typed").is_file() and (installed / "gtv" / "__init__.py").is_file()
    size = site_packages_bytes(env)
    print(f"core install: {size / 2**20:.1f} MiB in site-packages")
    assert size < LIMIT
    run = subprocess.run([str(python), "-c", CORE], capture_output=True, text=True, cwd=tmp_path,
                         timeout=300)
    assert run.returncode == 0 and "core ok" in run.stdout, run.stderr
    assert sys.executable != str(python)
