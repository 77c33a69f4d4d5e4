"""Every frame of the signaling wire, both ways, as typed values with strict decoders and encoders
(spec/signaling.md §4, §5). A frame is one JSON object in a WebSocket text frame (a binary frame is read
as UTF-8, bad bytes replaced, as the spec's server reads it).

Client → server: ``Register``, ``SignalFrame`` (a ``signal-v1`` envelope), ``Leave``, and the server's
own types when a client sends them (``ServerTypeFrame``: ignored, or ``not-registered`` before register).
Server → client: ``RoomStateFrame``, ``PeerJoinedFrame``, ``PeerLeftFrame``, ``ErrorFrame`` and ``SignalFrame``.

A decoder raises ``ProtocolError`` with a ``Refusal`` code: ``frame-too-large``, ``frame-not-json``,
``frame-unknown-type`` or ``frame-invalid``. The limits are the spec's; lengths that the spec counts
in characters are UTF-16 code units, as JavaScript counts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol.errors import ProtocolError
from protocol.signaling.codes import Refusal
from protocol.signaling.envelope import SIGNAL_TYPE, SignalEnvelope
from protocol.signaling.limits import MAX_ERROR_MESSAGE_CHARS, MAX_FRAME_BYTES, MAX_ID_CHARS, MAX_PEERS, SERVER_SENDER
from protocol.signaling.proof import RegisterProof
from protocol.signaling.values import dumps, parse_object, text
from protocol.identity.keys import PeerId

SERVER_TYPES = frozenset({"room-state", "peer-joined", "peer-left", "error"})


@dataclass(frozen=True)
class Register:
    """``register``: the socket's first frame. ``proof`` is None when the sender left it out (then the
    register is refused, after the sender check)."""

    sender: PeerId
    peer_id: PeerId
    proof: RegisterProof | None

    def encode(self) -> str:
        """The frame's JSON text."""
        payload: dict[str, Any] = {"peerId": self.peer_id}
        if self.proof is not None:
            payload["proof"] = self.proof.to_json()
        return dumps({"type": "register", "sender": self.sender, "payload": payload})


@dataclass(frozen=True)
class Leave:
    """``leave``: the sender leaves the room (its payload, any object, means nothing)."""

    sender: PeerId

    def encode(self) -> str:
        """The frame's JSON text."""
        return dumps({"type": "leave", "sender": self.sender, "payload": {}})


@dataclass(frozen=True)
class SignalFrame:
    """A ``signal-v1`` frame: the checked envelope (with the JSON object as it arrived in ``wire``)."""

    envelope: SignalEnvelope

    def encode(self) -> str:
        """The envelope's JSON text, keys and values as they arrived (or as this node signed them)."""
        return self.envelope.wire_text()


@dataclass(frozen=True)
class RoomStateFrame:
    """``room-state``: the room's registered PeerIds in registration order, the recipient included; the
    first is the host."""

    peers: tuple[PeerId, ...]

    def encode(self) -> str:
        """The frame's JSON text."""
        return _server_frame("room-state", {"peers": list(self.peers)})


@dataclass(frozen=True)
class PeerJoinedFrame:
    """``peer-joined``: ``peer`` registered."""

    peer: PeerId

    def encode(self) -> str:
        """The frame's JSON text."""
        return _server_frame("peer-joined", {"peerId": self.peer})


@dataclass(frozen=True)
class PeerLeftFrame:
    """``peer-left``: ``peer`` left, its socket closed, or it was reaped (never on a supersede)."""

    peer: PeerId

    def encode(self) -> str:
        """The frame's JSON text."""
        return _server_frame("peer-left", {"peerId": self.peer})


@dataclass(frozen=True)
class ErrorFrame:
    """``error``: the server refused what this socket did (``code``); ``message`` is optional text."""

    code: str
    message: str | None = None

    def encode(self) -> str:
        """The frame's JSON text (the spec's server never sends a message)."""
        payload = {"code": self.code} if self.message is None else {"code": self.code, "message": self.message}
        return _server_frame("error", payload)


@dataclass(frozen=True)
class ServerTypeFrame:
    """A well-formed server frame type sent by a client, with the sender it named."""

    type: str
    sender: PeerId


ClientFrame = Register | SignalFrame | Leave | ServerTypeFrame
"""What a client may send a server."""
ServerFrame = RoomStateFrame | PeerJoinedFrame | PeerLeftFrame | ErrorFrame | SignalFrame
"""What a server sends a client."""


def _server_frame(kind: str, payload: dict[str, Any]) -> str:
    return dumps({"type": kind, "sender": SERVER_SENDER, "payload": payload})


