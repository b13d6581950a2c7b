"""networkedfl: federated learning over networks.

Graphs (:mod:`networkedfl.graphs`), synthetic data (:mod:`networkedfl.gtv`), local
losses (:mod:`networkedfl.gtv`), GTV penalties (:mod:`networkedfl.gtv`),
algorithms (:mod:`networkedfl.algorithms`) and metrics (:mod:`networkedfl.gtv`).
Importing the package does not import PyTorch.
"""

from .graphs import EmpiricalGraph, chain_of_clusters, star, stochastic_block_model
from .gtv import (
    NodeData,
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
