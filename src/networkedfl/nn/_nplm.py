"""The chapter's lower-level model for next-word prediction: Bengio's neural probabilistic
language model (NPLM) as a function of one flat parameter vector.

Lu, Xing & Yu, Sec. 10.5.2: "the embedding layer (i.e., a big lookup table) is with a
dimension of 63144 x 100, a fully-connected hidden layer is with a dimension of 100 x 200
followed by a tanh function, and a decoder layer has a size of 200 x 63144.  The length of
the sliding window for the next word prediction task is 35 and the batch size is 100."
With these shapes the hidden layer reads one 100-d embedding, so every position ``p`` of a
window predicts the word at ``p + 1`` from the word at ``p`` (inferred from Lu, Xing & Yu, Sec. 10.5.2; docs/deviations/gfl.md)::

    e_p = E[w_p],   h_p = tanh(e_p W_1 + b_1),   P(w_{p+1} | w_p) = softmax(h_p W_2 + b_2).

A *sample* is one window of ``L`` consecutive input ids with the ``L`` next words as its
targets; its loss is the mean token cross-entropy over the window, so a client's local loss
(the weighted mean over its windows) is the mean negative log-likelihood per token and
``exp`` of it the perplexity.

The flat vector holds ``E`` (V x d), ``W_1`` (d x h), ``b_1`` (h), ``W_2`` (h x V) and ``b_2``
(V), row-major, in that order (:class:`NPLMLayout`).  "If the current client contains a
word, we set the corresponding row of the lookup table matrix of the embedding layer as
trainable, and the row that does not have a corresponding word as 0": :meth:`NPLMLayout.
frozen_rows_mask` gives the per-client 0/1 parameter mask the federated algorithms
multiply into their gradients (:mod:`networkedfl.nn`), and
:meth:`NPLMLayout.zero_absent_rows` the matching per-client starting models.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.func import vmap

from .._validation import renamed
from ._models import FlatModel, cross_entropy, require_generator

__all__ = [
    "NPLMLayout",
    "NextWordBatches",
    "WordPairCounts",
    "client_token_losses",
    "next_word_cross_entropy",
    "nplm",
    "window_cross_entropy",
]


@dataclass(frozen=True)
class NPLMLayout:
    """Shapes and offsets of the NPLM's parameters in the flat vector.

    Attributes
    ----------
    vocab_size, embed_dim, hidden_dim
        ``V``, ``d`` and ``h`` (the chapter: 63,144, 100 and 200).
    """

    vocab_size: int
    embed_dim: int = 100
    hidden_dim: int = 200

    def __post_init__(self) -> None:
        if min(self.vocab_size, self.embed_dim, self.hidden_dim) < 1:
            raise ValueError(f"sizes must be positive, got {self}")

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        v, d, h = self.vocab_size, self.embed_dim, self.hidden_dim
        return {"embedding": (v, d), "w1": (d, h), "b1": (h,), "w2": (h, v), "b2": (v,)}

    @property
    def slices(self) -> dict[str, slice]:
        out, start = {}, 0
        for name, shape in self.shapes.items():
            size = math.prod(shape)
            out[name] = slice(start, start + size)
            start += size
        return out

    @property
    def n_params(self) -> int:
        return sum(math.prod(s) for s in self.shapes.values())

    @property
    def hidden_layer(self) -> slice:
        """``W_1`` and ``b_1`` together (consecutive in the flat vector)."""
        s = self.slices
        return slice(s["w1"].start, s["b1"].stop)

    def unflatten(self, params: Tensor) -> dict[str, Tensor]:
        """Views of the parameters of one flat vector ``(P,)`` in their shapes."""
        return {name: params[sl].reshape(self.shapes[name]) for name, sl in self.slices.items()}

    def flatten(self, parts: dict[str, Tensor | np.ndarray]) -> Tensor:
        """The flat vector of ``parts`` (every entry of :attr:`shapes`)."""
        chunks = []
        for name, shape in self.shapes.items():
            t = torch.as_tensor(parts[name])
            if tuple(t.shape) != shape:
                raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
            chunks.append(t.reshape(-1))
        dtype = chunks[0].dtype
        return torch.cat([c.to(dtype) for c in chunks])

    def frozen_rows_mask(self, present: np.ndarray) -> np.ndarray:
        """Per-client 0/1 mask ``(n, P)``: embedding rows of absent words are 0 (frozen).

        Parameters
        ----------
        present
            Boolean ``(n, V)``: ``present[i, w]`` if word ``w`` occurs in client ``i``'s
            training data.  All other parameters (hidden layer, decoder) are trainable.
        """
        present = np.asarray(present, dtype=bool)
        if present.ndim != 2 or present.shape[1] != self.vocab_size:
            raise ValueError(f"present must be (n, {self.vocab_size}), got {present.shape}")
        mask = np.ones((present.shape[0], self.n_params), dtype=np.float32)
        rows = self.slices["embedding"]
        mask[:, rows] = np.repeat(present.astype(np.float32), self.embed_dim, axis=1)
        return mask

    def zero_absent_rows(self, params: Tensor, present: np.ndarray) -> Tensor:
        """``(n, P)`` copies of ``params`` ``(P,)`` with the embedding rows of the words absent
        from client ``i`` set to 0 (the chapter's per-client starting models)."""
        present_t = torch.as_tensor(np.asarray(present, dtype=bool), device=params.device)
        n = present_t.shape[0]
        out = params.expand(n, -1).clone()
        rows = self.slices["embedding"]
        emb = out[:, rows].reshape(n, self.vocab_size, self.embed_dim)
        out[:, rows] = (emb * present_t[:, :, None].to(params.dtype)).reshape(n, -1)
        return out


def window_cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean token cross-entropy of every window: ``logits (m, L, V)``, ``targets (m, L)``
    -> ``(m,)``."""
    return cross_entropy(logits, targets).mean(dim=-1)


def next_word_cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """The NPLM's sample loss for either data layout (see :class:`WordPairCounts`).

    ``targets`` ``(m, L)`` next-word ids (int or exact floats): the mean token cross-entropy
    of every window (:func:`window_cross_entropy`).  ``targets`` of the logits' shape
    ``(m, V)``: next-word *distributions* of ``m`` distinct input words, and the loss is
    ``logsumexp(z) - sum_b p_b z_b``, the cross-entropy averaged over the tokens that
    follow the word.
    """
    if targets.shape == logits.shape and targets.is_floating_point():
        return torch.logsumexp(logits, dim=-1) - (targets * logits).sum(dim=-1)
    return window_cross_entropy(logits, targets)


def nplm(
    layout: NPLMLayout,
    *,
    embedding: np.ndarray | Tensor | None = None,
    embedding_std: float = 0.1,
) -> FlatModel:
    """The NPLM of the chapter as a :class:`~networkedfl.nn.FlatModel`.

    ``forward(params, ids (m, L))`` returns the logits ``(m, L, V)`` of the next word at
    every position (any shape of ids works: ``(m,)`` gives ``(m, V)``); the sample loss is
    :func:`next_word_cross_entropy`: against ``(m, L)`` next-word ids, or against the
    next-word distributions of distinct input words (:class:`NextWordBatches`, the same
    loss with every input word's logits computed once).  Ids may be given as integers or
    as exact floats.

    Parameters
    ----------
    layout
        The sizes ``V``, ``d``, ``h``.
    embedding
        Initial lookup table ``(V, d)`` (the global embedding: GloVe in the chapter, see
        :func:`networkedfl.datasets.ppmi_svd_embedding`); ``None``: ``N(0, embedding_std^2)``
        entries drawn with the generator.
    embedding_std
        Standard deviation of a random lookup table.

    Notes
    -----
    The initialiser draws ``W_1, b_1 ~ U(-1/sqrt(d), 1/sqrt(d))`` and ``W_2, b_2 ~
    U(-1/sqrt(h), 1/sqrt(h))`` (PyTorch's ``nn.Linear`` default) with the generator it is
    given, which is therefore required.
    """
    v, d, h = layout.vocab_size, layout.embed_dim, layout.hidden_dim
    sl = layout.slices
    table = None
    if embedding is not None:
        table = torch.as_tensor(np.asarray(embedding) if not isinstance(embedding, Tensor) else embedding)
        if tuple(table.shape) != (v, d):
            raise ValueError(f"embedding must be ({v}, {d}), got {tuple(table.shape)}")

    sizes = [s.stop - s.start for s in sl.values()]

    def forward(params: Tensor, ids: Tensor) -> Tensor:
        ids = ids.long() if ids.is_floating_point() else ids
        # one split (its backward is one concatenation, not one zero-filled P-vector per part)
        emb, w1, b1, w2, b2 = torch.split(params, sizes)
        hidden = torch.tanh(emb.reshape(v, d)[ids] @ w1.reshape(d, h) + b1)
        return hidden @ w2.reshape(h, v) + b2

    def init(generator: torch.Generator | None, dtype: torch.dtype, device: torch.device) -> Tensor:
        gen = require_generator(generator, "the NPLM initialisation")

        def uniform(shape: tuple[int, ...], bound: float) -> Tensor:
            return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound

        if table is None:
            e = torch.randn((v, d), generator=gen, dtype=torch.float64) * embedding_std
        else:
            e = table.to(torch.float64)
        parts = {"embedding": e, "w1": uniform((d, h), d ** -0.5), "b1": uniform((h,), d ** -0.5),
                 "w2": uniform((h, v), h ** -0.5), "b2": uniform((v,), h ** -0.5)}
        return layout.flatten(parts).to(dtype=dtype, device=device)

    name = f"nplm(V={v}, d={d}, h={h})"
    closed = _NPLMDerivatives(layout)
    return FlatModel(layout.n_params, forward, next_word_cross_entropy, init, name,
                     batch_gradient=closed.gradients, batch_hessian=closed.hessian)


class _NPLMDerivatives:
    """Closed-form gradients and Hessian-vector products of the NPLM's client losses on
    next-word distributions (the layout of :class:`NextWordBatches`), all clients at once.

    Per client, with ``E_a`` the embedding rows of the distinct input words, ``H = tanh(E_a
    W_1 + b_1)``, logits ``Z = H W_2 + b_2``, ``S = softmax(Z)``, targets ``Y`` (rows of
    next-word distributions), weights ``c_a = w_a / sum w`` and ``G = c (S - Y)`` (the
    gradient in ``Z`` of the weighted mean of :func:`next_word_cross_entropy`)::

        dW_2 = H^T G,  db_2 = 1^T G,  A = (G W_2^T) * (1 - H^2),  dW_1 = E_a^T A,
        db_1 = 1^T A,  dE_a = A W_1^T (scattered to the words' rows).

    The Hessian-vector product is the directional derivative of these formulas (the
    softmax's ``dS = S * (dZ - <S, dZ>)``, ``d(1 - H^2) = -2 H dH``), with the forward
    quantities computed once per linearisation point: six ``U x h x V`` products per
    product instead of the double backward pass of autograd.  Both equal the generic
    ``vmap(grad(loss))`` and its vector-Jacobian product up to floating-point rounding
    (``tests/unit/nn/test_language_model.py``).  They return ``None`` (the generic path)
    for the windows layout and for ``params`` tracked by autograd or a :mod:`torch.func`
    transform (e.g. BiG-FL's exact inverse differentiates the gradients).
    """

    def __init__(self, layout: NPLMLayout) -> None:
        self.v, self.d, self.h = layout.vocab_size, layout.embed_dim, layout.hidden_dim
        self.sizes = [s.stop - s.start for s in layout.slices.values()]

    def _applies(self, params: Tensor, ids: Tensor, targets: Tensor) -> bool:
        return (params.ndim == 2 and ids.ndim == 2 and targets.is_floating_point()
                and tuple(targets.shape) == (*ids.shape, self.v) and not params.requires_grad)

    def _parts(self, params: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        n = params.shape[0]
        emb, w1, b1, w2, b2 = torch.split(params, self.sizes, dim=1)
        # W_2 enters the U x h x V products: a contiguous copy is faster than the strided view
        return (emb.reshape(n, self.v, self.d), w1.reshape(n, self.d, self.h), b1,
                w2.reshape(n, self.h, self.v).contiguous(), b2)

    def _flat(self, ids: Tensor, d_rows: Tensor, dw1: Tensor, db1: Tensor, dw2: Tensor,
              db2: Tensor) -> Tensor:
        n, u = ids.shape
        demb = torch.zeros((n, self.v, self.d), dtype=d_rows.dtype, device=d_rows.device)
        demb.scatter_add_(1, ids[:, :, None].expand(n, u, self.d), d_rows)
        return torch.cat([demb.reshape(n, -1), dw1.reshape(n, -1), db1, dw2.reshape(n, -1), db2], dim=1)

    def _forward(self, params: Tensor, ids: Tensor, targets: Tensor, weights: Tensor, *,
                 keep_probs: bool = True) -> dict[str, Tensor]:
        """The forward quantities; ``keep_probs=False`` (the gradients): ``G`` is computed in
        the softmax's own tensor, one ``(n, U, V)`` allocation less, and ``probs`` is ``G``."""
        n, u = ids.shape
        emb, w1, b1, w2, b2 = self._parts(params)
        ids = ids.long()
        rows = torch.gather(emb, 1, ids[:, :, None].expand(n, u, self.d))
        hidden = torch.tanh(torch.baddbmm(b1[:, None, :], rows, w1))
        probs = torch.softmax(torch.baddbmm(b2[:, None, :], hidden, w2), dim=-1)
        total = weights.sum(dim=1)
        scale = (weights / torch.where(total > 0, total, torch.ones_like(total))[:, None])[:, :, None]
        g_logits = (probs - targets if keep_probs else probs.sub_(targets)).mul_(scale)
        slope = 1.0 - hidden * hidden
        g_activation = torch.bmm(g_logits, w2.transpose(1, 2))  # the gradient in H
        return {"ids": ids, "rows": rows, "hidden": hidden, "probs": probs, "scale": scale,
                "g_logits": g_logits, "slope": slope, "g_activation": g_activation,
                "g_hidden": g_activation * slope, "w1": w1, "w2": w2}

    def gradients(self, params: Tensor, ids: Tensor, targets: Tensor, weights: Tensor) -> Tensor | None:
        """The stacked gradients ``(n, P)``, or ``None`` where the closed form does not apply."""
        if not self._applies(params, ids, targets):
            return None
        f = self._forward(params, ids, targets, weights, keep_probs=False)
        return self._flat(f["ids"], torch.bmm(f["g_hidden"], f["w1"].transpose(1, 2)),
                          torch.bmm(f["rows"].transpose(1, 2), f["g_hidden"]), f["g_hidden"].sum(dim=1),
                          torch.bmm(f["hidden"].transpose(1, 2), f["g_logits"]), f["g_logits"].sum(dim=1))

    def hessian(self, params: Tensor, ids: Tensor, targets: Tensor,
                weights: Tensor) -> Callable[[Tensor], Tensor] | None:
        """``v -> `` the stacked Hessian-vector products at ``params``, or ``None``."""
        if not self._applies(params, ids, targets):
            return None
        f = self._forward(params, ids, targets, weights)
        ids, rows, hidden, probs, slope = f["ids"], f["rows"], f["hidden"], f["probs"], f["slope"]
        g_logits, g_hidden, w1, w2 = f["g_logits"], f["g_hidden"], f["w1"], f["w2"]
        n, u = ids.shape
        index = ids[:, :, None].expand(n, u, self.d)

        def product(vector: Tensor) -> Tensor:
            v_emb, v_w1, v_b1, v_w2, v_b2 = self._parts(vector)
            t_rows = torch.gather(v_emb, 1, index)
            t_pre = torch.baddbmm(v_b1[:, None, :], t_rows, w1).baddbmm_(rows, v_w1)
            t_hidden = t_pre.mul_(slope)
            # the U x h x V products as bmm + add_ (faster than baddbmm_ into a large output)
            t_logits = torch.bmm(t_hidden, w2).add_(torch.bmm(hidden, v_w2)).add_(v_b2[:, None, :])
            t_logits.sub_((probs * t_logits).sum(dim=-1, keepdim=True))
            t_g_logits = t_logits.mul_(probs).mul_(f["scale"])
            t_w2 = torch.bmm(hidden.transpose(1, 2), t_g_logits).add_(torch.bmm(t_hidden.transpose(1, 2), g_logits))
            t_g_hidden = torch.bmm(t_g_logits, w2.transpose(1, 2)).add_(torch.bmm(g_logits, v_w2.transpose(1, 2)))
            # d[(G W_2^T) * (1 - H^2)] = d(G W_2^T) * (1 - H^2) - 2 (G W_2^T) * H * dH
            t_g_hidden.mul_(slope).sub_(2.0 * f["g_activation"] * hidden * t_hidden)
            t_w1 = torch.bmm(rows.transpose(1, 2), t_g_hidden).baddbmm_(t_rows.transpose(1, 2), g_hidden)
            t_rows_out = torch.bmm(t_g_hidden, w1.transpose(1, 2)).baddbmm_(g_hidden, v_w1.transpose(1, 2))
            return self._flat(ids, t_rows_out, t_w1, t_g_hidden.sum(dim=1), t_w2, t_g_logits.sum(dim=1))

        return product


@dataclass(frozen=True)
class WordPairCounts:
    """Windows of ``n`` clients collapsed to (input word, next word) counts.

    The NPLM predicts the word at ``p + 1`` from the word at ``p`` alone, so a client's loss
    on any set of windows is a sum over its *distinct* input words ``a``:

        sum_tokens c_t CE(z_a(t), b(t)) = sum_a [n_a logsumexp(z_a) - sum_b C_ab z_ab],

    with ``z_a`` the logits of word ``a``, ``C_ab`` the weight of the tokens ``a -> b`` and
    ``n_a = sum_b C_ab``.  The logits are then computed once per distinct word instead of
    once per token: in Fig. 10.4 about 210 distinct words among the 700 tokens of a
    mini-batch, and about 750 among the ~13,000 test tokens of a domain.  The result is the
    windows' loss up to the order of floating-point summation (``tests/unit/nn/test_language_model.py``).

    A token of window ``k`` weighs ``w_k / L`` (window weight over window length), so the
    weights of a client sum to the sum of its window weights, as in
    :meth:`~networkedfl.nn.FlatModel.loss`.

    Attributes
    ----------
    rows
        ``(n, U)`` int64: every client's distinct input words, ascending, padded with 0.
    row_weights
        ``(n, U)``: ``n_a`` (0 on padding).
    client, row, target, weight
        The non-zero ``C_ab`` as coordinates: client, index into ``rows``, next word, weight.
    vocab_size
        ``V``.
    """

    rows: Tensor
    row_weights: Tensor
    client: Tensor
    row: Tensor
    target: Tensor
    weight: Tensor
    vocab_size: int

    @classmethod
    def from_windows(cls, ids: Tensor, targets: Tensor, weights: Tensor, vocab_size: int) -> WordPairCounts:
        """From ``ids``/``targets`` ``(n, m, L)`` (next-word ids) and window weights ``(n, m)``
        (0 on padding); weights keep their floating dtype."""
        if ids.ndim != 3 or targets.shape != ids.shape or weights.shape != ids.shape[:2]:
            raise ValueError("ids and targets must be (n, m, L) and weights (n, m); got "
                             f"{tuple(ids.shape)}, {tuple(targets.shape)} and {tuple(weights.shape)}")
        n, _, length = ids.shape
        v = int(vocab_size)
        a, b = ids.long().reshape(n, -1), targets.long().reshape(n, -1)
        if a.numel() and (int(a.min()) < 0 or int(a.max()) >= v or int(b.min()) < 0 or int(b.max()) >= v):
            raise ValueError(f"word ids must lie in [0, {v})")
        tw = (weights / length)[:, :, None].expand(-1, -1, length).reshape(n, -1)
        keep = tw > 0
        present = torch.zeros((n, v), dtype=torch.int64, device=a.device).scatter_add_(1, a, keep.long()) > 0
        width = int(present.sum(dim=1).max()) if n else 0
        # distinct words first (stable: ascending ids), padding after
        rows = torch.argsort((~present).to(torch.int8), dim=1, stable=True)[:, :width]
        valid = present.gather(1, rows)
        position = torch.full((n, v), -1, dtype=torch.int64, device=a.device)
        position.scatter_(1, rows, torch.arange(width, device=a.device).expand(n, width).contiguous())
        client_of = torch.arange(n, device=a.device)[:, None].expand_as(a)
        c, r, t, w = client_of[keep], position.gather(1, a)[keep], b[keep], tw[keep]
        key = (c * width + r) * v + t
        unique, inverse = torch.unique(key, sorted=True, return_inverse=True)
        pair_weight = torch.zeros(unique.shape, dtype=tw.dtype, device=a.device).index_add_(0, inverse, w)
        row_weights = torch.zeros((n, width), dtype=tw.dtype, device=a.device)
        row_weights.view(-1).index_add_(0, c * width + r, w)
        rows = torch.where(valid, rows, torch.zeros_like(rows))
        return cls(rows, row_weights, unique // (width * v), (unique // v) % width, unique % v, pair_weight, v)

    @property
    def n_nodes(self) -> int:
        """Number of clients ``n``."""
        return int(self.rows.shape[0])

    n_clients = renamed("n_nodes", "n_clients")

    def distributions(self) -> Tensor:
        """Dense next-word distributions ``(n, U, V)`` of the rows (0 rows on padding)."""
        n, width = self.rows.shape
        norm = torch.where(self.row_weights > 0, self.row_weights, torch.ones_like(self.row_weights))
        slot = self.client * width + self.row
        # the pairs are distinct: each entry is C_ab / n_a, divided before it is placed
        # (the same quotient as dividing the dense counts, one (n, U, V) pass less)
        dense = torch.zeros((n * width * self.vocab_size,), dtype=self.weight.dtype, device=self.rows.device)
        dense[slot * self.vocab_size + self.target] = self.weight / norm.reshape(-1)[slot]
        return dense.reshape(n, width, self.vocab_size)

    def losses(self, model: FlatModel, params: Tensor, *, chunk: int = 256) -> Tensor:
        """Mean token cross-entropy of every client's model ``params`` ``(n, P)`` on its own
        counts, ``(n,)`` float64, ``chunk`` rows (distinct words) of every client at a time
        (the logits of a chunk take ``n * chunk * V`` floats); a chunk involves only the
        clients that still have rows in it."""
        n, width = self.rows.shape
        if params.shape[0] != n:
            raise ValueError(f"params has {params.shape[0]} rows for {n} clients")
        if chunk < 1:
            raise ValueError(f"chunk must be positive, got {chunk}")
        device = params.device
        n_rows = (self.row_weights > 0).sum(dim=1)
        total = torch.zeros(n, dtype=torch.float64, device=device)
        forward = vmap(model.forward)
        slot = torch.full((n,), -1, dtype=torch.int64, device=device)
        with torch.no_grad():
            for start in range(0, width, chunk):
                active = torch.nonzero(n_rows > start).squeeze(1)
                stop = start + chunk
                z = forward(params[active], self.rows[active, start:stop])
                lse = torch.logsumexp(z, dim=-1)
                total[active] += (self.row_weights[active, start:stop].to(z.dtype) * lse).sum(dim=1).double()
                inside = (self.row >= start) & (self.row < stop)
                c = self.client[inside]
                slot[active] = torch.arange(len(active), device=device)
                picked = z[slot[c], self.row[inside] - start, self.target[inside]]
                total.index_add_(0, c, -(self.weight[inside].to(z.dtype) * picked).double())
        mass = self.row_weights.sum(dim=1).double()
        return total / mass.clamp_min(torch.finfo(torch.float64).tiny)


class NextWordBatches:
    """A mini-batch source of windows (any object with ``n_nodes`` and ``sample``, e.g.
    :class:`~networkedfl.nn.ClientBatches` of ``(n, m, L)`` ids and
    next-word ids) that hands each sampled batch over as next-word distributions of its
    distinct input words (:class:`WordPairCounts`).

    It draws exactly the windows the wrapped source draws (same generator calls), and the
    NPLM's loss (:func:`next_word_cross_entropy`) on its batches equals the loss on the
    windows, so every algorithm runs unchanged and only cheaper.  Valid for the NPLM, whose
    prediction depends on the previous word alone.
    """

    def __init__(self, windows: Any, vocab_size: int) -> None:
        self.windows, self.vocab_size = windows, int(vocab_size)

    @property
    def n_nodes(self) -> int:
        """Number of clients ``n`` of the wrapped windows."""
        return int(self.windows.n_nodes)

    n_clients = renamed("n_nodes", "n_clients")

    @property
    def sample_weights(self) -> Tensor | None:
        """The wrapped windows' sample weights (their precision is the batches'), if any."""
        return getattr(self.windows, "sample_weights", None)

    def sample(self, batch_size: int | None, generator: torch.Generator | None) -> tuple[Tensor, Tensor, Tensor]:
        """``(rows (n, U), distributions (n, U, V), row weights (n, U))`` of one batch."""
        ids, targets, weights = self.windows.sample(batch_size, generator)
        counts = WordPairCounts.from_windows(ids, targets, weights, self.vocab_size)
        return counts.rows, counts.distributions(), counts.row_weights


def client_token_losses(
    model: FlatModel,
    params: Tensor,
    ids: Tensor,
    targets: Tensor,
    weights: Tensor,
    *,
    chunk: int = 256,
) -> Tensor:
    """Mean token cross-entropy of every client's model on its own windows, ``(n,)``.

    ``params`` ``(n, P)``; ``ids``/``targets`` ``(n, m, L)``; ``weights`` ``(n, m)`` (0 on
    padding).  The windows are collapsed to word-pair counts (:class:`WordPairCounts`) and
    processed ``chunk`` distinct input words at a time; the result does not depend on
    ``chunk``.
    """
    with torch.no_grad():  # V: the width of the model's logits
        vocab = int(model.forward(params[0], ids.new_zeros(1, dtype=torch.int64)).shape[-1])
    counts = WordPairCounts.from_windows(ids, targets, weights.to(params.dtype), vocab)
    return counts.losses(model, params, chunk=chunk).to(params.dtype)
