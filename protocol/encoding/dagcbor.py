"""Canonical DAG-CBOR and the spec's digests over it: the only bytes this node signs or hashes for consensus.

Rules (spec/identity.md §3.2): text map keys sorted by encoded length then bytewise, shortest integer
heads, definite lengths only; bytes, text, arrays, maps, booleans and null. Floats, non-text keys and
any other type are refused with a coded error, because they would not round-trip between peers.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Mapping
from typing import Any

from protocol.errors import ProtocolError

MAX_DEPTH = 64
LEDGER_SIGNATURE_DOMAIN = "open4wd-ledger-signature-v1"
ORBITDB_PREFIX = "/orbitdb/"
_SIGNATURE_KEYS = ("signature", "signatures")
_UINT64_MAX = (1 << 64) - 1


def _head(major: int, value: int) -> bytes:
    if value < 24:
        return bytes([(major << 5) | value])
    if value <= 0xFF:
        return bytes([(major << 5) | 24, value])
    if value <= 0xFFFF:
        return bytes([(major << 5) | 25]) + struct.pack(">H", value)
    if value <= 0xFFFFFFFF:
        return bytes([(major << 5) | 26]) + struct.pack(">I", value)
    return bytes([(major << 5) | 27]) + struct.pack(">Q", value)


def _text(value: str) -> bytes:
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        raise ProtocolError("cbor-invalid-text", "text contains a lone surrogate and is not UTF-8") from None
    return _head(3, len(raw)) + raw


def encode_int(value: int) -> bytes:
    """Canonical DAG-CBOR of one integer: what ``encode`` gives for it, without the general dispatch (an
    input digest encodes its frame number this way, once per input: ``protocol.race.signing``)."""
    if value >= 0:
        if value > _UINT64_MAX:
            raise ProtocolError("cbor-int-out-of-range", "integers above 2^64-1 cannot be encoded")
        return _head(0, value)
    if -1 - value > _UINT64_MAX:
        raise ProtocolError("cbor-int-out-of-range", "integers below -2^64 cannot be encoded")
    return _head(1, -1 - value)


def _encode(value: Any, out: list[bytes], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ProtocolError("cbor-too-deep", f"value nests deeper than {MAX_DEPTH} levels")
    # bool before int: True is an int in Python but a simple value in CBOR.
    if value is None:
        out.append(b"\xf6")
    elif value is True:
        out.append(b"\xf5")
    elif value is False:
        out.append(b"\xf4")
    elif type(value) is int:
        out.append(encode_int(value))
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        out.append(_head(2, len(raw)))
        out.append(raw)
    elif isinstance(value, str):
        out.append(_text(value))
    elif isinstance(value, (list, tuple)):
        out.append(_head(4, len(value)))
        for item in value:
            _encode(item, out, depth + 1)
    elif isinstance(value, Mapping):
        entries = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise ProtocolError("cbor-non-text-key", f"map keys must be text, got {type(key).__name__}")
            entries.append((_text(key), item))
        entries.sort(key=lambda entry: (len(entry[0]), entry[0]))
        out.append(_head(5, len(entries)))
        for encoded_key, item in entries:
            out.append(encoded_key)
            _encode(item, out, depth + 1)
    elif isinstance(value, float):
        raise ProtocolError("cbor-float-rejected", "floats are not allowed in signed or hashed values")
    else:
        raise ProtocolError("cbor-unsupported-type", f"cannot encode a {type(value).__name__} as DAG-CBOR")


def encode(value: Any) -> bytes:
    """Canonical DAG-CBOR bytes of ``value``.

    Raises ``ProtocolError`` (``cbor-*``): the value is often a peer's (a payload to verify), and the
    same encoder judges this node's own.
    """
    out: list[bytes] = []
    _encode(value, out, 0)
    return b"".join(out)


def serialize_for_signing(event: Mapping[str, Any]) -> bytes:
    """DAG-CBOR of ``event`` without its top-level ``signature`` / ``signatures`` fields.

    Raises ``ProtocolError`` (``signing-input-invalid`` for a non-map, else as ``encode``).
    """
    if not isinstance(event, Mapping):
        raise ProtocolError("signing-input-invalid", "only a map can be serialised for signing")
    return encode({k: v for k, v in event.items() if k not in _SIGNATURE_KEYS})


def signing_digest(event: Mapping[str, Any]) -> bytes:
    """SHA-256 of ``serialize_for_signing(event)``: the generic digest with no chain binding."""
    return hashlib.sha256(serialize_for_signing(event)).digest()


def chain_id_of(ledger_address: str) -> str:
    """The CID text after ``/orbitdb/``; anything else is not a ledger address (raises ``ProtocolError``
    ``ledger-address-invalid``)."""
    if not isinstance(ledger_address, str) or not ledger_address.startswith(ORBITDB_PREFIX):
        raise ProtocolError("ledger-address-invalid", f"a ledger address looks like /orbitdb/<cid>, got {ledger_address!r}")
    chain_id = ledger_address[len(ORBITDB_PREFIX) :]
    if not chain_id or "/" in chain_id:
        raise ProtocolError("ledger-address-invalid", f"{ledger_address!r} has no single CID segment")
    return chain_id


def ledger_signing_digest(ledger_address: str, event: Mapping[str, Any]) -> bytes:
    """Chain-bound digest for ledger signatures, so they cannot be replayed on another chain."""
    wrapper = {
        "domain": LEDGER_SIGNATURE_DOMAIN,
        "chainId": chain_id_of(ledger_address),
        "payload": serialize_for_signing(event),
    }
    return hashlib.sha256(encode(wrapper)).digest()


def derive_match_id(
    roster: Iterable[str],
    started_at: int,
    match_rules: Mapping[str, Any],
    grid_context_digest: str,
    grid_seed: str,
) -> str:
    """64-hex match id binding the de-duplicated sorted roster, start time, rules and grid proof.

    Raises ``ProtocolError`` (``match-id-input-invalid``): a malformed id must never be minted, and the
    inputs come from a package peers sent.
    """
    members = list(roster)
    if not members or not all(isinstance(p, str) for p in members):
        raise ProtocolError("match-id-input-invalid", "the roster must be a non-empty list of PeerIds")
    if type(started_at) is not int or started_at < 0:
        raise ProtocolError("match-id-input-invalid", "startedAt must be a non-negative integer (ms)")
    for name, value in (("gridContextDigest", grid_context_digest), ("gridSeed", grid_seed)):
        if not isinstance(value, str) or len(value) != 64 or value.strip("0123456789abcdef"):
            raise ProtocolError("match-id-input-invalid", f"{name} must be 64 lowercase hex characters")
    message = {
        "type": "match-id",
        "roster": sorted(set(members)),
        "startedAt": started_at,
        "matchRules": dict(match_rules),
        "gridContextDigest": grid_context_digest,
        "gridSeed": grid_seed,
    }
    return hashlib.sha256(encode(message)).hexdigest()


def loadout_signing_message(match_id: str, loadout: Mapping[str, Any]) -> bytes:
    """The exact bytes a player signs (no hash) to prove it raced ``loadout`` in ``match_id``."""
    return serialize_for_signing({"type": "loadout-proof", "matchId": match_id, "loadout": loadout})
