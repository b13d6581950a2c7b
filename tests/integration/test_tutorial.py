"""The tutorial notebooks (not pipeline targets) run from top to bottom with this interpreter,
without warnings, and their results tables show what their text says.

* ``notebooks/tutorial_own_network.ipynb``: on the clustered task GTV beats its local-only and
  pooled bounds, FedRelax its local-only one;
* ``notebooks/tutorial_torch.ipynb`` (issue 35 item 7): FedAvg, IFCA, DFL-SGD and local training
  of a small ``nn.Module`` on a Dirichlet split of scikit-learn's digits, per-client accuracy."""

import json
import sys

import numpy as np
import pandas as pd

NOTEBOOK = "notebooks/tutorial_own_network.ipynb"
TORCH_NOTEBOOK = "notebooks/tutorial_torch.ipynb"


def execute(repo, notebook, tmp_path, monkeypatch):
    """Run ``notebook`` with papermill on this interpreter; its results CSV and executed text."""
    import papermill

    # a kernel on this interpreter (the venv's), whatever kernels the machine has installed
    spec = tmp_path / "jupyter" / "kernels" / "networkedfl-tutorial"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "networkedfl tutorial test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("MPLBACKEND", "Agg")

    csv = tmp_path / "results.csv"
    papermill.execute_notebook(str(repo / notebook), str(tmp_path / "executed.ipynb"),
                               parameters={"results_csv": str(csv)}, kernel_name="networkedfl-tutorial",
                               cwd=str(tmp_path), progress_bar=False)
    executed = (tmp_path / "executed.ipynb").read_text()
    assert "Warning" not in executed  # e.g. tqdm.auto's "IProgress not found" without ipywidgets
    stored = json.loads((repo / notebook).read_text())  # kept in the repository without outputs
    assert not any(cell.get("outputs") for cell in stored["cells"] if cell["cell_type"] == "code")
    return pd.read_csv(csv)


def test_tutorial_notebook_runs_and_collaboration_beats_the_bounds(repo, tmp_path, monkeypatch):
    mse = execute(repo, NOTEBOOK, tmp_path, monkeypatch).set_index(["model", "method"])["mean test MSE"]
    assert len(mse) == 8 and bool(np.isfinite(mse).all())
    assert mse["linear", "GTV"] < min(mse["linear", "local-only"], mse["linear", "pooled"])
    assert mse["tree", "FedRelax"] < mse["tree", "local-only"]
    for family in ("linear", "tree"):  # the oracle knows the communities: the lower reference
        assert mse[family, "oracle (true communities)"] < mse[family, "pooled"]


def test_torch_tutorial_compares_the_methods_per_client(repo, tmp_path, monkeypatch):
    table = execute(repo, TORCH_NOTEBOOK, tmp_path, monkeypatch)
    accuracy = table.set_index("method")["mean accuracy"]
    assert sorted(accuracy.index) == ["DFL-SGD", "FedAvg", "IFCA", "local training"]
    assert bool(((accuracy > 0) & (accuracy <= 1)).all())
    assert accuracy["FedAvg"] > accuracy["local training"]  # the tutorial's first conclusion
    assert accuracy["DFL-SGD"] > accuracy["local training"]
