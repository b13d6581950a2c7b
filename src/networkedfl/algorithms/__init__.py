"""Federated learning algorithms, one per module."""

from .fedavg_proximal import fedavg_proximal
from .pooled import PooledFit, pooled_linear_regression, pooled_tree
from .primal_dual import HistoryRecorder, PrimalDualResult, gtv_primal_dual

__all__ = [
    "HistoryRecorder",
    "PooledFit",
    "PrimalDualResult",
    "fedavg_proximal",
    "gtv_primal_dual",
    "pooled_linear_regression",
    "pooled_tree",
]
