"""One client's session: presence kept from room-state / peer-joined / peer-left in order, the expected
host, every received signal verified (scope, target, signer, window, nonce, signature) before use,
de-duplication by nonce (shared between sessions of several servers), and what a reconnect reports."""

from __future__ import annotations

import json


from protocol.errors import LocalError
from protocol.identity.signed import NonceSet
from protocol.signaling.client import Dropped, Error, PeerJoined, PeerLeft, Registered, Signal, SignalingSession
from protocol.signaling.envelope import IceCandidate, Sdp, SdpKind, sign_envelope
from protocol.signaling.frames import PeerJoinedFrame, PeerLeftFrame, RoomStateFrame, decode_client_frame
from tests.protocol.signaling.helpers import ALICE, BOB, CAROL, NOW, OTHER_SCOPE, SCOPE, Wire
from tests.coded import raises_coded


def registered(identity=BOB, peers=(ALICE, BOB), replay=None) -> SignalingSession:
    session = SignalingSession(identity, SCOPE, replay)
    session.register(NOW)
    session.receive(RoomStateFrame(tuple(p.peer_id for p in peers)).encode(), NOW)
    return session


def signal_from(signer=ALICE, target=BOB, scope=SCOPE, now_ms=NOW) -> str:
    return sign_envelope(signer, scope, target.peer_id, IceCandidate("candidate:1", None, 1), now_ms).wire_text()


def test_register_frame_is_accepted_by_the_server_and_presence_follows_the_frames():
    session = SignalingSession(BOB, SCOPE)
    frame = decode_client_frame(session.register(NOW))
    assert frame.sender == frame.peer_id == BOB.peer_id and frame.proof is not None
    assert session.receive(PeerJoinedFrame(CAROL.peer_id).encode(), NOW)[0].code == "not-registered-yet"
    events = session.receive(RoomStateFrame((ALICE.peer_id, BOB.peer_id)).encode(), NOW)
    assert events == [Registered((ALICE.peer_id, BOB.peer_id))] and session.host == ALICE.peer_id
    assert session.receive(PeerJoinedFrame(CAROL.peer_id).encode(), NOW) == [PeerJoined(CAROL.peer_id)]
    assert session.receive(PeerJoinedFrame(CAROL.peer_id).encode(), NOW) == []  # a repeat is no news
    assert session.receive(PeerLeftFrame(ALICE.peer_id).encode(), NOW) == [PeerLeft(ALICE.peer_id)]
    assert session.host == BOB.peer_id and session.peers == [BOB.peer_id, CAROL.peer_id]
    assert session.receive(RoomStateFrame((BOB.peer_id,)).encode(), NOW)[0].code == "room-state-again"


def test_a_reconnect_reports_who_came_and_went():
    session = registered(peers=(ALICE, BOB))
    session.disconnected()
    session.register(NOW + 5000)
    events = session.receive(RoomStateFrame((BOB.peer_id, CAROL.peer_id)).encode(), NOW + 5000)
    assert events == [Registered((BOB.peer_id, CAROL.peer_id)), PeerLeft(ALICE.peer_id), PeerJoined(CAROL.peer_id)]


def test_received_signals_are_verified_before_use():
    session = registered()
    first = signal_from()
    assert session.receive(first, NOW) == [Signal(ALICE.peer_id, IceCandidate("candidate:1", None, 1))]
    dropped = [session.receive(text, NOW)[0] for text in (
        first,  # the same envelope again
        signal_from(target=CAROL),
        signal_from(scope=OTHER_SCOPE),
        signal_from(signer=CAROL),  # not in the room
        signal_from(now_ms=NOW - 30_001),
    )]
    assert [d.code for d in dropped] == ["nonce-replay", "signal-target-mismatch", "signal-scope-mismatch",
                                         "untrusted-peer", "timestamp-out-of-range"]
    tampered = json.loads(signal_from())
    tampered["message"]["candidate"]["candidate"] = "candidate:2"
    assert session.receive(json.dumps(tampered), NOW)[0].code == "invalid-signature"
    assert session.receive("{", NOW) == [Dropped("frame-not-json", "the frame is not JSON")]
    assert session.receive('{"type":"error","sender":"server","payload":{"code":"target-not-found"}}', NOW) == \
        [Error("target-not-found")]


def test_sessions_of_one_scope_at_two_servers_deliver_an_envelope_once():
    shared = NonceSet()
    first, second = registered(replay=shared), registered(replay=shared)
    text = signal_from()
    assert isinstance(first.receive(text, NOW)[0], Signal)
    assert second.receive(text, NOW)[0].code == "nonce-replay"


def test_what_a_session_sends_goes_through_a_real_hub():
    wire = Wire()
    alice, bob = SignalingSession(ALICE, SCOPE), SignalingSession(BOB, SCOPE)
    a, b = wire.open(), wire.open()
    wire.send(a, alice.register(NOW))
    wire.send(b, bob.register(NOW))
    wire.send(a, alice.signal(BOB.peer_id, Sdp(SdpKind.ANSWER, "v=0"), NOW))
    events = [bob.receive(json.dumps(frame), NOW) for frame in wire.sent[b]]
    assert events[-1] == [Signal(ALICE.peer_id, Sdp(SdpKind.ANSWER, "v=0"))]
    assert decode_client_frame(alice.leave()).sender == ALICE.peer_id


def test_sending_refuses_a_bad_target_or_message_as_this_nodes_mistake():
    session = registered()
    with raises_coded(LocalError, "signal-invalid"):
        session.signal("alice", Sdp(SdpKind.OFFER, "v=0"), NOW)
    with raises_coded(LocalError, "signal-invalid"):
        session.signal(ALICE.peer_id, IceCandidate(""), NOW)  # an end-of-candidates marker cannot be signalled
    with raises_coded(LocalError, "scope-invalid"):
        SignalingSession(ALICE, "room:not-a-uuid")
