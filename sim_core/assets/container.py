"""The GLB container and its JSON chunk, checked against every cap before any heavy work.

Order matters: file size first (no allocation beyond the bytes we were handed), then header and chunk
bounds, then the JSON chunk size, then JSON parsing (numbers as ``Decimal`` so author values stay exact),
then one walk of the document for depth, node/primitive counts, non-finite numbers and URIs.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sim_core.assets import constants as C
from sim_core.assets.findings import reject

GLB_MAGIC = b"glTF"
CHUNK_JSON = 0x4E4F534A
CHUNK_BIN = 0x004E4942
_HEADER_BYTES = 12  # magic, container version, total length
_FLOAT_MAX = Decimal("1.7976931348623157e308")


@dataclass(frozen=True, slots=True)
class GlbContainer:
    """A GLB split into its chunks: the JSON text, the document parsed from it (numbers as int or
    ``Decimal``) and the BIN chunk (empty when there is none)."""

    json_text: str
    doc: dict[str, Any]  # JSON with numbers as int / Decimal
    bin_chunk: bytes


def _reject_constant(name: str) -> Any:
    raise reject("non-finite-number", f"the glTF JSON contains {name}; every number must be finite")


def _parse_int(text: str) -> int:
    """Integers as Python ints, refusing before conversion any too long for a glTF field (Python's
    own refusal past 4300 digits reads as advice to a programmer, and the conversion is quadratic)."""
    digits = len(text) - text.startswith("-")
    if digits > _MAX_INT_DIGITS:
        raise reject("non-finite-number",
                     f"the glTF JSON holds an integer of {digits} digits; no glTF field takes one beyond 2^63")
    return int(text)


def _parse_json(raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise reject("json-invalid", "the JSON chunk is not valid UTF-8") from None
    try:
        doc = json.loads(text, parse_float=Decimal, parse_int=_parse_int, parse_constant=_reject_constant)
    except RecursionError:  # far past _MAX_JSON_DEPTH, wherever it is: the walk below names the place otherwise
        raise reject("json-too-deep", f"the glTF JSON nests deeper than {_MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise reject("json-invalid", f"the JSON chunk does not parse: {exc}") from None
    if not isinstance(doc, dict):
        raise reject("json-invalid", "the JSON chunk must hold an object")
    return doc


_MAX_JSON_DEPTH = 32  # glTF itself nests about 6 deep; extras/extensions add at most 8
_MAX_INT_DIGITS = 19  # 2^63 has 19 digits
_PATH_KEY_CHARS = 40


def _check_number(value: Decimal, path: str) -> None:
    """Finite and within a double, judged without arithmetic: ``abs()`` or any rounding of a value such
    as ``1e999999999999`` would overflow the decimal context, so compare its exponent first."""
    if not value.is_finite() or (value and value.adjusted() > _FLOAT_MAX.adjusted()) or value.copy_abs() > _FLOAT_MAX:
        raise reject("non-finite-number", f"{path} holds a number that is not a finite double")


def _check_text(text: str, path: str) -> None:
    """JSON may escape half of a UTF-16 pair (``"\\ud800"``); that is not Unicode text, and no glTF
    string (a name, a key, an author's value) may hold it."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise reject("json-invalid", f"{path} holds a lone UTF-16 surrogate escape, which is not Unicode text") from None


def json_path(path: str, key: object) -> str:
    """``$.nodes.3.extras.key``: where a value sits, for a message (an author's long key is cut)."""
    text = str(key)
    return f"{path}.{text if len(text) <= _PATH_KEY_CHARS else text[:_PATH_KEY_CHARS - 1] + '…'}"


def _check_value(value: Any, depth: int, in_extras: bool, path: str, absolute: int = 0) -> None:
    """Depth of extras/extensions, finiteness of every number, real text in every string; recursion
    bounded by the depth caps."""
    if isinstance(value, Decimal):
        _check_number(value, path)
        return
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**63:
        raise reject("non-finite-number", f"{path} holds an integer too large for any glTF field")
    if isinstance(value, str):
        _check_text(value, path)
        return
    if not isinstance(value, (dict, list)):
        return
    if absolute > _MAX_JSON_DEPTH:
        raise reject("json-too-deep", f"{path} nests deeper than {_MAX_JSON_DEPTH} levels")
    if in_extras and depth > C.MAX_EXTRAS_DEPTH:
        raise reject("extras-too-deep", f"{path} nests deeper than {C.MAX_EXTRAS_DEPTH} levels")
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        if isinstance(key, str):
            _check_text(key, f"{path} (a key)")
        child_in_extras = in_extras or key in ("extras", "extensions")
        child_depth = depth + 1 if in_extras else (1 if child_in_extras else 0)
        _check_value(child, child_depth, child_in_extras, json_path(path, key), absolute + 1)


def _check_document(doc: dict[str, Any]) -> None:
    nodes = doc.get("nodes", [])
    if isinstance(nodes, list) and len(nodes) > C.MAX_NODES:
        raise reject("too-many-nodes", f"the file has {len(nodes)} nodes; at most {C.MAX_NODES} are allowed")
    meshes = doc.get("meshes", [])
    if isinstance(meshes, list):
        primitives = sum(
            len(m.get("primitives", [])) for m in meshes if isinstance(m, dict) and isinstance(m.get("primitives"), list)
        )
        if primitives > C.MAX_PRIMITIVES:
            raise reject("too-many-primitives", f"the file has {primitives} primitives; at most {C.MAX_PRIMITIVES} are allowed")
    for section in ("buffers", "images"):
        entries = doc.get(section, [])
        if isinstance(entries, list):
            for i, entry in enumerate(entries):
                if isinstance(entry, dict) and "uri" in entry:
                    raise reject("external-uri",
                                 f"{section}[{i}] refers to a URI; a GLB must carry all its data in its BIN chunk")
    _check_value(doc, 0, False, "$")


def read_container(data: bytes) -> GlbContainer:
    """Split and check a GLB; raises ``AssetRejected`` with one coded finding on the first violation."""
    if len(data) > C.MAX_GLB_BYTES:
        raise reject("glb-too-large", f"the file is {len(data)} bytes; at most {C.MAX_GLB_BYTES} (80 MiB) are allowed")
    if not data:
        raise reject("not-a-glb", "the file is empty (0 bytes); a GLB starts with a 12-byte header")
    if not GLB_MAGIC.startswith(data[:4]):
        raise reject("not-a-glb", "the file does not start with the GLB magic 'glTF'")
    if len(data) < _HEADER_BYTES:
        raise reject("glb-truncated", f"the file is {len(data)} bytes, cut off inside the 12-byte GLB header")
    version, declared = struct.unpack_from("<II", data, 4)
    if version != 2:
        raise reject("not-a-glb", f"GLB container version {version} is not supported; only version 2 is")
    if declared > len(data):
        raise reject("glb-truncated", f"the header declares {declared} bytes but the file has {len(data)}")
    if declared < len(data):
        raise reject("glb-invalid", f"the file has {len(data) - declared} bytes after the declared end")
    chunks: list[tuple[int, bytes]] = []
    offset = _HEADER_BYTES
    while offset < declared:
        if offset + 8 > declared:
            raise reject("glb-truncated", f"chunk header at byte {offset} is cut off")
        length, kind = struct.unpack_from("<II", data, offset)
        if kind == CHUNK_JSON and length > C.MAX_JSON_CHUNK_BYTES:
            raise reject("json-chunk-too-large",
                         f"the JSON chunk is {length} bytes; at most {C.MAX_JSON_CHUNK_BYTES} (16 MiB) are allowed")
        end = offset + 8 + length
        if end > declared:
            raise reject("glb-truncated", f"chunk at byte {offset} declares {length} bytes past the end of the file")
        chunks.append((kind, data[offset + 8 : end]))
        offset = end
    if not chunks or chunks[0][0] != CHUNK_JSON:
        raise reject("glb-invalid", "the first chunk of a GLB must be the JSON chunk")
    if len(chunks) > 2 or (len(chunks) == 2 and chunks[1][0] != CHUNK_BIN):
        raise reject("glb-invalid", "a GLB holds one JSON chunk and at most one BIN chunk")
    doc = _parse_json(chunks[0][1])
    _check_document(doc)
    return GlbContainer(json_text=chunks[0][1].decode("utf-8"), doc=doc, bin_chunk=chunks[1][1] if len(chunks) == 2 else b"")
