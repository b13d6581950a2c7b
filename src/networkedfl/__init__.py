"""networkedfl: federated learning over networks.

The names most scripts need, from the families below: graphs (:mod:`networkedfl.graphs`),
GTV minimisation with its data, losses and metrics (:mod:`networkedfl.gtv`), the
scikit-learn-style estimators :class:`GTVRegressor` and :class:`FedRelax` (loaded on first
use: they import scikit-learn).  The torch methods are functions of
:mod:`networkedfl.algorithms` (``from networkedfl.algorithms import fedavg``), their models
and client data in :mod:`networkedfl.nn`, partitions and datasets in
:mod:`networkedfl.datasets`.  Importing the package imports neither PyTorch nor
scikit-learn.
"""

from ._lazy import lazy_module_hooks
from ._nodedata import NodeData
from .graphs import EmpiricalGraph, chain_of_clusters, star, stochastic_block_model
from .gtv import (
    PrimalDualResult,
    SquaredErrorLoss,
    gtv_lambda_path,
    gtv_primal_dual,
    label_mse,
    linear_model_data,
    parameter_mse,
    sampling_mask,
)

__all__ = [
    "EmpiricalGraph",
    "FedRelax",
    "FedRelaxClassifier",
    "GTVRegressor",
    "NodeData",
    "PrimalDualResult",
    "SquaredErrorLoss",
    "chain_of_clusters",
    "gtv_lambda_path",
    "gtv_primal_dual",
    "label_mse",
    "linear_model_data",
    "parameter_mse",
    "sampling_mask",
    "star",
    "stochastic_block_model",
]

__version__ = "0.1.0"

_LAZY = {
    "FedRelax": ".fedrelax._nonparametric",
    "FedRelaxClassifier": ".fedrelax._nonparametric",
    "GTVRegressor": ".gtv._estimator",
}

# PEP 562: import scikit-learn only when an estimator is asked for
__getattr__, __dir__ = lazy_module_hooks(globals(), _LAZY)
