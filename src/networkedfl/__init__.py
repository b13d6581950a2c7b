"""networkedfl: federated learning over networks.

Graphs (:mod:`networkedfl.graphs`), synthetic data (:mod:`networkedfl.data`), local
losses (:mod:`networkedfl.losses`), GTV penalties (:mod:`networkedfl.penalties`),
algorithms (:mod:`networkedfl.algorithms`) and metrics (:mod:`networkedfl.metrics`).
Importing the package does not import PyTorch.
"""

from .algorithms.primal_dual import PrimalDualResult, gtv_primal_dual
from .data import NodeData, linear_model_data, sampling_mask
from .graphs import EmpiricalGraph, chain_of_clusters, star, stochastic_block_model
from .losses import SquaredErrorLoss
from .metrics import label_mse, parameter_mse

__all__ = [
    "EmpiricalGraph",
    "NodeData",
    "PrimalDualResult",
    "SquaredErrorLoss",
    "chain_of_clusters",
    "gtv_primal_dual",
    "label_mse",
    "linear_model_data",
    "parameter_mse",
    "sampling_mask",
    "star",
    "stochastic_block_model",
]

__version__ = "0.1.0"
