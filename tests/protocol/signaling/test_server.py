"""The server's room machine against every observed behaviour of the spec's server (spec/signaling.md
§4-§8, §11) and this server's own additions (counted refusals, lingering replay caches, the drain)."""

from __future__ import annotations

import json

import pytest

from protocol.identity.keys import Identity
from protocol.signaling.codes import CLOSE_POLICY, CLOSE_TOO_BIG
from protocol.signaling.envelope import IceCandidate, Sdp, SdpKind, sign_envelope
from protocol.signaling.limits import MAX_FRAME_BYTES, MAX_PEERS
from protocol.signaling.proof import build_proof
from tests.protocol.signaling.helpers import ALICE, BOB, CAROL, NOW, OTHER_SCOPE, SCOPE, Wire, register_text

OFFER = Sdp(SdpKind.OFFER, "v=0\r\n")


def signal_text(signer: Identity, target: Identity, content=OFFER, now_ms: int = NOW, scope: str = SCOPE, **wire_changes) -> str:
    wire = json.loads(sign_envelope(signer, scope, target.peer_id, content, now_ms).wire_text())
    wire.update(wire_changes)
    return json.dumps(wire)


# ---- registration ---------------------------------------------------------------------------------

def test_registration_order_host_first_and_presence_frames():
    wire = Wire()
    a = wire.join(ALICE)
    assert wire.last(a) == {"type": "room-state", "sender": "server", "payload": {"peers": [ALICE.peer_id]}}
    b = wire.join(BOB)
    assert wire.last(b)["payload"]["peers"] == [ALICE.peer_id, BOB.peer_id]
    assert wire.last(a) == {"type": "peer-joined", "sender": "server", "payload": {"peerId": BOB.peer_id}}
    assert wire.hub.peers_of(SCOPE) == (ALICE.peer_id, BOB.peer_id)


def test_self_replace_keeps_the_slot_tells_nobody_and_works_in_a_full_room():
    wire = Wire.with_limits(max_peers=2)
    a, b = wire.join(ALICE), wire.join(BOB)
    seen_by_b = len(wire.sent[b])
    again = wire.join(ALICE, NOW + 1)
    assert wire.closed[a] == (CLOSE_POLICY, "superseded")
    assert wire.last(again)["payload"]["peers"] == [ALICE.peer_id, BOB.peer_id]  # the host is still the host
    assert len(wire.sent[b]) == seen_by_b  # no peer-joined, no peer-left
    wire.apply(wire.hub.disconnected(a, NOW + 2))  # the superseded socket's end changes nothing
    assert len(wire.sent[b]) == seen_by_b and wire.hub.peers_of(SCOPE) == (ALICE.peer_id, BOB.peer_id)


def test_the_65th_peer_is_refused_room_full():
    wire = Wire()
    for i in range(MAX_PEERS):
        wire.join(Identity(i.to_bytes(2, "big") * 16))
    late = wire.open()
    wire.send(late, register_text(CAROL))
    assert wire.last(late) == {"type": "error", "sender": "server", "payload": {"code": "room-full"}}
    assert wire.closed[late] == (CLOSE_POLICY, "room-full")


@pytest.mark.parametrize(("offset_ms", "accepted"), [(-31_000, False), (-30_000, True), (25_000, True), (30_001, False)])
def test_the_proof_window_is_30_s_both_ways(offset_ms, accepted):
    wire = Wire()
    conn = wire.open()
    wire.send(conn, register_text(ALICE, now_ms=NOW + offset_ms))
    assert (conn not in wire.closed) == accepted


@pytest.mark.parametrize("case", ["foreign-key", "other-room", "no-proof", "bad-hex", "not-a-peer-id", "float-time"])
def test_bad_proofs_are_register_rejected_with_a_frame(case):
    wire = Wire()
    conn = wire.open()
    frame = json.loads(register_text(ALICE))
    proof = frame["payload"]["proof"]
    if case == "foreign-key":
        proof.update(build_proof(BOB, SCOPE, NOW).to_json())
    elif case == "other-room":
        proof.update(build_proof(ALICE, OTHER_SCOPE, NOW).to_json())
    elif case == "no-proof":
        del frame["payload"]["proof"]
    elif case == "bad-hex":
        proof["signatureHex"] = proof["signatureHex"].upper()
    elif case == "not-a-peer-id":
        frame["sender"] = frame["payload"]["peerId"] = "alice"
    else:
        proof["timestamp"] = NOW + 0.5
    wire.send(conn, json.dumps(frame))
    assert wire.last(conn)["payload"] == {"code": "register-rejected"}
    assert wire.closed[conn] == (CLOSE_POLICY, "register-rejected") and wire.codes() == ["proof-invalid"]


