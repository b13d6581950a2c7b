"""Shared fixtures (the repository root, the merged test configuration, the built test
profile) and the cost split: every test under ``tests/integration/`` is marked
``integration``, which plain ``pytest`` leaves out (the fast loop is ``tests/unit/``); the
README's test command (``-m ""``) runs both."""

import json
import os
import subprocess
import sys
from pathlib import Path


def _pin_cpu_kernels() -> None:
    """The CPU kernels the pipeline's jobs run (networkedfl.pipeline.determinism, config
    ``cpu_kernels: avx2``), set before numpy, OpenBLAS or PyTorch load here, so that a job
    run again in this process (test_pipeline.py) gives the bits of the pipeline's job on an
    AVX-512 machine too. Asked of a short subprocess: the package imports numpy, which must
    not be loaded here yet."""
    if "numpy" in sys.modules:
        return
    code = "import json; from networkedfl.pipeline.determinism import pinned_kernels; print(json.dumps(pinned_kernels()))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    if proc.returncode == 0:
        os.environ.update(json.loads(proc.stdout.strip().splitlines()[-1]))


_pin_cpu_kernels()

import pytest  # noqa: E402

from networkedfl.pipeline.config import load_config  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
INTEGRATION = Path(__file__).resolve().parent / "integration"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if INTEGRATION in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


#: What a checkout needs to run the workflow (the package comes from the venv unless "src" is
#: copied too; "data/vendored" for targets reading real data).
WORKFLOW_FILES = ("Snakefile", "environment.yml", "workflow", "config", "notebooks", "profiles")


def copy_checkout(dest: Path, *extra: str) -> Path:
    """A copy of the repository's workflow files (and ``extra`` paths, e.g. ``"src"``) at
    ``dest``, for tests that edit, move or rename a checkout."""
    import shutil

    for name in (*WORKFLOW_FILES, *extra):
        source, target = REPO / name, dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(source, target)
    return dest


def alias_bomb(path: Path, levels: int = 9, width: int = 9) -> Path:
    """A config overlay of 0.6 KB whose YAML aliases expand to ``width**levels``
    values under ``lam_range`` of gtv_fig13_star_lambda (issue 37: a "billion laughs")."""
    lines = ["x0: &x0 [" + ", ".join(["1.0"] * width) + "]"]
    lines += [f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * width) + "]" for i in range(1, levels)]
    path.write_text("experiments:\n  gtv_fig13_star_lambda:\n    lam_range:\n"
                    + "".join(f"      - {line}\n" for line in lines))
    return path


