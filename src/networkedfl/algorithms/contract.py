"""The contract of the torch methods: their options, their result, their round bookkeeping.

Every torch method (:func:`~networkedfl.algorithms.fedavg`, ``fedsgd``, ``ifca``,
``fedprox``, ``scaffold``, ``fedopt`` (``fedadam``, ``fedyogi``), ``ditto``, ``pfedme``,
``local_training``, ``local_momentum_sgd``, ``decentralized_fedavg``, ``fedavg_steps``,
``dfl_sgd``, ``dfl_gt``, ``fesem``, ``bigfl``) is called as

    method(model, data[, graph], options=None, *, <its own parameters>, **overrides)

and returns a :class:`FederatedResult`.  The options shared by the methods (rounds, local
work, step size, client selection, start, randomness, callback, device, precision) are the
fields of one :class:`TrainingOptions`; they can be given as one object, as keywords, or
both (a keyword overrides the object's field)::

    base = TrainingOptions(n_rounds=50, local_epochs=1, batch_size=32, lr=0.1, seed=0)
    a = fedavg(model, data, base)
    b = fedavg(model, data, base, client_fraction=0.1)
    c = fedavg(model, data, n_rounds=50, local_epochs=1, batch_size=32, lr=0.1, seed=0)  # == a

Each method's docstring lists the options it uses, which are required and its defaults; an
option it does not use, set to anything but its default, is a ``TypeError`` naming it and,
where the method has the concept under another name, that name (a method counts its local
work in ``local_epochs`` or in ``local_steps``); a missing required option and an unknown
keyword (``epochs``, ``num_rounds``, ``learning_rate`` ... name the option meant) are errors
too.  ``n_rounds``, ``seed``, ``init``, ``callback``, ``progress``, ``device`` and ``dtype``
mean the same for every method.

After each round a method appends one row to ``log`` (what was sent, how many messages and
floats went up and down) and one row to ``history`` (the round number, the cumulative
communication, algorithm-specific entries and whatever the user's callback returns).
Before the row, the clients' and the server's models are checked: NaN or inf stops the run
with :class:`~networkedfl.algorithms.errors.NonFiniteError`, naming the round and the clients.
A callback that returns ``True`` stops the run after that round: the result holds the rounds
run so far.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .._lazy import missing_extra

try:
    import torch
    from torch import Tensor
except ModuleNotFoundError as _error:
    raise (missing_extra(_error, "networkedfl.algorithms.contract") or _error) from _error

from .._validation import check_int
from ..nn import (
    DEFAULT_DTYPE,
    ClientBatches,
    ClientBuckets,
    ClientData,
    DeviceLike,
    FlatModel,
    GeneratorLike,
    StepSize,
    as_batches,
    as_device,
    as_dtype,
    check_mask,
    make_generator,
)
from ..progress import show_progress, tqdm
from .aggregate import check_fraction, consensus_distance, sample_clients
from .errors import NonFiniteError

__all__ = [
    "STOP",
    "UNSET",
    "Callback",
    "FederatedResult",
    "Recorder",
    "RoundState",
    "Run",
    "TrainingOptions",
    "as_client_input",
    "check_groups",
    "check_labels",
    "check_participants",
    "initial_rows",
    "start_run",
]


class _Unset:
    """The value of an option nobody set (the method's default or a required option)."""

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


#: Marks an option that was not given (``None`` is a value: e.g. ``batch_size=None``, full batch).
UNSET: Any = _Unset()


@dataclass(frozen=True, eq=False)
class RoundState:
    """What the callback sees after each round (tensors must not be modified).

    Attributes
    ----------
    round
        Round number, starting at 1 (for :func:`local_training`: the epoch).
    client_params
        ``(n, P)`` the model every client holds after the round.  The client-server methods
        (FedAvg, FedSGD, IFCA) build it for the callback only: with one server model a
        stride-0 view of it (no copy), else an ``(n, P)`` gather of the server models.
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


#: ``callback(state) -> dict | bool | None``: extra entries of the round's history row, or
#: ``True`` to stop the run after this round.
Callback = Callable[[RoundState], Mapping[str, Any] | bool | None]


class _Stop:
    def __repr__(self) -> str:
        return "STOP"

    def __reduce__(self) -> str:
        return "STOP"


#: A key of a callback's dict that stops the run after the round, the dict's other entries
#: recorded (what :func:`~networkedfl.algorithms.loggers.compose` returns when one of its
#: callbacks returns ``True``): ``{**entries, STOP: True}``.
STOP: Any = _Stop()


@dataclass(frozen=True, eq=False)
class FederatedResult:
    """Output of the federated baselines.

    Attributes
    ----------
    client_params
        ``(n, P)`` each client's final model (FedAvg/FedSGD/IFCA: the model of its group or
        cluster; gossip and local training: its own).  FedAvg and FedSGD with one server
        model return a view of ``global_params`` (``global_params.expand(n, -1)``: stride 0,
        no copy, memory independent of ``n``): ``clone()`` it before writing into it.
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
class Recorder:
    """Accumulates ``log`` and ``history`` rows and calls the user's callback.

    Every method records one row per round with :meth:`record` (or the shorthands below);
    before the row the models are checked: NaN or inf raises
    :class:`~networkedfl.algorithms.errors.NonFiniteError` naming the round and the clients.
    A callback that returns ``True`` sets :attr:`stopped` (the rounds of :class:`Run` end);
    ``bar``, when given, advances once per round.

    ``client_params`` may be given as a function returning the ``(n, P)`` matrix whose rows
    are rows of ``global_params`` (every client holds a server model): it is then called only
    for the callback or to name the clients of an error, and the check reads
    ``global_params`` alone (its rows are finite if and only if the clients' are), so that a
    round costs what its sampled clients cost."""

    callback: Callback | None
    itemsize: int
    log: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    messages_total: int = 0
    floats_total: int = 0
    bar: Any = None
    stopped: bool = False

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
        client_params: Tensor | Callable[[], Tensor],
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
                client_params() if callable(client_params) else client_params,
                global_params,
                selected,
                assignment,
                self.messages_total,
                self.floats_total,
            )
            more = self.callback(state)
            if isinstance(more, bool | np.bool_):
                self.stopped = bool(more)
            elif isinstance(more, Mapping):
                entries = dict(more)
                self.stopped = bool(entries.pop(STOP, False))
                row.update(entries)
            elif more is not None:
                raise TypeError(f"callback returned {type(more).__name__} after round {round_}: it must "
                                "return None, a dict of history entries, or True to stop the run")
        self.history.append(row)
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        """Close the progress bar (the run is over)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _check_finite(round_: int, client_params: Tensor | Callable[[], Tensor], global_params: Tensor,
                  history: list[dict[str, Any]]) -> None:
    """Raise :class:`NonFiniteError` naming the clients and server models that diverged.

    One reduction over each parameter matrix per round (one device sync on a GPU); over
    ``global_params`` alone when ``client_params`` is a function of rows of it (see
    :class:`Recorder`), which is called only to name the clients of an error.
    """
    lazy = callable(client_params)
    if (lazy or bool(torch.isfinite(client_params).all())) and bool(torch.isfinite(global_params).all()):
        return
    if lazy:
        client_params = client_params()
    clients = torch.nonzero(~torch.isfinite(client_params).all(dim=-1)).flatten().tolist()
    models = torch.nonzero(~torch.isfinite(global_params).all(dim=-1)).flatten().tolist()
    raise NonFiniteError(round_, clients, int(client_params.shape[0]), models, history)


@dataclass(frozen=True, kw_only=True)
class TrainingOptions:
    """The options shared by the torch methods (which ones a method uses: its docstring).

    Attributes
    ----------
    n_rounds
        Communication rounds ``T`` (for DFL: rounds of ``local_steps`` iterations; for
        local training, rounds without communication: the callback runs after each).
    local_epochs
        Epochs ``E`` of local mini-batch SGD per round (``ClientUpdate`` of FedAvg; FedAvg,
        FedSGD, IFCA, gossip FedAvg, local training).
    local_steps
        Local mini-batch steps ``tau`` per round (the chapter's methods: FedAvg with steps,
        DFL, FeSEM, BiG-FL).  A method counts its local work in one of the two.
    batch_size
        Mini-batch size ``B``; ``None``: the full local datasets (no random draw).
    lr
        Step size ``eta``: a finite positive number, or for the chapter's methods a schedule
        ``t -> alpha^t`` of the global iteration (:func:`~networkedfl.nn.inverse_sqrt`).
    client_fraction
        ``C``: every round ``max(1, round(C * n_g))`` of the participating clients of every
        group are selected (1: all), uniformly without replacement with the generator of
        ``seed`` (:func:`~networkedfl.algorithms.aggregate.sample_clients`).  A round of
        FedAvg, FedSGD or IFCA then trains only the selected clients: its time and memory
        follow ``C * n``, not ``n``.
    client_chunk_size
        Train (and evaluate) at most this many selected clients per batched call (FedAvg,
        FedSGD, IFCA); ``None`` (default): all of a round's clients in one call.  It bounds
        a round's working memory (the clients' shuffled data and a step's activations) and
        leaves the results unchanged: the random draws are those of one call, and every
        client's computation is its own (the tests check the equality bit for bit).
    groups
        Optional integer label per client ``(n,)``: one server model per group (FedAvgC with
        the true clusters).  ``None``: one model.
    participants
        Optional boolean mask ``(n,)`` of the clients that may be selected (e.g. the
        sampling set ``M`` of the GTV experiments; ``n_g`` counts participants only).  The
        others never train but still receive their group's final model.
    init
        Starting model: ``(P,)`` for every client (or server model), or one row per client
        or server model; ``None``: one draw of ``model.init`` (IFCA: ``k`` draws).
    seed
        Randomness for client sampling, mini-batches and a random ``model.init``: a
        ``torch.Generator``, a ``numpy.random.Generator`` or an int
        (:func:`~networkedfl.nn.make_generator`).  Needed only when something is random.
    callback
        ``callback(RoundState) -> dict | bool | None`` after each round; a dict's entries
        join the round's ``history`` row (:mod:`~networkedfl.algorithms.loggers`), ``True``
        stops the run after the round.
    device, dtype
        Where and in which precision to compute: a device or its name (default the CPU), a
        floating dtype or its name; ``None`` (default): the data's precision (the dtype of a
        ``ClientData``'s or ``ClientBatches``' sample weights, float32 unless they were built
        in another), else :data:`~networkedfl.nn.DEFAULT_DTYPE` (float32), as scikit-learn
        estimators keep their input's precision.
    progress
        Show a tqdm bar over the rounds (``None``: as the environment says,
        :func:`networkedfl.progress.show_progress`).
    """

    n_rounds: int = UNSET
    local_epochs: int = UNSET
    local_steps: int = UNSET
    batch_size: int | None = UNSET
    lr: StepSize = UNSET
    client_fraction: float = 1.0
    client_chunk_size: int | None = None
    groups: Any = None
    participants: Any = None
    init: Tensor | np.ndarray | None = None
    seed: GeneratorLike | None = None
    callback: Callback | None = None
    device: DeviceLike = "cpu"
    dtype: torch.dtype | str | None = None
    progress: bool | None = False

    def replace(self, **changes: Any) -> TrainingOptions:
        """A copy with ``changes``; an unknown name is a ``TypeError`` naming it."""
        names = {f.name for f in dataclasses.fields(self)}
        for key in changes:
            if key not in names:
                raise TypeError(f"TrainingOptions has no option {key!r}; options: {sorted(names)}")
        return dataclasses.replace(self, **changes)

    def resolve(self, method: str, *, required: Iterable[str] = (), optional: Iterable[str] = (),
                defaults: Mapping[str, Any] | None = None) -> TrainingOptions:
        """The options of one call of ``method``, checked, with its defaults filled in.

        ``required`` must be set, ``optional`` and ``defaults`` (the method's defaults of
        unset options) may be; ``init``, ``seed``, ``callback``, ``progress``, ``device`` and
        ``dtype`` always may.  Any other option set to a value other than its default is a
        ``TypeError`` naming it (and the method's option for the same concept, if it has
        one); values are checked (``ValueError`` naming the option) and ``device`` and
        ``dtype`` parsed.
        """
        defaults = dict(defaults or {})
        used = {*required, *optional, *defaults, *ALWAYS}
        filled = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name not in used:
                if not _is_default(value, f.default):
                    instead = COUNTERPARTS.get(f.name)
                    hint = (f": it counts its local work in {instead!r}" if instead in used else "")
                    raise TypeError(f"{method}() does not use the option {f.name!r} (got {value!r}){hint}")
            elif value is UNSET and f.name in defaults:
                filled[f.name] = defaults[f.name]
            elif value is UNSET and f.name in required:
                raise TypeError(f"{method}() missing required option {f.name!r}")
        out = dataclasses.replace(self, **filled)
        checked: dict[str, Any] = {"device": as_device(out.device), "dtype": as_dtype(out.dtype)}
        for name, minimum in (("n_rounds", 0), ("local_epochs", 0), ("local_steps", 1)):
            if name in used and getattr(out, name) is not UNSET:
                checked[name] = check_int(getattr(out, name), name, minimum=minimum)
        if "batch_size" in used and out.batch_size not in (None, UNSET):
            checked["batch_size"] = check_int(out.batch_size, "batch_size", minimum=1)
        if "lr" in used and out.lr is not UNSET and not callable(out.lr):
            if isinstance(out.lr, bool) or not isinstance(out.lr, numbers.Real) \
                    or not (math.isfinite(out.lr) and out.lr > 0):
                raise ValueError(f"lr must be finite and positive (or a schedule t -> lr), got {out.lr!r}")
        if out.client_chunk_size is not None:
            checked["client_chunk_size"] = check_int(out.client_chunk_size, "client_chunk_size",
                                                     minimum=1)
        check_fraction(out.client_fraction)
        return dataclasses.replace(out, **checked)


#: Options every method takes.
ALWAYS = ("init", "seed", "callback", "progress", "device", "dtype")
#: The two ways of counting local work: a method that uses one refuses the other by name.
COUNTERPARTS = {"local_epochs": "local_steps", "local_steps": "local_epochs"}
#: Names other libraries use for the options (an unknown keyword names the option meant).
SYNONYMS = {
    "epochs": "local_epochs", "num_epochs": "local_epochs", "local_ep": "local_epochs",
    "rounds": "n_rounds", "num_rounds": "n_rounds", "n_iter": "n_rounds", "iterations": "n_rounds",
    "steps": "local_steps", "tau": "local_steps", "learning_rate": "lr", "step_size": "lr",
    "lr_lower": "lr", "batch": "batch_size", "fraction": "client_fraction",
    "fraction_fit": "client_fraction", "frac": "client_fraction", "random_state": "seed",
    "generator": "seed", "verbose": "progress", "init_params": "init", "precision": "dtype",
}


def _unknown_option(method: str, key: str, names: Iterable[str]) -> TypeError:
    meant = SYNONYMS.get(key) or next(iter(difflib.get_close_matches(key, sorted(names), n=1)), None)
    hint = f"; did you mean {meant!r}?" if meant else f"; options: {sorted(names)}"
    return TypeError(f"{method}() got an unexpected keyword argument {key!r}{hint}")


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    plain = (bool, int, float, str, torch.dtype)
    return isinstance(value, plain) and isinstance(default, plain) and value == default


def start_run(
    model: FlatModel,
    data: Any,
    options: TrainingOptions | None,
    overrides: Mapping[str, Any],
    method: str,
    *,
    required: Iterable[str] = (),
    optional: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
    batches: bool = False,
    ragged: bool = False,
) -> Run:
    """The common start of every method: its options resolved (``options`` with the keyword
    ``overrides``, see :meth:`TrainingOptions.resolve`), ``data`` in the options' dtype on
    their device (a :class:`~networkedfl.nn.ClientData`, with ``ragged`` a
    :class:`~networkedfl.nn.ClientBuckets` too, with ``batches`` any
    :class:`~networkedfl.nn.BatchSource`; a list of per-client ``torch.utils.data`` datasets
    or loaders is converted by :func:`as_client_input`), integer labels checked against the
    model's outputs (:func:`check_labels`), the generator made from ``seed`` and the recorder
    (with a progress bar over ``n_rounds`` if asked)."""
    if options is not None and not isinstance(options, TrainingOptions):
        raise TypeError(f"{method}() options must be a TrainingOptions, got {type(options).__name__}")
    changes = dict(overrides)
    names = {f.name for f in dataclasses.fields(TrainingOptions)}
    for key in changes:
        if key not in names:
            raise _unknown_option(method, key, names)
    opts = (options or TrainingOptions()).replace(**changes)
    data = as_client_input(data)
    if opts.dtype is None:  # the precision of the data
        weights = data.buckets[0].sample_weights if isinstance(data, ClientBuckets) \
            else getattr(data, "sample_weights", None)
        floating = isinstance(weights, Tensor) and weights.is_floating_point()
        opts = opts.replace(dtype=weights.dtype if floating else DEFAULT_DTYPE)
    opts = opts.resolve(method, required=required, optional=optional, defaults=defaults)
    if isinstance(data, ClientBuckets) and not ragged:
        raise TypeError(f"{method}() takes clients padded to one length, not ClientBuckets: pass "
                        "data.padded() (fedavg, the methods on its rounds, ifca and local_training take "
                        "buckets)")
    if batches:
        data = as_batches(data, opts.dtype, opts.device)
    elif isinstance(data, ClientData | ClientBuckets | ClientBatches):  # vector targets: ClientBatches
        data = data.to(opts.dtype, opts.device)
    else:
        raise TypeError(f"{method}() data must be a ClientData, got {type(data).__name__}")
    data = check_labels(model, data, method)
    bar = None
    if show_progress(opts.progress) and opts.n_rounds is not UNSET:
        bar = tqdm(total=opts.n_rounds, desc=method, leave=False)
    recorder = Recorder(opts.callback, torch.empty((), dtype=opts.dtype).element_size(), bar=bar)
    return Run(opts, model, data, make_generator(opts.seed), recorder)


def as_client_input(data: Any) -> Any:
    """The one conversion of the methods' ``data``: a list (or tuple) of per-client
    ``torch.utils.data`` datasets or loaders (one per client) becomes a padded
    :class:`~networkedfl.nn.ClientData` (:meth:`~networkedfl.nn.ClientData.from_datasets`, in
    the features' precision); anything else is returned as it is."""
    torch_clients = isinstance(data, list | tuple) and bool(data) and all(
        isinstance(d, torch.utils.data.Dataset | torch.utils.data.DataLoader) for d in data)
    return ClientData.from_datasets(data) if torch_clients else data


def check_labels(model: FlatModel, data: Any, method: str) -> Any:
    """``data``, its integer labels checked against the model's outputs before training.

    Where a sample's output has one dimension more than its target (class scores of a class
    label, as for :func:`~networkedfl.nn.cross_entropy`), found by one forward pass of one
    sample, every real sample's label must lie in ``[0, C)``, ``C`` the number of outputs: a
    ``ValueError`` names the method, the client and the label otherwise.  Padding (weight 0)
    is not checked; padding labels out of range are set to 0 (their loss weighs nothing, but
    the loss's ``gather`` would fail).  Other data (floating targets, other sources) are
    returned as they are."""
    if isinstance(data, ClientBuckets):
        return ClientBuckets(tuple(_check_label_range(model, part, method, rows)
                                   for part, rows in zip(data.buckets, data.clients, strict=True)),
                             data.clients)
    if isinstance(data, ClientData | ClientBatches):
        return _check_label_range(model, data, method, None)
    return data


def _check_label_range(model: FlatModel, data: Any, method: str, clients: Tensor | None) -> Any:
    y, w = data.targets, data.sample_weights
    if y.is_floating_point() or y.is_complex() or y.numel() == 0:
        return data
    with torch.no_grad():
        probe = model.forward(torch.zeros(model.n_params, dtype=w.dtype, device=w.device),
                              data.features[0, :1])
    if probe.ndim != y.ndim:
        return data
    n_out = int(probe.shape[-1])
    outside = ((y < 0) | (y >= n_out)).reshape(*w.shape, -1)
    bad = outside.any(dim=-1)
    real = bad & (w > 0)
    if bool(real.any()):
        i, j = (int(v) for v in torch.nonzero(real)[0])
        label = int(y[i, j].reshape(-1)[outside[i, j]][0])
        client = i if clients is None else int(clients[i])
        raise ValueError(f"{method}(): client {client} holds label {label} (its sample {j}), but the "
                         f"model has {n_out} outputs: class labels must lie in [0, {n_out})")
    if not bool(bad.any()):
        return data
    return type(data)(data.features, y.masked_fill(outside.reshape(y.shape), 0), w)


@dataclass(eq=False)
class Run:
    """What a method holds during its rounds (made by :func:`start_run`): the resolved
    ``options``, the ``model``, the ``data`` on the device, the ``seed`` (the generator of every
    random draw) and the ``recorder`` of the log and history."""

    options: TrainingOptions
    model: FlatModel
    data: Any
    seed: torch.Generator
    recorder: Recorder
    device: torch.device = field(init=False)
    dtype: torch.dtype = field(init=False)

    def __post_init__(self) -> None:
        self.device, self.dtype = self.options.device, self.options.dtype

    @property
    def n_clients(self) -> int:
        return int(self.data.n_nodes)

    @property
    def n_params(self) -> int:
        return self.model.n_params

    @cached_property
    def everyone(self) -> Tensor:
        """``(n,)`` all true: every client takes part."""
        return torch.ones(self.n_clients, dtype=torch.bool, device=self.device)

    @cached_property
    def zeros(self) -> Tensor:
        """``(n,)`` int64 zeros: every client in group 0."""
        return torch.zeros(self.n_clients, dtype=torch.int64, device=self.device)

    @cached_property
    def own(self) -> Tensor:
        """``(n,)`` ``arange(n)``: every client its own group."""
        return torch.arange(self.n_clients, device=self.device)

    def rounds(self) -> Iterator[int]:
        """The rounds ``t = 1 .. n_rounds``, ending early once the callback asked to stop."""
        for t in range(1, self.options.n_rounds + 1):
            if self.recorder.stopped:
                return
            yield t

    def initial_rows(self, n_rows: int, what: str) -> Tensor:
        """``(n_rows, P)`` starting models from the ``init`` option (:func:`initial_rows`)."""
        return initial_rows(self.model, self.options.init, n_rows, self.seed, self.dtype,
                            self.device, what)

    def groups(self) -> tuple[Tensor, int]:
        """The ``groups`` option as labels ``(n,)`` and their number (:func:`check_groups`)."""
        return check_groups(self.options.groups, self.n_clients, self.device)

    def participants(self, *, allow_none: bool = False) -> Tensor:
        """The ``participants`` option as a mask ``(n,)`` (:func:`check_participants`)."""
        return check_participants(self.options.participants, self.n_clients, self.device,
                                  allow_none=allow_none)

    def server_models(self) -> tuple[Tensor, int, Tensor, Tensor]:
        """The start of a client-server method with one model per group (FedAvg, FedSGD):
        the groups ``(n,)``, their number ``G``, the participants ``(n,)`` (at least one)
        and the starting models ``(G, P)``."""
        group_of, n_groups = self.groups()
        allowed = self.participants()
        return group_of, n_groups, allowed, self.initial_rows(n_groups, "group")

    def client_models(self, global_params: Tensor, group_of: Tensor) -> Tensor:
        """``(n, P)`` every client's server model ``global_params[group_of]``: with one server
        model a stride-0 view of it (``expand``: no copy, memory independent of ``n``)."""
        if global_params.shape[0] == 1:
            return global_params.expand(self.n_clients, -1)
        return global_params[group_of]

    def mask(self, mask: Any) -> Tensor | None:
        """A per-client parameter mask ``(n, P)`` (:func:`~networkedfl.nn.check_mask`)."""
        return check_mask(mask, self.n_clients, self.n_params, self.dtype, self.device)

    def record_alone(self, round_: int, params: Tensor) -> None:
        """A round without communication: every client trained its own model."""
        self.recorder.record(round_, upload="none", download="none", clients=self.n_clients,
                             messages_up=0, messages_down=0, floats_up=0, floats_down=0,
                             client_params=params, global_params=params, selected=self.everyone,
                             assignment=self.own)

    def record_exchange(self, round_: int, client_params: Tensor, global_params: Tensor,
                        assignment: Tensor, *, extra: Mapping[str, Any] | None = None,
                        download: str = "models", floats_down: int | None = None) -> None:
        """Every client sent its model up (``P`` floats) and received one message down
        (``P`` floats unless ``floats_down`` says how many in all)."""
        n, p = self.n_clients, self.n_params
        self.recorder.record(
            round_, upload="models", download=download, clients=n, messages_up=n, messages_down=n,
            floats_up=n * p, floats_down=n * p if floats_down is None else floats_down,
            client_params=client_params, global_params=global_params, selected=self.everyone,
            assignment=assignment, extra=extra)

    def record_gossip(self, round_: int, params: Tensor, messages: int, *, upload: str = "models",
                      vectors: int = 1, extra: Mapping[str, Any] | None = None) -> None:
        """A serverless round: ``messages`` messages of ``vectors`` vectors of ``P`` floats
        between neighbours; the history row holds ``consensus_distance`` and ``extra``."""
        self.recorder.record(
            round_, upload=upload, download="none", clients=self.n_clients,
            messages_up=messages, messages_down=0, floats_up=messages * self.n_params * vectors,
            floats_down=0, client_params=params, global_params=params.mean(dim=0, keepdim=True),
            selected=self.everyone, assignment=self.zeros,
            extra={"consensus_distance": consensus_distance(params), **(extra or {})})

    def server_rounds(self, groups: Tensor, n_groups: int,
                      participants: Tensor) -> Iterator[tuple[int, Tensor, Tensor, Any]]:
        """The rounds ``t = 1 .. n_rounds`` of a client-server method, each with its clients
        (:func:`~networkedfl.algorithms.aggregate.sample_clients` with the
        ``client_fraction`` option): ``(t, selected (n,), their indices, their data)``."""
        for t in self.rounds():
            selected = sample_clients(groups, n_groups, self.options.client_fraction, participants,
                                      self.seed)
            idx = torch.nonzero(selected).squeeze(1)
            yield t, selected, idx, self.data if idx.numel() == self.n_clients else self.data.subset(idx)

    def record_server_round(self, round_: int, *, upload: str, global_params: Tensor,
                            group_of: Tensor, selected: Tensor,
                            client_params: Tensor | Callable[[], Tensor] | None = None,
                            downloads: int | None = None, floats_down: int | None = None,
                            floats_up: int | None = None,
                            extra: Mapping[str, Any] | None = None) -> None:
        """Client-server round: each selected client sends ``P`` floats up (``upload``:
        "models" or "gradients"); ``downloads`` clients (default the selected ones) receive
        ``floats_down`` floats in all (default ``P`` each: their group's model, which they
        hold unless ``client_params`` says otherwise); ``floats_up`` floats go up in all
        (default ``P`` per selected client).  By default the clients' models
        ``global_params[group_of]`` are gathered only when needed (:class:`Recorder`)."""
        s = int(selected.sum())
        p = int(global_params.shape[1])
        r = s if downloads is None else downloads
        self.recorder.record(
            round_, upload=upload, download="models", clients=r, messages_up=s, messages_down=r,
            floats_up=s * p if floats_up is None else floats_up,
            floats_down=r * p if floats_down is None else floats_down,
            client_params=(lambda: self.client_models(global_params, group_of)) if client_params is None
            else client_params,
            global_params=global_params, selected=selected, assignment=group_of, extra=extra)

    @property
    def chunk_size(self) -> int | None:
        """The ``client_chunk_size`` option: clients per batched call (``None``: all)."""
        return self.options.client_chunk_size

    def result(self, client_params: Tensor, global_params: Tensor,
               assignment: Tensor) -> FederatedResult:
        """The :class:`FederatedResult` with the recorded history and log."""
        self.recorder.close()
        return FederatedResult(client_params, global_params, assignment, self.recorder.history,
                               self.recorder.log)


def check_groups(groups: Any, n: int, device: torch.device) -> tuple[Tensor, int]:
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


def check_participants(participants: Any, n: int, device: torch.device, *,
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


def initial_rows(
    model: FlatModel,
    init: Tensor | np.ndarray | None,
    n_rows: int,
    seed: torch.Generator | None,
    dtype: torch.dtype,
    device: torch.device,
    what: str,
) -> Tensor:
    """``(n_rows, P)`` starting models: ``model.init`` once, a ``(P,)`` vector, or ``(n_rows, P)``."""
    if init is None:
        row = model.initial_params(seed, dtype=dtype, device=device)
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
