"""Result type, round state and communication bookkeeping shared by the federated baselines.

Every baseline (:func:`~networkedfl.algorithms.fedavg.fedavg`,
:func:`~networkedfl.algorithms.fedsgd.fedsgd`, :func:`~networkedfl.algorithms.ifca.ifca`,
:func:`~networkedfl.algorithms.gossip.decentralized_fedavg`,
:func:`~networkedfl.algorithms.local.local_training`) returns a :class:`FederatedResult`.
After each round it appends one row to ``log`` (what was sent, how many messages and
floats went up and down) and one row to ``history`` (the round number, the cumulative
communication, algorithm-specific entries and whatever the user's callback returns).
Before the row, the clients' and the server's models are checked: NaN or inf stops the run
with :class:`~networkedfl.algorithms.errors.NonFiniteError`, naming the round and the clients.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .._validation import check_int
from ..nn import FlatModel
from .errors import NonFiniteError

__all__ = ["Callback", "FederatedResult", "RoundState"]


@dataclass(frozen=True, eq=False)
class RoundState:
    """What the callback sees after each round (tensors must not be modified).

    Attributes
    ----------
    round
        Round number, starting at 1 (for :func:`local_training`: the epoch).
    client_params
        ``(n, P)`` the model every client holds after the round.
    global_params
        ``(G, P)`` the server's models (groups, clusters); for serverless training the
        network average ``(1, P)``; for local training ``client_params``.
    selected
        ``(n,)`` bool: the clients that trained this round.
    assignment
        ``(n,)`` int64: group / cluster of every client (IFCA: the last cluster estimate,
        ``-1`` for a client never sampled yet).
    messages_total, floats_total
        Communication so far, including this round.
    """

    round: int
    client_params: Tensor
    global_params: Tensor
    selected: Tensor
    assignment: Tensor
    messages_total: int
    floats_total: int


#: ``callback(state) -> dict | None``: extra entries of the round's history row.
Callback = Callable[[RoundState], Mapping[str, Any] | None]


@dataclass(frozen=True, eq=False)
class FederatedResult:
    """Output of the federated baselines.

    Attributes
    ----------
    client_params
        ``(n, P)`` each client's final model (FedAvg/FedSGD/IFCA: the model of its group or
        cluster; gossip and local training: its own).
    global_params
        ``(G, P)`` the final server models: one per group (FedAvg, FedSGD; ``G = 1``
        without groups), one per cluster (IFCA), the network average (gossip, ``G = 1``),
        or ``client_params`` itself (local training, every client its own group).
    assignment
        ``(n,)`` int64 row of ``global_params`` belonging to each client (the groups; the
        final IFCA cluster estimates; zeros for gossip; ``arange(n)`` for local training).
    history
        One dict per round: ``round``, ``messages_total``, ``floats_total``, ``bytes_total``
        (cumulative), algorithm-specific entries (e.g. ``consensus_distance``) and the
        callback's entries.
    log
        One dict per round: ``round``, ``upload`` (``"models"`` for FedAvg, IFCA and gossip,
        ``"gradients"`` for FedSGD, ``"none"`` for local training), ``download``,
        ``clients`` (how many took part), ``messages_up``, ``messages_down``,
        ``floats_up``, ``floats_down``, ``bytes_up``, ``bytes_down``.
    """

    client_params: Tensor
    global_params: Tensor
    assignment: Tensor
    history: list[dict[str, Any]]
    log: list[dict[str, Any]]

    @property
    def n_rounds(self) -> int:
        return len(self.log)


@dataclass
class _Recorder:
    """Accumulates ``log`` and ``history`` rows and calls the user's callback."""

    callback: Callback | None
    itemsize: int
    log: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    messages_total: int = 0
    floats_total: int = 0

    def record(
        self,
        round_: int,
        *,
        upload: str,
        download: str,
        clients: int,
        messages_up: int,
        messages_down: int,
        floats_up: int,
        floats_down: int,
        client_params: Tensor,
        global_params: Tensor,
        selected: Tensor,
        assignment: Tensor,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.messages_total += messages_up + messages_down
        self.floats_total += floats_up + floats_down
        self.log.append(
            {
                "round": round_,
                "upload": upload,
                "download": download,
                "clients": clients,
                "messages_up": messages_up,
                "messages_down": messages_down,
                "floats_up": floats_up,
                "floats_down": floats_down,
                "bytes_up": floats_up * self.itemsize,
                "bytes_down": floats_down * self.itemsize,
            }
        )
        row: dict[str, Any] = {
            "round": round_,
            "messages_total": self.messages_total,
            "floats_total": self.floats_total,
            "bytes_total": self.floats_total * self.itemsize,
        }
        if extra:
            row.update(extra)
        _check_finite(round_, client_params, global_params, self.history)
        if self.callback is not None:
            state = RoundState(
                round_,
                client_params,
                global_params,
                selected,
                assignment,
                self.messages_total,
                self.floats_total,
            )
            more = self.callback(state)
            if more:
                row.update(more)
        self.history.append(row)

    def record_server_round(
        self,
        round_: int,
        *,
        upload: str,
        global_params: Tensor,
        group_of: Tensor,
        selected: Tensor,
    ) -> None:
        """Client-server round (FedAvg, FedSGD): each selected client sends ``P`` floats up
        (``upload``: "models" or "gradients") and receives its group's model."""
        s = int(selected.sum())
        p = int(global_params.shape[1])
        self.record(
            round_,
            upload=upload,
            download="models",
            clients=s,
            messages_up=s,
            messages_down=s,
            floats_up=s * p,
            floats_down=s * p,
            client_params=global_params[group_of],
            global_params=global_params,
            selected=selected,
            assignment=group_of,
        )

    def server_result(self, global_params: Tensor, group_of: Tensor) -> FederatedResult:
        """Result of a client-server run: every client holds its group's model."""
        return FederatedResult(global_params[group_of], global_params, group_of, self.history, self.log)


def _check_finite(round_: int, client_params: Tensor, global_params: Tensor,
                  history: list[dict[str, Any]]) -> None:
    """Raise :class:`NonFiniteError` naming the clients and server models that diverged.

    One reduction over each parameter matrix per round (one device sync on a GPU).
    """
    if bool(torch.isfinite(client_params).all()) and bool(torch.isfinite(global_params).all()):
        return
    clients = torch.nonzero(~torch.isfinite(client_params).all(dim=-1)).flatten().tolist()
    models = torch.nonzero(~torch.isfinite(global_params).all(dim=-1)).flatten().tolist()
    raise NonFiniteError(round_, clients, int(client_params.shape[0]), models, history)


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _check_positive_int(value: int, name: str, *, allow_zero: bool = True) -> int:
    """``value`` as an int of at least 0 (``allow_zero``) or 1; see :func:`check_int`."""
    return check_int(value, name, minimum=0 if allow_zero else 1)


def _check_groups(groups: Any, n: int, device: torch.device) -> tuple[Tensor, int]:
    """Group labels as an int64 tensor ``(n,)`` and the number of groups ``max + 1``."""
    if groups is None:
        return torch.zeros(n, dtype=torch.int64, device=device), 1
    g = groups if isinstance(groups, Tensor) else torch.as_tensor(np.asarray(groups))
    if g.is_floating_point() or g.shape != (n,):
        raise ValueError(f"groups must be {n} integer labels, got shape {tuple(g.shape)}")
    g = g.to(dtype=torch.int64, device=device)
    if n and int(g.min()) < 0:
        raise ValueError("group labels must be non-negative")
    return g, (int(g.max()) + 1 if n else 1)


def _check_participants(participants: Any, n: int, device: torch.device, *,
                        allow_none: bool = False) -> Tensor:
    """Boolean mask ``(n,)`` of the clients allowed to train (default: all); one with no
    client is an error unless ``allow_none`` (the server algorithms' rounds need one)."""
    if participants is None:
        return torch.ones(n, dtype=torch.bool, device=device)
    p = (
        participants
        if isinstance(participants, Tensor)
        else torch.as_tensor(np.asarray(participants))
    )
    if p.dtype != torch.bool or p.shape != (n,):
        raise ValueError(f"participants must be a boolean mask of shape ({n},)")
    if not allow_none and not bool(p.any()):
        raise ValueError("participants select no client: at least one client must be allowed to train")
    return p.to(device)


def _initial_rows(
    model: FlatModel,
    init: Tensor | np.ndarray | None,
    n_rows: int,
    generator: torch.Generator | None,
    dtype: torch.dtype,
    device: torch.device,
    what: str,
) -> Tensor:
    """``(n_rows, P)`` starting models: ``model.init`` once, a ``(P,)`` vector, or ``(n_rows, P)``."""
    if init is None:
        row = model.initial_params(generator, dtype=dtype, device=device)
        return row.expand(n_rows, -1).clone()
    t = init if isinstance(init, Tensor) else torch.as_tensor(np.asarray(init))
    t = t.to(dtype=dtype, device=device)
    if t.shape == (model.n_params,):
        return t.expand(n_rows, -1).clone()
    if t.shape == (n_rows, model.n_params):
        return t.clone()
    raise ValueError(
        f"init must have shape ({model.n_params},) or ({n_rows}, {model.n_params}) "
        f"(one row per {what}), got {tuple(t.shape)}"
    )
