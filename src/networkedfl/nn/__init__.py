"""Models as functions of a flat parameter vector, batched over clients (PyTorch).

Flat-parameter models and batched client losses (:class:`FlatModel`, :class:`ClientData`,
:class:`ClientBuckets` for clients of very different sizes; :func:`from_module` wraps an
``nn.Module``, :func:`load_into` writes a trained vector back into it),
mini-batch sources and batched gradients shared by the torch algorithms, their optimiser
steps (:func:`sgd_step`, :func:`heavy_ball_step`, :class:`RMSprop`) and dtype/device parsing
with the one default precision (:func:`as_dtype`, :data:`DEFAULT_DTYPE`), the two-layer
network of the GTV paper's MNIST experiment (eq. (40)) with its inexact proximal step,
and the chapter's neural probabilistic language model (NPLM).  Importing this package
imports PyTorch (the ``torch`` extra: ``pip install "networkedfl[torch]"``).
"""

from .._lazy import missing_extra

try:
    import torch  # noqa: F401  (the one dependency of the whole family)
except ModuleNotFoundError as _error:
    raise (missing_extra(_error, "networkedfl.nn") or _error) from _error

from ._buckets import ClientBuckets
from ._client_batches import (
    BatchSource,
    ClientBatches,
    StepSize,
    as_batches,
    batch_gradients,
    batch_hessian_products,
    check_mask,
    freeze,
    inverse_sqrt,
    step_size,
)
from ._dense import DenseDerivatives
from ._mnist_network import SparseSamples, TwoLayerNetwork, accuracy
from ._models import (
    DEFAULT_DTYPE,
    MODULE_INITS,
    ClientData,
    DeviceLike,
    FlatModel,
    GeneratorLike,
    PaddedClients,
    as_device,
    as_dtype,
    client_gradients,
    client_losses,
    cross_entropy,
    from_module,
    linear_regression,
    losses_of_models,
    make_generator,
    require_generator,
    softmax_regression,
    squared_error,
)
from ._nplm import (
    NextWordBatches,
    NPLMLayout,
    WordPairCounts,
    client_token_losses,
    next_word_cross_entropy,
    nplm,
    window_cross_entropy,
)
from ._optim import RMSprop, heavy_ball_step, sgd_step
from ._prox_cross_entropy import InexactProxCrossEntropy
from ._torch_io import load_into

__all__ = [
    "DEFAULT_DTYPE",
    "StepSize",
    "GeneratorLike",
    "DeviceLike",
    "accuracy",
    "as_batches",
    "as_device",
    "as_dtype",
    "batch_gradients",
    "batch_hessian_products",
    "BatchSource",
    "check_mask",
    "client_gradients",
    "client_losses",
    "client_token_losses",
    "ClientBatches",
    "ClientBuckets",
    "ClientData",
    "cross_entropy",
    "DenseDerivatives",
    "FlatModel",
    "freeze",
    "heavy_ball_step",
    "from_module",
    "InexactProxCrossEntropy",
    "inverse_sqrt",
    "linear_regression",
    "load_into",
    "losses_of_models",
    "make_generator",
    "MODULE_INITS",
    "next_word_cross_entropy",
    "NextWordBatches",
    "nplm",
    "NPLMLayout",
    "PaddedClients",
    "require_generator",
    "RMSprop",
    "sgd_step",
    "softmax_regression",
    "SparseSamples",
    "squared_error",
    "step_size",
    "TwoLayerNetwork",
    "window_cross_entropy",
    "WordPairCounts",
]
