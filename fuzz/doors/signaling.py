"""The signaling wire, both sides, sans-IO (``protocol.signaling``).

``signal-server``: a ``SignalingHub`` with four sockets of one room, fed frames (``fuzz.harness.frames``);
each frame's first byte says which socket (bits 0-1) and what happens (bits 2-3): 0 a WebSocket message
(the rest; bit 4: a binary one, else text read as UTF-8 with replacement, as a text frame can only be),
1 the clock moves on by the next byte in seconds and the hub ticks, 2 the socket ends and a new one takes
its place, 3 a pong. Everything the hub sends must be a frame the spec's client parser accepts, and each
is fed to the session of the socket's identity (so the client side meets what a real server sends).

``signal-client``: a registered ``SignalingSession`` fed what a server (or anyone in the middle) sends,
frame by frame; then the last frame as a ``/turn-token`` reply and as a request to a ``TurnDesk``.

Honest inputs cannot be found by a mutator (proofs and envelopes are signed), so the seeds are honest
exchanges made with fixed keys, nonces and clock: mutations then reach registered peers and relayed
signals.
"""

from __future__ import annotations

import json

from fuzz.harness import Target, frames
from protocol.identity.keys import Identity
from protocol.signaling.actions import SendText
from protocol.signaling.client import SignalingSession
from protocol.signaling.envelope import IceCandidate, Sdp, SdpKind, sign_envelope
from protocol.signaling.frames import PeerJoinedFrame, RoomStateFrame, decode_server_frame
from protocol.signaling.limits import HubLimits
from protocol.signaling.proof import build_proof
from protocol.signaling.server import SignalingHub
from protocol.signaling.turn import TurnDesk, decode_turn_reply, mint

PEERS = tuple(Identity(bytes([40 + i]) * 32) for i in range(4))
SCOPE = "room:6ba7b810-9dad-41d1-80b4-00c04fd430c8"
NOW = 1_796_535_282_000
SOURCE = "198.51.100.9"
MAX_FRAMES = 64
MESSAGE, TICK, END, PONG = 0, 1, 2, 3
BINARY = 0x10


def register_text(index: int, now_ms: int = NOW, serial: int = 0) -> str:
    """Peer ``index``'s register, with a fixed nonce (a seed replays exactly)."""
    peer = PEERS[index]
    proof = build_proof(peer, SCOPE, now_ms, nonce=f"{serial:016x}{index:016x}")
    return json.dumps({"type": "register", "sender": peer.peer_id, "payload": {"peerId": peer.peer_id, "proof": proof.to_json()}})


def signal_text(signer: int, target: int, message: Sdp | IceCandidate, serial: int, now_ms: int = NOW) -> str:
    """A signal from peer ``signer`` to ``target`` with a fixed nonce."""
    nonce = bytes([signer, target, serial]) + bytes(13)
    return sign_envelope(PEERS[signer], SCOPE, PEERS[target].peer_id, message, now_ms, nonce).wire_text()


def server_once(data: bytes) -> list[object]:
    """One input through the hub (module docstring): what the hub did and what the sessions reported."""
    hub = SignalingHub(HubLimits(max_peers=3, message_rate_per_min=40))
    sessions = [SignalingSession(peer, SCOPE) for peer in PEERS]
    conns = [hub.connect(SOURCE, SCOPE, NOW)[0] for _ in PEERS]
    now = NOW
    seen: list[object] = []
    for part in list(frames(data))[:MAX_FRAMES]:
        if not part:
            continue
        which, op = part[0] & 3, (part[0] >> 2) & 3
        body = part[1:]
        if op == MESSAGE:
            actions = hub.receive(conns[which], body if part[0] & BINARY else body.decode("utf-8", "replace"), now)
        elif op == TICK:
            now += (body[0] if body else 1) * 1000
            actions = hub.tick(now)
        elif op == END:
            actions = hub.disconnected(conns[which], now)
            conns[which], opened = hub.connect(SOURCE, SCOPE, now)
            sessions[which].disconnected()
            actions += opened
        else:
            hub.pong(conns[which], now)
            actions = []
        seen += actions
        for action in actions:
            if isinstance(action, SendText):
                decode_server_frame(action.text)  # the server only sends what the spec's client parses
                if action.conn in conns:
                    seen += sessions[conns.index(action.conn)].receive(action.text, now)
    return seen


def client_once(data: bytes) -> list[object]:
    """One input through a registered session, then its last frame at the /turn-token doors: the
    session's events and the desk's answer."""
    session = SignalingSession(PEERS[1], SCOPE)
    session.register(NOW)
    session.receive(RoomStateFrame((PEERS[0].peer_id, PEERS[1].peer_id)).encode(), NOW)
    last = b""
    seen: list[object] = []
    for part in list(frames(data))[:MAX_FRAMES]:
        seen += session.receive(part if part[:1] == b"\x00" else part.decode("utf-8", "replace"), NOW)
        last = part
    desk = TurnDesk("fuzz-secret", ("turn:192.0.2.1:3478",), 5, 16)
    seen.append(desk.answer(last, SOURCE, NOW))
    seen.append(decode_turn_reply(last))
    return seen


def server_seeds() -> list[bytes]:
    """Honest exchanges: three registers, offers, answers and candidates both ways, a replay, a 4th peer
    in a full room, a leave, ticks and pongs, an end and a re-register."""
    from fuzz.harness import join_frames

    def msg(sock: int, text: str, binary: bool = False) -> bytes:
        return bytes([sock | (BINARY if binary else 0)]) + text.encode()

    offer, answer = Sdp(SdpKind.OFFER, "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\n"), Sdp(SdpKind.ANSWER, "v=0\r\n")
    candidate = IceCandidate("candidate:1 1 udp 2122260223 192.0.2.1 54400 typ host", "0", 0)
    relay = [msg(0, register_text(0)), msg(1, register_text(1)), msg(0, signal_text(0, 1, offer, 1)),
             msg(1, signal_text(1, 0, answer, 2), True), msg(1, signal_text(1, 0, candidate, 3)),
             msg(1, signal_text(1, 0, candidate, 3))]
    crowd = [msg(i, register_text(i)) for i in range(4)] + [
        msg(2, json.dumps({"type": "leave", "sender": PEERS[2].peer_id, "payload": {}})), bytes([3 | PONG << 2]),
        bytes([TICK << 2, 11]), bytes([1 | END << 2]), msg(1, register_text(1, NOW + 11_000, 1))]
    alone = [msg(0, register_text(0)), msg(0, signal_text(0, 1, offer, 9)), bytes([TICK << 2, 95])]
    return [join_frames(relay), join_frames(crowd), join_frames(alone)]


def client_seeds() -> list[bytes]:
    """What a server sends a registered peer: a join, an offer, a candidate, an error; a TURN reply."""
    from fuzz.harness import join_frames

    reply = json.dumps(mint("fuzz-secret", PEERS[1].peer_id, NOW, ("turn:192.0.2.1:3478",)).to_json()).encode()
    return [join_frames([PeerJoinedFrame(PEERS[2].peer_id).encode().encode(),
                         signal_text(0, 1, Sdp(SdpKind.OFFER, "v=0\r\n"), 1).encode(),
                         signal_text(2, 1, IceCandidate("candidate:2", None, 1), 2).encode(),
                         b'{"type":"error","sender":"server","payload":{"code":"target-not-found"}}', reply])]


TARGETS = {
    "signal-server": Target("signal-server", server_once, "frames of four sockets at a signaling hub"),
    "signal-client": Target("signal-client", client_once, "frames a server sends a registered client, a TURN reply"),
}
