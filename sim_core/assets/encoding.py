"""Byte-exact encodings: JSON text with exact decimals, the manifest's canonical form, and GLB writing.

The standard ``json`` module cannot write ``Decimal`` exactly and sorts nothing by default; a bake must
reproduce an author's declarations digit for digit, and a manifest digest must not depend on dict order,
so both go through this one small serializer.
"""

from __future__ import annotations

import hashlib
import json
import struct
from decimal import Decimal
from typing import Any

from sim_core.assets.container import CHUNK_BIN, CHUNK_JSON, GLB_MAGIC


def _number(value: Decimal) -> str:
    text = str(value)
    return text if "E" not in text and "e" not in text else format(value, "E")


def dumps(value: Any, *, sort_keys: bool = False) -> str:
    """Compact JSON; ``Decimal`` written exactly, ``float`` as its shortest round-trip repr.

    Raises ``ValueError`` for a non-finite float and ``TypeError`` for a value JSON has no form for (a
    non-string key, any other type): both are a caller's bug, the reader never produces them."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return _number(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("non-finite float cannot be encoded")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=True)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v, sort_keys=sort_keys) for v in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value) if sort_keys else list(value)
        for k in keys:
            if not isinstance(k, str):
                raise TypeError(f"JSON object keys must be strings, got {k!r}")
        return "{" + ",".join(json.dumps(k, ensure_ascii=True) + ":" + dumps(value[k], sort_keys=sort_keys) for k in keys) + "}"
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def _check_integral(value: Any, path: str) -> None:
    if isinstance(value, (float, Decimal)):
        raise TypeError(f"manifest field {path} is not an integer ({value!r}); the manifest holds integers only")
    if isinstance(value, dict):
        for k, v in value.items():
            _check_integral(v, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_integral(v, f"{path}[{i}]")


def canonical_manifest_bytes(manifest: dict[str, Any]) -> bytes:
    """Canonical encoding: JSON, keys sorted, no whitespace, ASCII only, integers/strings/bools/null only.

    Raises ``TypeError`` naming the field when the manifest holds a float or a decimal (a bug of the bake)."""
    _check_integral(manifest, "$")
    return dumps(manifest, sort_keys=True).encode("ascii")


def manifest_digest(manifest: dict[str, Any]) -> str:
    """SHA-256 hex of the manifest's canonical encoding: what a baked asset embeds and admission checks."""
    return hashlib.sha256(canonical_manifest_bytes(manifest)).hexdigest()


def write_glb(doc: dict[str, Any], bin_chunk: bytes) -> bytes:
    """A GLB 2.0 container: JSON chunk padded with spaces, BIN chunk (if any) padded with zeros."""
    text = dumps(doc).encode("utf-8")
    text += b" " * (-len(text) % 4)
    chunks = struct.pack("<II", len(text), CHUNK_JSON) + text
    if bin_chunk:
        padded = bin_chunk + b"\0" * (-len(bin_chunk) % 4)
        chunks += struct.pack("<II", len(padded), CHUNK_BIN) + padded
    return GLB_MAGIC + struct.pack("<II", 2, 12 + len(chunks)) + chunks
