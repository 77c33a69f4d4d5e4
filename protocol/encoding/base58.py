"""base58btc (Bitcoin alphabet), the multibase used by PeerIds."""

from __future__ import annotations

from protocol.errors import ProtocolError

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_INDEX = {ch: i for i, ch in enumerate(ALPHABET)}


def b58encode(data: bytes) -> str:
    """base58btc text of ``data`` (leading zero bytes become leading ``1``s)."""
    zeros = len(data) - len(data.lstrip(b"\0"))
    number = int.from_bytes(data, "big")
    digits = []
    while number:
        number, rem = divmod(number, 58)
        digits.append(ALPHABET[rem])
    return "1" * zeros + "".join(reversed(digits))


def b58decode(text: str, max_chars: int = 128) -> bytes:
    """Strict decode; refuses characters outside the alphabet and over-long input.

    Raises ``ProtocolError`` (``base58-invalid``): the text is usually part of a peer's PeerId.
    """
    if not isinstance(text, str) or len(text) > max_chars:
        raise ProtocolError("base58-invalid", "base58 text is missing or too long")
    number = 0
    for ch in text:
        digit = _INDEX.get(ch)
        if digit is None:
            raise ProtocolError("base58-invalid", f"{ch!r} is not a base58btc character")
        number = number * 58 + digit
    zeros = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\0" * zeros + body
