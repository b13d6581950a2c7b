"""Errors raised by the federated algorithms (no torch import here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["NonFiniteError"]


class NonFiniteError(FloatingPointError):
    """A run produced NaN or infinite parameters: it diverged.

    Every torch algorithm checks the models after each round and stops with this error
    instead of returning silently corrupted results.  The message names the round and the
    clients (or server models); the attributes keep them for code that treats divergence
    as an outcome (the tuning protocol scores a diverged grid point ``inf``).

    Attributes
    ----------
    round
        The round after which the parameters were first non-finite.
    clients
        Indices of the clients whose model has a non-finite entry (may be empty when only
        a server model that no client holds diverged).
    models
        Indices of the server models (groups, clusters) with a non-finite entry.
    history
        The history rows of the rounds before ``round``.
    """

    def __init__(self, round_: int, clients: Sequence[int], n_clients: int,
                 models: Sequence[int] = (), history: list[dict[str, Any]] | None = None) -> None:
        self.round = int(round_)
        self.clients = [int(i) for i in clients]
        self.models = [int(g) for g in models]
        self.history = list(history or [])
        shown = ", ".join(map(str, self.clients[:10])) + (", ..." if len(self.clients) > 10 else "")
        where = f"clients [{shown}] ({len(self.clients)} of {n_clients})" if self.clients else (
            f"server models {self.models}")
        super().__init__(
            f"round {self.round}: non-finite parameters (NaN or inf) at {where}; the run "
            "diverged: lower the step size (lr) or check the data for NaN/inf"
        )
