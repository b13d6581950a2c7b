"""Models as functions of a flat parameter vector, client data, and batched client losses.

The federated baselines (:func:`networkedfl.algorithms.fedavg` and its siblings) keep the
models of all clients as the rows of one ``(n_clients, P)`` matrix and evaluate losses and
gradients of all clients in one call through :func:`torch.func.vmap` over
:func:`torch.func.grad`.  For that a model is described by a :class:`FlatModel`: a pure
function ``forward(params, features)`` of a flat parameter vector ``params`` of length
``P``, a per-sample loss, and an initialiser.

The local loss of client ``i`` is the weighted mean of its sample losses, the empirical
risk ``F_i(w) = (1/|D_i|) sum_{j in D_i} f_j(w)`` of the lecture (Tham, "Federated
Learning", definition of ``F_i``); for :func:`linear_regression` it is the average squared
error of the GTV paper, eq. (38).  Clients may hold different numbers of samples: their
datasets are padded to a common length and every sample carries a weight (1 for a real
sample, 0 for padding), see :class:`ClientData`.

Randomness comes only from an explicit generator (:func:`make_generator`); nothing here
seeds or reads the global random state.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.func import functional_call, grad, vmap
from torch.overrides import TorchFunctionMode

from .._nodedata import NodeData
from .._validation import check_int_array, renamed
from ..seeding import make_generator

__all__ = [
    "DEFAULT_DTYPE",
    "ClientData",
    "DeviceLike",
    "FlatModel",
    "GeneratorLike",
    "MODULE_INITS",
    "PaddedClients",
    "as_device",
    "as_dtype",
    "client_gradients",
    "client_losses",
    "cross_entropy",
    "from_module",
    "linear_regression",
    "losses_of_models",
    "make_generator",
    "softmax_regression",
    "squared_error",
]

DeviceLike = str | torch.device
#: The one default precision of the torch code (models, client data, algorithms): float32, as
#: PyTorch's own.  Pass ``dtype=torch.float64`` (or ``"float64"``) where a result needs it; the
#: pipeline's targets name theirs (float64 unless their configuration says otherwise).
DEFAULT_DTYPE = torch.float32
_DTYPES = {"float32": torch.float32, "float64": torch.float64}
#: What the algorithms accept as a source of randomness (see :func:`make_generator`).
GeneratorLike = torch.Generator | np.random.Generator | int

InitFn = Callable[[torch.Generator | None, torch.dtype, torch.device], Tensor]


# --------------------------------------------------------------------------- dtype and device


def as_dtype(value: torch.dtype | str | None) -> torch.dtype:
    """A floating torch dtype from a dtype, its name (``"float32"``, ``"float64"``, as in the
    configuration files) or ``None`` (:data:`DEFAULT_DTYPE`)."""
    if value is None:
        return DEFAULT_DTYPE
    if isinstance(value, str):
        if value not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {value!r}")
        return _DTYPES[value]
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise ValueError(f"dtype must be a floating torch dtype or one of {sorted(_DTYPES)}, got {value!r}")
    return value


def as_device(value: DeviceLike | None) -> torch.device:
    """A :class:`torch.device` from a device, its name (``"cpu"``, ``"cuda:0"``) or ``None`` (the CPU)."""
    return torch.device("cpu" if value is None else value)


# --------------------------------------------------------------------------- randomness


def require_generator(generator: torch.Generator | None, what: str) -> torch.Generator:
    """``generator``, or a ValueError explaining that ``what`` needs one."""
    if generator is None:
        raise ValueError(
            f"{what} is random: it needs a torch.Generator (the algorithms make one from "
            "their seed=); there is no global seeding"
        )
    return generator


# --------------------------------------------------------------------------- sample losses


def squared_error(outputs: Tensor, targets: Tensor) -> Tensor:
    """Per-sample squared error ``(y_hat - y)^2``, shape ``(m,)`` (GTV eq. (38))."""
    return (outputs - targets) ** 2


def cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """Per-sample cross-entropy ``-log softmax(logits)[y]`` of integer class labels ``y``.

    Targets are cast to ``int64`` (float labels, e.g. from :class:`~networkedfl.gtv.NodeData`,
    are accepted); written with ``log_softmax`` and ``gather`` so that it works under
    :func:`torch.func.vmap`.
    """
    log_probs = torch.log_softmax(logits, dim=-1)
    return -torch.gather(log_probs, -1, targets.long().unsqueeze(-1)).squeeze(-1)


# --------------------------------------------------------------------------- models


@dataclass(frozen=True, eq=False)
class FlatModel:
    """A model written as a function of one flat parameter vector.

    Attributes
    ----------
    n_params
        Length ``P`` of the parameter vector.
    forward
        ``forward(params (P,), features (m, ...)) -> outputs (m, ...)``; must be a pure
        torch function (it runs under :func:`torch.func.vmap` and :func:`torch.func.grad`).
    sample_loss
        ``sample_loss(outputs, targets (m,)) -> (m,)``: the loss ``f_j`` of every sample.
    init
        ``init(generator, dtype, device) -> (P,)``: an initial parameter vector.
        Deterministic initialisers ignore the generator (it may be ``None``).
    name
        Short description used in logs.
    batch_gradient
        Optional closed-form gradients of the clients' losses:
        ``batch_gradient(params (n, P), features, targets, weights) -> (n, P)``, the same
        values as ``vmap(grad(loss))`` up to floating-point rounding, or ``None`` where it
        does not apply (another data layout, or ``params`` tracked by autograd or a
        :mod:`torch.func` transform, which then differentiate the generic path).  Used by
        :func:`~networkedfl.nn.batch_gradients`.
    batch_hessian
        Optional closed-form Hessian-vector products: ``batch_hessian(params, features,
        targets, weights)`` returns ``v (n, P) -> (n, P)``, every client's Hessian of its
        loss at its ``params`` row times its row of ``v`` (or ``None`` where it does not
        apply).  Used by :func:`~networkedfl.nn.batch_hessian_products`.
    batch_loss
        Optional closed-form losses of the clients: ``batch_loss(params (n, P), features,
        targets, weights) -> (n,)``, the same values as ``vmap(loss)`` up to floating-point
        rounding, or ``None`` where it does not apply.  Used by :func:`client_losses` and
        :func:`losses_of_models`.
    stacked_loss
        ``True`` where ``batch_loss`` also takes ``(R, n, P)`` stacked parameters (``R``
        models of every client) and returns ``(R, n)``: :func:`losses_of_models` then
        evaluates all ``k`` models in one call (one pass over the features) instead of ``k``.
    """

    n_params: int
    forward: Callable[[Tensor, Tensor], Tensor]
    sample_loss: Callable[[Tensor, Tensor], Tensor]
    init: InitFn
    name: str
    batch_gradient: Callable[..., Tensor | None] | None = None
    batch_hessian: Callable[..., Callable[[Tensor], Tensor] | None] | None = None
    batch_loss: Callable[..., Tensor | None] | None = None
    stacked_loss: bool = False

    def initial_params(
        self,
        seed: GeneratorLike | None = None,
        *,
        dtype: torch.dtype = DEFAULT_DTYPE,
        device: DeviceLike = "cpu",
    ) -> Tensor:
        """``init(generator, dtype, device)``, checked to have shape ``(n_params,)``."""
        params = self.init(make_generator(seed), dtype, torch.device(device))
        if params.shape != (self.n_params,):
            raise ValueError(
                f"{self.name}: init returned shape {tuple(params.shape)}, "
                f"expected ({self.n_params},)"
            )
        return params.to(dtype=dtype, device=device)

    def loss(
        self, params: Tensor, features: Tensor, targets: Tensor, weights: Tensor | None = None
    ) -> Tensor:
        """Local loss of one client: weighted mean of the sample losses (a scalar).

        ``F_i(w) = sum_j a_j f_j(w) / sum_j a_j`` with sample weights ``a_j`` (all ones if
        ``weights`` is ``None``).  A client whose weights are all zero has loss 0 (and
        gradient 0), so that empty mini-batches of padded clients leave the model unchanged.
        """
        losses = self.sample_loss(self.forward(params, features), targets)
        if losses.shape != features.shape[:1]:  # static under vmap: no cost per step
            raise ValueError(
                f"{self.name}: sample_loss must return one loss per sample, shape (m,) = "
                f"{tuple(features.shape[:1])}, got {tuple(losses.shape)}; a loss that reduces over "
                "the samples (a mean or sum) counts the padding rows of the clients' datasets: "
                "compute it with reduction='none'")
        if weights is None:
            return losses.mean()
        total = weights.sum()
        safe = torch.where(total > 0, total, torch.ones_like(total))
        return (weights * losses).sum() / safe


def _zeros_init(n_params: int) -> InitFn:
    def init(generator: torch.Generator | None, dtype: torch.dtype, device: torch.device) -> Tensor:
        return torch.zeros(n_params, dtype=dtype, device=device)

    return init


def _bernoulli_init(n_params: int) -> InitFn:
    def init(generator: torch.Generator | None, dtype: torch.dtype, device: torch.device) -> Tensor:
        gen = require_generator(generator, "the Bernoulli(0.5) initialisation")
        probs = torch.full((n_params,), 0.5, dtype=dtype)
        return torch.bernoulli(probs, generator=gen).to(device)

    return init


def linear_regression(dim: int, *, bias: bool = False, init: str = "zeros") -> FlatModel:
    """Linear model ``y_hat = x^T w (+ b)`` with the squared error per sample.

    The local loss is the average squared error of the GTV paper, eq. (38).

    Parameters
    ----------
    dim
        Feature dimension ``d``; features have shape ``(m, d)``.
    bias
        Append an intercept ``b`` as the last parameter (``P = d + 1``).
    init
        ``"zeros"`` (default) or ``"bernoulli"``: i.i.d. Bernoulli(0.5) entries, the
        initialisation of IFCA in the GTV paper's code (``SBM_experiment_ifca``); it needs
        a generator.
    """
    if dim < 1:
        raise ValueError(f"dim must be positive, got {dim}")
    n_params = dim + int(bias)
    inits = {"zeros": _zeros_init, "bernoulli": _bernoulli_init}
    if init not in inits:
        raise ValueError(
            f"unknown init {init!r} for linear_regression; expected one of {sorted(inits)}"
        )

    if bias:

        def forward(params: Tensor, features: Tensor) -> Tensor:
            return features @ params[:dim] + params[dim]

    else:

        def forward(params: Tensor, features: Tensor) -> Tensor:
            return features @ params

    name = f"linear_regression(dim={dim}, bias={bias}, init={init})"
    return FlatModel(n_params, forward, squared_error, inits[init](n_params), name)


def softmax_regression(dim: int, n_classes: int, *, bias: bool = True) -> FlatModel:
    """Multinomial logistic (softmax) regression with the cross-entropy loss.

    ``logits = W x + b`` with ``W`` of shape ``(n_classes, dim)``; the flat vector holds
    ``W`` row by row followed by ``b``.  Targets are integer class labels.  The
    initialisation is zero (the loss is convex, so no symmetry needs breaking).
    """
    if dim < 1 or n_classes < 2:
        raise ValueError(f"need dim >= 1 and n_classes >= 2, got {dim} and {n_classes}")
    n_weights = n_classes * dim
    n_params = n_weights + (n_classes if bias else 0)

    def forward(params: Tensor, features: Tensor) -> Tensor:
        logits = features @ params[:n_weights].reshape(n_classes, dim).T
        return logits + params[n_weights:] if bias else logits

    def batch_gradient(params: Tensor, features: Tensor, targets: Tensor, weights: Tensor | None) -> Tensor | None:
        """Every client's gradient in closed form: ``(softmax(z) - onehot(y))`` weighted by the
        samples' shares of the client's weight, times ``x`` (and summed for the bias); one
        batched product over the clients (``vmap(grad(...))`` costs a millisecond of Python
        per step at the lecture's scale).  ``None`` for params that autograd or a
        :mod:`torch.func` transform differentiates, and for other layouts."""
        if not (params.ndim == 2 and not params.requires_grad and features.ndim == 3
                and features.shape[0] == params.shape[0] and features.shape[-1] == dim
                and tuple(targets.shape) == tuple(features.shape[:2])):
            return None
        n = params.shape[0]
        x = features.to(params.dtype)
        z = torch.bmm(x, params[:, :n_weights].reshape(n, n_classes, dim).transpose(1, 2))
        if bias:
            z = z + params[:, None, n_weights:]
        residual = torch.softmax(z, dim=-1)
        residual.scatter_add_(-1, targets.long().unsqueeze(-1), -torch.ones_like(residual[..., :1]))
        w = torch.ones(targets.shape, dtype=params.dtype, device=params.device) if weights is None \
            else weights.to(params.dtype)
        total = w.sum(dim=1, keepdim=True)
        dz = residual * (w / torch.where(total > 0, total, torch.ones_like(total)))[..., None]
        grads = [torch.bmm(dz.transpose(1, 2), x).reshape(n, n_weights)]
        return torch.cat([*grads, dz.sum(dim=1)], dim=1) if bias else grads[0]

    name = f"softmax_regression(dim={dim}, n_classes={n_classes}, bias={bias})"
    return FlatModel(n_params, forward, cross_entropy, _zeros_init(n_params), name, batch_gradient=batch_gradient)


#: What ``init`` of :func:`from_module` accepts.
MODULE_INITS = ("reset", "module")

#: The in-place and factory draws of torch that take a ``generator``: :class:`_DrawFrom`
#: hands them one (``torch.nn.init``'s functions, which the layers' ``reset_parameters``
#: call, reach the mode with their ``generator`` keyword and get it the same way).
_DRAWS = frozenset({
    *(getattr(torch._C.TensorBase, name) for name in (
        "uniform_", "normal_", "bernoulli_", "random_", "exponential_", "geometric_", "log_normal_",
        "cauchy_")),
    torch.rand, torch.randn, torch.randint, torch.randperm, torch.normal, torch.bernoulli,
    torch.multinomial, torch.poisson,
})


class _DrawFrom(TorchFunctionMode):
    """Within this mode every draw made without a generator (a ``generator=None`` keyword, or
    one of :data:`_DRAWS`) uses ``generator``; the mode is thread-local, nothing global
    changes."""

    def __init__(self, generator: torch.Generator) -> None:
        super().__init__()
        self.generator = generator

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = dict(kwargs or {})
        if kwargs.get("generator") is None and ("generator" in kwargs or func in _DRAWS):
            kwargs["generator"] = self.generator
        return func(*args, **kwargs)


def _reduction(sample_loss: Any) -> str | None:
    """How ``sample_loss`` reduces over the samples, if it says so: the ``reduction`` of a
    torch loss module, or the default of a function's ``reduction`` parameter (``F.mse_loss``,
    ``F.cross_entropy``; a :func:`functools.partial` with ``reduction='none'`` shows that)."""
    if isinstance(sample_loss, torch.nn.Module):
        return getattr(sample_loss, "reduction", None)
    try:
        parameter = inspect.signature(sample_loss).parameters.get("reduction")
    except (TypeError, ValueError):
        return None
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return None
    return parameter.default


def _check_sample_loss(sample_loss: Any) -> None:
    """A ``ValueError`` for a torch loss that reduces over the samples (the padding rows of
    padded client data would count in every client's loss)."""
    if not callable(sample_loss):
        raise TypeError(f"sample_loss must be callable, got {type(sample_loss).__name__}")
    reduction = _reduction(sample_loss)
    if reduction is not None and reduction != "none":
        what = getattr(sample_loss, "__name__", type(sample_loss).__name__)
        fix = (f"{type(sample_loss).__name__}(reduction='none')" if isinstance(sample_loss, torch.nn.Module)
               else f"functools.partial({what}, reduction='none')")
        raise ValueError(
            f"sample_loss must return one loss per sample, shape (m,): {what} reduces over the "
            f"samples (reduction={reduction!r}), so the padding rows of the clients' datasets would "
            f"count in every client's loss; pass {fix} (reduction='none'), or "
            "networkedfl.nn.cross_entropy / squared_error")


def _reset_draw(module: torch.nn.Module) -> Callable[[torch.Generator], list[Tensor]]:
    """``draw(generator)``: the parameters of a fresh copy of ``module`` after every submodule's
    ``reset_parameters()`` (in ``module.modules()`` order, the order of construction for
    ``nn.Sequential`` and most networks), each draw taken from ``generator``."""
    template = copy.deepcopy(module)
    resets = [getattr(m, "reset_parameters", None) or getattr(m, "_reset_parameters", None)
              for m in template.modules()]
    if not any(callable(r) for r in resets):
        raise ValueError(f"{type(module).__name__} has no submodule with reset_parameters(): "
                         "from_module(..., init='module') starts from its current parameters")

    def draw(generator: torch.Generator) -> list[Tensor]:
        copy_ = copy.deepcopy(template)
        state = torch.random.get_rng_state()
        with torch.no_grad(), _DrawFrom(generator):
            for m in copy_.modules():
                reset = getattr(m, "reset_parameters", None) or getattr(m, "_reset_parameters", None)
                if callable(reset):
                    reset()
        if not torch.equal(torch.random.get_rng_state(), state):
            torch.random.set_rng_state(state)  # leave the global state as it was
            raise ValueError(
                f"{type(module).__name__}'s reset_parameters() draws from PyTorch's global generator "
                "by an operation that takes no generator, so seed= cannot fix it: use "
                "from_module(..., init='module') and seed the module's construction, or pass init=")
        return [p.detach() for _, p in copy_.named_parameters()]

    return draw


#: Submodules that draw random numbers in training mode (from the global generator).
_RANDOM_LAYERS = (torch.nn.modules.dropout._DropoutNd, torch.nn.RReLU)


def _check_module(module: torch.nn.Module) -> None:
    """A ``ValueError`` naming the first submodule that cannot train under ``vmap``: batch
    normalisation or a random layer (dropout) in training mode."""
    for name, sub in module.named_modules():
        label = f"{name or type(module).__name__!r} ({type(sub).__name__})"
        if isinstance(sub, torch.nn.modules.batchnorm._BatchNorm) and sub.training:
            raise ValueError(
                f"from_module: submodule {label} is batch normalisation in training mode: it updates "
                "its running statistics in place, which vmap over the clients cannot do, and its "
                "batch statistics would mix the padding rows of the clients' datasets into the "
                "outputs; use torch.nn.GroupNorm or torch.nn.LayerNorm (per-sample normalisation), "
                "or call module.eval() to normalise with its fixed running statistics")
        if isinstance(sub, _RANDOM_LAYERS) and sub.training:
            raise ValueError(
                f"from_module: submodule {label} is random in training mode: its masks would come "
                "from PyTorch's global generator inside vmap, not from the method's seed, so runs "
                "could not be reproduced; remove it, or call module.eval() (dropout off)")


def from_module(
    module: torch.nn.Module,
    sample_loss: Callable[[Tensor, Tensor], Tensor],
    *,
    init: str = "reset",
    name: str | None = None,
) -> FlatModel:
    """Wrap a :class:`torch.nn.Module` as a :class:`FlatModel`.

    The flat vector is the concatenation of ``module.named_parameters()`` flattened in
    that order; ``forward`` unflattens it into the parameter shapes and calls
    :func:`torch.func.functional_call`.  Floating-point buffers are passed along cast to
    the parameters' dtype.

    The module must be usable under :func:`torch.func.vmap`, which trains all clients at
    once; what cannot be is refused here, naming the submodule (:func:`_check_module`):
    batch normalisation in training mode (its running statistics are updated in place, and
    its batch statistics mix the padding rows of the clients' datasets into every output):
    use :class:`torch.nn.GroupNorm` or :class:`torch.nn.LayerNorm` (per-sample), or
    ``module.eval()`` (fixed running statistics); and dropout (or ``RReLU``) in training
    mode, whose masks would come from PyTorch's global generator, not the method's
    ``seed``: ``module.eval()`` turns it off.  The way back from a trained vector to the
    module is :func:`~networkedfl.nn.load_into`.

    Parameters
    ----------
    module
        The network; it is not modified.
    sample_loss
        ``sample_loss(outputs, targets) -> (m,)``: one loss per sample, e.g.
        :func:`cross_entropy`, :func:`squared_error` or a torch loss with
        ``reduction='none'`` (``functools.partial(F.cross_entropy, reduction='none')``).  A
        loss that reduces over the samples (every torch loss by default) is refused: the
        padding rows of the clients' datasets would count in their losses.
    init
        The starting models the methods draw (``model.initial_params(seed)``):
        ``"reset"`` (default): a fresh draw, as PyTorch initialises the module: every
        submodule's ``reset_parameters()`` (in ``module.modules()`` order) with its random
        numbers from the method's ``seed``, so that IFCA's ``k`` cluster models differ and a
        seed fixes the start (``initial_params(s)`` equals the module built after
        ``torch.manual_seed(s)`` when construction order is ``modules()`` order, as for
        ``nn.Sequential``); nothing global is seeded or changed.  Parameters that no
        ``reset_parameters()`` covers keep the module's values.  ``"module"``: the module's
        current parameters, whatever the seed (e.g. a pretrained network).
    name
        Log name (default: the module's class name).
    """
    _check_sample_loss(sample_loss)
    _check_module(module)
    if init not in MODULE_INITS:
        raise ValueError(f"init must be one of {MODULE_INITS}, got {init!r}")
    named = [(k, v.detach().clone()) for k, v in module.named_parameters()]
    if not named:
        raise ValueError("the module has no parameters")
    names = [k for k, _ in named]
    shapes = [tuple(v.shape) for _, v in named]
    sizes = [math.prod(s) for s in shapes]
    buffers = {k: b.detach().clone() for k, b in module.named_buffers()}
    initial = torch.cat([v.reshape(-1) for _, v in named])

    def forward(params: Tensor, features: Tensor) -> Tensor:
        chunks = torch.split(params, sizes)
        values: dict[str, Tensor] = {
            k: c.reshape(s) for k, c, s in zip(names, chunks, shapes, strict=True)
        }
        for k, b in buffers.items():
            values[k] = b.to(params.dtype) if b.is_floating_point() else b
        return functional_call(module, values, (features,))

    if init == "module":
        def start(generator: torch.Generator | None, dtype: torch.dtype, device: torch.device) -> Tensor:
            return initial.to(dtype=dtype, device=device)
    else:
        draw = _reset_draw(module)

        def start(generator: torch.Generator | None, dtype: torch.dtype, device: torch.device) -> Tensor:
            gen = require_generator(generator, f"from_module(..., init='reset') of {type(module).__name__}")
            return torch.cat([p.reshape(-1) for p in draw(gen)]).to(dtype=dtype, device=device)

    return FlatModel(
        sum(sizes), forward, sample_loss, start, name or f"from_module({type(module).__name__})"
    )


# --------------------------------------------------------------------------- client data


def _as_tensor(values: Any, dtype: torch.dtype, device: DeviceLike) -> Tensor:
    return torch.as_tensor(np.asarray(values) if not isinstance(values, Tensor) else values).to(
        dtype=dtype, device=device
    )


def _targets_tensor(values: Any, dtype: torch.dtype, device: DeviceLike) -> Tensor:
    t = values if isinstance(values, Tensor) else torch.as_tensor(np.asarray(values))
    if t.is_floating_point() or t.is_complex():
        return t.to(dtype=dtype, device=device)
    return t.to(dtype=torch.int64, device=device)


class PaddedClients:
    """Shape accessors shared by the padded per-client containers (:class:`ClientData`,
    :class:`~networkedfl.nn.ClientBatches`): ``features`` of shape
    ``(n, m, ...)`` and ``sample_weights`` ``(n, m)``, zero weight marking padding.

    The accessors mean what they mean on every per-node container of the package
    (:class:`~networkedfl.NodeData`, ``FedRelaxData``, ``LinearProblem``; docs/package.md):
    ``n_nodes`` the number of clients, ``max_samples`` the padded length, ``samples_per_node``
    the real sample counts and ``weight_per_node`` the summed sample weights."""

    @property
    def n_nodes(self) -> int:
        """Number of clients (nodes) ``n``."""
        return int(self.features.shape[0])

    n_clients = renamed("n_nodes", "n_clients")

    @property
    def max_samples(self) -> int:
        """Padded length ``m``."""
        return int(self.features.shape[1])

    @property
    def samples_per_node(self) -> Tensor:
        """Number of samples with positive weight per client, ``int64`` of shape ``(n,)``."""
        return (self.sample_weights > 0).sum(dim=1)

    @property
    def counts(self) -> Tensor:
        """:attr:`samples_per_node` (the name of :class:`~networkedfl.NodeData`'s field)."""
        return self.samples_per_node

    @property
    def weight_per_node(self) -> Tensor:
        """Total sample weight per client ``n_i = sum_j a_ij``, shape ``(n,)``: the FedAvg
        averaging weights (the sample counts for 0/1 weights)."""
        return self.sample_weights.sum(dim=1)

    n_samples = renamed("weight_per_node", "n_samples")

    def _check_layout(self, *, vector_targets: bool) -> None:
        """Tensors ``features (n, m, ...)`` with ``n >= 1``, ``targets (n, m)`` (or ``(n, m,
        ...)`` with ``vector_targets``) and finite, non-negative ``sample_weights (n, m)``;
        each error names the field that is wrong."""
        x, y, w = self.features, self.targets, self.sample_weights
        if not all(isinstance(t, Tensor) for t in (x, y, w)):
            raise TypeError(f"{type(self).__name__} fields must be torch tensors (use from_arrays)")
        if x.ndim < 2:
            raise ValueError(f"features must have shape (n, m, ...), got {tuple(x.shape)}")
        n, m = x.shape[:2]
        if n == 0:
            raise ValueError(f"features hold no client (shape {tuple(x.shape)}): need at least one")
        if (y.shape[:2] if vector_targets else y.shape) != (n, m):
            want = f"({n}, {m}, ...)" if vector_targets else f"({n}, {m})"
            raise ValueError(f"targets must have shape {want} (one row per client of features), "
                             f"got {tuple(y.shape)}")
        if w.shape != (n, m):
            raise ValueError(f"sample_weights must have shape ({n}, {m}) (one per sample of features), "
                             f"got {tuple(w.shape)}")
        if not bool(torch.all(torch.isfinite(w))) or bool(torch.any(w < 0)):
            raise ValueError("sample_weights must be finite and non-negative")


@dataclass(frozen=True, eq=False)
class ClientData(PaddedClients):
    """Local datasets of ``n`` clients, padded to a common length ``m``.

    Attributes
    ----------
    features
        Tensor ``(n, m, ...)``: ``m`` feature tensors per client.
    targets
        Tensor ``(n, m)``: floating (regression) or ``int64`` (class labels).
    sample_weights
        Tensor ``(n, m)``: 1 for a real sample, 0 for padding (any non-negative weights
        are allowed; a client's loss is the weighted mean of its sample losses).

    Notes
    -----
    Padding may sit anywhere in a row; the mini-batch kernel
    (:func:`~networkedfl.algorithms.local_sgd`) only shuffles samples with a
    positive weight.
    """

    features: Tensor
    targets: Tensor
    sample_weights: Tensor

    def __post_init__(self) -> None:
        self._check_layout(vector_targets=False)
        x, y, w = self.features, self.targets, self.sample_weights
        for name, t in (("features", x), ("targets", y)):
            if t.is_floating_point():
                bad = torch.nonzero(~torch.isfinite(t).reshape(t.shape[0], -1).all(dim=1)).reshape(-1)
                if bad.numel():
                    raise ValueError(f"{name} contain NaN or inf (clients {bad[:10].tolist()})")
        if w.dtype != x.dtype:
            raise ValueError(f"sample_weights dtype {w.dtype} differs from features {x.dtype}")


    @property
    def dtype(self) -> torch.dtype:
        return self.features.dtype

    @property
    def device(self) -> torch.device:
        return self.features.device

    def to(self, dtype: torch.dtype | None = None, device: DeviceLike | None = None) -> ClientData:
        """Features and weights (and floating targets) in ``dtype`` on ``device``."""
        dtype = self.dtype if dtype is None else dtype
        device = self.device if device is None else torch.device(device)
        if dtype == self.dtype and device == self.device:
            return self
        return ClientData(
            self.features.to(dtype=dtype, device=device),
            _targets_tensor(self.targets, dtype, device),
            self.sample_weights.to(dtype=dtype, device=device),
        )

    def subset(self, clients: Tensor | np.ndarray | Sequence[int]) -> ClientData:
        """The clients ``clients`` (indices), in that order."""
        idx = torch.as_tensor(np.asarray(clients) if not isinstance(clients, Tensor) else clients)
        idx = idx.to(device=self.device, dtype=torch.int64)
        return ClientData(self.features[idx], self.targets[idx], self.sample_weights[idx])

    def pooled(self) -> tuple[Tensor, Tensor, Tensor]:
        """Samples with positive weight of all clients, concatenated in client order.

        Returns features ``(N, ...)``, targets ``(N,)`` and weights ``(N,)``: the data a
        centralised learner would see.
        """
        keep = self.sample_weights > 0
        return self.features[keep], self.targets[keep], self.sample_weights[keep]

    @classmethod
    def from_node_data(
        cls,
        data: NodeData,
        *,
        dtype: torch.dtype = DEFAULT_DTYPE,
        device: DeviceLike = "cpu",
    ) -> ClientData:
        """Equal-sized datasets of :class:`~networkedfl.gtv.NodeData` (all weights 1)."""
        return cls.from_arrays(data.features, data.labels, dtype=dtype, device=device)

    @classmethod
    def from_arrays(
        cls,
        features: Any,
        targets: Any,
        counts: Any = None,
        *,
        dtype: torch.dtype = DEFAULT_DTYPE,
        device: DeviceLike = "cpu",
    ) -> ClientData:
        """Client data from stacked arrays or tensors.

        Parameters
        ----------
        features, targets
            ``(n, m, ...)`` and ``(n, m)``.  Integer targets become ``int64``, floating
            ones ``dtype``.
        counts
            Optional number of real samples per client ``(n,)``: the first ``counts[i]``
            samples of row ``i`` get weight 1, the rest (padding) weight 0.  ``None``: all
            samples are real.  Integers (integral floats such as ``2.0`` too; ``1.5`` and
            booleans are an error, see :mod:`networkedfl._validation`).
        """
        x = _as_tensor(features, dtype, device)
        y = _targets_tensor(targets, dtype, device)
        if x.ndim < 2:
            raise ValueError(f"features must have shape (n, m, ...), got {tuple(x.shape)}")
        n, m = x.shape[:2]
        if counts is None:
            w = torch.ones((n, m), dtype=dtype, device=device)
        else:
            c = check_int_array(counts, "counts")
            if c.shape != (n,):
                raise ValueError(f"counts must have shape ({n},) (one per client of features), got {c.shape}")
            if n and (c.min() < 0 or c.max() > m):
                raise ValueError(f"counts must lie in [0, {m}], got {counts!r}")
            c = torch.as_tensor(c, device=device)
            w = (torch.arange(m, device=device)[None, :] < c[:, None]).to(dtype)
        return cls(x, y, w)

    @classmethod
    def from_datasets(cls, clients: Sequence[Any], *, dtype: torch.dtype | None = None,
                      device: DeviceLike = "cpu") -> ClientData:
        """Client data from one ``torch.utils.data`` ``Dataset`` or ``DataLoader`` per client
        (items or batches ``(features, target)``), zero-padded as
        :meth:`from_client_arrays`; ``dtype=None``: the features' floating dtype
        (:data:`DEFAULT_DTYPE` for integer features).  The torch methods convert such a list
        themselves."""
        from ._torch_io import _read_clients

        xs, ys = _read_clients(clients)
        if dtype is None:
            dtype = xs[0].dtype if xs[0].is_floating_point() else DEFAULT_DTYPE
        return cls.from_client_arrays(xs, ys, dtype=dtype, device=device)

    @classmethod
    def from_client_arrays(
        cls,
        features: Sequence[Any],
        targets: Sequence[Any],
        *,
        dtype: torch.dtype = DEFAULT_DTYPE,
        device: DeviceLike = "cpu",
    ) -> ClientData:
        """Client data from per-client arrays of different lengths, zero-padded.

        ``features[i]`` has shape ``(m_i, ...)`` and ``targets[i]`` ``(m_i,)``; the result
        has ``m = max_i m_i`` and weight 0 on the padding.
        """
        if len(features) != len(targets) or not features:
            raise ValueError("need one features and one targets array per client (at least one)")
        xs = [_as_tensor(f, dtype, "cpu") for f in features]
        ys = [_targets_tensor(t, dtype, "cpu") for t in targets]
        sizes = [int(x.shape[0]) for x in xs]
        if any(y.shape != (s,) for y, s in zip(ys, sizes, strict=True)):
            raise ValueError("targets[i] must have shape (m_i,) matching features[i]")
        m = max(sizes)
        x = torch.zeros((len(xs), m, *xs[0].shape[1:]), dtype=dtype)
        y = torch.zeros((len(ys), m), dtype=ys[0].dtype)
        for i, (xi, yi) in enumerate(zip(xs, ys, strict=True)):  # data assembly, not training
            x[i, : sizes[i]] = xi
            y[i, : sizes[i]] = yi
        return cls.from_arrays(x, y, sizes, dtype=dtype, device=device)


# --------------------------------------------------------------------------- batched helpers


def _batched_inputs(params: Tensor, features: Tensor, targets: Tensor,
                    weights: Tensor | None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``params`` ``(n, P)`` (a ``(P,)`` vector broadcast), floating ``features`` and
    ``targets`` in its dtype and the weights (all ones when ``None``)."""
    n = features.shape[0]
    if params.ndim == 1:
        params = params.expand(n, -1)
    elif params.ndim != 2 or params.shape[0] != n:
        raise ValueError(f"params must be (P,) or ({n}, P), got {tuple(params.shape)}")
    w = _default_weights(targets, weights, params.dtype)
    features, targets = _match_dtype(features, targets, params.dtype)
    return params, features, targets, w


def _default_weights(targets: Tensor, weights: Tensor | None, dtype: torch.dtype) -> Tensor:
    if weights is None:
        return torch.ones(targets.shape, dtype=dtype, device=targets.device)
    return weights.to(dtype)


def _match_dtype(features: Tensor, targets: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """Floating features and targets in the parameters' dtype (a no-op when they match)."""
    if features.is_floating_point():
        features = features.to(dtype)
    if targets.is_floating_point():
        targets = targets.to(dtype)
    return features, targets


def client_losses(
    model: FlatModel,
    params: Tensor,
    features: Tensor,
    targets: Tensor,
    weights: Tensor | None = None,
) -> Tensor:
    """Local loss ``F_i(w_i)`` of every client at its own parameters, shape ``(n,)``.

    Parameters
    ----------
    model
        The model.
    params
        ``(n, P)`` one parameter vector per client, or ``(P,)`` shared by all.
    features, targets, weights
        ``(n, m, ...)``, ``(n, m)`` and ``(n, m)`` (``None``: all samples weigh 1).
        Floating inputs are cast to the dtype of ``params``.
    """
    inputs = _batched_inputs(params, features, targets, weights)
    own = None if model.batch_loss is None else model.batch_loss(*inputs)
    return vmap(model.loss)(*inputs) if own is None else own


def client_gradients(
    model: FlatModel,
    params: Tensor,
    features: Tensor,
    targets: Tensor,
    weights: Tensor | None = None,
) -> Tensor:
    """Gradient ``grad F_i(w_i)`` of every client's local loss, shape ``(n, P)``.

    The model's closed-form :attr:`~FlatModel.batch_gradient` where it provides one for the
    inputs, else one call of ``vmap(grad(F))`` over the clients (as
    :func:`~networkedfl.nn.batch_gradients`); same arguments as :func:`client_losses`.
    """
    inputs = _batched_inputs(params, features, targets, weights)
    own = None if model.batch_gradient is None else model.batch_gradient(*inputs)
    return vmap(grad(model.loss))(*inputs) if own is None else own


def losses_of_models(
    model: FlatModel,
    models: Tensor,
    features: Tensor,
    targets: Tensor,
    weights: Tensor | None = None,
) -> Tensor:
    """Local loss of every client under every one of ``k`` models, shape ``(n, k)``.

    Entry ``(i, j)`` is ``F_i(theta_j)``; its row-wise argmin is the cluster estimate of
    IFCA (Ghosh et al. 2020, Algorithm 1, ``j_hat = argmin_j F_i(theta_j)``).  Computed
    with ``vmap`` over the clients of ``vmap`` over the models.
    """
    if models.ndim != 2:
        raise ValueError(f"models must be (k, P), got {tuple(models.shape)}")
    w = _default_weights(targets, weights, models.dtype)
    features, targets = _match_dtype(features, targets, models.dtype)
    if model.batch_loss is not None and model.stacked_loss:  # all models in one call
        n = features.shape[0]
        stacked = model.batch_loss(models[:, None, :].expand(-1, n, -1), features, targets, w)
        if stacked is not None:
            return stacked.T
    if model.batch_loss is not None:  # the model's closed form, one call per model
        n = features.shape[0]
        columns = [model.batch_loss(theta.expand(n, -1), features, targets, w) for theta in models]
        if all(c is not None for c in columns):
            return torch.stack(columns, dim=1)
    over_models = vmap(model.loss, in_dims=(0, None, None, None))
    return vmap(over_models, in_dims=(None, 0, 0, 0))(models, features, targets, w)
