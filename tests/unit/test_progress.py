"""The progress switch: explicit flags win; otherwise the environment decides."""

import pytest

from networkedfl.progress import ENV_VAR, show_progress


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("0", False), ("False", False),
                                             ("", False), ("off", False)])
def test_environment_decides_when_not_told(monkeypatch, value, expected):
    monkeypatch.setenv(ENV_VAR, value)
    assert show_progress(None) is expected
    assert show_progress(True) is True and show_progress(False) is False


def test_off_by_default(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert show_progress(None) is False


def test_solver_shows_a_bar_when_the_environment_asks(monkeypatch, capsys):
    import numpy as np

    from networkedfl import NodeData
    from networkedfl.graphs import star
    from networkedfl.gtv import SquaredErrorLoss, gtv_primal_dual

    rng = np.random.default_rng(0)
    graph = star(4)
    loss = SquaredErrorLoss(NodeData(rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 3))))
    monkeypatch.setenv(ENV_VAR, "1")
    gtv_primal_dual(graph, loss, "nlasso", 0.1, n_iter=50)
    assert "primal-dual" in capsys.readouterr().err
    monkeypatch.setenv(ENV_VAR, "0")
    gtv_primal_dual(graph, loss, "nlasso", 0.1, n_iter=50)
    assert "primal-dual" not in capsys.readouterr().err
