"""``signal-v1``: a signed SDP offer, SDP answer or ICE candidate addressed to one peer of one scope
(spec/signaling.md §3, §4.2).

The envelope is the spec's SignedPayload over ``{type: "signal-v1", scope, target, message}`` with the
message in its normal form: an ICE candidate always has its four keys, ``null`` standing in for one the
sender left out, and ``sdpMLineIndex`` an integer. On the wire it is one JSON object of exactly eight
keys (the nonce and signature as lowercase hex); the server forwards it as it was sent, so a receiver
normalises before it verifies.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from protocol.errors import ProtocolError
from protocol.identity.keys import Identity, is_valid_peer_id
from protocol.identity.signed import NONCE_BYTES, SignedPayload, build_signed
from protocol.signaling.codes import Refusal
from protocol.signaling.limits import MAX_CANDIDATE_CHARS, MAX_ICE_FIELD_CHARS, MAX_SDP_BYTES, NONCE_HEX_CHARS, \
    SIGNATURE_HEX_CHARS
from protocol.signaling.scope import is_scope
from protocol.signaling.values import dumps, js_number, lower_hex, safe_integer, text
from protocol.identity.keys import PeerId

SIGNAL_TYPE = "signal-v1"
WIRE_KEYS = frozenset({"type", "scope", "target", "message", "timestamp", "nonceHex", "signer", "signatureHex"})
CANDIDATE_KEYS = frozenset({"candidate", "sdpMid", "sdpMLineIndex", "usernameFragment"})


class SdpKind(StrEnum):
    """The two SDP messages."""

    OFFER = "sdp-offer"
    ANSWER = "sdp-answer"


ICE_CANDIDATE = "ice-candidate"


@dataclass(frozen=True)
class Sdp:
    """An SDP offer or answer (non-empty, at most 128 KiB of UTF-8)."""

    kind: SdpKind
    sdp: str

    def to_json(self) -> dict[str, Any]:
        """The message's JSON object (its normal form: the form that is signed)."""
        return {"type": self.kind.value, "sdp": self.sdp}