def test_any_nonce_text_registers_and_extra_keys_are_tolerated():
    wire = Wire()
    conn = wire.open()
    proof = build_proof(ALICE, SCOPE, NOW, nonce="hello world nonce")
    frame = {"type": "register", "sender": ALICE.peer_id, "extra": 1,
             "payload": {"peerId": ALICE.peer_id, "proof": {**proof.to_json(), "more": True}, "x": []}}
    wire.send(conn, json.dumps(frame))
    assert wire.types(conn) == ["room-state"]


def test_a_replayed_register_proof_is_rejected_on_a_new_socket():
    wire = Wire()
    text = register_text(ALICE)
    first = wire.open()
    wire.send(first, text)
    second = wire.open()
    wire.send(second, text)
    assert wire.closed[second] == (CLOSE_POLICY, "register-rejected") and "register-replayed" in wire.codes()


def test_sender_mismatch_and_register_again():
    wire = Wire()
    conn = wire.open()
    frame = json.loads(register_text(ALICE))
    frame["sender"] = BOB.peer_id
    wire.send(conn, json.dumps(frame))
    assert wire.last(conn)["payload"] == {"code": "sender-mismatch"} and wire.closed[conn][1] == "sender-mismatch"
    a, b = wire.join(ALICE, NOW + 1), wire.join(BOB, NOW + 1)
    sent_before = len(wire.sent[a])
    wire.send(a, register_text(ALICE, now_ms=NOW + 2))
    assert wire.closed[a] == (CLOSE_POLICY, "register-rejected") and len(wire.sent[a]) == sent_before  # no frame
    assert wire.last(b) == {"type": "peer-left", "sender": "server", "payload": {"peerId": ALICE.peer_id}}


def test_invalid_scope_closes_at_once_without_a_frame():
    wire = Wire()
    for scope in (None, "room:0F8FAD5B-D9CB-469F-A165-70867728950E", "/turn-token", "room:x", "match:" + "a" * 63):
        conn = wire.open(scope)
        assert wire.closed[conn] == (CLOSE_POLICY, "register-rejected") and conn not in wire.sent


def test_before_register_only_valid_frames_get_not_registered():
    wire = Wire()
    conn = wire.open()
    for junk in ("not json", "[1]", '{"type":"nope","sender":"x","payload":{}}', '{"type":"leave","sender":"x"}'):
        wire.send(conn, junk)
    assert conn not in wire.closed and wire.codes() == ["frame-not-json", "frame-not-json", "frame-unknown-type",
                                                         "frame-invalid"]
    wire.send(conn, '{"type":"error","sender":"x","payload":{"code":"c"}}')
    assert wire.last(conn)["payload"] == {"code": "not-registered"} and wire.closed[conn][1] == "not-registered"


# ---- signals --------------------------------------------------------------------------------------

def test_a_signal_is_forwarded_as_sent_and_counted():
    wire = Wire()
    a, b = wire.join(ALICE), wire.join(BOB)
    text = signal_text(ALICE, BOB, IceCandidate("candidate:1 1 udp 1 192.0.2.1 1 typ host"))
    wire.send(a, text)
    assert wire.last(b) == json.loads(text)  # not normalised: the optional keys stay absent
    assert wire.actions[-1].kind == "ice-candidate"


def test_a_signal_to_oneself_comes_back():
    wire = Wire()
    a = wire.join(ALICE)
    wire.send(a, signal_text(ALICE, ALICE))
    assert wire.last(a)["type"] == "signal-v1"


