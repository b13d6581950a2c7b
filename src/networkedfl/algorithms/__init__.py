"""Federated learning methods in PyTorch, batched over clients, one per module.

Import a method from its module, e.g. ``from networkedfl.algorithms.fedavg import fedavg``
(also ``fedsgd``, ``ifca``, ``pfedme``, ``gossip``, ``dfl``, ``fesem``, ``bigfl``,
``local``, ``local_sgd``, ``local_momentum``); importing this package alone does not
import PyTorch.  One contract for all of them (:mod:`~networkedfl.algorithms.contract`):
the shared options are the fields of ``TrainingOptions``, given as one object and/or as
keywords (``fedavg(model, data, TrainingOptions(n_rounds=50, ...), lr=0.1)``), every method
returns a ``FederatedResult`` and its callback sees a ``RoundState``.  The kernels they
share are public in :mod:`~networkedfl.algorithms.aggregate` (client sampling, group
averages, mixing) and :mod:`~networkedfl.algorithms.local_sgd` (local epochs and steps);
the optimiser steps and dtype/device parsing are in :mod:`networkedfl.nn`.  The GTV primal-dual method and its NumPy baselines are in
:mod:`networkedfl.gtv`, FedRelax in :mod:`networkedfl.fedrelax`.
"""

from .errors import NonFiniteError

__all__ = ["NonFiniteError"]
