"""``SignalingHub``: the signaling server's rooms, as a sans-IO machine (spec/signaling.md §4-§8).

The shell tells it about sockets (``admit`` and ``connect`` at the upgrade, ``receive`` for each
message, ``pong``, ``disconnected``) and the time (``tick`` about once a second), always with ``now_ms``
(epoch milliseconds); it answers with ``HubAction``\\ s: frames to send, sockets to close, and the facts
that metrics and logs count. It reads no clock and touches no socket.

Rules, in the spec's order: the message rate (1 200 frames a minute per socket, excess dropped), the
frame's shape (dropped silently), then register (already registered → close; sender ≠ peerId; the
proof; the register nonce; self-replace keeping the slot; a full room) or, once registered, signals
(scope and signer of this socket, the nonce not seen, the nonce cache not full, the ±30 s window, the
signature, then the target: ``target-not-found`` caches nothing) and ``leave``.

Where this hub differs from the spec's server (docs/signaling.md explains each): a room, with its
replay caches, lingers after its last socket until those caches are empty, so replay protection
outlives the room; the deadlines are checked every tick (1 s) rather than every 5 s; a draining server
sends ``room-closed`` (a code the spec defines and never sends); server-wide caps bound the sockets,
rooms and rate windows held.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.errors import ProtocolError
from protocol.identity.signed import NonceSet, check_signature
from protocol.signaling.actions import CloseSocket, Departed, HubAction, Refused, PeerRegistered, Relayed, SendText
from protocol.signaling.codes import CLOSE_POLICY, CLOSE_TOO_BIG, Refusal, WireCode, refusal_of
from protocol.signaling.frames import Leave, PeerJoinedFrame, PeerLeftFrame, Register, RoomStateFrame, ErrorFrame, SignalFrame, \
    decode_client_frame
from protocol.signaling.limits import RATE_WINDOW_MS, SIGNAL_NONCE_CAPACITY, TIMESTAMP_TOLERANCE_MS, HubLimits
from protocol.signaling.proof import check_proof
from protocol.signaling.rates import FixedWindows
from protocol.signaling.scope import is_scope
from protocol.identity.keys import PeerId

DEFAULT_LIMITS = HubLimits()
REGISTER_NONCE_CAPACITY = 65_536  # per room; registers are bounded by the connect rate long before this


@dataclass
class _Socket:
    conn: int
    source: str
    scope: str
    opened_ms: int
    peer: PeerId | None = None
    alive_ms: int = 0
    window_start_ms: int = 0
    window_count: int = 0


@dataclass
class _Room:
    scope: str
    peers: dict[PeerId, int] = field(default_factory=dict)  # PeerId -> conn, in registration order
    pending: set[int] = field(default_factory=set)
    register_nonces: NonceSet = field(default_factory=lambda: NonceSet(REGISTER_NONCE_CAPACITY, TIMESTAMP_TOLERANCE_MS))
    signal_nonces: NonceSet = field(default_factory=lambda: NonceSet(SIGNAL_NONCE_CAPACITY, TIMESTAMP_TOLERANCE_MS))

    @property
    def idle(self) -> bool:
        """No socket and no live replay entry: the room can go."""
        return not self.peers and not self.pending and not len(self.register_nonces) and not len(self.signal_nonces)


class SignalingHub:
    """Every room of one signaling server (module docstring)."""

    def __init__(self, limits: HubLimits = DEFAULT_LIMITS) -> None:
        """An empty server with ``limits``."""
        self.limits = limits
        self.draining = False
        self._sockets: dict[int, _Socket] = {}
        self._rooms: dict[str, _Room] = {}
        self._next_conn = 0
        self._connects = FixedWindows(limits.connect_rate_per_min, limits.max_sources)

    # ---- what metrics read ----------------------------------------------------------------------------

    @property
    def sockets(self) -> int:
        """Open sockets, registered or not."""
        return len(self._sockets)

    @property
    def registered(self) -> int:
        """Registered peers, over every room."""
        return sum(len(room.peers) for room in self._rooms.values())

    @property
    def rooms(self) -> int:
        """Rooms held (with sockets, or lingering for their replay caches)."""
        return len(self._rooms)

    def peers_of(self, scope: str) -> tuple[str, ...]:
        """The registered PeerIds of ``scope`` in registration order (empty for an unknown scope)."""
        room = self._rooms.get(scope)
        return tuple(room.peers) if room is not None else ()

    # ---- sockets -----------------------------------------------------------------------------------

    def admit(self, source: str, now_ms: int) -> Refusal | None:
        """Whether an upgrade from ``source`` may proceed: None, or why not (``connect-rate``: HTTP 429;
        ``server-busy``: HTTP 503, the server is draining or holds its most sockets). Every attempt
        counts toward the source's rate, as at the spec's server."""
        if not self._connects.allow(source, now_ms):
            return Refusal.CONNECT_RATE
        if self.draining or len(self._sockets) >= self.limits.max_connections:
            return Refusal.SERVER_BUSY
        return None

    def connect(self, source: str, scope: object, now_ms: int) -> tuple[int, list[HubAction]]:
        """A socket upgraded for ``scope`` (the ``room`` query value, None when missing): its id, and what to
        do at once (an invalid scope closes it ``register-rejected`` without a frame)."""
        conn = self._next_conn
        self._next_conn += 1
        if not is_scope(scope):
            return conn, [Refused(conn, Refusal.SCOPE_INVALID, f"room={str(scope)[:80]!r}"),
                          CloseSocket(conn, CLOSE_POLICY, WireCode.REGISTER_REJECTED)]
        assert isinstance(scope, str)
        room = self._rooms.get(scope)
        if room is None:
            if len(self._rooms) >= self.limits.max_rooms:
                return conn, [Refused(conn, Refusal.ROOMS_FULL, f"{len(self._rooms)} rooms held"),
                              SendText(conn, ErrorFrame(WireCode.ROOM_FULL).encode()),
                              CloseSocket(conn, CLOSE_POLICY, WireCode.ROOM_FULL)]
            room = self._rooms[scope] = _Room(scope)
        self._sockets[conn] = _Socket(conn, source, scope, now_ms, window_start_ms=now_ms)
        room.pending.add(conn)
        return conn, []

    def pong(self, conn: int, now_ms: int) -> None:
        """Socket ``conn`` answered a ping: it is alive (only a pong counts, as at the spec's server)."""
        sock = self._sockets.get(conn)
        if sock is not None and sock.peer is not None:
            sock.alive_ms = now_ms

    def disconnected(self, conn: int, now_ms: int, refusal: Refusal | None = None) -> list[HubAction]:
        """Socket ``conn`` ended (``refusal`` when the transport closed it for a reason of its own, such as
        an oversize frame): its peer leaves, the others hear ``peer-left``."""
        actions: list[HubAction] = [] if refusal is None else [Refused(conn, refusal, "closed by the transport")]
        return actions + self._drop(conn, "closed")

    def kick(self, conn: int, refusal: Refusal, wire_code: WireCode) -> list[HubAction]:
        """Close ``conn`` for a reason the shell found (a socket that does not read what it is sent)."""
        if conn not in self._sockets:
            return []
        return [Refused(conn, refusal, "closed by the server"), *self._drop(conn, wire_code),
                CloseSocket(conn, CLOSE_POLICY, wire_code)]

    # ---- frames ------------------------------------------------------------------------------------

    def receive(self, conn: int, data: str | bytes, now_ms: int) -> list[HubAction]:
        """One WebSocket message from ``conn`` (text, or binary read as UTF-8)."""
        sock = self._sockets.get(conn)
        if sock is None:
            return []
        if now_ms - sock.window_start_ms > RATE_WINDOW_MS:
            sock.window_start_ms, sock.window_count = now_ms, 0
        if sock.window_count >= self.limits.message_rate_per_min:
            return [Refused(conn, Refusal.MESSAGE_RATE, f"over {self.limits.message_rate_per_min} frames a minute")]
        sock.window_count += 1
        try:
            frame = decode_client_frame(data)
        except ProtocolError as exc:
            refused = Refused(conn, refusal_of(exc), exc.message)
            if exc.code == Refusal.FRAME_TOO_LARGE:
                return [refused, *self._drop(conn, "frame-too-large"), CloseSocket(conn, CLOSE_TOO_BIG, "")]
            return [refused]
        if isinstance(frame, Register):
            return self._register(sock, frame, now_ms)
        if sock.peer is None:
            return self._reject(sock, Refusal.NOT_REGISTERED, WireCode.NOT_REGISTERED, f"a {type(frame).__name__} "
                                "frame before register")
        if isinstance(frame, SignalFrame):
            return self._signal(sock, frame, now_ms)
        if frame.sender != sock.peer:
            return [Refused(conn, Refusal.FOREIGN_SENDER, f"sender {frame.sender[:80]!r} is not this socket's peer")]
        if isinstance(frame, Leave):
            return [*self._drop(conn, WireCode.LEFT), CloseSocket(conn, CLOSE_POLICY, WireCode.LEFT)]
        return [Refused(conn, Refusal.SERVER_FRAME, f"a client sent a {frame.type} frame")]

    def _register(self, sock: _Socket, frame: Register, now_ms: int) -> list[HubAction]:
        conn, room = sock.conn, self._rooms[sock.scope]
        if sock.peer is not None:
            return [Refused(conn, Refusal.REGISTER_AGAIN, "a second register on a registered socket"),
                    *self._drop(conn, "register-again"), CloseSocket(conn, CLOSE_POLICY, WireCode.REGISTER_REJECTED)]
        if self.draining:
            return self._reject(sock, Refusal.DRAINING, WireCode.ROOM_CLOSED, "the server is draining")
        if frame.sender != frame.peer_id:
            return self._reject(sock, Refusal.SENDER_MISMATCH, WireCode.SENDER_MISMATCH, "sender is not payload.peerId")
        if frame.proof is None:
            return self._reject(sock, Refusal.PROOF_INVALID, WireCode.REGISTER_REJECTED, "no proof")
        try:
            check_proof(frame.peer_id, sock.scope, frame.proof, now_ms)
        except ProtocolError as exc:
            return self._reject(sock, Refusal.PROOF_INVALID, WireCode.REGISTER_REJECTED, exc.message)
        key = (frame.peer_id, frame.proof.nonce)
        if room.register_nonces.seen(key, now_ms):
            return self._reject(sock, Refusal.REGISTER_REPLAYED, WireCode.REGISTER_REJECTED, "a register nonce used before")
        old = room.peers.get(frame.peer_id)
        if old is None and len(room.peers) >= self.limits.max_peers:
            return self._reject(sock, Refusal.ROOM_FULL, WireCode.ROOM_FULL, f"{len(room.peers)} peers registered")
        try:
            room.register_nonces.add(key, int(frame.proof.timestamp), now_ms)
        except ProtocolError as exc:  # the room's register cache is full: fail closed
            return self._reject(sock, Refusal.SERVER_BUSY, WireCode.REGISTER_REJECTED, exc.message)
        room.pending.discard(conn)
        room.peers[frame.peer_id] = conn  # a self-replace keeps the peer's place in the order
        sock.peer, sock.alive_ms = frame.peer_id, now_ms
        actions: list[HubAction] = []
        if old is not None:
            self._sockets.pop(old, None)
            actions.append(CloseSocket(old, CLOSE_POLICY, WireCode.SUPERSEDED))
        actions.append(SendText(conn, RoomStateFrame(tuple(room.peers)).encode()))
        if old is None:
            joined = PeerJoinedFrame(frame.peer_id).encode()
            actions += [SendText(other, joined) for peer, other in room.peers.items() if other != conn]
        actions.append(PeerRegistered(conn, sock.scope, frame.peer_id, old is not None))
        return actions

    def _signal(self, sock: _Socket, frame: SignalFrame, now_ms: int) -> list[HubAction]:
        conn, room, envelope = sock.conn, self._rooms[sock.scope], frame.envelope
        if envelope.scope != sock.scope:
            return [Refused(conn, Refusal.SIGNAL_SCOPE_MISMATCH, "a signal for another scope")]
        if envelope.signer != sock.peer:
            return [Refused(conn, Refusal.SIGNAL_SIGNER_MISMATCH, "a signal signed by another peer")]
        key = (envelope.signer, envelope.nonce)
        if room.signal_nonces.seen(key, now_ms):
            return [Refused(conn, Refusal.SIGNAL_REPLAYED, "a signal nonce used before")]
        if len(room.signal_nonces) >= room.signal_nonces.capacity:
            return [Refused(conn, Refusal.SIGNAL_CACHE_FULL, f"the room holds {len(room.signal_nonces)} signal nonces")]
        if abs(now_ms - envelope.timestamp) > TIMESTAMP_TOLERANCE_MS:
            return [Refused(conn, Refusal.SIGNAL_STALE, "a signal more than 30 s from the server's clock")]
        try:
            check_signature(envelope.signed())
        except ProtocolError:
            return [Refused(conn, Refusal.SIGNAL_BAD_SIGNATURE, "a signal whose signature does not verify")]
        target = room.peers.get(envelope.target)
        if target is None:
            return [Refused(conn, Refusal.TARGET_NOT_FOUND, "a signal to a peer not in the room"),
                    SendText(conn, ErrorFrame(WireCode.TARGET_NOT_FOUND).encode())]
        room.signal_nonces.add(key, envelope.timestamp, now_ms)
        return [SendText(target, frame.encode()), Relayed(conn, target, envelope.message.to_json()["type"])]

    def _reject(self, sock: _Socket, refusal: Refusal, wire_code: WireCode, detail: str) -> list[HubAction]:
        """An error frame, then the close, for a socket that is not registered."""
        return [Refused(sock.conn, refusal, detail), SendText(sock.conn, ErrorFrame(wire_code).encode()),
                *self._drop(sock.conn, wire_code), CloseSocket(sock.conn, CLOSE_POLICY, wire_code)]

    def _drop(self, conn: int, reason: str) -> list[HubAction]:
        """Forget socket ``conn``; if its peer is registered through it, the others hear ``peer-left``."""
        sock = self._sockets.pop(conn, None)
        if sock is None:
            return []
        room = self._rooms[sock.scope]
        room.pending.discard(conn)
        if sock.peer is None or room.peers.get(sock.peer) != conn:
            return []
        del room.peers[sock.peer]
        left = PeerLeftFrame(sock.peer).encode()
        return [*(SendText(other, left) for other in room.peers.values()), Departed(conn, sock.scope, sock.peer, reason)]

    # ---- time --------------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> list[HubAction]:
        """Close sockets past the register deadline or the peer timeout, sweep the replay caches and the
        rate windows, and forget rooms that have nothing left (about once a second)."""
        actions: list[HubAction] = []
        for sock in list(self._sockets.values()):
            if sock.peer is None and now_ms - sock.opened_ms > self.limits.register_deadline_ms:
                actions += [Refused(sock.conn, Refusal.REGISTER_TIMEOUT, "no register in time"),
                            *self._drop(sock.conn, WireCode.REGISTER_TIMEOUT),
                            CloseSocket(sock.conn, CLOSE_POLICY, WireCode.REGISTER_TIMEOUT)]
            elif sock.peer is not None and now_ms - sock.alive_ms > self.limits.peer_timeout_ms:
                actions += [Refused(sock.conn, Refusal.PEER_TIMEOUT, "no pong in time"),
                            *self._drop(sock.conn, WireCode.PEER_TIMEOUT),
                            CloseSocket(sock.conn, CLOSE_POLICY, WireCode.PEER_TIMEOUT)]
        for scope, room in list(self._rooms.items()):
            room.register_nonces.prune(now_ms)
            room.signal_nonces.prune(now_ms)
            if room.idle:
                del self._rooms[scope]
        self._connects.sweep(now_ms)
        return actions

    # ---- draining ----------------------------------------------------------------------------------

    def drain(self) -> list[HubAction]:
        """Stop registering and tell every socket ``room-closed`` (an error frame); signals between the
        registered still flow until ``close_all``."""
        self.draining = True
        closing = ErrorFrame(WireCode.ROOM_CLOSED).encode()
        return [SendText(conn, closing) for conn in self._sockets]

    def close_all(self) -> list[HubAction]:
        """Close every socket ``room-closed`` and forget every room (the end of a drain)."""
        actions: list[HubAction] = [CloseSocket(conn, CLOSE_POLICY, WireCode.ROOM_CLOSED) for conn in self._sockets]
        self._sockets.clear()
        self._rooms.clear()
        return actions