def frame_text(data: str | bytes) -> str:
    """A WebSocket message's text: a binary one read as UTF-8 with bad bytes replaced (as the spec's server
    does); ``ProtocolError`` ``frame-too-large`` over 256 KiB of UTF-8."""
    if isinstance(data, bytes):
        if len(data) > MAX_FRAME_BYTES:
            raise ProtocolError(Refusal.FRAME_TOO_LARGE, f"a frame is at most {MAX_FRAME_BYTES} bytes")
        return data.decode("utf-8", "replace")
    if len(data) > MAX_FRAME_BYTES // 4 and len(data.encode("utf-8", "surrogatepass")) > MAX_FRAME_BYTES:
        raise ProtocolError(Refusal.FRAME_TOO_LARGE, f"a frame is at most {MAX_FRAME_BYTES} bytes")
    return data


def _invalid(why: str) -> ProtocolError:
    return ProtocolError(Refusal.FRAME_INVALID, why)


def _common(wire: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(type, sender, payload) of a frame that is not a signal: a known type, a sender of 1-256
    characters, an object payload."""
    kind = wire.get("type")
    if not isinstance(kind, str) or kind not in SERVER_TYPES | {"register", "leave"}:
        raise ProtocolError(Refusal.FRAME_UNKNOWN_TYPE, "the frame's type is not one of the signaling wire's")
    sender = text(wire.get("sender"), MAX_ID_CHARS)
    payload = wire.get("payload")
    if sender is None or not isinstance(payload, dict):
        raise _invalid(f"a {kind} frame has a sender of 1-{MAX_ID_CHARS} characters and an object payload")
    return kind, sender, payload


def _server_payload(kind: str, payload: dict[str, Any]) -> RoomStateFrame | PeerJoinedFrame | PeerLeftFrame | ErrorFrame:
    """A server frame's payload, checked as the spec's client parser checks it."""
    if kind == "room-state":
        peers = payload.get("peers")
        if (not isinstance(peers, list) or len(peers) > MAX_PEERS or "recommendedSource" in payload
                or any(text(p, MAX_ID_CHARS) is None for p in peers)):
            raise _invalid(f"a room-state lists at most {MAX_PEERS} ids of 1-{MAX_ID_CHARS} characters")
        return RoomStateFrame(tuple(peers))
    if kind == "error":
        code = text(payload.get("code"), MAX_ID_CHARS)
        message = payload.get("message")
        if code is None or (message is not None and text(message, MAX_ERROR_MESSAGE_CHARS) is None):
            raise _invalid("an error has a code and at most an optional message of 4096 characters")
        return ErrorFrame(code, message)
    peer = text(payload.get("peerId"), MAX_ID_CHARS)
    if peer is None:
        raise _invalid(f"a {kind} names a peerId of 1-{MAX_ID_CHARS} characters")
    return PeerJoinedFrame(PeerId(peer)) if kind == "peer-joined" else PeerLeftFrame(PeerId(peer))


def decode_client_frame(data: str | bytes) -> ClientFrame:
    """A frame a client sent, checked as the spec's server checks it (module docstring for the codes).
    Extra keys are tolerated in a register (as the spec's server does), never in a signal."""
    wire = parse_object(frame_text(data))
    if wire.get("type") == SIGNAL_TYPE:
        return SignalFrame(SignalEnvelope.from_wire(wire))
    kind, sender, payload = _common(wire)
    if kind == "register":
        peer_id = text(payload.get("peerId"), MAX_ID_CHARS)
        if peer_id is None:
            raise _invalid(f"a register names a peerId of 1-{MAX_ID_CHARS} characters")
        proof = None if "proof" not in payload else RegisterProof.from_register(payload["proof"])
        return Register(PeerId(sender), PeerId(peer_id), proof)
    if kind == "leave":
        return Leave(PeerId(sender))
    _server_payload(kind, payload)
    return ServerTypeFrame(kind, PeerId(sender))


def decode_server_frame(data: str | bytes) -> ServerFrame:
    """A frame a server sent, checked as the spec's client checks it: a ``room-state`` with more than 64
    peers or a ``recommendedSource`` is refused whole; a signal must be a well-formed envelope (its
    signature is the receiver's to check)."""
    wire = parse_object(frame_text(data))
    if wire.get("type") == SIGNAL_TYPE:
        return SignalFrame(SignalEnvelope.from_wire(wire))
    kind, _, payload = _common(wire)
    if kind not in SERVER_TYPES:
        raise ProtocolError(Refusal.FRAME_UNKNOWN_TYPE, f"a server does not send {kind} frames")
    return _server_payload(kind, payload)
