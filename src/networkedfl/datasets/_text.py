"""Text utilities for the review-corpus experiment: tokeniser, vocabulary, training windows,
and a global word embedding computed from co-occurrence counts.

The chapter (Lu, Xing & Yu, Sec. 10.5.2) initialises the language model's embedding with
100-d GloVe vectors (Pennington et al. 2014) as a "global representation".  GloVe is not
available offline, so :func:`ppmi_svd_embedding` computes a global embedding from the
pooled corpus instead: the truncated SVD of the positive pointwise mutual information
(PPMI) matrix of word co-occurrences in a symmetric window, a count-based method that
Levy, Goldberg & Dagan (TACL 2015, "Improving distributional similarity with lessons
learned from word embeddings") found competitive with GloVe.  :func:`load_glove` reads
real GloVe vectors when a file is available.

Only numpy and scipy are used (imported lazily where heavy); nothing here imports torch.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, repeat
from pathlib import Path

import numpy as np

from ..seeding import Seed, as_rng

__all__ = [
    "EOS",
    "UNK",
    "Vocabulary",
    "build_vocabulary",
    "cooccurrence_matrix",
    "encode_documents",
    "is_punctuation",
    "load_glove",
    "ppmi",
    "ppmi_svd_embedding",
    "ptb_tokenize",
    "tfidf_vectors",
    "token_counts",
    "tokenize",
    "whitespace_tokens",
    "windows",
]

UNK = "<unk>"
EOS = "<eos>"

# ASCII whitespace only: the corpus's token separators (a Windows-1252 byte decoded to a
# Unicode space such as U+00A0 stays inside its token, as in a bytes split).
_WHITESPACE_TOKEN = re.compile(r"[^ \t\n\r\f\v]+")


# --------------------------------------------------------------------------- tokenisation


def whitespace_tokens(text: str) -> list[str]:
    """Tokens separated by ASCII whitespace (what ``bytes.split()`` gives on the raw line).

    The labelled files of the corpus are already tokenised, so this is their tokenisation.
    """
    return _WHITESPACE_TOKEN.findall(text)


def is_punctuation(token: str) -> bool:
    """True if ``token`` has no letter or digit (``.``, ``,``, `````, ``''``, ``--`` ...)."""
    return not any(ch.isalnum() for ch in token)


_PTB_TOKEN = re.compile(
    r"``|''|\.\.\.|--"               # quotes written as in the corpus, ellipsis, dash
    r"|\d+(?:[.,:]\d+)+"             # numbers such as 3.50, 1,000, 10:30
    r"|\w+(?:[-'’]\w+)*"             # words, with inner hyphens and apostrophes
    r"|[^\w\s]"                      # any other single character
)
_CLITIC = re.compile(r"(?i)^(.+?)(n't|'s|'re|'ve|'ll|'d|'m)$")


def ptb_tokenize(text: str) -> list[str]:
    """Split raw text into tokens the way the corpus's labelled files are written.

    An approximation of the Penn-Treebank conventions of the labelled files: punctuation
    is split off (``"`` becomes ````` or ``''``), clitics are separate tokens
    (``don't`` -> ``do n't``, ``larkin's`` -> ``larkin 's``), hyphenated words and
    decimal numbers stay whole.  Used for the unlabelled Amazon files, which hold raw text.
    """
    quoted = re.sub(r'(^|[\s(\[{])"', r"\1 `` ", text)
    quoted = quoted.replace('"', " '' ")
    tokens: list[str] = []
    for token in _PTB_TOKEN.findall(quoted.replace("’", "'")):
        clitic = _CLITIC.match(token)
        if clitic and clitic.group(1) not in ("'", ""):
            tokens.extend([clitic.group(1), clitic.group(2)])
        else:
            tokens.append(token)
    return tokens


def tokenize(
    text: str,
    *,
    lowercase: bool = True,
    split_punctuation: bool = False,
    drop_punctuation: bool = False,
) -> list[str]:
    """Tokens of one document.

    Parameters
    ----------
    text
        A document (one line of the corpus).
    lowercase
        Lowercase every token (the labelled files are mostly lowercase already).
    split_punctuation
        Tokenise raw text with :func:`ptb_tokenize` (for the unlabelled Amazon files);
        ``False``: split on whitespace only (the labelled files are tokenised).
    drop_punctuation
        Remove tokens without a letter or digit.
    """
    if lowercase and not split_punctuation and not drop_punctuation:
        return whitespace_tokens(text.lower())  # the same tokens, lowercased in one call
    tokens = ptb_tokenize(text) if split_punctuation else whitespace_tokens(text)
    if drop_punctuation:
        tokens = [t for t in tokens if not is_punctuation(t)]
    if lowercase:
        tokens = [t.lower() for t in tokens]
    return tokens


# --------------------------------------------------------------------------- vocabulary


def token_counts(documents: Iterable[Sequence[str]]) -> Counter[str]:
    """Occurrences of every token over ``documents`` (lists of tokens)."""
    return Counter(chain.from_iterable(documents))


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """A fixed vocabulary: token ``i`` is ``tokens[i]``; unknown tokens map to ``<unk>``.

    Attributes
    ----------
    tokens
        Special tokens first (``<unk>``, ``<eos>``), then the words by decreasing count
        (ties broken alphabetically, so the vocabulary is deterministic).
    counts
        Count of every entry in the data the vocabulary was built from; for ``<unk>`` the
        occurrences of all words left out by the cap.
    unk
        The token unknown words map to.
    """

    tokens: tuple[str, ...]
    counts: tuple[int, ...]
    unk: str = UNK

    def __post_init__(self) -> None:
        if len(set(self.tokens)) != len(self.tokens):
            raise ValueError("vocabulary tokens must be distinct")
        if len(self.counts) != len(self.tokens):
            raise ValueError("one count per token is needed")
        if self.unk not in self.tokens:
            raise ValueError(f"the unknown token {self.unk!r} must be in the vocabulary")

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: object) -> bool:
        return token in self.index

    @cached_property
    def index(self) -> dict[str, int]:
        """Token -> id."""
        return {t: i for i, t in enumerate(self.tokens)}

    @property
    def unk_id(self) -> int:
        return self.index[self.unk]

    def id(self, token: str) -> int:
        """The id of ``token`` (``<unk>``'s id if it is not in the vocabulary)."""
        return self.index.get(token, self.unk_id)

    def encode(self, tokens: Sequence[str]) -> np.ndarray:
        """``int64`` ids of ``tokens``; words outside the vocabulary become ``<unk>``."""
        return np.fromiter(map(self.index.get, tokens, repeat(self.unk_id)), dtype=np.int64, count=len(tokens))

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.tokens[int(i)] for i in ids]


