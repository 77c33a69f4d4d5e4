"""Every room message that changes state is accepted only from the link it concerns (docs/rooms.md,
"Who may change what"): a member changes only its own Ready, cars and seat, only the host's link speaks
for the room, and a relayed message speaks only for the origin the host attests. Whatever is refused
changes nothing and is blamed, with its code, on whoever sent it."""

from dataclasses import replace

from protocol.actions import Misbehaviour, Send
from protocol.encoding.wire import encode_message
from protocol.identity.keys import Identity
from protocol.room.messages import (
    CancelReady,
    Leave,
    ReadyDeclarationMsg,
    ReadyRefusal,
    ReadySetRefuse,
    ReadySetRequest,
    Relay,
    RoomState,
)
from protocol.room.ready import build_declaration
from protocol.versions.collection import VersionInfoMessage
from tests.protocol.room.harness import LOADOUT, Net

A, B, C, S = (Identity(bytes([i]) * 32) for i in range(1, 5))


def ready(net, who):
    return net.host.members[who.peer_id].declaration is not None


def codes(net, who=None):
    return [e["code"] for e in net.of(who, "error")]


def room_of_three():
    """A (host) and B are Ready; C is in the room but not Ready, so the room waits in ``collecting``."""
    net = Net(A, min_players=3)
    net.add_member(B)
    net.add_member(C, auto_ready=False)
    assert ready(net, A) and ready(net, B) and not ready(net, C) and net.host.phase == "collecting"
    return net


def declaration_of(net, who):
    return build_declaration(who, net.room_id, net.host.config.digest, net.host.members[who.peer_id].epoch,
                             net.members[who.peer_id].my_info, [LOADOUT], net.now)


def test_a_member_cannot_declare_ready_for_another():
    net = Net(A, min_players=3)
    net.add_member(B, auto_ready=False)
    net.add_member(C, auto_ready=False)
    theirs = declaration_of(net, B)  # B's genuine signed declaration, sent on C's link
    net.route(net.host.receive(C.peer_id, ReadyDeclarationMsg(theirs.to_wire()), net.now), None)
    assert not ready(net, B) and not ready(net, C)
    assert net.blamed(None) == [(C.peer_id, "ready-invalid")] and codes(net) == ["ready-invalid"]
    # answered on C's link only (C never declared, so its machine has nothing to report); B hears nothing
    assert not net.of(C.peer_id, "ready-refused") and not net.of(B.peer_id, "ready-refused")
    actions = net.host.receive(C.peer_id, ReadyDeclarationMsg(theirs.to_wire()), net.now)
    (answer,) = [a for a in actions if isinstance(a, Send)]
    assert answer.peer == C.peer_id and isinstance(answer.message, ReadyRefusal)
    assert (answer.message.nonce, answer.message.code) == (theirs.nonce, "ready-invalid")


def test_a_cancel_ready_withdraws_only_its_senders_own_ready():
    net = room_of_three()
    epoch = net.host.state_epoch
    net.route(net.host.receive(C.peer_id, CancelReady("player"), net.now), None)  # C is not Ready: nothing to withdraw
    assert ready(net, A) and ready(net, B)
    assert net.host.state_epoch == epoch  # no room-state broadcast
    assert [e for e in net.of(None, "ready") if e["ready"] is False] == []  # and no event
    assert net.blamed(None) == []
    net.route(net.members[B.peer_id].cancel_ready(), B.peer_id)
    assert not ready(net, B) and ready(net, A)
    assert [e for e in net.of(None, "ready") if e["ready"] is False] == [{"peer": B.peer_id, "ready": False}]