@pytest.mark.parametrize(("change", "code"), [
    ({"extra": 1}, "frame-invalid"),
    ({"nonceHex": "AB" * 16}, "frame-invalid"),
    ({"timestamp": 2**53}, "frame-invalid"),
    ({"message": {"type": "bye"}}, "frame-invalid"),
    ({"message": {"type": "ice-candidate", "candidate": {"candidate": ""}}}, "frame-invalid"),
    ({"message": {"type": "sdp-offer", "sdp": "x" * (128 * 1024 + 1)}}, "frame-invalid"),
    ({"scope": OTHER_SCOPE}, "signal-scope-mismatch"),
    ({"timestamp": NOW - 1}, "signal-bad-signature"),
])
def test_bad_signals_are_dropped_silently_and_counted(change, code):
    wire = Wire()
    a, b = wire.join(ALICE), wire.join(BOB)
    before = len(wire.sent[b])
    wire.send(a, signal_text(ALICE, BOB, **change))
    assert len(wire.sent[b]) == before and a not in wire.closed and wire.codes()[-1] == code


def test_stale_signature_over_unnormalised_form_and_relayed_envelopes_are_dropped():
    wire = Wire()
    a, b, c = wire.join(ALICE), wire.join(BOB), wire.join(CAROL)
    wire.send(a, signal_text(ALICE, BOB, now_ms=NOW - 31_000))
    assert wire.codes()[-1] == "signal-stale"
    # signed over the form the sender put on the wire (keys left out): not the normal form, so it fails
    from protocol.encoding import dagcbor
    import hashlib
    envelope = json.loads(signal_text(ALICE, BOB, IceCandidate("candidate:1")))
    payload = {"type": "signal-v1", "scope": SCOPE, "target": BOB.peer_id, "message": envelope["message"]}
    digest = hashlib.sha256(dagcbor.encode({"nonce": bytes.fromhex(envelope["nonceHex"]), "payload": payload,
                                            "signer": ALICE.peer_id, "timestamp": NOW})).digest()
    envelope["signatureHex"] = ALICE.sign(digest).hex()
    wire.send(a, json.dumps(envelope))
    assert wire.codes()[-1] == "signal-bad-signature"
    wire.send(c, signal_text(ALICE, BOB))  # Carol relays Alice's envelope
    assert wire.codes()[-1] == "signal-signer-mismatch"
    assert wire.types(b).count("signal-v1") == 0


def test_a_replayed_nonce_is_dropped():
    wire = Wire()
    a, b = wire.join(ALICE), wire.join(BOB)
    text = signal_text(ALICE, BOB)
    wire.send(a, text)
    wire.send(a, text)
    assert wire.types(b).count("signal-v1") == 1 and wire.codes() == ["signal-replayed"]


def test_target_not_found_keeps_the_socket_and_caches_nothing():
    wire = Wire()
    a = wire.join(ALICE)
    text = signal_text(ALICE, BOB)
    wire.send(a, text)
    assert wire.last(a)["payload"] == {"code": "target-not-found"} and a not in wire.closed
    b = wire.join(BOB)
    wire.send(a, text)
    assert wire.last(b) == json.loads(text)


def test_a_full_nonce_cache_drops_every_signal_until_it_is_swept():
    wire = Wire()
    a, b = wire.join(ALICE), wire.join(BOB)
    room = wire.hub._rooms[SCOPE]
    room.signal_nonces.capacity = 2
    for _ in range(3):
        wire.send(a, signal_text(ALICE, BOB))
    assert wire.types(b).count("signal-v1") == 2 and wire.codes() == ["signal-cache-full"]
    later = NOW + 30_001
    wire.apply(wire.hub.pong(a, later) or [])
    wire.apply(wire.hub.tick(later))
    wire.send(a, signal_text(ALICE, BOB, now_ms=later), later)
    assert wire.types(b).count("signal-v1") == 3


def test_binary_frames_are_read_as_utf8_and_oversize_frames_close_1009():
    wire = Wire()
    a, b = wire.join(ALICE), wire.join(BOB)
    wire.send(a, signal_text(ALICE, BOB).encode())
    assert wire.types(b).count("signal-v1") == 1
    exact = '{"type":"x"' + " " * (MAX_FRAME_BYTES - 12) + "}"
    assert len(exact.encode()) == MAX_FRAME_BYTES
    wire.send(a, exact)
    assert a not in wire.closed
    wire.send(a, exact.replace(" ", "é", 1))  # one byte more in UTF-8, the same number of characters
    assert wire.closed[a] == (CLOSE_TOO_BIG, "") and wire.last(b)["type"] == "peer-left"


