"""MNIST: a reader for the IDX files of the original distribution (no torchvision).

The IDX format (LeCun et al., http://yann.lecun.com/exdb/mnist/) is a header followed by
the raw array in C order::

    bytes 0-1   0x0000
    byte  2     element type (0x08 unsigned byte, 0x09 signed byte, 0x0B int16,
                0x0C int32, 0x0D float32, 0x0E float64)
    byte  3     number of dimensions k
    4k bytes    the k dimension sizes, big-endian uint32
    ...         the elements, big-endian

The MNIST files are gzip-compressed IDX files: ``*-images-idx3-ubyte.gz`` (magic
``0x00000803``: ``(N, 28, 28)`` unsigned bytes) and ``*-labels-idx1-ubyte.gz`` (magic
``0x00000801``: ``(N,)`` unsigned bytes).  :func:`read_idx` checks the header and the
length of the payload and names the file in every error.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .verify import check_raw_file

__all__ = [
    "MNIST_FILES",
    "IdxError",
    "MnistSplit",
    "load_mnist",
    "mnist_paths",
    "read_idx",
]

#: The four files of the original distribution, by (split, part).
MNIST_FILES: dict[tuple[str, str], str] = {
    ("train", "images"): "train-images-idx3-ubyte.gz",
    ("train", "labels"): "train-labels-idx1-ubyte.gz",
    ("test", "images"): "t10k-images-idx3-ubyte.gz",
    ("test", "labels"): "t10k-labels-idx1-ubyte.gz",
}

#: IDX element type codes and their big-endian numpy dtypes.
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


class IdxError(ValueError):
    """An IDX file is malformed (bad magic number, truncated or over-long payload)."""


def _open(path: Path):
    with open(path, "rb") as fh:
        gzipped = fh.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")  # noqa: SIM115


def read_idx(
    path: str | os.PathLike,
    *,
    expected_ndim: int | None = None,
    expected_shape: Sequence[int | None] | None = None,
) -> np.ndarray:
    """Read one IDX file (gzip-compressed or not) into a native-endian array.

    Parameters
    ----------
    path
        The file; gzip compression is detected from its first two bytes.
    expected_ndim
        If given, the number of dimensions the header must declare (3 for MNIST images,
        1 for labels).
    expected_shape
        If given, sizes the header must declare (``None`` entries are not checked), e.g.
        ``(None, 28, 28)``.

    Raises
    ------
    IdxError
        On a bad magic number, an unknown element type, a header that does not match the
        expectations, a truncated header or payload, trailing bytes, or a corrupt gzip
        stream; the message names the file.
    FileNotFoundError
        If the file does not exist.
    ChecksumError
        If the file lies where the download rule places it (``.../raw/mnist/``) but no
        longer has the checksum of the verified download
        (:func:`networkedfl.datasets.verify.check_raw_file`).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"IDX file not found: {path}")
    check_raw_file(path)  # a downloaded file (data/raw/mnist/): still the verified copy?
    try:
        with _open(path) as fh:
            raw = fh.read()
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise IdxError(f"{path}: cannot decompress ({type(exc).__name__}: {exc})") from None
    if len(raw) < 4:
        raise IdxError(f"{path}: truncated header ({len(raw)} bytes, need at least 4)")
    if raw[0] != 0 or raw[1] != 0:
        raise IdxError(
            f"{path}: bad magic number 0x{raw[:4].hex()} (an IDX file starts with two zero "
            "bytes, then the type code and the number of dimensions)"
        )
    code, ndim = raw[2], raw[3]
    if code not in IDX_DTYPES:
        raise IdxError(f"{path}: unknown IDX element type 0x{code:02x} (magic 0x{raw[:4].hex()})")
    if ndim == 0:
        raise IdxError(f"{path}: magic 0x{raw[:4].hex()} declares 0 dimensions")
    if expected_ndim is not None and ndim != expected_ndim:
        raise IdxError(
            f"{path}: magic 0x{raw[:4].hex()} declares {ndim} dimension(s), expected {expected_ndim}"
        )
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise IdxError(f"{path}: truncated header ({len(raw)} bytes, need {header} for {ndim} dims)")
    shape = tuple(int(s) for s in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    if expected_shape is not None:
        if len(expected_shape) != ndim or any(
            e is not None and e != s for e, s in zip(expected_shape, shape, strict=True)
        ):
            raise IdxError(f"{path}: header declares shape {shape}, expected {tuple(expected_shape)}")
    dtype = IDX_DTYPES[code]
    need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    have = len(raw) - header
    if have < need:
        raise IdxError(
            f"{path}: truncated payload: {have} bytes after the header, shape {shape} needs {need}"
        )
    if have > need:
        raise IdxError(f"{path}: {have - need} unexpected trailing bytes after the {shape} payload")
    data = np.frombuffer(raw, dtype, offset=header).reshape(shape)
    return data.astype(dtype.newbyteorder("="), copy=True)


@dataclass(frozen=True)
class MnistSplit:
    """Images ``(N, 28, 28)`` uint8 (0-255) and labels ``(N,)`` uint8 of one split."""

    images: np.ndarray
    labels: np.ndarray

    def __post_init__(self) -> None:
        if self.images.shape[0] != self.labels.shape[0]:
            raise ValueError(
                f"{self.images.shape[0]} images but {self.labels.shape[0]} labels"
            )

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def features(self, dtype: np.dtype | type = np.float32) -> np.ndarray:
        """Flattened images scaled to ``[0, 1]`` (pixels / 255), shape ``(N, 784)``."""
        flat = self.images.reshape(len(self), -1).astype(dtype)
        flat /= np.asarray(255.0, dtype=flat.dtype)
        return flat


def mnist_paths(source: str | os.PathLike | Mapping[str, str | os.PathLike] | Sequence[str | os.PathLike],
                split: str) -> tuple[Path, Path]:
    """The (images, labels) files of ``split`` from a directory, a mapping or a list of paths.

    A directory must hold the original file names; a mapping is keyed by file name (or by
    ``"<split>_images"`` / ``"<split>_labels"``); a list is searched for the file names.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    names = (MNIST_FILES[(split, "images")], MNIST_FILES[(split, "labels")])
    if isinstance(source, str | os.PathLike):
        directory = Path(source)
        if not directory.is_dir():
            raise FileNotFoundError(f"MNIST directory not found: {directory}")
        return directory / names[0], directory / names[1]
    if isinstance(source, Mapping):
        found = []
        for part, name in zip(("images", "labels"), names, strict=True):
            key = name if name in source else f"{split}_{part}"
            if key not in source:
                raise KeyError(f"no MNIST {split} {part} file ({name}) among {sorted(source)}")
            found.append(Path(source[key]))
        return found[0], found[1]
    by_name = {Path(p).name: Path(p) for p in source}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise FileNotFoundError(f"MNIST files {missing} not among the given paths {sorted(by_name)}")
    return by_name[names[0]], by_name[names[1]]


def load_mnist(
    source: str | os.PathLike | Mapping[str, str | os.PathLike] | Sequence[str | os.PathLike],
    split: str = "train",
) -> MnistSplit:
    """Load one split of MNIST from the four original gzip files.

    Parameters
    ----------
    source
        The directory holding the files (e.g. ``data/raw/mnist``), or the paths as a list
        (the pipeline's ``inputs["mnist"]``) or a mapping from file name to path.
    split
        ``"train"`` (60,000 images) or ``"test"`` (10,000).
    """
    images_path, labels_path = mnist_paths(source, split)
    images = read_idx(images_path, expected_ndim=3, expected_shape=(None, 28, 28))
    labels = read_idx(labels_path, expected_ndim=1)
    if images.dtype != np.uint8 or labels.dtype != np.uint8:
        raise IdxError(f"{images_path}, {labels_path}: MNIST files hold unsigned bytes")
    if images.shape[0] != labels.shape[0]:
        raise IdxError(
            f"{images_path} holds {images.shape[0]} images but {labels_path} "
            f"{labels.shape[0]} labels"
        )
    if labels.size and labels.max() > 9:
        raise IdxError(f"{labels_path}: labels must be digits 0-9, found {int(labels.max())}")
    return MnistSplit(images, labels)
