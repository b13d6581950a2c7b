"""Extra baselines beside the papers' methods (issue 42, item 7): FedProx, SCAFFOLD, FedAdam,
FedYogi and Ditto in the comparison targets.

None of the papers compares against these methods; a reviewer of a paper on FL over networks
asks for them.  A target's configuration lists them under one key shared by the targets,
``extra_baselines: [fedprox, scaffold, fedadam, ditto]``; every listed method is one more
job (setting) of the target, tuned by the target's tuning protocol like the papers' methods
(:mod:`~networkedfl.experiments.tuning`; its grid under ``tuning.grid.<name>``), drawn in a
grey dashed family whose legend entries say "extra baseline", and left out of the papers'
claims (a ``[reference]`` claim may compare them).  Each method's own parameters are the
keys of a block of its name (``fedprox: {mu: 0.01}``, see :data:`OWN_PARAMETERS`); a key not
given takes the algorithm's default.

The algorithms are :func:`~networkedfl.algorithms.fedprox` (Li et al. 2020),
:func:`~networkedfl.algorithms.scaffold` (Karimireddy et al. 2020, option II),
:func:`~networkedfl.algorithms.fedadam` / :func:`~networkedfl.algorithms.fedyogi` (Reddi et
al. 2021) and :func:`~networkedfl.algorithms.ditto` (Li et al. 2021, scored on the personal
models).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "EXTRA_BASELINES",
    "EXTRA_KEY",
    "EXTRA_LABEL",
    "OWN_PARAMETERS",
    "baseline_options",
    "extra_baselines",
    "for_baseline_setting",
    "is_extra_baseline",
    "STEP_BASELINES",
    "StepScaffold",
    "run_baseline",
    "run_baseline_steps",
    "with_extra_methods",
]

#: The configuration key that lists a target's extra baselines.
EXTRA_KEY = "extra_baselines"
#: Setting (algorithm name) -> the method's name in tables and figures.
EXTRA_BASELINES: dict[str, str] = {"fedprox": "FedProx", "scaffold": "SCAFFOLD", "fedadam": "FedAdam",
                                   "fedyogi": "FedYogi", "ditto": "Ditto"}
#: Every extra baseline's own parameters (keyword arguments of its algorithm).
OWN_PARAMETERS: dict[str, tuple[str, ...]] = {
    "fedprox": ("mu",), "scaffold": ("server_lr",), "ditto": ("lam",),
    "fedadam": ("server_lr", "beta1", "beta2", "tau"), "fedyogi": ("server_lr", "beta1", "beta2", "tau"),
}
#: What a figure's legend says of an extra baseline.
EXTRA_LABEL = "extra baseline, not in the paper"


def extra_baselines(params: Mapping[str, Any]) -> list[str]:
    """The settings listed under ``extra_baselines`` (empty when the key is absent); an
    unknown name is a :class:`ValueError` naming the known ones."""
    listed: Sequence[str] = params.get(EXTRA_KEY) or []
    unknown = [m for m in listed if m not in EXTRA_BASELINES]
    if unknown:
        raise ValueError(f"{EXTRA_KEY}: unknown methods {unknown}; expected some of {list(EXTRA_BASELINES)}")
    return list(dict.fromkeys(listed))


def is_extra_baseline(method: str) -> bool:
    """Whether ``method`` (a setting or its display name) is an extra baseline."""
    return method in EXTRA_BASELINES or method in EXTRA_BASELINES.values()


def baseline_options(setting: str, params: Mapping[str, Any]) -> dict[str, float]:
    """The own parameters of ``setting`` from the block of its name in ``params`` (absent
    keys take the algorithm's defaults); a key the method does not take is refused."""
    if setting not in EXTRA_BASELINES:
        raise ValueError(f"{setting!r} is not an extra baseline; expected one of {list(EXTRA_BASELINES)}")
    block = params.get(setting) or {}
    unknown = sorted(set(block) - set(OWN_PARAMETERS[setting]))
    if unknown:
        raise ValueError(f"{setting} takes no {unknown}; its own parameters: {list(OWN_PARAMETERS[setting])}")
    return {key: float(block[key]) for key in OWN_PARAMETERS[setting] if key in block}


def run_baseline(setting: str, model: Any, data: Any, own: Mapping[str, float], **options: Any) -> Any:
    """Run the extra baseline ``setting`` with the contract's ``options`` (``n_rounds``,
    ``local_epochs``, ``batch_size``, ``lr``, ``init``, ``seed``, ``callback``, ...) and its
    ``own`` parameters (:func:`baseline_options`); the
    :class:`~networkedfl.algorithms.FederatedResult`."""
    from .. import algorithms

    if setting not in EXTRA_BASELINES:
        raise ValueError(f"{setting!r} is not an extra baseline; expected one of {list(EXTRA_BASELINES)}")
    return getattr(algorithms, setting)(model, data, **options, **own)


#: The extra baselines that run counted in local steps (:func:`run_baseline_steps`): those
#: that are FedAvg's steps with a gradient term, a server step or both (SCAFFOLD).
#: Ditto (a second, personal model every round) is not step-counted yet.
STEP_BASELINES = ("fedprox", "scaffold", "fedadam", "fedyogi")


def run_baseline_steps(setting: str, model: Any, data: Any, own: Mapping[str, float], **options: Any) -> Any:
    """Run the extra baseline ``setting`` with local work counted in steps, as
    :func:`~networkedfl.algorithms.fedavg_steps` (its ``options``: ``n_rounds``,
    ``local_steps``, ``batch_size``, ``lr``, ``mask``, ``mask_average``, ...): FedProx is
    FedAvg's steps with the proximal gradient ``mu (w - w^t)`` (Li et al. 2020, eq. (2);
    :func:`~networkedfl.algorithms.proximal_term` with the round's start as anchor, the
    ``correction`` mechanism of :func:`~networkedfl.algorithms.local_sgd`), FedAdam and
    FedYogi FedAvg's steps with the server optimiser on the average (Reddi et al. 2021,
    Algorithm 2; :func:`~networkedfl.algorithms.server_optimizer_rule`), SCAFFOLD
    (:class:`StepScaffold`) FedAvg's steps with the control variates.  Any other
    baseline is a :class:`ValueError` naming :data:`STEP_BASELINES`."""
    from .. import algorithms

    if setting not in STEP_BASELINES:
        raise ValueError(f"{setting!r} has no step-counted run; extra baselines counted in local steps: "
                         f"{list(STEP_BASELINES)}")
    if setting == "fedprox":
        mu = float(own.get("mu", 0.01))
        if not mu >= 0:
            raise ValueError(f"fedprox.mu must be non-negative, got {mu!r}")
        hook = {"correction": lambda start: algorithms.proximal_term(mu, start)}
    elif setting == "scaffold":
        hook = StepScaffold(float(own.get("server_lr", 1.0)), options).hooks()
    else:
        hook = {"server_step": algorithms.server_optimizer_rule(setting.removeprefix("fed"), **own)}
    return algorithms.fedavg_steps(model, data, **options, **hook)


class StepScaffold:
    """SCAFFOLD (Karimireddy et al. 2020, Algorithm 1, option II) on the hooks of
    :func:`~networkedfl.algorithms.fedavg_steps`: every local step adds ``c - c_i``
    (:func:`~networkedfl.algorithms.control_variates`); after the round's ``K = local_steps``
    steps of size ``eta_l = lr`` from ``x`` to ``y_i`` every client sets
    ``c_i+ = c_i - c + (x - y_i) / (K eta_l)``
    (:func:`~networkedfl.algorithms.aggregate.scaffold_controls`), ``c`` becomes the clients'
    mean ``c_i`` (all clients take part every round) and the server moves
    ``x <- x + eta_g (mean y_i - x)``.  With a ``mask`` a client's frozen coordinates hold
    ``c_i = 0`` and ``c`` averages each coordinate over the clients that train it (the
    ``mask_average`` of the models); ``x - y_i`` is taken from the client's own start."""

    def __init__(self, server_lr: float, options: Mapping[str, Any]) -> None:
        if not server_lr > 0:
            raise ValueError(f"scaffold.server_lr must be positive, got {server_lr!r}")
        if callable(options["lr"]):
            raise TypeError("scaffold needs a constant lr (eta_l enters the control variates' update)")
        self.server_lr, self.lr, self.steps = server_lr, float(options["lr"]), int(options["local_steps"])
        self.mask = options.get("mask")
        self.c: Any = None
        self.c_i: Any = None

    def hooks(self) -> dict[str, Any]:
        """The ``correction``, ``round_end`` and ``server_step`` of ``fedavg_steps``."""
        return {"correction": self.correction, "round_end": self.round_end, "server_step": self.server_step}

    def correction(self, start: Any) -> Any:
        from ..algorithms import control_variates

        if self.c_i is None:
            self.c_i, self.c = start.new_zeros(start.shape), start.new_zeros(start.shape[1])
        return control_variates(self.c, self.c_i)

    def round_end(self, start: Any, end: Any) -> None:
        import torch

        from ..algorithms import scaffold_controls

        steps = torch.full((start.shape[0],), self.steps, device=start.device)
        new = scaffold_controls(self.c_i, self.c, start, end, steps, self.lr)
        if self.mask is None:
            self.c_i, self.c = new, new.mean(dim=0)
            return
        held = self.mask.to(new.dtype)
        self.c_i = new * held
        self.c = self.c_i.sum(dim=0) / held.sum(dim=0).clamp_min(1.0)

    def server_step(self, previous: Any, average: Any) -> Any:
        return previous + self.server_lr * (average - previous)


def for_baseline_setting(params: Mapping[str, Any], setting: str) -> dict[str, Any]:
    """``params`` as the job (or tuning run) of ``setting`` needs them: a method of the paper
    sees no extra baseline (neither the list nor their blocks), an extra baseline its own
    block only and no other method, so that listing a baseline reruns no job of the
    paper's methods and adding one reruns no other.  Parameters with neither the list nor
    a baseline's block, and those of a job that is none of the methods (a job running all
    of them), are returned as they are."""
    if EXTRA_KEY not in params and not any(name in params for name in EXTRA_BASELINES):
        return dict(params)
    if setting not in EXTRA_BASELINES and setting not in (params.get("methods") or []):
        return dict(params)  # a job of several methods (``one_job``): it runs the baselines too
    out = {k: v for k, v in params.items() if k != EXTRA_KEY and (k not in EXTRA_BASELINES or k == setting)}
    if setting in EXTRA_BASELINES:
        out[EXTRA_KEY] = [setting]
        if isinstance(out.get("methods"), list):
            out["methods"] = []
    return out


#: The configured methods whose ``rounds``, ``local_steps`` and ``lr`` an extra baseline of
#: the GTV MNIST comparison takes, the first present: FedAvg's (Fig. 6), else IFCA's (Fig. 7;
#: the same rounds of full-batch local gradient steps).
TEMPLATES = ("fedavg", "ifca")


def with_extra_methods(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` whose ``methods`` mapping (job name -> method spec, the GTV MNIST targets)
    holds a job per extra baseline listed: ``{algorithm: <name>, rounds, local_steps, lr}``
    of the first of :data:`TEMPLATES` configured (the paper's values; these targets tune no
    method), and the baseline's own parameters (:func:`baseline_options`).  A job of that
    name already configured is kept as it is."""
    names = extra_baselines(params)
    if not names:
        return dict(params)
    methods = params["methods"]
    template = next((methods[t] for t in TEMPLATES if t in methods), None)
    if template is None:
        raise ValueError(f"{EXTRA_KEY} need a job of {' or '.join(TEMPLATES)} to take rounds, local_steps "
                         f"and lr from; configured: {list(methods)}")
    shared = {key: template[key] for key in ("rounds", "local_steps", "lr")}
    added = {name: {"algorithm": name, **shared, **baseline_options(name, params)}
             for name in names if name not in methods}
    return {**params, "methods": {**methods, **added}}