def large_overlay(path: Path, megabytes: int = 50) -> Path:
    """A config overlay of ``megabytes`` MB of valid YAML (a list of numbers under one
    target's ``lam_range``; issue 45: 24 MB ran over 300 s in Snakemake's loader)."""
    row = "      - 1.0\n"
    with open(path, "w") as out:
        out.write("experiments:\n  gtv_fig13_star_lambda:\n    lam_range:\n")
        out.write(row * (megabytes * 10**6 // len(row) + 1))
    return path


def deep_overlay(path: Path, style: str, depth: int = 100_000) -> Path:
    """A config overlay nested ``depth`` deep (issue 45: 100 000 ended in a RecursionError):
    flow style (``[[[...]]]``), block sequences (``- - - ...``, indentation-based, on one
    line) or block mappings indented one space per level (``depth`` kept small enough that
    the file stays under a megabyte)."""
    if style == "flow":
        text = "seed: " + "[" * depth + "]" * depth + "\n"
    elif style == "block":
        text = "seed:\n  " + "- " * depth + "1\n"
    else:
        text = "seed:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(depth)) + " " * (depth + 1) + "1\n"
    path.write_text(text)
    return path


@pytest.fixture(scope="session")
def built(repo, tmp_path_factory) -> Path:
    """A scratch working directory in which `snakemake --cores 2` built the whole test
    profile (every target, the claims summary, the index page), as a user who has not
    activated the venv would run it; shared by the tests marked ``pipeline`` that read it."""
    import os
    import subprocess
    import sys

    workdir = tmp_path_factory.mktemp("pipeline")
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(repo / "config" / "test.yaml"), "--cores", "2"]
    env = {**os.environ, "PATH": os.pathsep.join(["/usr/bin", "/bin"])}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=2400, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return workdir


@pytest.fixture(scope="session")
def schema_path() -> Path:
    return SCHEMA


@pytest.fixture(scope="session")
def test_config() -> dict:
    return load_config(REPO / "config" / "config.yaml", REPO / "config" / "test.yaml", schema_path=SCHEMA)


@pytest.fixture(scope="session")
def input_root(repo, test_config, tmp_path_factory) -> Path:
    """A working directory holding every dataset as the download rules leave it, fetched
    from the vendored copies (offline): targets that read data run against it."""
    from networkedfl.datasets import DATASETS, fetch_dataset
    from networkedfl.io import Paths, vendored_dataset

    root = tmp_path_factory.mktemp("workdir")
    for name, dataset in DATASETS.items():
        fetch_dataset(dataset, root / Paths().raw_dataset(name), [str(vendored_dataset(repo, name))])
    # cached artefacts, as the three graph rules build them (same package functions)
    graphs = test_config.get("mnist_graphs", {})
    if graphs:
        from networkedfl.experiments.gtv.mnist_graph import (
            build_mnist_graph,
            graph_file,
            save_mnist_graph,
        )
    for graph, spec in graphs.items():
        built = build_mnist_graph(graph, spec, root / Paths().raw_dataset("mnist"), test_config["base_seed"])
        save_mnist_graph(built, root / graph_file(graph))
    return root


@pytest.fixture(scope="session")
def inputs_for(test_config, input_root):
    """``inputs_for(target, setting=None)``: the declared input files of the target's jobs
    (of the setting's variant, if given) below ``input_root``."""
    from networkedfl.pipeline.runner import job_inputs

    def resolve(target: str, config: dict | None = None, setting: str | None = None):
        declared = job_inputs(config or test_config, target, setting)
        if not declared:
            return None
        return {name: str(input_root / v) if isinstance(v, str) else [str(input_root / p) for p in v]
                for name, v in declared.items()}

    return resolve


# Clients with known answers for the FedAvg variants (FedProx, SCAFFOLD, FedOpt, Ditto:
# tests/unit/algorithms); torch is imported when a test asks for them.


def quadratic_data(centres, curvatures=None, repeats=None):
    """Clients with the losses ``F_i(w) = (h_i / 2) ||w - a_i||^2`` for a linear model:
    client ``i`` holds ``d`` samples ``x = s e_j``, ``y = s a_ij`` with ``s^2 = h_i d / 2``,
    whose mean squared error is ``F_i`` (gradient ``h_i (w - a_i)``), in float64; each sample
    ``repeats[i]`` times (the same loss, ``repeats[i] d`` samples: the weight of an average)."""
    import numpy as np
    import torch

    from networkedfl.nn import ClientData

    a = np.asarray(centres, dtype=float)
    n, d = a.shape
    h = np.ones(n) if curvatures is None else np.asarray(curvatures, dtype=float)
    r = np.ones(n, dtype=int) if repeats is None else np.asarray(repeats)
    s = np.sqrt(h * d / 2.0)
    x = [np.tile(s[i] * np.eye(d), (r[i], 1)) for i in range(n)]
    y = [np.tile(s[i] * a[i], r[i]) for i in range(n)]
    return ClientData.from_client_arrays(x, y, dtype=torch.float64)


def ragged_data(seed=0):
    """Five noisy linear clients of 3, 7, 12, 5 and 9 samples in 3 features (float64)."""
    import numpy as np
    import torch

    from networkedfl.nn import ClientData

    rng = np.random.default_rng(seed)
    sizes = [3, 7, 12, 5, 9]
    x = [rng.standard_normal((m, 3)) for m in sizes]
    y = [xi @ rng.standard_normal(3) + 0.1 * rng.standard_normal(len(xi)) for xi in x]
    return ClientData.from_client_arrays(x, y, dtype=torch.float64)


@pytest.fixture
def quadratic_clients():
    """:func:`quadratic_data`, the builder of the quadratic clients."""
    return quadratic_data


@pytest.fixture
def ragged_clients():
    """:func:`ragged_data` (seed 0)."""
    return ragged_data()