def build_vocabulary(
    documents: Iterable[Sequence[str]],
    *,
    max_size: int | None = None,
    min_count: int = 1,
    specials: Sequence[str] = (UNK, EOS),
) -> Vocabulary:
    """The ``max_size`` most frequent tokens of ``documents`` plus the special tokens.

    Parameters
    ----------
    documents
        Token lists (e.g. the pooled training documents of all clients).
    max_size
        Number of words kept besides the specials (``None``: every word with at least
        ``min_count`` occurrences).  The chapter uses all words (V = 63,144); the CPU
        profile keeps the 5,000 most frequent.
    min_count
        Words seen fewer times are left out.
    specials
        Tokens placed first; must contain ``<unk>``.  Occurrences of the specials in the
        documents are not counted as words.
    """
    if max_size is not None and max_size < 0:
        raise ValueError(f"max_size must be non-negative, got {max_size}")
    counts = token_counts(documents)
    words = sorted(((c, w) for w, c in counts.items() if c >= min_count and w not in specials),
                   key=lambda cw: (-cw[0], cw[1]))
    kept = words if max_size is None else words[:max_size]
    left_out = sum(c for c, _ in words[len(kept):]) + sum(
        c for w, c in counts.items() if c < min_count and w not in specials)
    special_counts = [left_out if s == UNK else counts.get(s, 0) for s in specials]
    return Vocabulary(tuple(specials) + tuple(w for _, w in kept),
                      tuple(special_counts) + tuple(c for c, _ in kept))


def encode_documents(
    documents: Iterable[Sequence[str]], vocabulary: Vocabulary, *, eos: str | None = EOS
) -> tuple[np.ndarray, np.ndarray]:
    """One stream of ids for ``documents``, each followed by ``eos`` (if not ``None``).

    Returns the ``int64`` ids and, for every position, the index of its document (used
    to keep co-occurrence windows inside documents).
    """
    documents = list(documents)
    end = None if eos is None else vocabulary.index[eos]
    lengths = np.fromiter(map(len, documents), dtype=np.int64, count=len(documents))
    words = vocabulary.encode(list(chain.from_iterable(documents)))  # all documents at once
    if end is None:
        return words, np.repeat(np.arange(len(documents), dtype=np.int64), lengths)
    ids = np.full(len(words) + len(documents), end, dtype=np.int64)  # every document + <eos>
    is_word = np.ones(len(ids), dtype=bool)
    is_word[np.cumsum(lengths + 1) - 1] = False
    ids[is_word] = words
    return ids, np.repeat(np.arange(len(documents), dtype=np.int64), lengths + 1)


