"""One convention for sources of randomness, used by every function of the package that draws.

A function that draws takes a keyword ``seed``, which accepts:

``None``
    fresh entropy from the operating system (results are not reproducible);
an ``int``
    a fixed seed: the same call gives the same result;
a :class:`numpy.random.Generator`
    used as it is, so its state advances and several calls can share one stream;
a :class:`numpy.random.SeedSequence` or a :class:`numpy.random.BitGenerator`
    the generator numpy makes of it (``numpy.random.default_rng``);
a :class:`numpy.random.RandomState` (what scikit-learn code passes as ``random_state``)
    one draw from it seeds a generator, so its state advances as in scikit-learn.

Functions that draw with torch (the federated algorithms of :mod:`networkedfl.algorithms`,
the models' ``initial_params``) also accept a :class:`torch.Generator`, used as it is; any
other source becomes a CPU ``torch.Generator`` seeded from it
(:func:`networkedfl.nn.make_generator`). Random numbers are drawn on the CPU, so a seed
gives the same result on every device.

Two places keep other names on purpose:

* scikit-learn-style estimators (:class:`~networkedfl.gtv.GTVRegressor`,
  :class:`~networkedfl.fedrelax.FedRelax`) call it ``random_state``, as scikit-learn does,
  so that ``clone``, grid searches and ``set_params`` work as users expect;
* the internal protocols that the algorithms call, a data source's
  ``sample(batch_size, generator)`` and a model's ``init(generator, dtype, device)``, receive
  the ``torch.Generator`` the algorithm made from ``seed``.

There is no global seeding anywhere in the package (a test scans ``src/`` for one).

**One vocabulary for the pipeline's seeds** (issue 43 item 3):

``base_seed``
    the config's one number (``base_seed:`` in ``config/config.yaml``), mixed into every
    stream of a run;
``seed``
    the repetition index ``0 .. repetitions - 1``: the ``seed`` argument of a target's
    ``run(params, setting, seed, base_seed)`` and the ``seed`` column of its table.

This module owns every derivation of a stream from them: :func:`rng_for` (a problem
instance's numpy generator), :func:`graph_rng` (a learnt graph's, shared by the targets that
read it), :func:`generator_for` (a torch generator, e.g. a model's starting parameters) and
:func:`make_generator` (the torch generator of any ``seed``).
"""

from __future__ import annotations

import json
import numbers
import zlib
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = ["Seed", "as_rng", "generator_for", "graph_rng", "int_seed", "make_generator", "rng_for"]

#: What ``seed`` accepts in the numpy parts of the package.
Seed = (None | int | np.random.Generator | np.random.SeedSequence | np.random.BitGenerator
        | np.random.RandomState)


def as_rng(seed: Seed, name: str = "seed") -> np.random.Generator:
    """The :class:`numpy.random.Generator` that ``seed`` stands for.

    A ``Generator`` is returned as it is (not copied), so its state advances as it is used; a
    ``RandomState`` gives one draw of four 32-bit words to seed a new generator (and advances).

    Raises
    ------
    TypeError
        ``seed`` is none of the sources of the module docstring; the message names the
        argument ``name`` (``random_state`` for the estimators).
    """
    if seed is None or isinstance(seed, np.random.Generator | np.random.SeedSequence
                                  | np.random.BitGenerator):
        return np.random.default_rng(seed)
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**32, size=4, dtype=np.uint64))
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {seed}")
        return np.random.default_rng(int(seed))
    raise TypeError(
        f"{name} must be None, an int, a numpy Generator, SeedSequence, BitGenerator or "
        f"RandomState, got {type(seed).__name__}"
    )


def int_seed(seed: Seed, name: str = "seed") -> int:
    """An integer seed for libraries that take one (scikit-learn, openTSNE).

    An ``int`` is passed through unchanged; a ``Generator`` (or ``None``) gives one draw
    from ``[0, 2**31 - 1)``.
    """
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        as_rng(seed, name)  # validates the sign
        return int(seed)
    return int(as_rng(seed, name).integers(2**31 - 1))


def make_generator(source: Any) -> torch.Generator:
    """A CPU :class:`torch.Generator` from an explicit source of randomness.

    Parameters
    ----------
    source
        A :class:`torch.Generator` (returned as it is, so its state advances as it is
        used), a :class:`numpy.random.Generator` (one 63-bit seed is drawn from it; from a
        ``SeedSequence``, ``BitGenerator`` or ``RandomState``, from the generator
        :func:`as_rng` makes of it), an ``int`` seed, or ``None`` (a generator seeded from
        fresh OS entropy: not reproducible).  This is the ``seed`` convention of this module;
        :mod:`networkedfl.nn` re-exports it.

    Notes
    -----
    Random numbers are always drawn on the CPU and then moved to the compute device, so a
    seed gives the same mini-batches and client samples on every device.  Imports PyTorch
    (the ``torch`` extra) on first call.
    """
    import torch

    if isinstance(source, torch.Generator):
        return source
    if source is None:
        generator = torch.Generator(device="cpu")
        generator.seed()  # non-deterministic, as numpy.random.default_rng(None)
        return generator
    if isinstance(source, np.random.Generator | np.random.SeedSequence | np.random.BitGenerator
                  | np.random.RandomState):
        seed = int(as_rng(source).integers(0, 2**63 - 1))  # a Generator: as it is, advancing
    elif isinstance(source, int | np.integer) and not isinstance(source, bool):
        seed = int(source)
    else:
        raise TypeError(
            "seed must be None, an int, a numpy Generator, SeedSequence, BitGenerator or "
            f"RandomState, or a torch.Generator, got {type(source).__name__}"
        )
    return torch.Generator(device="cpu").manual_seed(seed)


def _crc(value: Any) -> int:
    return zlib.crc32(json.dumps(value, sort_keys=True, default=str).encode())


def rng_for(base_seed: int, experiment_id: str, seed: int, *keys: Any) -> np.random.Generator:
    """Independent generator for (``base_seed``, target, repetition ``seed``, instance keys).

    ``SeedSequence([base_seed, crc32(experiment_id), seed, crc32(keys)])`` (docs/determinism.md):
    the stream depends only on these values, never on how settings are batched into jobs or
    on the order in which jobs run.
    """
    entropy = [int(base_seed), _crc(experiment_id), int(seed), _crc(list(keys))]
    return np.random.default_rng(np.random.SeedSequence(entropy))


def graph_rng(base_seed: int, name: str) -> np.random.Generator:
    """A learnt graph's stream: ``SeedSequence([base_seed, crc32(name)])``, the same for every
    target that reads the graph (no target id, no repetition: the graph is built once)."""
    return np.random.default_rng(np.random.SeedSequence([int(base_seed), zlib.crc32(name.encode())]))


def generator_for(base_seed: int, experiment_id: str, seed: int, *keys: Any) -> torch.Generator:
    """The torch generator of (``base_seed``, target, repetition ``seed``, keys):
    :func:`make_generator` of :func:`rng_for`'s stream (one 63-bit draw seeds it)."""
    return make_generator(rng_for(base_seed, experiment_id, seed, *keys))
