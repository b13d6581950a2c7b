"""Federated learning methods in PyTorch, batched over clients: functions of this package.

``from networkedfl.algorithms import fedavg`` gives the method (also ``fedsgd``,
``fedavg_steps``, ``ifca``, ``pfedme``, ``local_training``, ``local_momentum_sgd``,
``decentralized_fedavg``, ``dfl_sgd``, ``dfl_gt``, ``fesem``, ``bigfl``); each lives in a
private module of the same name with a leading underscore.  Importing this package alone does
not import PyTorch: a name loads its module on first use (and without PyTorch installed says
which extra to install).

One contract for all of them (:mod:`~networkedfl.algorithms.contract`): the shared options
are the fields of :class:`TrainingOptions`, given as one object and/or as keywords
(``fedavg(model, data, TrainingOptions(n_rounds=50, ...), lr=0.1)``), every method returns a
:class:`FederatedResult` and its callback sees a :class:`RoundState` after every round (and
stops the run by returning ``True``); :func:`evaluate` scores every client's model on its own
data.  The kernels they share are public in :mod:`~networkedfl.algorithms.aggregate` (client
sampling, group averages, mixing) and here (:func:`local_sgd`, :func:`local_steps`); the
optimiser steps and dtype/device parsing are in :mod:`networkedfl.nn`; the logging callbacks
in :mod:`~networkedfl.algorithms.loggers`.  The GTV primal-dual method and its NumPy
baselines are in :mod:`networkedfl.gtv`, FedRelax in :mod:`networkedfl.fedrelax`.
"""

from .._lazy import lazy_module_hooks
from .errors import NonFiniteError

__all__ = [
    "AGGREGATIONS",
    "all_negatives",
    "assign_nearest",
    "BiGFLResult",
    "bigfl",
    "centre_distances",
    "check_doubly_stochastic",
    "check_fraction",
    "client_chunks",
    "cluster_means",
    "cluster_support",
    "ColumnProjection",
    "compose",
    "consensus_distance",
    "CSVLogger",
    "decentralized_fedavg",
    "DFLState",
    "dfl_gt",
    "dfl_iterates",
    "dfl_sgd",
    "Embedding",
    "epoch_batches",
    "epoch_order",
    "evaluate",
    "FederatedResult",
    "fedavg",
    "fedavg_steps",
    "fedsgd",
    "fesem",
    "gossip_average",
    "group_average",
    "hypergradient",
    "ifca",
    "in_client_chunks",
    "kmeans",
    "kmeans_centres",
    "kmeanspp_centres",
    "local_momentum_sgd",
    "local_sgd",
    "local_steps",
    "local_training",
    "lower_gradients",
    "mix",
    "MIXING_RULES",
    "mixing_matrix",
    "mixing_operator",
    "negative_samples",
    "NonFiniteError",
    "normalized_adjacency",
    "personalised_steps",
    "pfedme",
    "RoundState",
    "sample_clients",
    "TensorBoardLogger",
    "to_torch_sparse",
    "TrainingOptions",
    "upper_loss",
]

_LAZY = {
    "AGGREGATIONS": "._ifca",
    "all_negatives": "._bigfl",
    "assign_nearest": "._fesem",
    "BiGFLResult": "._bigfl",
    "bigfl": "._bigfl",
    "centre_distances": "._fesem",
    "check_doubly_stochastic": "._dfl",
    "check_fraction": ".aggregate",
    "client_chunks": "._local_sgd",
    "cluster_means": "._fesem",
    "cluster_support": "._fesem",
    "ColumnProjection": "._bigfl",
    "compose": ".loggers",
    "consensus_distance": ".aggregate",
    "CSVLogger": ".loggers",
    "decentralized_fedavg": "._gossip",
    "DFLState": "._dfl",
    "dfl_gt": "._dfl",
    "dfl_iterates": "._dfl",
    "dfl_sgd": "._dfl",
    "Embedding": "._bigfl",
    "epoch_batches": "._local_sgd",
    "epoch_order": "._local_sgd",
    "evaluate": "._evaluate",
    "FederatedResult": ".contract",
    "fedavg": "._fedavg",
    "fedavg_steps": "._fedavg_steps",
    "fedsgd": "._fedsgd",
    "fesem": "._fesem",
    "gossip_average": "._gossip",
    "group_average": ".aggregate",
    "hypergradient": "._bigfl",
    "ifca": "._ifca",
    "in_client_chunks": "._local_sgd",
    "kmeans": "._fesem",
    "kmeans_centres": "._fesem",
    "kmeanspp_centres": "._fesem",
    "local_momentum_sgd": "._local_momentum",
    "local_sgd": "._local_sgd",
    "local_steps": "._local_sgd",
    "local_training": "._local",
    "lower_gradients": "._bigfl",
    "mix": ".aggregate",
    "MIXING_RULES": "._gossip",
    "mixing_matrix": "._gossip",
    "mixing_operator": "._dfl",
    "negative_samples": "._bigfl",
    "normalized_adjacency": "._bigfl",
    "personalised_steps": "._pfedme",
    "pfedme": "._pfedme",
    "RoundState": ".contract",
    "sample_clients": ".aggregate",
    "TensorBoardLogger": ".loggers",
    "to_torch_sparse": "._gossip",
    "TrainingOptions": ".contract",
    "upper_loss": "._bigfl",
}

# PEP 562: import PyTorch only when a method is asked for
__getattr__, __dir__ = lazy_module_hooks(globals(), _LAZY)
