"""FedRelax (Abdurakhmanova et al. 2024; Jung 2023): model-agnostic FL over networks.

The non-parametric algorithm (:class:`FedRelax`, :func:`fedrelax`: any regressor with
``fit``/``predict``, e.g. scikit-learn trees; :class:`FedRelaxClassifier` for classifiers),
the parametric one for linear models (:func:`fedrelax_linear`, PyTorch), the paper's
synthetic networked data and the metrics and variation bound of its Section V.  The two algorithms are loaded on first use
(scikit-learn and PyTorch respectively).
"""

from .._lazy import lazy_module_hooks
from ._analysis import (
    algebraic_connectivity,
    cluster_laplacian,
    error_tolerance,
    validation_mse,
    variation,
    variation_bound,
    weight_mse,
)
from ._data import (
    FedRelaxData,
    clustered_data,
    largest_remainder,
    mixture_similarity,
    noniid_data,
    softmax,
)

__all__ = [
    "accepts_sample_weight",
    "adjacency_tensor",
    "algebraic_connectivity",
    "cluster_laplacian",
    "clustered_data",
    "error_tolerance",
    "FedRelax",
    "FedRelaxClassifier",
    "fedrelax",
    "fedrelax_linear",
    "FedRelaxData",
    "FedRelaxResult",
    "fixed_point",
    "initial_weights",
    "largest_remainder",
    "linear_problem",
    "LinearFedRelaxResult",
    "LinearProblem",
    "LocalModel",
    "mixture_similarity",
    "node_gradients",
    "node_objectives",
    "noniid_data",
    "predict_nodes",
    "softmax",
    "validation_mse",
    "variation",
    "variation_bound",
    "weight_mse",
]


_LAZY = {
    "LocalModel": "._nonparametric",
    "FedRelaxResult": "._nonparametric",
    "accepts_sample_weight": "._nonparametric",
    "fedrelax": "._nonparametric",
    "predict_nodes": "._nonparametric",
    "FedRelax": "._nonparametric",
    "FedRelaxClassifier": "._nonparametric",
    "LinearProblem": "._parametric",
    "LinearFedRelaxResult": "._parametric",
    "adjacency_tensor": "._parametric",
    "linear_problem": "._parametric",
    "node_gradients": "._parametric",
    "node_objectives": "._parametric",
    "initial_weights": "._parametric",
    "fedrelax_linear": "._parametric",
    "fixed_point": "._parametric",
}

# PEP 562: import scikit-learn and PyTorch only when asked for
__getattr__, __dir__ = lazy_module_hooks(globals(), _LAZY)
