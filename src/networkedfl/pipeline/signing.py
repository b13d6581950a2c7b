"""Keyed signatures of the provenance sidecars: results a reader can trust (issue 45).

A sidecar (``<file>.provenance.json``, :func:`networkedfl.pipeline.provenance.write_sidecar`)
records the size and SHA-256 of its output: it detects corruption (a truncated copy, a
flipped bit, a file edited by mistake), not a deliberate edit, since whoever edits a result
can recompute its digest and rewrite the sidecar.  With a key, each sidecar also carries an
HMAC-SHA256 (RFC 2104, :mod:`hmac`) of its record and of its output's file name, made with
a secret only the people who produce the results hold; an edited result then needs the key
to pass.

The key never lives in the repository: it is read from the environment,

* :data:`KEY_ENV` (``NETWORKEDFL_RESULTS_KEY``): the key itself, or
* :data:`KEY_FILE_ENV` (``NETWORKEDFL_RESULTS_KEY_FILE``): a file holding it (outside the
  checkout; refused inside it, where it would travel with the results it vouches for),

of at least :data:`MIN_KEY_BYTES` bytes.  With a key every sidecar written is signed, and
every sidecar checked (:mod:`networkedfl.pipeline.integrity`: before any job, by every job
for the files it reads, and before a report, the index or the gallery is rendered) must
carry a valid signature; a missing or wrong one names the file.  Without a key nothing is
signed or required, and the sidecars guard against corruption only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["ALGORITHM", "KEY_ENV", "KEY_FILE_ENV", "MIN_KEY_BYTES", "SIGNATURE", "results_key", "sign_record",
           "signature_problem"]

#: The environment variable holding the key itself.
KEY_ENV = "NETWORKEDFL_RESULTS_KEY"
#: The environment variable naming a file that holds the key (its bytes, surrounding
#: whitespace stripped).
KEY_FILE_ENV = "NETWORKEDFL_RESULTS_KEY_FILE"
#: The sidecar's key holding the signature.
SIGNATURE = "signature"
#: The signature's algorithm, as the sidecar records it.
ALGORITHM = "hmac-sha256"
#: The shortest key accepted (128 bits).
MIN_KEY_BYTES = 16


def _checkout_of(path: Path) -> Path | None:
    for candidate in (path.parent, *path.parent.parents):
        if (candidate / "Snakefile").is_file() and (candidate / "workflow").is_dir():
            return candidate
    return None


def results_key(environ: Mapping[str, str] | None = None) -> bytes | None:
    """The key that signs and verifies the sidecars, or ``None`` when neither
    :data:`KEY_ENV` nor :data:`KEY_FILE_ENV` is set.

    Raises
    ------
    ValueError
        Naming the variable: both are set, the key file cannot be read or lies inside a
        checkout of the workflow, or the key is shorter than :data:`MIN_KEY_BYTES` bytes.
    """
    environ = os.environ if environ is None else environ
    key, key_file = environ.get(KEY_ENV), environ.get(KEY_FILE_ENV)
    if key and key_file:
        raise ValueError(f"both {KEY_ENV} and {KEY_FILE_ENV} are set: set one (the key, or the file holding it)")
    if key_file:
        path = Path(key_file).expanduser().resolve()
        checkout = _checkout_of(path)
        if checkout is not None:
            raise ValueError(f"{KEY_FILE_ENV}={key_file}: the key file lies inside the checkout {checkout}, where it "
                             "would be shared with the results it signs; keep it outside (e.g. in ~/.config)")
        try:
            data = path.read_bytes().strip()
        except OSError as exc:
            raise ValueError(f"{KEY_FILE_ENV}={key_file}: the key file cannot be read ({exc})") from exc
        where = f"the key file {key_file} ({KEY_FILE_ENV})"
    elif key:
        data, where = key.encode(), KEY_ENV
    else:
        return None
    if len(data) < MIN_KEY_BYTES:
        raise ValueError(f"{where}: the key has {len(data)} bytes; a results key needs at least {MIN_KEY_BYTES} "
                         "(e.g. `python -c \"import secrets; print(secrets.token_hex(32))\"`)")
    return data


def _mac(output: str | os.PathLike, record: Mapping[str, Any], key: bytes) -> str:
    """HMAC-SHA256 of the output's file name and the record without its signature (JSON,
    keys sorted, no spaces): the file's size and SHA-256 are part of the record."""
    body = {k: v for k, v in record.items() if k != SIGNATURE}
    message = Path(output).name.encode() + b"\0" + json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def sign_record(output: str | os.PathLike, record: Mapping[str, Any], key: bytes) -> dict[str, Any]:
    """``record`` with its :data:`SIGNATURE` (``{"algorithm": "hmac-sha256", "value": ...}``)
    for the sidecar of ``output``."""
    return {**{k: v for k, v in record.items() if k != SIGNATURE},
            SIGNATURE: {"algorithm": ALGORITHM, "value": _mac(output, record, key)}}


def signature_problem(output: str | os.PathLike, record: Mapping[str, Any], key: bytes) -> str | None:
    """What is wrong with the signature of ``output``'s sidecar ``record`` under ``key``
    (``None`` if it verifies): missing, not one this version writes, or not the record's
    (the output or its sidecar edited, or signed with another key)."""
    signature = record.get(SIGNATURE)
    if signature is None:
        return (f"its provenance sidecar is not signed, but {KEY_ENV} or {KEY_FILE_ENV} is set (a result built "
                "without the key, or whose signature was removed)")
    if not isinstance(signature, dict) or signature.get("algorithm") != ALGORITHM \
            or not isinstance(signature.get("value"), str):
        return f"its provenance sidecar's signature is not an {ALGORITHM} signature"
    if not hmac.compare_digest(signature["value"], _mac(output, record, key)):
        return ("its provenance sidecar's signature does not match (the file or its sidecar was edited, or they "
                "were signed with another key)")
    return None