@dataclass(frozen=True)
class IceCandidate:
    """One ICE candidate (``RTCIceCandidateInit``): the candidate line and its optional fields, None where
    the sender gave none."""

    candidate: str
    sdp_mid: str | None = None
    sdp_mline_index: int | None = None
    username_fragment: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The normal form, the one that is signed: all four candidate keys, null for an absent one."""
        return {"type": ICE_CANDIDATE, "candidate": {
            "candidate": self.candidate, "sdpMid": self.sdp_mid, "sdpMLineIndex": self.sdp_mline_index,
            "usernameFragment": self.username_fragment}}


SignalMessage = Sdp | IceCandidate
"""What a signal carries."""


def _invalid(why: str) -> ProtocolError:
    return ProtocolError(Refusal.FRAME_INVALID, why)


def _optional_ice_text(candidate: dict[str, Any], key: str) -> str | None:
    value = candidate.get(key)
    if value is None:
        return None
    checked = text(value, MAX_ICE_FIELD_CHARS, allow_empty=True)
    if checked is None:
        raise _invalid(f"{key} is null or a string of at most {MAX_ICE_FIELD_CHARS} characters")
    return checked


def normalise_message(value: object) -> SignalMessage:
    """A signal's ``message`` checked and in its normal form (module docstring): no extra key at either
    level, limits as the spec's. ``ProtocolError`` ``frame-invalid`` otherwise (a ``bye``, an empty
    end-of-candidates marker, an SDP over 128 KiB, ...)."""
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise _invalid("a signal message is an object with a type")
    kind = value["type"]
    if kind in (SdpKind.OFFER, SdpKind.ANSWER):
        sdp = value.get("sdp")
        if set(value) != {"type", "sdp"} or not isinstance(sdp, str) or not sdp:
            raise _invalid("an SDP message is exactly {type, sdp} with a non-empty sdp")
        if len(sdp) > MAX_SDP_BYTES // 4 and len(sdp.encode("utf-8", "surrogatepass")) > MAX_SDP_BYTES:
            raise _invalid(f"an SDP is at most {MAX_SDP_BYTES} bytes of UTF-8")
        return Sdp(SdpKind(kind), sdp)
    if kind != ICE_CANDIDATE or set(value) != {"type", "candidate"}:
        raise _invalid("a signal message is an sdp-offer, an sdp-answer or an ice-candidate")
    candidate = value["candidate"]
    if not isinstance(candidate, dict) or "candidate" not in candidate or not set(candidate) <= CANDIDATE_KEYS:
        raise _invalid("an ICE candidate has a candidate and at most sdpMid, sdpMLineIndex, usernameFragment")
    line = text(candidate["candidate"], MAX_CANDIDATE_CHARS)
    if line is None:
        raise _invalid(f"an ICE candidate line is 1-{MAX_CANDIDATE_CHARS} characters (an empty end-of-candidates "
                       "marker cannot be signalled)")
    index: int | None = None
    if candidate.get("sdpMLineIndex") is not None:
        number = js_number(candidate["sdpMLineIndex"])
        if not isinstance(number, int) or number < 0:
            raise _invalid("sdpMLineIndex is null or an integer of at least 0")
        index = number
    return IceCandidate(line, _optional_ice_text(candidate, "sdpMid"), index, _optional_ice_text(candidate, "usernameFragment"))


@dataclass(frozen=True)
class SignalEnvelope:
    """A ``signal-v1`` envelope: ``message`` for ``target`` in ``scope``, signed by ``signer`` at
    ``timestamp`` (epoch ms) with a 16-byte ``nonce``. ``wire`` is the JSON object as it arrived (what the
    server forwards), or as this node made it."""

    scope: str
    target: PeerId
    message: SignalMessage
    timestamp: int
    nonce: bytes
    signer: PeerId
    signature: bytes
    wire: dict[str, Any]

    def wire_text(self) -> str:
        """The envelope's JSON text, keys and values as they arrived (or as this node signed them)."""
        return dumps(self.wire)

    def payload(self) -> dict[str, Any]:
        """The signed payload: ``{type, scope, target, message}``, the message in its normal form."""
        return {"type": SIGNAL_TYPE, "scope": self.scope, "target": self.target, "message": self.message.to_json()}

    def signed(self) -> SignedPayload:
        """The envelope as the SignedPayload its signature covers (to check with ``protocol.identity.signed``)."""
        return SignedPayload(self.payload(), self.timestamp, self.nonce, self.signer, self.signature)

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> SignalEnvelope:
        """A parsed frame as an envelope, checked as strictly as the spec's parser: exactly the eight keys,
        a valid scope, PeerIds for target and signer, a safe-integer timestamp, 32- and 128-hex nonce and
        signature, a message of one of the three forms. ``ProtocolError`` ``frame-invalid`` otherwise."""
        if set(wire) != WIRE_KEYS or wire["type"] != SIGNAL_TYPE:
            raise _invalid(f"a signal-v1 envelope has exactly the keys {sorted(WIRE_KEYS)}")
        if not is_scope(wire["scope"]) or not is_valid_peer_id(wire["target"]) or not is_valid_peer_id(wire["signer"]):
            raise _invalid("a signal's scope is a valid scope and its target and signer are PeerIds")
        timestamp = safe_integer(wire["timestamp"])
        nonce = lower_hex(wire["nonceHex"], NONCE_HEX_CHARS)
        signature = lower_hex(wire["signatureHex"], SIGNATURE_HEX_CHARS)
        if timestamp is None or nonce is None or signature is None:
            raise _invalid("a signal has a safe-integer timestamp, a 32-hex nonceHex and a 128-hex signatureHex")
        message = normalise_message(wire["message"])
        return cls(wire["scope"], wire["target"], message, timestamp, nonce, wire["signer"], signature, wire)


def sign_envelope(identity: Identity, scope: str, target: PeerId, message: SignalMessage, now_ms: int,
                  nonce: bytes | None = None, *, omit_absent: bool = True) -> SignalEnvelope:
    """``message`` for ``target`` in ``scope``, signed by ``identity`` at ``now_ms`` with a fresh nonce
    (or the given 16 bytes). On the wire an ICE candidate leaves out the fields it does not have, as the
    spec's client does (``omit_absent``); the signature covers the normal form either way."""
    nonce = secrets.token_bytes(NONCE_BYTES) if nonce is None else nonce
    payload = {"type": SIGNAL_TYPE, "scope": scope, "target": target, "message": message.to_json()}
    signed = build_signed(identity, payload, now_ms, nonce)
    wire_message = message.to_json()
    if omit_absent and isinstance(message, IceCandidate):
        wire_message["candidate"] = {k: v for k, v in wire_message["candidate"].items() if v is not None}
    wire = {"type": SIGNAL_TYPE, "scope": scope, "target": target, "message": wire_message, "timestamp": now_ms,
            "nonceHex": nonce.hex(), "signer": identity.peer_id, "signatureHex": signed.signature.hex()}
    return SignalEnvelope(scope, target, message, now_ms, nonce, identity.peer_id, signed.signature, wire)
