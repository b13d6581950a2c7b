"""The two-layer network of the GTV paper's MNIST experiment (eq. (40)), for all nodes at once.

``h(x; w) = softmax(W2 ReLU(W1 x + b1) + b2)`` with ``W1`` of shape ``(h, F)`` and ``W2``
of shape ``(c, h)`` (GTV eq. (40): a dense ReLU layer and a dense soft-max output layer;
``F = 784`` pixels, ``h = 1`` hidden unit and ``c = 2`` classes in the paper's code).

A node's parameters are one flat vector laid out as ``[W1 (row-major), W2 (row-major),
b1, b2]``.  The local model parameters ``w_i`` of the paper are the entries of the two
weight matrices (:attr:`TwoLayerNetwork.weight_blocks`); the biases are local to each node
and not coupled by GTV (the authors' code for Sec. VI-C of Sarcheshmehpour et al. 2023; docs/variants.md).

The parameters of many nodes are the rows of an ``(n, P)`` tensor (or ``(R, n, P)`` for
``R`` independent replicas of the same nodes, e.g. one per value of ``lambda``) and
:meth:`TwoLayerNetwork.logits` evaluates all of them on their own data with batched matrix
products (no loop over nodes).  :meth:`TwoLayerNetwork.flat_model` gives the same network as
a :class:`~networkedfl.nn.FlatModel` for the federated baselines.

The nodes' samples may be given dense ``(n, m, F)`` or as :class:`SparseSamples` (two CSR
matrices of the same samples, :meth:`SparseSamples.of`): MNIST images are about 80 % zeros,
and the two products with the samples (``W1 x`` and ``dpre^T x``) then read a fifth of the
data.  With sparse samples every column of a product (one replica's hidden unit) is summed
in the same order whatever the number of replicas, so ``R`` replicas solved together give
bit for bit the numbers each gives alone where each node holds a multiple of 32 samples
(torch's elementwise kernels then see whole vector blocks; with a ragged tail their scalar
exp and log may differ from the vector ones in the last bit).  The dense batched products
sum in an order that depends on ``R``; the two differ from each other by float rounding.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse
import torch
from torch import Tensor

from ..seeding import Seed, as_rng
from ._models import FlatModel, cross_entropy

__all__ = ["SparseSamples", "TwoLayerNetwork", "accuracy"]


@dataclass(frozen=True, eq=False)
class SparseSamples:
    """The samples ``(n, m, F)`` of ``n`` nodes as block-diagonal CSR matrices.

    ``rows`` is ``(n m, n F)`` with entry ``(i m + s, i F + f) = x[i, s, f]`` and ``cols``
    its transpose ``(n F, n m)``, both with 32-bit indices; ``W1 x`` of every node and
    replica is then ``rows @ W`` with ``W`` the ``(n F, R h)`` stack of the first-layer
    weights, and the weight gradient ``cols @ dpre``.  Build with :meth:`of` once per data
    set (it costs about two dense passes) and pass it wherever the network takes
    ``features``.
    """

    rows: Tensor
    cols: Tensor
    shape: tuple[int, int, int]

    @classmethod
    def of(cls, features: Tensor) -> SparseSamples:
        """The CSR form of dense ``(n, m, F)`` samples (their dtype and device)."""
        x = torch.as_tensor(features)
        if x.ndim != 3:
            raise ValueError(f"features must be (n, m, F), got shape {tuple(x.shape)}")
        n, m, f = (int(v) for v in x.shape)

        def csr(major: Tensor, minor: Tensor, vals: Tensor, size: tuple[int, int]) -> Tensor:
            counts = torch.bincount(major, minlength=size[0])
            crow = torch.zeros(size[0] + 1, dtype=torch.int32, device=x.device)
            crow[1:] = torch.cumsum(counts, 0)
            with warnings.catch_warnings():  # "sparse CSR support is in beta": used as documented
                warnings.simplefilter("ignore", UserWarning)
                return torch.sparse_csr_tensor(crow, minor.to(torch.int32), vals, size)

        node, sample, pixel = (x != 0).nonzero(as_tuple=True)  # row-major: sorted by (node, sample)
        rows = csr(node * m + sample, node * f + pixel, x[node, sample, pixel], (n * m, n * f))
        xt = x.transpose(1, 2)  # the transpose's entries in its row order, (node, pixel, sample)
        node, pixel, sample = (xt != 0).nonzero(as_tuple=True)
        cols = csr(node * f + pixel, node * m + sample, xt[node, pixel, sample], (n * f, n * m))
        return cls(rows, cols, (n, m, f))

    @property
    def dtype(self) -> torch.dtype:
        return self.rows.dtype

    @functools.cached_property
    def _scipy(self) -> tuple[scipy.sparse.csr_matrix, scipy.sparse.csr_matrix] | None:
        """``rows`` and ``cols`` as scipy CSR matrices sharing their arrays (CPU only)."""
        if self.rows.device.type != "cpu":
            return None
        return tuple(scipy.sparse.csr_matrix((t.values().numpy(), t.col_indices().numpy(), t.crow_indices().numpy()),
                                             shape=tuple(t.shape), copy=False) for t in (self.rows, self.cols))

    def times(self, which: str, dense: Tensor) -> Tensor:
        """``rows @ dense`` (``which="rows"``) or ``cols @ dense``.  With one dense column on
        the CPU (one replica, one hidden unit: the baselines' local steps) scipy's CSR kernel
        takes the product, about 20 % faster than torch's at MNIST's 6 M non-zeros (1.1 vs
        1.4 ns a non-zero on the machine of ``benchmarks/README.md``), the same numbers:
        both sum every row from 0 in the order of its entries, bit for bit
        (``tests/unit/nn/test_mnist_models.py``)."""
        matrix = self.rows if which == "rows" else self.cols
        pair = self._scipy if dense.shape[1] == 1 and not dense.requires_grad else None
        if pair is None:
            return matrix @ dense
        try:
            vector = dense.reshape(-1).contiguous().numpy()
        except RuntimeError:  # a tensor numpy cannot read (e.g. under a torch.func transform)
            return matrix @ dense
        return torch.from_numpy(pair[0 if which == "rows" else 1] @ vector).reshape(-1, 1)

    def to(self, dtype: torch.dtype) -> SparseSamples:
        """The same samples with values of ``dtype``."""
        if dtype == self.dtype:
            return self

        def cast(t: Tensor) -> Tensor:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                return torch.sparse_csr_tensor(t.crow_indices(), t.col_indices(), t.values().to(dtype), t.shape)

        return SparseSamples(cast(self.rows), cast(self.cols), self.shape)


@dataclass(frozen=True)
class TwoLayerNetwork:
    """Shapes and parameter layout of the network (40).

    Attributes
    ----------
    n_features
        Input dimension ``F`` (784 for MNIST).
    n_hidden
        Hidden ReLU units ``h`` (GTV code: 1).
    n_classes
        Output classes ``c`` (2: the two digits of a node's cluster).
    """

    n_features: int = 784
    n_hidden: int = 1
    n_classes: int = 2

    def __post_init__(self) -> None:
        if self.n_features < 1 or self.n_hidden < 1 or self.n_classes < 2:
            raise ValueError(
                "need n_features >= 1, n_hidden >= 1 and n_classes >= 2, got "
                f"{self.n_features}, {self.n_hidden}, {self.n_classes}"
            )

    # ---------------------------------------------------------------- layout
    @property
    def blocks(self) -> dict[str, tuple[int, int]]:
        """Coordinate range ``[start, stop)`` of ``W1``, ``W2``, ``b1`` and ``b2``."""
        f, h, c = self.n_features, self.n_hidden, self.n_classes
        sizes = {"W1": h * f, "W2": c * h, "b1": h, "b2": c}
        out, start = {}, 0
        for name, size in sizes.items():
            out[name] = (start, start + size)
            start += size
        return out

    @property
    def n_params(self) -> int:
        return self.blocks["b2"][1]

    @property
    def n_weights(self) -> int:
        """Length of ``w_i``: the entries of ``W1`` and ``W2`` (the first coordinates)."""
        return self.blocks["W2"][1]

    @property
    def weight_blocks(self) -> tuple[tuple[int, int], ...]:
        """The ranges of ``W1`` and ``W2``: the parameter blocks GTV couples."""
        return (self.blocks["W1"], self.blocks["W2"])

    def weight_mask(self) -> np.ndarray:
        """Boolean ``(P,)``: True on the weight entries, False on the biases."""
        mask = np.zeros(self.n_params, dtype=bool)
        mask[: self.n_weights] = True
        return mask

    def unflatten(self, params: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``W1 (..., h, F)``, ``W2 (..., c, h)``, ``b1 (..., h)``, ``b2 (..., c)`` views."""
        f, h, c = self.n_features, self.n_hidden, self.n_classes
        lead = params.shape[:-1]
        b = self.blocks
        w1 = params[..., b["W1"][0] : b["W1"][1]].reshape(*lead, h, f)
        w2 = params[..., b["W2"][0] : b["W2"][1]].reshape(*lead, c, h)
        return w1, w2, params[..., b["b1"][0] : b["b1"][1]], params[..., b["b2"][0] : b["b2"][1]]

    # ---------------------------------------------------------------- evaluation
    def _hidden_pre(self, p: Tensor, features: Tensor) -> Tensor:
        """``W1 x + b1`` of every replica and node: ``(R, n, m, h)``, one batched product.

        ``(n, m, F) @ (n, F, R*h)`` with the right operand a transposed view of a contiguous
        ``(n, R*h, F)`` array: for few hidden units this layout is several times faster
        than a contiguous ``(n, F, R*h)`` operand (a memory-bound matrix-vector product).
        """
        r, n = p.shape[:2]
        h, f = self.n_hidden, self.n_features
        w1, _, b1, _ = self.unflatten(p)
        if isinstance(features, SparseSamples):  # (n m, n F) @ (n F, R h)
            stack = w1.permute(1, 3, 0, 2).reshape(n * f, r * h)
            pre = features.to(p.dtype).times("rows", stack)
        else:
            rows = w1.permute(1, 0, 2, 3).reshape(n, r * h, f)
            pre = torch.bmm(features.to(p.dtype), rows.transpose(1, 2))  # (n, m, R*h)
        pre = pre.reshape(n, -1, r, h).permute(2, 0, 1, 3)
        return pre + b1[:, :, None, :]

    def _weight_gradient(self, dpre: Tensor, features: Tensor | SparseSamples) -> Tensor:
        """``dW1 = dpre^T x`` of every replica and node, ``(R, n, h * F)``, from ``dpre``
        ``(R, n, m, h)``: one product over the nodes."""
        r, n, m, h = dpre.shape
        f = self.n_features
        if isinstance(features, SparseSamples):  # (n F, n m) @ (n m, R h)
            stack = dpre.permute(1, 2, 0, 3).reshape(n * m, r * h)
            dw1 = features.to(dpre.dtype).times("cols", stack).reshape(n, f, r, h).permute(2, 0, 3, 1)
            return dw1.reshape(r, n, h * f)
        # (n, R*h, m) @ (n, m, F): one batched product over the nodes
        rows = dpre.permute(1, 0, 3, 2).reshape(n, r * h, m)
        dw1 = torch.bmm(rows, features.to(dpre.dtype)).reshape(n, r, h, f).permute(1, 0, 2, 3)
        return dw1.reshape(r, n, h * f)

    def _check(self, params: Tensor, features: Tensor) -> Tensor:
        p = params[None] if params.ndim == 2 else params
        if p.ndim != 3 or p.shape[1] != features.shape[0] or p.shape[2] != self.n_params:
            raise ValueError(
                f"params must be (n, {self.n_params}) or (R, n, {self.n_params}) for "
                f"{features.shape[0]} nodes, got {tuple(params.shape)}"
            )
        return p

    def logits(self, params: Tensor, features: Tensor) -> Tensor:
        """Pre-softmax outputs of every node on its own samples.

        Parameters
        ----------
        params
            ``(n, P)``, or ``(R, n, P)`` for ``R`` replicas of the same ``n`` nodes.
        features
            ``(n, m, F)``: node ``i``'s samples (shared by the replicas), dense or
            :class:`SparseSamples`.

        Returns
        -------
        Tensor
            ``(n, m, c)`` or ``(R, n, m, c)``.
        """
        p = self._check(params, features)
        _, w2, _, b2 = self.unflatten(p)
        hidden = torch.relu(self._hidden_pre(p, features))  # (R, n, m, h)
        out = torch.einsum("rnmh,rnch->rnmc", hidden, w2) + b2[:, :, None, :]
        return out[0] if params.ndim == 2 else out

    def node_losses(self, params: Tensor, features: Tensor, labels: Tensor,
                    weights: Tensor | None = None) -> Tensor:
        """Mean cross-entropy of every node on its samples: ``(n,)`` or ``(R, n)``
        (``weights``: the weighted mean, as in :meth:`losses_and_gradients`)."""
        logits = self.logits(params, features)
        log_probs = _log_softmax(logits)
        idx = labels.long().expand(*logits.shape[:-1]).unsqueeze(-1)
        losses = -torch.gather(log_probs, -1, idx).squeeze(-1)
        return losses.mean(dim=-1) if weights is None else (losses * _shares(weights.to(losses.dtype))).sum(dim=-1)

    def losses_and_gradients(
        self, params: Tensor, features: Tensor, labels: Tensor, weights: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Mean cross-entropy of every node and its gradient, by hand (no autograd).

        Parameters
        ----------
        params
            ``(R, n, P)``.
        features
            ``(n, m, F)`` the nodes' samples, dense or :class:`SparseSamples`.
        labels
            ``(n, m)`` class labels.
        weights
            Optional ``(n, m)`` sample weights ``a_j``: the loss is then the weighted mean
            ``sum_j a_j f_j / sum_j a_j`` of :meth:`~networkedfl.nn.FlatModel.loss` (0, with
            gradient 0, for a node whose weights are all zero); ``None``: the plain mean.

        Returns
        -------
        tuple[Tensor, Tensor]
            Losses ``(R, n)`` and gradients ``(R, n, P)``: with ``p = softmax(z)`` and
            ``dz = (p - onehot(y)) c`` (``c_j = 1 / m``, or ``a_j / sum a``), ``dW2 = dz^T a``,
            ``db2 = sum dz``, ``dpre = (dz W2) * [pre > 0]``, ``dW1 = dpre^T x``,
            ``db1 = sum dpre``.
        """
        p = self._check(params, features)
        r, n = p.shape[:2]
        m = features.shape[1]
        h, c = self.n_hidden, self.n_classes
        _, w2, _, b2 = self.unflatten(p)
        pre = self._hidden_pre(p, features)  # (R, n, m, h)
        hidden = torch.relu(pre)
        z = torch.einsum("rnmh,rnch->rnmc", hidden, w2) + b2[:, :, None, :]
        log_probs = _log_softmax(z)
        y = labels.long().expand(r, n, m).unsqueeze(-1)
        dz = torch.exp(log_probs)
        dz.scatter_add_(-1, y, torch.full_like(y, -1, dtype=dz.dtype))
        if weights is None:
            losses = -torch.gather(log_probs, -1, y).squeeze(-1).mean(dim=-1)
            dz /= m
        else:
            share = _shares(weights.to(p.dtype))
            losses = -(torch.gather(log_probs, -1, y).squeeze(-1) * share).sum(dim=-1)
            dz *= share[..., None]
        dw2 = torch.einsum("rnmc,rnmh->rnch", dz, hidden)
        dpre = torch.einsum("rnmc,rnch->rnmh", dz, w2) * (pre > 0)
        grad = torch.cat([self._weight_gradient(dpre, features), dw2.reshape(r, n, c * h),
                          dpre.sum(dim=2), dz.sum(dim=2)], dim=-1)
        return losses, grad

    # ---------------------------------------------------------------- construction
    def initial_params(self, seed: Seed = None, *, bias: float = 0.0) -> np.ndarray:
        """One parameter vector: weight entries i.i.d. U[0, 1), biases ``bias``.

        GTV MNIST code: every node starts from one shared vector with entries
        ``U[0, 1)`` (``np.random.random``) [paper]; biases start at ``bias`` [choice].
        """
        rng = as_rng(seed)
        params = np.full(self.n_params, float(bias))
        params[: self.n_weights] = rng.random(self.n_weights)
        return params

    def linear_default_params(self, seed: Seed = None) -> np.ndarray:
        """One parameter vector drawn as PyTorch initialises its ``nn.Linear`` layers.

        Every entry of a layer's weight matrix and bias i.i.d. ``U(-1/sqrt(fan_in),
        1/sqrt(fan_in))`` (``kaiming_uniform_(a=sqrt(5))`` and the bias rule of
        ``nn.Linear.reset_parameters``): ``fan_in = F`` for ``W1, b1`` and ``h`` for
        ``W2, b2``.  The GTV authors' IFCA starts each cluster model from such a draw
        (their MNIST notebooks build every cluster model as a fresh network); drawn here
        from ``seed``, in the layout's order ``W1, W2, b1, b2``.
        """
        rng = as_rng(seed)
        fan_in = {"W1": self.n_features, "W2": self.n_hidden, "b1": self.n_features, "b2": self.n_hidden}
        params = np.empty(self.n_params)
        for name, (start, stop) in self.blocks.items():
            bound = 1.0 / np.sqrt(fan_in[name])
            params[start:stop] = rng.uniform(-bound, bound, stop - start)
        return params

    def flat_model(self, init: np.ndarray | None = None, *,
                   sparse: Sequence[Tensor | tuple[Tensor, SparseSamples]] = ()) -> FlatModel:
        """The network as a :class:`~networkedfl.nn.FlatModel` (cross-entropy loss).

        ``forward(params (P,), features (m, F)) -> logits (m, c)`` runs under ``vmap``.
        ``init`` is the fixed initial vector (default: zeros); the baselines pass the
        shared random start explicitly.  ``sparse``: features tensors ``(n, m, F)`` (e.g. the
        clients' whole local data sets, which full-batch local steps pass at every step)
        whose :class:`SparseSamples` the batched loss and gradient use whenever they get
        exactly that tensor (or a view of all its elements), unchanged; any other features
        (mini-batches) are multiplied densely.  An entry ``(tensor, samples)`` gives the
        tensor's :class:`SparseSamples` already built (not built again).
        """
        start = torch.zeros(self.n_params, dtype=torch.float64) if init is None else torch.as_tensor(
            np.asarray(init, dtype=np.float64))
        if start.shape != (self.n_params,):
            raise ValueError(f"init must have shape ({self.n_params},), got {tuple(start.shape)}")
        net = self

        def forward(params: Tensor, features: Tensor) -> Tensor:
            w1, w2, b1, b2 = net.unflatten(params)
            return torch.relu(features @ w1.T + b1) @ w2.T + b2

        def init_fn(generator, dtype, device) -> Tensor:
            return start.to(dtype=dtype, device=device)

        # Every node's loss and gradient by :meth:`node_losses` and
        # :meth:`losses_and_gradients`: one batched product over the nodes in the fast
        # layout (vmap of ``forward`` reads the features in a layout several times slower).
        # None (the generic path) for other shapes and for params that autograd or a
        # torch.func transform differentiates.
        def applies(params: Tensor, features: Tensor, labels: Tensor, ndim: tuple[int, ...] = (2,)) -> bool:
            return (params.ndim in ndim and not params.requires_grad and features.ndim == 3
                    and features.shape[0] == params.shape[-2] and features.shape[-1] == net.n_features
                    and tuple(labels.shape) == tuple(features.shape[:2]))

        pairs = [item if isinstance(item, tuple) else (item, None) for item in sparse]
        known = [(t, t._version, SparseSamples.of(t.detach()) if csr is None else csr) for t, csr in pairs]

        def samples(features: Tensor) -> Tensor | SparseSamples:
            for tensor, version, csr in known:
                if _same_memory(features, tensor) and features._version == version:
                    return csr
            return features

        def batch_gradient(params: Tensor, features: Tensor, labels: Tensor,
                           weights: Tensor | None) -> Tensor | None:
            if not applies(params, features, labels):
                return None
            return net.losses_and_gradients(params, samples(features), labels, weights)[1][0]

        def batch_loss(params: Tensor, features: Tensor, labels: Tensor,
                       weights: Tensor | None) -> Tensor | None:
            # (n, P) or (R, n, P): the R models of every node in one pass over the samples
            if not applies(params, features, labels, ndim=(2, 3)):
                return None
            return net.node_losses(params, samples(features), labels, weights)

        name = f"two_layer(F={self.n_features}, h={self.n_hidden}, c={self.n_classes})"
        return FlatModel(self.n_params, forward, cross_entropy, init_fn, name,
                         batch_gradient=batch_gradient, batch_loss=batch_loss, stacked_loss=True)


def _same_memory(a: Tensor, b: Tensor) -> bool:
    """``a`` is ``b`` or a view of exactly its elements (the whole-range slice
    ``x[0:n]`` that the local training of all clients passes): same storage, offset, shape,
    strides, dtype and device.  A view shares ``b``'s version counter, so an in-place edit
    of either is still seen."""
    return a is b or (a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
                      and a.dtype == b.dtype and a.device == b.device)


def _log_softmax(z: Tensor) -> Tensor:
    """``log_softmax`` over the last (class) axis, computed with the classes leading: the
    same numbers as ``torch.log_softmax(z, -1)``, several times faster for few classes
    (torch reduces a short innermost axis slowly)."""
    return torch.log_softmax(z.movedim(-1, 0).contiguous(), dim=0).movedim(0, -1)


def _shares(weights: Tensor) -> Tensor:
    """``a_j / sum_j a_j`` over the last axis (0 for a node whose weights are all zero)."""
    total = weights.sum(dim=-1, keepdim=True)
    return weights / torch.where(total > 0, total, torch.ones_like(total))


def accuracy(logits: Tensor, labels: Tensor) -> Tensor:
    """Fraction of correct arg-max predictions over the last sample axis: ``(..., m, c) -> (...)``."""
    return (logits.argmax(dim=-1) == labels.long()).to(torch.float64).mean(dim=-1)
