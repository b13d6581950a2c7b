"""Experiments: one registered entry per figure or table target (see :mod:`.registry`)."""

from . import gtv_targets  # noqa: F401  (registers the GTV targets)
from .registry import EXPERIMENTS, Claim, Experiment, get_experiment, register, rng_for

__all__ = ["EXPERIMENTS", "Claim", "Experiment", "get_experiment", "register", "rng_for"]
