"""Generalised total variation (GTV) minimisation: data, losses, penalties, solver, baselines.

The GTV paper (SarcheshmehPour, Tian, Zhang & Jung, "Clustered federated learning via
generalized total variation minimization") in NumPy/SciPy only: the clustered noisy
linear model (eq. (37)), local losses with their proximal operators, GTV penalties with
the proximal operators of their conjugates, the primal-dual method (Algorithm 1; with
adaptive restarts, a certified stopping rule and warm starts along a lambda path), the
metrics (eq. (39)), the GTV-form FedAvg (eq. (32)) and pooled baselines, and the
scikit-learn style :class:`GTVRegressor` (loaded on first use: it imports scikit-learn).
"""

from .._lazy import lazy_module_hooks
from .._nodedata import NodeData  # the shared container (networkedfl.NodeData), kept here too
from ._data import (
    LABEL_NOISE,
    cluster_weights_per_node,
    linear_model_data,
    perturb_cluster_weights,
    perturb_weights,
    sampling_mask,
)
from ._losses import REDUCTIONS, LocalLoss, SquaredErrorLoss
from ._metrics import label_mse, linear_predictions, parameter_mse, per_node_parameter_error
from ._path import LambdaPath, gtv_lambda_path
from ._penalties import (
    MOCHA_DUAL_STEPS,
    PENALTIES,
    BlockNLassoPenalty,
    L1Penalty,
    MochaPenalty,
    NLassoPenalty,
    Penalty,
    UnprojectedEdges,
    clip_elementwise,
    clip_vector,
    get_penalty,
    mocha_lambda_factor,
    row_norms,
    scale_mocha,
    scale_rows,
)
from ._pooled import PooledFit, pooled_fit, pooled_linear_regression, pooled_per_group, pooled_tree
from ._primal_dual import (
    COLUMNWISE_MAX_DIM,
    DEFAULT_SIGMA,
    DUAL_UPDATES,
    KERNELS,
    METHODS,
    FeasibleDualMap,
    HistoryRecorder,
    IterationState,
    PrimalDualResult,
    cluster_index_step_sizes,
    default_step_sizes,
    gtv_objective,
    gtv_primal_dual,
    primal_dual_gap,
    relative_gap,
)
from ._proximal_fedavg import fedavg_proximal

__all__ = [
    "BlockNLassoPenalty",
    "clip_elementwise",
    "clip_vector",
    "cluster_index_step_sizes",
    "cluster_weights_per_node",
    "COLUMNWISE_MAX_DIM",
    "DEFAULT_SIGMA",
    "default_step_sizes",
    "DUAL_UPDATES",
    "KERNELS",
    "FeasibleDualMap",
    "fedavg_proximal",
    "get_penalty",
    "gtv_lambda_path",
    "gtv_objective",
    "gtv_primal_dual",
    "GTVRegressor",
    "HistoryRecorder",
    "IterationState",
    "L1Penalty",
    "label_mse",
    "LambdaPath",
    "LABEL_NOISE",
    "linear_model_data",
    "linear_predictions",
    "LocalLoss",
    "METHODS",
    "MOCHA_DUAL_STEPS",
    "mocha_lambda_factor",
    "MochaPenalty",
    "NLassoPenalty",
    "NodeData",
    "parameter_mse",
    "PENALTIES",
    "Penalty",
    "per_node_parameter_error",
    "perturb_cluster_weights",
    "perturb_weights",
    "pooled_fit",
    "pooled_linear_regression",
    "pooled_per_group",
    "pooled_tree",
    "PooledFit",
    "primal_dual_gap",
    "PrimalDualResult",
    "REDUCTIONS",
    "relative_gap",
    "row_norms",
    "sampling_mask",
    "scale_mocha",
    "scale_rows",
    "SquaredErrorLoss",
    "UnprojectedEdges",
]


_LAZY = {
    "GTVRegressor": "._estimator",
}

# PEP 562: import scikit-learn only when asked for
__getattr__, __dir__ = lazy_module_hooks(globals(), _LAZY)
