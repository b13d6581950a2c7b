"""The chapter's lower-level model for next-word prediction: Bengio's neural probabilistic
language model (NPLM) as a function of one flat parameter vector.

Lu, Xing & Yu, Sec. 10.5.2: "the embedding layer (i.e., a big lookup table) is with a
dimension of 63144 x 100, a fully-connected hidden layer is with a dimension of 100 x 200
followed by a tanh function, and a decoder layer has a size of 200 x 63144.  The length of
the sliding window for the next word prediction task is 35 and the batch size is 100."
With these shapes the hidden layer reads one 100-d embedding, so every position ``p`` of a
window predicts the word at ``p + 1`` from the word at ``p`` (EXPERIMENTS.md, [inferred])::

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
multiply into their gradients (:mod:`networkedfl.algorithms.client_batches`), and
:meth:`NPLMLayout.zero_absent_rows` the matching per-client starting models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch.func import vmap

from .models import FlatModel, cross_entropy, require_generator

__all__ = ["NPLMLayout", "client_token_losses", "nplm", "window_cross_entropy"]


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


def nplm(
    layout: NPLMLayout,
    *,
    embedding: np.ndarray | Tensor | None = None,
    embedding_std: float = 0.1,
) -> FlatModel:
    """The NPLM of the chapter as a :class:`~networkedfl.models.FlatModel`.

    ``forward(params, ids (m, L))`` returns the logits ``(m, L, V)`` of the next word at
    every position; the sample loss is :func:`window_cross_entropy` against the ``(m, L)``
    next-word ids.  Ids may be given as integers or as exact floats.

    Parameters
    ----------
    layout
        The sizes ``V``, ``d``, ``h``.
    embedding
        Initial lookup table ``(V, d)`` (the global embedding: GloVe in the chapter, see
        :func:`networkedfl.text.ppmi_svd_embedding`); ``None``: ``N(0, embedding_std^2)``
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
    return FlatModel(layout.n_params, forward, window_cross_entropy, init, name)


def client_token_losses(
    model: FlatModel,
    params: Tensor,
    ids: Tensor,
    targets: Tensor,
    weights: Tensor,
    *,
    chunk: int = 16,
) -> Tensor:
    """Mean token cross-entropy of every client's model on its own windows, ``(n,)``.

    ``params`` ``(n, P)``; ``ids``/``targets`` ``(n, m, L)``; ``weights`` ``(n, m)`` (0 on
    padding).  Windows are processed ``chunk`` at a time (the logits of a chunk take
    ``n * chunk * L * V`` floats), and the chunk means are combined with their weights, so
    the result does not depend on ``chunk``.
    """
    n, m = weights.shape
    total = torch.zeros(n, dtype=params.dtype, device=params.device)
    mass = torch.zeros(n, dtype=params.dtype, device=params.device)
    batched = vmap(model.loss)
    with torch.no_grad():
        for start in range(0, m, chunk):
            block = slice(start, start + chunk)
            w = weights[:, block].to(params.dtype)
            total = total + batched(params, ids[:, block], targets[:, block], w) * w.sum(dim=1)
            mass = mass + w.sum(dim=1)
    return total / mass.clamp_min(torch.finfo(params.dtype).tiny)
