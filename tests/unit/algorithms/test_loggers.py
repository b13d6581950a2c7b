"""Logging hooks (issue 19 item 7): a CSV logger, an optional TensorBoard logger and
composition, as the ``callback`` of the torch algorithms."""

import csv

import numpy as np
import pytest
import torch

from networkedfl.algorithms import fedavg
from networkedfl.algorithms.loggers import CSVLogger, TensorBoardLogger, compose
from networkedfl.nn import ClientData, client_losses, linear_regression


def _rows(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 12, 3))
    y = np.einsum("nmd,d->nm", x, [1.0, -2.0, 0.5])
    return ClientData.from_arrays(x, y)


def test_csv_logger_writes_one_row_per_round_and_feeds_the_history(tmp_path):
    data, model = _data(), linear_regression(3)

    def train_loss(state):
        return float(client_losses(model, state.client_params, data.features, data.targets,
                                   data.sample_weights).mean())

    seen = []
    with CSVLogger(tmp_path / "logs" / "run.csv", {"train_loss": train_loss}) as log:
        result = fedavg(model, data, n_rounds=4, local_epochs=1, batch_size=4, lr=0.05, seed=0,
                        callback=compose(log, lambda s: seen.append(s.round) or {"extra": s.round * 10}))
    rows = _rows(tmp_path / "logs" / "run.csv")
    assert [int(r["round"]) for r in rows] == [1, 2, 3, 4] == seen
    assert [float(r["train_loss"]) for r in rows] == [h["train_loss"] for h in result.history]
    assert [h["extra"] for h in result.history] == [10, 20, 30, 40]
    assert [int(r["floats_total"]) for r in rows] == [h["floats_total"] for h in result.history]
    losses = [float(r["train_loss"]) for r in rows]
    assert losses[-1] < losses[0]  # the logged metric is the real training loss, which falls
    # mode="a" continues the file without a second header
    with CSVLogger(tmp_path / "logs" / "run.csv", {"train_loss": train_loss}, mode="a") as log:
        fedavg(model, data, n_rounds=1, local_epochs=1, batch_size=4, lr=0.05, seed=0, callback=log)
    assert len(_rows(tmp_path / "logs" / "run.csv")) == 5
    with pytest.raises(ValueError, match="reserved"):
        CSVLogger(tmp_path / "x.csv", {"round": train_loss})


def test_tensorboard_logger_is_optional():
    try:
        import torch.utils.tensorboard  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install tensorboard"):
            TensorBoardLogger("unused")
        return
    pytest.skip("tensorboard is installed: the import error cannot be shown here")


def test_tensorboard_logger_writes_scalars_when_installed(tmp_path):
    pytest.importorskip("tensorboard")
    data, model = _data(), linear_regression(3)
    with TensorBoardLogger(tmp_path, {"weight_norm": lambda s: float(torch.linalg.norm(s.global_params))}) as log:
        result = fedavg(model, data, n_rounds=2, local_epochs=1, batch_size=4, lr=0.05, seed=0, callback=log)
    assert [h["weight_norm"] > 0 for h in result.history] == [True, True]
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())


def test_compose_stops_when_one_callback_asks():
    data, model = _data(), linear_regression(3)
    seen = []
    result = fedavg(model, data, n_rounds=6, local_epochs=1, batch_size=4, lr=0.05, seed=0,
                    callback=compose(lambda s: {"r": s.round}, lambda s: s.round == 2,
                                     lambda s: seen.append(s.round)))
    assert result.n_rounds == 2 and seen == [1, 2] and [h["r"] for h in result.history] == [1, 2]
