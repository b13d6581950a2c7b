"""Reader of the 16-domain review corpus (FDU-MTL, Liu, Qiu & Huang 2017) and Table 10.2.

The corpus (``data/vendored/reviews/README.md``; fetched by the pipeline's
``download_reviews`` rule into ``data/raw/reviews/``) holds three files per domain:

* ``<domain>.task.train`` and ``<domain>.task.test``: one review per line, written as
  ``label<TAB>text`` with the label ``0`` (negative) or ``1`` (positive) and the text
  already tokenised (space-separated, punctuation split off, mostly lowercased);
* ``<domain>.task.unlabel``: one review per line, **no label and no tab**; raw text with
  case kept for the 14 Amazon domains, tokenised and lowercased for ``imdb`` and ``MR``.

Encodings.  Most lines are ASCII or UTF-8, but four files are not valid UTF-8: the three
``MR`` files hold Windows-1252 bytes (``\\x96`` en dash, ``\\x97`` em dash, ``\\x85``
ellipsis, ``\\xe9`` é, ...) and ``dvd.task.train`` is UTF-8 with a few truncated
sequences.  :func:`decode_review_line` decodes every line as UTF-8 and decodes only the
bytes that are not valid UTF-8 as Windows-1252, so valid UTF-8 is never mangled.  Lines
are split on ``\\n`` bytes only (never on Unicode line separators such as ``\\x85``).

The chapter's Table 10.2 (Lu, Xing & Yu, Sec. 10.5.2) is :data:`PUBLISHED_TABLE_10_2`;
:func:`domain_statistics` recomputes its columns from the files.
"""

from __future__ import annotations

import codecs
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._text import is_punctuation, tokenize, whitespace_tokens
from .verify import check_raw_file

__all__ = [
    "DOMAINS",
    "LABELLED_SPLITS",
    "PUBLISHED_TABLE_10_2",
    "PUBLISHED_TOTAL_WORDS",
    "SPLITS",
    "DomainStatistics",
    "PublishedStatistics",
    "ReviewFile",
    "decode_review_line",
    "domain_statistics",
    "read_domain",
    "read_review_file",
    "review_filename",
    "review_files",
]

#: The 16 domains (file-name stems) in the row order of the chapter's Table 10.2.
DOMAINS: tuple[str, ...] = (
    "books", "electronics", "dvd", "kitchen_housewares", "apparel", "camera_photo",
    "health_personal_care", "music", "toys_games", "video", "baby", "magazines", "software",
    "sports_outdoors", "imdb", "MR",
)
SPLITS: tuple[str, ...] = ("train", "test", "unlabel")
LABELLED_SPLITS: tuple[str, ...] = ("train", "test")


@dataclass(frozen=True)
class PublishedStatistics:
    """One row of the chapter's Table 10.2, verbatim."""

    dataset: str
    sentences: int
    avg_length: int
    unique_words: int


#: Table 10.2 of the chapter ("Statistics of multi-domain datasets"), by domain, verbatim
#: (including the misspelt "IMDN"); the last column reads "<unique>/63,144" in every row.
PUBLISHED_TABLE_10_2: dict[str, PublishedStatistics] = {
    "books": PublishedStatistics("Books", 2000, 159, 19013),
    "electronics": PublishedStatistics("Electronics", 1998, 101, 8799),
    "dvd": PublishedStatistics("DVD", 2000, 173, 20308),
    "kitchen_housewares": PublishedStatistics("Kitchen", 2000, 89, 9188),
    "apparel": PublishedStatistics("Apparel", 2000, 57, 6655),
    "camera_photo": PublishedStatistics("Camera", 1997, 130, 7657),
    "health_personal_care": PublishedStatistics("Health", 2000, 81, 8721),
    "music": PublishedStatistics("Music", 2000, 136, 16459),
    "toys_games": PublishedStatistics("Toys", 2000, 90, 8341),
    "video": PublishedStatistics("Video", 2000, 156, 18437),
    "baby": PublishedStatistics("Baby", 1900, 104, 8424),
    "magazines": PublishedStatistics("Magazine", 1970, 117, 11552),
    "software": PublishedStatistics("Software", 1915, 129, 5788),
    "sports_outdoors": PublishedStatistics("Sports", 2000, 94, 9816),
    "imdb": PublishedStatistics("IMDN", 2000, 269, 25195),
    "MR": PublishedStatistics("MR", 2000, 21, 7315),
}
#: The "Total words" of Table 10.2 (and the chapter's vocabulary size V).
PUBLISHED_TOTAL_WORDS = 63144


