"""JSON values as the spec's JavaScript code sees them: strings measured in UTF-16 code units, numbers
that are integers when JavaScript says so (``1.0`` and ``1e3`` are the integers 1 and 1000), and a strict
parse (no ``NaN`` or ``Infinity`` literals, no nesting deep enough to exhaust the stack).

Every check here returns a value or None; the callers raise the coded refusal that fits their frame.
"""

from __future__ import annotations

import json
import re
from typing import Any

from protocol.errors import ProtocolError
from protocol.signaling.codes import Refusal

MAX_SAFE_INTEGER = 2**53 - 1
_LOWER_HEX = re.compile(r"[0-9a-f]*")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_object(text: str) -> dict[str, Any]:
    """The JSON object in ``text``; ``ProtocolError`` ``frame-not-json`` for anything else (bad JSON, the
    non-standard ``NaN`` / ``Infinity``, an array or a scalar, nesting deep enough to exhaust the stack)."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise ProtocolError(Refusal.FRAME_NOT_JSON, "the frame is not JSON") from None
    if not isinstance(value, dict):
        raise ProtocolError(Refusal.FRAME_NOT_JSON, "the frame is not a JSON object")
    return value


def dumps(value: Any) -> str:
    """Compact JSON, as ``JSON.stringify`` writes it (no spaces; non-ASCII text as it is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def utf16_length(text: str) -> int:
    """How many UTF-16 code units JavaScript counts in ``text`` (a character outside the BMP counts two)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def text(value: object, max_units: int, *, allow_empty: bool = False) -> str | None:
    """``value`` when it is a string of 1 (0 with ``allow_empty``) to ``max_units`` UTF-16 code units."""
    if not isinstance(value, str):
        return None
    if len(value) > max_units:  # code points ≤ code units: too long already
        return None
    if not value and not allow_empty:
        return None
    return value if utf16_length(value) <= max_units else None


def js_number(value: object) -> int | float | None:
    """``value`` as the JavaScript number it is: an ``int`` when integral (a JSON ``1.0`` or ``1e3`` is an
    integer to JavaScript, and a big integer is rounded to the nearest double as JavaScript reads it), a
    finite ``float`` otherwise; None for anything that is not a finite number (booleans included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if abs(value) <= MAX_SAFE_INTEGER:
            return value
        try:
            return int(float(value))  # JavaScript reads the nearest double
        except OverflowError:
            return None  # Infinity to JavaScript
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return int(value) if value.is_integer() else value
    return None


def safe_integer(value: object) -> int | None:
    """``value`` when JavaScript's ``Number.isSafeInteger`` holds for it, as an ``int``."""
    number = js_number(value)
    return number if isinstance(number, int) and abs(number) <= MAX_SAFE_INTEGER else None


def lower_hex(value: object, chars: int) -> bytes | None:
    """The bytes of ``value`` when it is exactly ``chars`` lowercase hex characters."""
    if not isinstance(value, str) or len(value) != chars or not _LOWER_HEX.fullmatch(value):
        return None
    return bytes.fromhex(value)


def even_lower_hex(value: str) -> bytes | None:
    """The bytes of an even-length lowercase hex string of any length (a register proof's signature)."""
    if len(value) % 2 or not _LOWER_HEX.fullmatch(value):
        return None
    return bytes.fromhex(value)
