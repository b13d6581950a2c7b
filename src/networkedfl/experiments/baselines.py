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


#: The extra baselines that run counted in local steps (:func:`run_baseline_steps`): FedAvg's
#: steps with a gradient term, a server step or both (SCAFFOLD), or with a personal model
#: per client beside them (Ditto, :func:`~networkedfl.algorithms.ditto_steps`): all of them.
STEP_BASELINES = ("fedprox", "scaffold", "fedadam", "fedyogi", "ditto")


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
