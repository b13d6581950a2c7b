"""Experiments: one registered entry per figure or table target (see :mod:`.registry`)."""

from . import (  # noqa: F401  (register the targets)
    fedrelax_targets,
    gfl_reviews_targets,
    graph_aware_targets,
    gtv_ablation,
    gtv_mnist_targets,
    gtv_targets,
    lecture_targets,
)
from .registry import EXPERIMENTS, Claim, Experiment, get_experiment, register, rng_for

__all__ = ["EXPERIMENTS", "Claim", "Experiment", "get_experiment", "register", "rng_for"]