# --------------------------------------------------------------------------- decoding

_FALLBACK = "networkedfl-cp1252-fallback"


def _cp1252_fallback(error: UnicodeError) -> tuple[str, int]:
    """Codec error handler: decode the offending bytes as Windows-1252 (undefined bytes
    such as ``\\x81`` become U+FFFD)."""
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return error.object[error.start:error.end].decode("cp1252", errors="replace"), error.end


codecs.register_error(_FALLBACK, _cp1252_fallback)


def decode_review_line(raw: bytes) -> tuple[str, bool]:
    """Decode one line of the corpus; return the text and whether a fallback was needed.

    The line is decoded as UTF-8; bytes that do not form valid UTF-8 are decoded as
    Windows-1252 (the ``MR`` files are Windows-1252 throughout; ``dvd.task.train`` has a
    few truncated UTF-8 sequences).  No byte is dropped: whitespace positions, and hence
    the whitespace tokens, are those of the raw bytes.
    """
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors=_FALLBACK), True


# --------------------------------------------------------------------------- files


def review_filename(domain: str, split: str) -> str:
    """``<domain>.task.<split>``, the corpus's own file name."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    return f"{domain}.task.{split}"


def review_files(domains: Sequence[str] = DOMAINS, splits: Sequence[str] = LABELLED_SPLITS) -> list[str]:
    """File names of ``domains`` x ``splits`` (domain-major order)."""
    unknown = sorted(set(domains) - set(DOMAINS))
    if unknown:
        raise ValueError(f"unknown review domains {unknown}; known: {', '.join(DOMAINS)}")
    return [review_filename(d, s) for d in domains for s in splits]


@dataclass(frozen=True, eq=False)
class ReviewFile:
    """The documents of one corpus file.

    Attributes
    ----------
    domain, split
        From the file name ``<domain>.task.<split>``.
    texts
        One string per document (line), in file order.
    labels
        ``int8`` array of 0/1 sentiment labels (``train``/``test``), or ``None`` for the
        unlabelled files.
    fallback_lines
        Indices of the lines that were not valid UTF-8 (decoded with the Windows-1252
        fallback of :func:`decode_review_line`).
    """

    domain: str
    split: str
    texts: tuple[str, ...]
    labels: np.ndarray | None
    fallback_lines: tuple[int, ...]

    @property
    def n_documents(self) -> int:
        return len(self.texts)

    @property
    def labelled(self) -> bool:
        return self.labels is not None

    def tokens(self, **options) -> list[list[str]]:
        """Tokens of every document with :func:`networkedfl.datasets.tokenize` (``options``
        are passed on; the unlabelled Amazon files need ``split_punctuation=True`` to be
        tokenised like the labelled ones)."""
        return [tokenize(t, **options) for t in self.texts]


def _split_of(path: Path) -> tuple[str, str]:
    stem, dot, split = path.name.rpartition(".")
    domain, _, task = stem.rpartition(".")
    if not dot or task != "task" or split not in SPLITS or not domain:
        raise ValueError(
            f"{path.name!r} is not a corpus file name <domain>.task.<split> with split in {SPLITS}"
        )
    return domain, split


def read_review_file(path: str | os.PathLike) -> ReviewFile:
    """Read one corpus file; its format (labelled or not) follows from its name.

    Parameters
    ----------
    path
        ``.../<domain>.task.train``, ``...test`` (``label<TAB>text`` lines) or
        ``...unlabel`` (text lines without label or tab).

    Raises
    ------
    ValueError
        For a file name outside the corpus's scheme, or a labelled line without a tab or
        with a label other than 0 or 1 (the message gives the file and line number).
    FileNotFoundError
        If the file does not exist (e.g. the download rule has not run).
    ChecksumError
        If the file lies where the download rule places it (``.../raw/reviews/``) but no
        longer has the checksum of the verified download
        (:func:`networkedfl.datasets.verify.check_raw_file`).
    """
    path = Path(path)
    domain, split = _split_of(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no corpus file {path} (the pipeline's download_reviews rule fetches the corpus "
            "into data/raw/reviews/)")
    check_raw_file(path)  # a downloaded file (data/raw/reviews/): still the verified copy?
    lines = path.read_bytes().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the final newline ends the last line
    texts: list[str] = []
    labels: list[int] = []
    fallback: list[int] = []
    labelled = split != "unlabel"
    for number, raw in enumerate(lines):
        raw = raw.removesuffix(b"\r")
        if labelled:
            label, tab, body = raw.partition(b"\t")
            if not tab or label not in (b"0", b"1"):
                raise ValueError(
                    f"{path}, line {number + 1}: expected 'label<TAB>text' with label 0 or 1, "
                    f"got {raw[:40]!r}")
            labels.append(int(label))
        else:
            body = raw
        text, fell_back = decode_review_line(body)
        if fell_back:
            fallback.append(number)
        texts.append(text)
    return ReviewFile(
        domain=domain,
        split=split,
        texts=tuple(texts),
        labels=np.asarray(labels, dtype=np.int8) if labelled else None,
        fallback_lines=tuple(fallback),
    )


def read_domain(
    files: Mapping[str, str | os.PathLike] | Iterable[str | os.PathLike] | str | os.PathLike,
    domain: str,
    splits: Sequence[str] = LABELLED_SPLITS,
) -> dict[str, ReviewFile]:
    """The files ``splits`` of one ``domain``, by split.

    ``files`` is a directory holding the corpus, or a collection of file paths (as the
    pipeline passes them) in which the domain's files are looked up by name.
    """
    if isinstance(files, str | os.PathLike):
        lookup = {review_filename(domain, s): Path(files) / review_filename(domain, s) for s in splits}
    else:
        paths = files.values() if isinstance(files, Mapping) else files
        by_name = {Path(p).name: Path(p) for p in paths}
        lookup = {}
        for s in splits:
            name = review_filename(domain, s)
            if name not in by_name:
                raise FileNotFoundError(f"{name} is not among the given corpus files")
            lookup[name] = by_name[name]
    return {s: read_review_file(lookup[review_filename(domain, s)]) for s in splits}


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class DomainStatistics:
    """Statistics of one domain's labelled documents (train + test), recomputed.

    Attributes
    ----------
    documents
        Number of documents (lines) in train + test: Table 10.2's "Sentences".
    avg_length
        Mean number of whitespace tokens per document.
    avg_length_words
        The same without tokens made only of punctuation.
    unique_words
        Distinct whitespace tokens, case kept.
    unique_words_normalised
        Distinct tokens after lowercasing and dropping punctuation-only tokens.
    positive, train_documents, test_documents, fallback_lines
        Positive labels, documents per split, lines needing the Windows-1252 fallback.
    """

    documents: int
    avg_length: float
    avg_length_words: float
    unique_words: int
    unique_words_normalised: int
    positive: int
    train_documents: int
    test_documents: int
    fallback_lines: int


def domain_statistics(files: Sequence[ReviewFile]) -> tuple[DomainStatistics, set[str]]:
    """Table 10.2's columns for the labelled ``files`` of one domain (train and test).

    Returns the statistics and the set of distinct whitespace tokens (for the union over
    domains, the table's "Total words").
    """
    if not files or any(not f.labelled for f in files):
        raise ValueError("domain_statistics needs the labelled (train/test) files of a domain")
    counts: Counter[str] = Counter()
    n_docs = 0
    for f in files:
        for text in f.texts:
            counts.update(whitespace_tokens(text))
            n_docs += 1
    n_tokens = sum(counts.values())
    words = {t: c for t, c in counts.items() if not is_punctuation(t)}
    n_words = sum(words.values())
    vocabulary = set(counts)
    normalised = {w.lower() for w in words}
    by_split = {f.split: f.n_documents for f in files}
    stats = DomainStatistics(
        documents=n_docs,
        avg_length=n_tokens / n_docs,
        avg_length_words=n_words / n_docs,
        unique_words=len(vocabulary),
        unique_words_normalised=len(normalised),
        positive=int(sum(int(f.labels.sum()) for f in files)),
        train_documents=by_split.get("train", 0),
        test_documents=by_split.get("test", 0),
        fallback_lines=sum(len(f.fallback_lines) for f in files),
    )
    return stats, vocabulary
