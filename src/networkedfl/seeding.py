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
  :class:`~networkedfl.algorithms.FedRelax`) call it ``random_state``, as scikit-learn does,
  so that ``clone``, grid searches and ``set_params`` work as users expect;
* the internal protocols that the algorithms call, a data source's
  ``sample(batch_size, generator)`` and a model's ``init(generator, dtype, device)``, receive
  the ``torch.Generator`` the algorithm made from ``seed``.

There is no global seeding anywhere in the package.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["Seed", "as_rng", "int_seed"]

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
