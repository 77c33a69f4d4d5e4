"""The link: the Noise XX handshake (either side, fed the other side's frames) and sealed frames after it.

Keys are fixed (the test-vector hooks of ``Handshake``), so a recorded handshake replays exactly and a
mutation of one message reaches the checks behind the ones before it. Sealed frames come in two kinds,
chosen per frame by its first byte: bytes as a party in the middle would inject them (they must not
open: ``link-tampered``), or a body sealed by the authenticated peer itself, which opens and meets the
link's ingress rules (buckets, violations, the strict decoder of the link registry).
"""

from __future__ import annotations

import functools

from fuzz.harness import Target, coded, frames
from open4wd_node.net.link_rules import ROOM_LIMITS, IngressGuard
from protocol.encoding.wire import HEADER, ROOM, Channel, FrameDecoder
from protocol.identity.keys import Identity
from protocol.link.handshake import DIALER, LISTENER, Handshake, HandshakeResult, decode_handshake_message
from protocol.link.noise import TransportCipher
from protocol.room.messages import EXPENSIVE_TYPES

DIALER_ID, LISTENER_ID = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)
KEYS: dict[str, tuple[bytes, bytes]] = {DIALER: (bytes([11]) * 32, bytes([12]) * 32),
                                        LISTENER: (bytes([21]) * 32, bytes([22]) * 32)}
NOW_MS = 1_000_000


def side(role: str) -> Handshake:
    """One side with its fixed keys (the dialer expects the listener's PeerId, as a join does)."""
    static, ephemeral = KEYS[role]
    identity, expected = (DIALER_ID, LISTENER_ID.peer_id) if role == DIALER else (LISTENER_ID, None)
    return Handshake(identity, role, NOW_MS, expected_peer=expected, static_key=static, ephemeral_key=ephemeral)


def handshake_once(data: bytes) -> None:
    """First byte: which side is fuzzed (even: the listener, fed the dialer's frames; odd: the dialer)."""
    if not data:
        return
    me = side(LISTENER if data[0] % 2 == 0 else DIALER)
    me.start()
    for body in frames(data[1:]):
        if me.done:
            break
        msg = decode_handshake_message(body)  # ProtocolError ends the attempt, as it closes the connection
        me.receive(msg, NOW_MS)


def open_pair() -> tuple[HandshakeResult, HandshakeResult]:
    """A finished handshake between the two fixed sides: (dialer's result, listener's result)."""
    dialer, listener = side(DIALER), side(LISTENER)
    to_listener = dialer.start()
    listener.start()
    while not (dialer.done and listener.done):
        to_dialer = [reply for msg in to_listener for reply in listener.receive(msg, NOW_MS)]
        to_listener = [reply for msg in to_dialer for reply in dialer.receive(msg, NOW_MS)]
    assert dialer.result is not None and listener.result is not None
    return dialer.result, listener.result


@functools.cache
def _fixed_pair() -> tuple[HandshakeResult, HandshakeResult]:
    return open_pair()


def fresh_pair() -> tuple[HandshakeResult, HandshakeResult]:
    """The pair ``open_pair`` makes, without its handshake: the fixed keys make every handshake's result
    the same, so one is kept and its two directions' nonce counters rewound to 0 (where a new link's are)."""
    dialer, listener = _fixed_pair()
    for direction in (dialer.send, dialer.receive, listener.send, listener.receive):
        assert isinstance(direction, TransportCipher)
        direction.state.n = 0
    return dialer, listener


def sealed_once(data: bytes) -> None:
    """The listener's receiving side of an open room link: frames from the peer (sealed by it, first
    byte odd) or from a party in the middle (raw, first byte even), through frame decoder, AEAD and guard."""
    peer, me = fresh_pair()
    sealed_room = Channel("sealed room", ROOM.max_frame_bytes + me.receive.overhead)
    decoder = FrameDecoder(sealed_room)
    guard = IngressGuard(ROOM_LIMITS, NOW_MS, EXPENSIVE_TYPES)
    for index, part in enumerate(frames(data)):
        if not part:
            continue
        body = peer.send.seal(part[1:]) if part[0] % 2 else part[1:]
        for frame in decoder.feed(HEADER.pack(len(body)) + body):
            opened = me.receive.open(frame)  # PeerError link-tampered: the link closes
            coded(guard.admit, opened, NOW_MS + 10 * index)
            if guard.violations.exhausted:
                return  # three violations close the link


TARGETS = {
    "link-handshake": Target("link-handshake", handshake_once, "the Noise XX handshake, either side"),
    "link-sealed": Target("link-sealed", sealed_once, "sealed frames of an open link: tampered or from the peer"),
}