def test_a_spectator_cannot_cancel_a_ready_nor_refuse_a_ready_set():
    net = Net(A, min_players=3)
    net.add_member(S, role="spectator")
    net.deaf[C.peer_id] = (ReadySetRequest,)  # C never answers: the ReadySet waits for its ack
    net.add_member(B)
    net.add_member(C)
    assert net.host.phase == "verifying"
    digest = net.host.ceremony.ready_digest
    net.route(net.host.receive(S.peer_id, CancelReady("player"), net.now), None)
    net.route(net.host.receive(S.peer_id, ReadySetRefuse(digest, "asset-missing", "lies", []), net.now), None)
    assert net.host.phase == "verifying" and net.host.ceremony.ready_digest == digest  # the ceremony stands
    assert net.blamed(None) == [(S.peer_id, "not-allowed"), (S.peer_id, "not-allowed")]
    assert not net.of(None, "ready-set-refused") and not net.of(None, "grid-cancelled")
    # a participant's refusal of an earlier ReadySet crossed a change of the room: dropped, nobody blamed
    net.route(net.host.receive(B.peer_id, ReadySetRefuse("00" * 32, "asset-missing", "old", []), net.now), None)
    assert not net.of(None, "ready-set-refused") and len(net.blamed(None)) == 2
    net.route(net.host.receive(B.peer_id, ReadySetRefuse(digest, "asset-missing", "now", []), net.now), None)
    assert net.of(None, "ready-set-refused") == [{"peer": B.peer_id, "code": "asset-missing", "detail": "now"}]


def test_a_leave_removes_only_its_sender():
    net = room_of_three()
    net.route(net.host.receive(C.peer_id, Leave("voluntary"), net.now), None)
    assert C.peer_id not in net.host.members and ready(net, A) and ready(net, B)
    assert net.of(None, "member-left") == [{"peer": C.peer_id, "reason": "voluntary"}]
    assert (C.peer_id, "voluntary") in net.closed and net.blamed(None) == []


def test_a_relay_cannot_name_another_member_as_its_origin():
    net = room_of_three()
    body = encode_message(VersionInfoMessage(sender=B.peer_id, payload={}))
    actions = net.host.receive(C.peer_id, Relay(B.peer_id, "*", body), net.now)
    assert actions[0] == Misbehaviour(C.peer_id, "relay-origin-invalid")
    assert not [a for a in actions if isinstance(a, Send)]  # nothing relayed


def test_a_relayed_version_record_must_be_the_origins_own():
    net = room_of_three()
    forged = Relay(C.peer_id, B.peer_id, encode_message(VersionInfoMessage(sender=A.peer_id, payload={})))
    member = net.members[B.peer_id]
    before = dict(member.collector.collected)
    actions = member.receive(A.peer_id, forged, net.now)
    assert actions[0] == Misbehaviour(C.peer_id, "relay-sender-mismatch")  # the origin, never the host
    assert member.collector.collected == before


def forged_state(net) -> RoomState:
    """The room as C would like B to see it: B not Ready, the host renamed, and newer than any state."""
    real = net.host.state_message()
    members = [replace(m, ready=False) if m.peerId == B.peer_id else m for m in real.members]
    members[0] = replace(members[0], nickname="evil")
    return replace(real, members=members, stateEpoch=real.stateEpoch + 100)


def test_a_member_cannot_forge_the_room_state():
    net = room_of_three()
    member = net.members[B.peer_id]
    state = member.state
    forged = forged_state(net)
    # to the host: a room-state is the host's to send
    net.route(net.host.receive(C.peer_id, forged, net.now), None)
    assert (C.peer_id, "unexpected-message") in net.blamed(None) and ready(net, B)
    # relayed to B: only version and asset messages travel in a relay, and the fault is the origin's
    actions = member.receive(A.peer_id, Relay(C.peer_id, B.peer_id, encode_message(forged)), net.now)
    assert actions[0] == Misbehaviour(C.peer_id, "unknown-message-type")
    # straight to B's machine from anyone but the host
    actions = member.receive(C.peer_id, forged, net.now)
    assert actions[0] == Misbehaviour(C.peer_id, "not-from-host")
    assert member.state is state and member._member(B.peer_id).ready
    assert not net.of(B.peer_id, "ready-withdrawn")