def windows(stream: np.ndarray, length: int, *, max_windows: int | None = None) -> np.ndarray:
    """Consecutive, non-overlapping next-word-prediction windows of a token stream.

    Window ``k`` is ``stream[k L : k L + L + 1]`` (``L = length``): its first ``L`` ids are
    the inputs and its last ``L`` the targets, each target the word after its input, as
    the chunks of length ``bptt`` in PyTorch's word-language-model example.  Consecutive
    windows share one id (the last target of one window is the first input of the next).
    The incomplete tail is dropped.

    Returns ``(n_windows, L + 1)`` int64; ``max_windows`` keeps only the first windows.
    """
    if length < 1:
        raise ValueError(f"window length must be positive, got {length}")
    n = max((len(stream) - 1) // length, 0)
    if max_windows is not None:
        n = min(n, int(max_windows))
    starts = np.arange(n)[:, None] * length
    return np.asarray(stream, dtype=np.int64)[starts + np.arange(length + 1)[None, :]]


# --------------------------------------------------------------------------- embedding


#: Up to this many entries (vocabulary size squared) :func:`cooccurrence_matrix` counts into
#: a dense array (one ``bincount`` per distance, 32 MiB at most), beyond it into sparse blocks.
DENSE_COOCCURRENCE_MAX = 2**22


def cooccurrence_matrix(
    ids: np.ndarray,
    documents: np.ndarray,
    vocab_size: int,
    *,
    window: int = 5,
    weighting: str = "uniform",
):
    """Symmetric word-word co-occurrence counts within a window, as a scipy CSR matrix.

    Entry ``(a, b)`` counts the pairs of positions ``p < q`` of the same document with
    ``q - p <= window`` and ids ``{a, b}``, in both orders (so the matrix is symmetric).

    Parameters
    ----------
    ids, documents
        Token ids and their document index (from :func:`encode_documents`).
    vocab_size
        Number of rows and columns.
    window
        Largest distance counted (symmetric window of ``window`` words on each side).
    weighting
        ``"uniform"``: every pair counts 1; ``"harmonic"``: a pair at distance ``k``
        counts ``1/k`` (as in GloVe).
    """
    import scipy.sparse as sp

    if window < 1:
        raise ValueError(f"window must be positive, got {window}")
    if weighting not in ("uniform", "harmonic"):
        raise ValueError(f"weighting must be 'uniform' or 'harmonic', got {weighting!r}")
    ids = np.asarray(ids, dtype=np.int64)
    documents = np.asarray(documents)
    dense = vocab_size * vocab_size <= DENSE_COOCCURRENCE_MAX
    total = np.zeros(vocab_size * vocab_size) if dense else sp.csr_matrix((vocab_size, vocab_size))
    for k in range(1, window + 1):  # over the distances, not over positions
        same = documents[:-k] == documents[k:]
        a, b = ids[:-k][same], ids[k:][same]
        weight = 1.0 if weighting == "uniform" else 1.0 / k
        if dense:  # one pass over the pairs: counts of the flat index a V + b
            counts = np.bincount(a * vocab_size + b, minlength=vocab_size * vocab_size)
            total += weight * counts  # exact for the uniform weight 1
        else:
            block = sp.coo_matrix((np.full(a.shape, weight), (a, b)), shape=(vocab_size, vocab_size)).tocsr()
            total = total + block + block.T
    if dense:
        square = total.reshape(vocab_size, vocab_size)
        return sp.csr_matrix(square + square.T)
    total.sum_duplicates()
    return total.tocsr()


def ppmi(cooccurrence, *, alpha: float = 0.75):
    """Positive pointwise mutual information of a co-occurrence matrix (CSR in, CSR out).

    ``PPMI(w, c) = max(0, log( P(w, c) / (P(w) P_alpha(c)) ))`` with ``P(w, c) = #(w, c) /
    N``, ``P(w) = #(w) / N`` and the context distribution smoothed with exponent
    ``alpha``, ``P_alpha(c) = #(c)^alpha / sum_c' #(c')^alpha`` (Levy, Goldberg & Dagan
    2015; ``alpha = 1`` is plain PPMI).  Only stored (non-zero) counts are evaluated.
    """
    import scipy.sparse as sp

    m = sp.csr_matrix(cooccurrence, dtype=np.float64, copy=True)
    m.eliminate_zeros()
    total = m.sum()
    if total <= 0:
        return m
    rows = np.asarray(m.sum(axis=1)).ravel()
    cols = np.asarray(m.sum(axis=0)).ravel() ** alpha
    cols = cols / cols.sum()
    coo = m.tocoo()
    pmi = np.log(coo.data / total) - np.log(rows[coo.row] / total) - np.log(cols[coo.col])
    keep = pmi > 0
    return sp.csr_matrix((pmi[keep], (coo.row[keep], coo.col[keep])), shape=m.shape)


def ppmi_svd_embedding(
    ids: np.ndarray,
    documents: np.ndarray,
    vocab_size: int,
    *,
    dim: int = 100,
    window: int = 5,
    alpha: float = 0.75,
    weighting: str = "uniform",
    seed: Seed = None,
) -> np.ndarray:
    """A global word embedding: truncated SVD of the PPMI co-occurrence matrix.

    With ``PPMI = U S V^T`` truncated to the ``dim`` largest singular values, word ``w``
    gets the row ``U_w S^{1/2}`` (the symmetric weighting of Levy et al. 2015), scaled to
    unit Euclidean norm.  Words that never co-occur get a zero row.  The substitute for
    the chapter's GloVe initialisation (see the module docstring).

    Parameters
    ----------
    ids, documents
        The pooled corpus as from :func:`encode_documents`.
    vocab_size, dim
        Rows and columns of the result; ``dim`` is cut to ``vocab_size - 1`` if larger
        (columns beyond the rank are zero).
    window, alpha, weighting
        See :func:`cooccurrence_matrix` and :func:`ppmi`.
    seed
        Draws the ARPACK start vector (the result is deterministic given it).

    Returns
    -------
    numpy.ndarray
        ``(vocab_size, dim)`` float64; the sign of every column is fixed so that its
        largest-magnitude entry is positive.
    """
    rng = as_rng(seed)
    from scipy.sparse.linalg import svds

    matrix = ppmi(cooccurrence_matrix(ids, documents, vocab_size, window=window,
                                      weighting=weighting), alpha=alpha)
    rank = min(dim, vocab_size - 1)
    if vocab_size <= 500 or rank < 1:
        u, s, _ = np.linalg.svd(matrix.toarray())
        u, s = u[:, :rank], s[:rank]
    else:
        v0 = rng.standard_normal(vocab_size)
        u, s, _ = svds(matrix, k=rank, v0=v0, solver="arpack")
        order = np.argsort(-s)
        u, s = u[:, order], s[order]
    signs = np.sign(u[np.argmax(np.abs(u), axis=0), np.arange(u.shape[1])])
    vectors = u * np.where(signs == 0, 1.0, signs) * np.sqrt(np.maximum(s, 0.0))
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    out = np.zeros((vocab_size, dim))
    out[:, :rank] = vectors
    return out


def load_glove(
    path: str | os.PathLike,
    vocabulary: Vocabulary,
    *,
    dim: int,
    seed: Seed = None,
    missing_scale: float = 0.1,
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of real GloVe vectors (text format ``word v_1 ... v_dim``) for a vocabulary.

    Words are matched as they are, then lowercased.  Words missing from the file (and the
    special tokens) start from small random vectors ``N(0, missing_scale^2)``.

    Returns the ``(len(vocabulary), dim)`` matrix and a boolean mask of the words found.
    """
    rng = as_rng(seed)
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no GloVe file {path} (set embedding.glove_path to a "
                                "text file of 'word v_1 ... v_d' lines, or leave it empty)")
    matrix = rng.standard_normal((len(vocabulary), dim)) * missing_scale
    found = np.zeros(len(vocabulary), dtype=bool)
    index = vocabulary.index
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split(" ")
            word, values = parts[0], parts[1:]
            row = index.get(word, index.get(word.lower()))
            if row is None or found[row]:
                continue
            if len(values) != dim:
                raise ValueError(f"{path}, line {number}: {len(values)} values, expected {dim}")
            matrix[row] = np.asarray(values, dtype=np.float64)
            found[row] = True
    return matrix, found


def tfidf_vectors(counts: np.ndarray) -> np.ndarray:
    """TF-IDF rows (unit Euclidean norm) of a ``(n_documents, n_terms)`` count matrix.

    ``tf`` is the raw count, ``idf(t) = log((1 + n) / (1 + df(t))) + 1`` (smoothed, as in
    scikit-learn's ``TfidfTransformer``).  Cosine similarities of the rows are their dot
    products.
    """
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.shape[0]
    df = (counts > 0).sum(axis=0)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    tfidf = counts * idf[None, :]
    norms = np.linalg.norm(tfidf, axis=1, keepdims=True)
    return np.divide(tfidf, norms, out=np.zeros_like(tfidf), where=norms > 0)
