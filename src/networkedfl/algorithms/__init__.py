"""Federated learning algorithms, one per module.

The NumPy algorithms (GTV primal-dual, the GTV-form FedAvg, pooled baselines) are exported
here.  The PyTorch baselines are imported from their modules, e.g.
``from networkedfl.algorithms.fedavg import fedavg`` (also ``fedsgd``, ``ifca``, ``gossip``,
``local``, ``local_sgd``), so that ``import networkedfl`` does not import PyTorch.
"""

from .errors import NonFiniteError
from .fedavg_proximal import fedavg_proximal
from .gtv_regressor import GTVRegressor
from .pooled import PooledFit, pooled_linear_regression, pooled_per_group, pooled_tree
from .primal_dual import HistoryRecorder, PrimalDualResult, gtv_primal_dual

__all__ = [
    "GTVRegressor",
    "HistoryRecorder",
    "NonFiniteError",
    "PooledFit",
    "PrimalDualResult",
    "fedavg_proximal",
    "gtv_primal_dual",
    "pooled_linear_regression",
    "pooled_per_group",
    "pooled_tree",
]
