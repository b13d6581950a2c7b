"""Logging hooks for the torch algorithms' ``callback`` (:data:`~networkedfl.algorithms.contract.Callback`).

Every torch algorithm (FedAvg, FedSGD, IFCA, pFedMe, gossip, DFL, FeSEM, BiG-FL, local
training) calls ``callback(state)`` after each round with a
:class:`~networkedfl.algorithms.contract.RoundState`; what the callback returns is added
to the round's history row.  The loggers here are such callbacks:

* :class:`CSVLogger` appends one row per round to a CSV file (flushed every round, so a
  long run can be watched with ``tail -f``);
* :class:`TensorBoardLogger` writes scalars with :mod:`torch.utils.tensorboard`, imported
  only when the logger is created (it needs the ``tensorboard`` package);
* :func:`compose` runs several callbacks and merges what they return.

Both loggers take ``metrics``: names mapped to functions of the round state (for example
the mean test accuracy of every client's model), evaluated once per round and shared with
the history.  Example::

    from networkedfl.algorithms import CSVLogger, evaluate, fedavg

    def test_accuracy(state):  # test: a ClientData of every client's test samples
        return float(evaluate(model, state.client_params, test)["accuracy"].mean())

    with CSVLogger("run.csv", {"test_accuracy": test_accuracy}) as log:
        result = fedavg(model, data, n_rounds=50, local_epochs=1, batch_size=32, lr=0.1,
                        seed=0, callback=log)

A callback that returns ``True`` stops the run (e.g. early stopping on a validation score);
:func:`compose` stops when any of its callbacks does.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .contract import STOP, Callback, RoundState

__all__ = ["CSVLogger", "TensorBoardLogger", "compose"]

Metric = Callable[[RoundState], float]
_COUNTERS = ("round", "messages_total", "floats_total")


def _evaluate(metrics: Mapping[str, Metric], state: RoundState) -> dict[str, float]:
    return {name: float(fn(state)) for name, fn in metrics.items()}


class _Logger:
    """A callback holding one open handle (a file, a SummaryWriter): a context manager."""

    _handle: Any

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> _Logger:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class CSVLogger(_Logger):
    """Append ``round, messages_total, floats_total`` and the ``metrics`` of every round to
    ``path`` (a new file, or a new header if ``mode="w"``; ``mode="a"`` continues one with
    the same columns).  Returns the metrics, which join the result's history."""

    def __init__(self, path: str | Path, metrics: Mapping[str, Metric] | None = None, *, mode: str = "w") -> None:
        if mode not in ("w", "a"):
            raise ValueError(f"mode must be 'w' or 'a', got {mode!r}")
        self.path, self.metrics = Path(path), dict(metrics or {})
        clash = set(self.metrics) & set(_COUNTERS)
        if clash:
            raise ValueError(f"metric names {sorted(clash)} are reserved for the round counters")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = mode == "w" or not self.path.exists() or self.path.stat().st_size == 0
        self._file = self._handle = open(self.path, mode, newline="", encoding="utf-8")  # noqa: SIM115
        self._writer = csv.DictWriter(self._file, fieldnames=[*_COUNTERS, *self.metrics])
        if fresh:
            self._writer.writeheader()
            self._file.flush()

    def __call__(self, state: RoundState) -> dict[str, float]:
        values = _evaluate(self.metrics, state)
        self._writer.writerow({"round": state.round, "messages_total": state.messages_total,
                               "floats_total": state.floats_total, **values})
        self._file.flush()
        return values


class TensorBoardLogger(_Logger):
    """Write the ``metrics`` (and the communication counters) of every round as TensorBoard
    scalars under ``log_dir``, step = round.  Needs ``pip install tensorboard``; the import
    happens here, so the package does not depend on it."""

    def __init__(self, log_dir: str | Path, metrics: Mapping[str, Metric] | None = None) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:  # tensorboard is optional
            raise ImportError("TensorBoardLogger needs the tensorboard package: pip install tensorboard") from exc
        self.metrics = dict(metrics or {})
        self._writer = self._handle = SummaryWriter(str(log_dir))

    def __call__(self, state: RoundState) -> dict[str, float]:
        values = _evaluate(self.metrics, state)
        for name, value in {"messages_total": state.messages_total, "floats_total": state.floats_total,
                            **values}.items():
            self._writer.add_scalar(name, value, state.round)
        self._writer.flush()
        return values


def compose(*callbacks: Callback | None) -> Callback:
    """One callback that calls ``callbacks`` in order and merges the entries they return (a
    later callback's entry wins on a shared name); when any of them returns ``True`` the run
    stops after the round, with the merged entries recorded (:data:`~.contract.STOP`)."""
    chosen = [cb for cb in callbacks if cb is not None]

    def run(state: RoundState) -> dict[Any, Any]:
        merged: dict[Any, Any] = {}
        for cb in chosen:
            out = cb(state)
            if isinstance(out, bool):
                merged[STOP] = merged.get(STOP, False) or out
            elif out is not None:
                merged.update(out)
        return merged

    return run
