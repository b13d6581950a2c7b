"""Experiments: one registered entry per figure or table target (see :mod:`.registry`).

One subpackage per paper (:mod:`.gtv`, :mod:`.fedrelax`, :mod:`.gfl`, :mod:`.lecture`),
each with its runs, its targets' registration and its figure functions; the registry,
claims, tuning protocol and variants are shared; :mod:`.deviations` names the deviations from
the papers that each target depends on.
"""

from .._lazy import missing_extra

try:  # the experiments are the pipeline's: without its extra, an error that names it
    from .deviations import DEVIATIONS, deviation_link, deviation_paper
    from .fedrelax import targets as _fedrelax_targets  # noqa: F401  (register the targets)
    from .gfl import reviews_targets as _gfl_reviews_targets  # noqa: F401
    from .gfl import synthetic_targets as _gfl_synthetic_targets  # noqa: F401
    from .gtv import ablation as _gtv_ablation  # noqa: F401
    from .gtv import mnist_targets as _gtv_mnist_targets  # noqa: F401
    from .gtv import targets as _gtv_targets  # noqa: F401
    from .lecture import targets as _lecture_targets  # noqa: F401
    from .registry import (
        EXPERIMENTS,
        Claim,
        Experiment,
        get_experiment,
        register,
        register_target,
        rng_for,
    )
except ModuleNotFoundError as _error:
    raise (missing_extra(_error, "networkedfl.experiments") or _error) from _error

__all__ = [
    "DEVIATIONS", "EXPERIMENTS", "Claim", "Experiment", "deviation_link", "deviation_paper",
    "get_experiment", "register", "register_target", "rng_for",
]