def test_the_message_rate_drops_frame_1201_silently():
    wire = Wire()
    a, b = wire.join(ALICE), wire.join(BOB)  # the register was frame 1
    for _ in range(1198):
        wire.send(a, "{}")
    wire.send(a, signal_text(ALICE, BOB))  # frame 1200
    wire.send(a, signal_text(ALICE, BOB))  # frame 1201
    assert wire.types(b).count("signal-v1") == 1 and wire.codes().count("message-rate") == 1 and a not in wire.closed
    wire.send(a, signal_text(ALICE, BOB, now_ms=NOW + 60_001), NOW + 60_001)  # a new window
    assert wire.types(b).count("signal-v1") == 2


# ---- leave, server frames, time -------------------------------------------------------------------

def test_leave_and_server_frames_from_registered_peers():
    wire = Wire()
    a, b = wire.join(ALICE), wire.join(BOB)
    wire.send(a, json.dumps({"type": "leave", "sender": BOB.peer_id, "payload": {}}))
    wire.send(a, json.dumps({"type": "peer-left", "sender": ALICE.peer_id, "payload": {"peerId": BOB.peer_id}}))
    assert a not in wire.closed and wire.codes() == ["foreign-sender", "server-frame"]
    wire.send(a, json.dumps({"type": "leave", "sender": ALICE.peer_id, "payload": {"why": "done"}}))
    assert wire.closed[a] == (CLOSE_POLICY, "left") and wire.last(b)["type"] == "peer-left"
    assert wire.hub.peers_of(SCOPE) == (BOB.peer_id,)  # Bob is first now: the expected host


def test_register_deadline_and_peer_timeout_on_tick():
    wire = Wire()
    idle = wire.open()
    a, b = wire.join(ALICE), wire.join(BOB)
    wire.apply(wire.hub.tick(NOW + 10_000))
    assert idle not in wire.closed
    wire.apply(wire.hub.tick(NOW + 10_001))
    assert wire.closed[idle] == (CLOSE_POLICY, "register-timeout") and idle not in wire.sent
    wire.hub.pong(b, NOW + 60_000)
    wire.apply(wire.hub.tick(NOW + 90_001))
    assert wire.closed[a] == (CLOSE_POLICY, "peer-timeout") and b not in wire.closed
    assert wire.last(b)["payload"] == {"peerId": ALICE.peer_id}


def test_a_room_lingers_for_its_replay_caches_so_a_proof_cannot_be_replayed_after_it_empties():
    wire = Wire()
    text = register_text(ALICE)
    a = wire.open()
    wire.send(a, text)
    wire.apply(wire.hub.disconnected(a, NOW + 1))
    wire.apply(wire.hub.tick(NOW + 2))
    assert wire.hub.rooms == 1
    again = wire.open(now_ms=NOW + 3)
    wire.send(again, text, NOW + 3)
    assert wire.closed[again][1] == "register-rejected"
    wire.apply(wire.hub.tick(NOW + 30_001))
    assert wire.hub.rooms == 0


def test_admission_rate_and_drain():
    wire = Wire.with_limits(connect_rate_per_min=2)
    assert wire.hub.admit("198.51.100.1", NOW) is None and wire.hub.admit("198.51.100.1", NOW) is None
    assert wire.hub.admit("198.51.100.1", NOW).value == "connect-rate"
    assert wire.hub.admit("198.51.100.2", NOW) is None
    a, b = wire.join(ALICE), wire.join(BOB)
    wire.apply(wire.hub.drain())
    assert wire.last(a)["payload"] == {"code": "room-closed"} and wire.hub.admit("198.51.100.3", NOW).value == "server-busy"
    wire.send(b, signal_text(BOB, ALICE))
    assert wire.last(a)["type"] == "signal-v1"  # registered peers still relay while draining
    late = wire.open()
    wire.send(late, register_text(CAROL))
    assert wire.closed[late] == (CLOSE_POLICY, "room-closed")
    wire.apply(wire.hub.close_all())
    assert wire.closed[a] == wire.closed[b] == (CLOSE_POLICY, "room-closed") and wire.hub.sockets == 0
