"""Federated learning algorithms, one per module.

The NumPy algorithms (GTV primal-dual, the GTV-form FedAvg, pooled baselines) are exported
here.  The PyTorch baselines are imported from their modules, e.g.
``from networkedfl.algorithms.fedavg import fedavg`` (also ``fedsgd``, ``ifca``, ``gossip``,
``local``, ``local_sgd``), so that ``import networkedfl`` does not import PyTorch.
:class:`GTVRegressor` is loaded on first use: it imports scikit-learn (about 0.8 s), which
the pipeline's jobs mostly do not need.
"""

from importlib import import_module
from typing import Any

from .errors import NonFiniteError
from .fedavg_proximal import fedavg_proximal
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


_LAZY = {"GTVRegressor": ".gtv_regressor"}


def __getattr__(name: str) -> Any:  # PEP 562: import scikit-learn only when asked for
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
