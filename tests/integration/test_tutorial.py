"""The tutorial notebook (notebooks/tutorial_own_network.ipynb, not a pipeline target) runs
from top to bottom with this interpreter, and its results table shows what its text says:
on the clustered task GTV beats its local-only and pooled bounds, FedRelax its local-only one."""

import json
import sys

import numpy as np
import pandas as pd

NOTEBOOK = "notebooks/tutorial_own_network.ipynb"


def test_tutorial_notebook_runs_and_collaboration_beats_the_bounds(repo, tmp_path, monkeypatch):
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
    papermill.execute_notebook(str(repo / NOTEBOOK), str(tmp_path / "executed.ipynb"),
                               parameters={"results_csv": str(csv)}, kernel_name="networkedfl-tutorial",
                               cwd=str(tmp_path), progress_bar=False)

    mse = pd.read_csv(csv).set_index(["model", "method"])["mean test MSE"]
    assert len(mse) == 8 and bool(np.isfinite(mse).all())
    assert mse["linear", "GTV"] < min(mse["linear", "local-only"], mse["linear", "pooled"])
    assert mse["tree", "FedRelax"] < mse["tree", "local-only"]
    for family in ("linear", "tree"):  # the oracle knows the communities: the lower reference
        assert mse[family, "oracle (true communities)"] < mse[family, "pooled"]
    executed = (tmp_path / "executed.ipynb").read_text()
    assert "Warning" not in executed  # e.g. tqdm.auto's "IProgress not found" without ipywidgets
    stored = json.loads((repo / NOTEBOOK).read_text())  # kept in the repository without outputs
    assert not any(cell.get("outputs") for cell in stored["cells"] if cell["cell_type"] == "code")
