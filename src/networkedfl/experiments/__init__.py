"""Experiments: one registered entry per figure or table target (see :mod:`.registry`)."""

from . import gtv_targets, lecture_targets  # noqa: F401  (register the targets)
from .registry import EXPERIMENTS, Claim, Experiment, get_experiment, register, rng_for

__all__ = ["EXPERIMENTS", "Claim", "Experiment", "get_experiment", "register", "rng_for"]
