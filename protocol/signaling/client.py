"""``SignalingSession``: one client's side of the signaling wire for one scope at one server, sans-IO
(spec/signaling.md §4-§5, §7). The shell opens the socket, sends ``register(now_ms)`` and feeds every
message to ``receive``; the session keeps the room's presence and turns each frame into typed
``ClientEvent``\\ s, and makes the frames this client sends.

- Presence: ``room-state`` sets the list (registration order, this peer included; the first is the
  expected host), ``peer-joined`` appends, ``peer-left`` removes. ``room-state`` comes once per socket,
  so after a reconnect the session reports who came and went meanwhile.
- A received ``signal-v1`` is normalised, then checked before anything may use it: this scope, this
  peer as target, a signer present in the room, the ±30 s window, a nonce not seen (de-duplication:
  the same envelope through another server, or a replay), the signature. The replay set may be shared
  by the sessions of one scope at several servers, so each envelope is delivered once.
- What this session refuses is a ``Dropped`` event with its code (counted and logged by the shell).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.errors import LocalError, ProtocolError
from protocol.identity.keys import Identity, is_valid_peer_id
from protocol.identity.signed import NonceSet, SignedVerifier
from protocol.signaling.envelope import SignalMessage, normalise_message, sign_envelope
from protocol.signaling.frames import ErrorFrame, Leave, PeerJoinedFrame, PeerLeftFrame, Register, RoomStateFrame, \
    SignalFrame, decode_server_frame
from protocol.signaling.limits import TIMESTAMP_TOLERANCE_MS
from protocol.signaling.proof import build_proof
from protocol.signaling.scope import check_scope
from protocol.identity.keys import PeerId

CLIENT_NONCE_CAPACITY = 8192  # signals remembered for de-duplication (fail closed when full, within 30 s)


@dataclass(frozen=True)
class Registered:
    """This peer is registered (again, after a reconnect): ``peers`` is the room in registration order,
    this peer included."""

    peers: tuple[PeerId, ...]

    @property
    def host(self) -> str | None:
        """The expected host: the first peer registered."""
        return self.peers[0] if self.peers else None


@dataclass(frozen=True)
class PeerJoined:
    """``peer`` joined the room."""

    peer: PeerId


@dataclass(frozen=True)
class PeerLeft:
    """``peer`` left the room (or its socket ended)."""

    peer: PeerId


@dataclass(frozen=True)
class Signal:
    """A verified signal: ``message`` from ``signer`` to this peer, in this scope."""

    signer: PeerId
    message: SignalMessage


@dataclass(frozen=True)
class Error:
    """The server's ``error`` frame: ``code`` (``target-not-found``, ``register-rejected``, ``room-closed`` …)."""

    code: str
    message: str | None = None


@dataclass(frozen=True)
class Dropped:
    """A frame this session refused, with the code of why (the shell counts and logs it)."""

    code: str
    detail: str


ClientEvent = Registered | PeerJoined | PeerLeft | Signal | Error | Dropped
"""What ``SignalingSession.receive`` reports."""


class SignalingSession:
    """One peer's session in one scope at one server (module docstring)."""

    def __init__(self, identity: Identity, scope: str, replay: NonceSet | None = None) -> None:
        """A session for ``identity`` in ``scope``; ``replay`` shared with the other servers' sessions of the
        same scope, if any. ``LocalError`` ``scope-invalid`` for a bad scope (it is this node's choice)."""
        try:
            self.scope = check_scope(scope)
        except ProtocolError as exc:
            raise LocalError(exc.code, exc.message) from None
        self.identity = identity
        self.peers: list[PeerId] = []
        self.registered = False
        self._before: list[PeerId] | None = None  # the presence when the last socket ended
        self._verifier = SignedVerifier(self._present, replay if replay is not None else
                                        NonceSet(CLIENT_NONCE_CAPACITY, TIMESTAMP_TOLERANCE_MS))

    @property
    def host(self) -> str | None:
        """The expected host: the first peer registered (None until registered)."""
        return self.peers[0] if self.peers else None

    def _present(self, peer: PeerId) -> bool:
        return peer in self.peers

    def register(self, now_ms: int) -> str:
        """The register frame for a new socket, with a fresh proof for this scope at ``now_ms``."""
        if self.registered or self.peers:
            self._before, self.peers, self.registered = list(self.peers), [], False
        peer = self.identity.peer_id
        return Register(peer, peer, build_proof(self.identity, self.scope, now_ms)).encode()

    def disconnected(self) -> None:
        """The socket ended: nothing is known of the room until the next register."""
        if self.registered:
            self._before = list(self.peers)
        self.registered = False

    def signal(self, target: PeerId, message: SignalMessage, now_ms: int) -> str:
        """The ``signal-v1`` frame carrying ``message`` to ``target``, signed now. ``LocalError``
        (``signal-invalid``) for a target that is not a PeerId or a message outside the wire's limits."""
        if not is_valid_peer_id(target):
            raise LocalError("signal-invalid", f"a signal's target is a PeerId, got {target[:80]!r}")
        try:
            normalise_message(message.to_json())
        except ProtocolError as exc:
            raise LocalError("signal-invalid", exc.message) from None
        return sign_envelope(self.identity, self.scope, target, message, now_ms).wire_text()

    def leave(self) -> str:
        """The ``leave`` frame."""
        return Leave(self.identity.peer_id).encode()

    def receive(self, data: str | bytes, now_ms: int) -> list[ClientEvent]:
        """One message from the server, as events."""
        try:
            frame = decode_server_frame(data)
        except ProtocolError as exc:
            return [Dropped(str(exc.code), exc.message)]
        if isinstance(frame, RoomStateFrame):
            return self._room_state(frame)
        if isinstance(frame, ErrorFrame):
            return [Error(frame.code, frame.message)]
        if not self.registered:
            return [Dropped("not-registered-yet", f"a {type(frame).__name__} before room-state")]
        if isinstance(frame, PeerJoinedFrame):
            if frame.peer in self.peers:
                return []
            self.peers.append(frame.peer)
            return [PeerJoined(frame.peer)]
        if isinstance(frame, PeerLeftFrame):
            if frame.peer not in self.peers:
                return []
            self.peers.remove(frame.peer)
            return [PeerLeft(frame.peer)]
        return self._signal(frame, now_ms)

    def _room_state(self, frame: RoomStateFrame) -> list[ClientEvent]:
        if self.registered:
            return [Dropped("room-state-again", "a second room-state on one socket")]
        if self.identity.peer_id not in frame.peers or len(set(frame.peers)) != len(frame.peers):
            return [Dropped("room-state-invalid", "a room-state without this peer, or with a peer twice")]
        self.peers, self.registered = list(frame.peers), True
        events: list[ClientEvent] = [Registered(frame.peers)]
        if self._before is not None:
            events += [PeerLeft(p) for p in self._before if p not in frame.peers]
            events += [PeerJoined(p) for p in frame.peers if p not in self._before]
            self._before = None
        return events

    def _signal(self, frame: SignalFrame, now_ms: int) -> list[ClientEvent]:
        envelope = frame.envelope
        if envelope.scope != self.scope:
            return [Dropped("signal-scope-mismatch", "a signal for another scope")]
        if envelope.target != self.identity.peer_id:
            return [Dropped("signal-target-mismatch", "a signal addressed to another peer")]
        try:
            self._verifier.verify(envelope.signed(), now_ms)
        except ProtocolError as exc:
            return [Dropped(str(exc.code), exc.message)]
        return [Signal(envelope.signer, envelope.message)]
