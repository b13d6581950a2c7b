"""Federated learning methods in PyTorch, batched over clients, one per module.

Import a method from its module, e.g. ``from networkedfl.algorithms.fedavg import fedavg``
(also ``fedsgd``, ``ifca``, ``pfedme``, ``gossip``, ``dfl``, ``fesem``, ``bigfl``,
``local``, ``local_sgd``, ``local_momentum``); importing this package alone does not
import PyTorch.  The GTV primal-dual method and its NumPy baselines are in
:mod:`networkedfl.gtv`, FedRelax in :mod:`networkedfl.fedrelax`.
"""

from .errors import NonFiniteError

__all__ = ["NonFiniteError"]
