"""Fault in the type: a peer's bad message is blamed on that peer (``Misbehaviour``) beside the ``error``
event users have always seen; this node's own seat is never blamed; a ``LocalError`` (a bug or a misuse
of this node) is raised to the caller, never turned into a peer's fault, and a machine is back to its state
before the message that met the bug."""

import pytest

from protocol.actions import Misbehaviour, Send
from protocol.encoding.wire import encode_message
from protocol.errors import LocalError, PeerError
from protocol.identity.keys import Identity
from protocol.room.events import ErrorReported
from protocol.room.host import HostRoom
from protocol.room.member import MemberRoom
from protocol.room.messages import MatchStart, ReadyDeclarationMsg, ReadyRefusal, Relay
from protocol.room.ready import build_declaration
from protocol.transaction import FaultOutcome, MachineFault
from protocol.versions.collection import VersionRequest
from protocol.versions.record import node_version_info
from tests.protocol.room.harness import LOADOUT, FakeAssets, Net
from tests.coded import raises_coded

A, B, C = (Identity(bytes([i]) * 32) for i in range(1, 4))
INFO = node_version_info("sim_core/1", 1, 0, "t")


def codes(net, who=None):
    return [e["code"] for e in net.of(who, "error")]


def test_a_forged_declaration_is_blamed_on_its_sender_shown_to_the_host_and_answered():
    net = Net(A, min_players=3)
    net.add_member(B, auto_ready=False)
    good = build_declaration(B, net.room_id, net.host.config.digest, net.host.members[B.peer_id].epoch, INFO, [LOADOUT], net.now)
    forged = good.to_wire() | {"payload": good.payload | {"carRotation": [LOADOUT, LOADOUT]}}
    actions = net.host.receive(B.peer_id, ReadyDeclarationMsg(forged), net.now)
    detail = "the signature does not match the signer and content"
    assert actions == [
        Misbehaviour(B.peer_id, "invalid-signature"),
        ErrorReported("invalid-signature", f"from {B.peer_id[-4:]}: {detail}"),
        Send(B.peer_id, ReadyRefusal(good.nonce, "invalid-signature", detail)),  # only on the sender's link
    ]
    assert net.host.members[B.peer_id].declaration is None


def test_a_message_of_the_wrong_direction_is_an_unexpected_message():
    net = Net(A, min_players=3)
    net.add_member(B, auto_ready=False)
    wrong = MatchStart("0" * 64, 0, "0" * 64, [], {})  # host -> member only
    actions = net.host.receive(B.peer_id, wrong, net.now)
    assert actions == [
        Misbehaviour(B.peer_id, "unexpected-message"), ErrorReported("unexpected-message", f"{B.peer_id[-4:]} sent match-start"),
    ]
    member = net.members[B.peer_id]
    assert member.receive(A.peer_id, ReadyDeclarationMsg({}), net.now) == [
        Misbehaviour(A.peer_id, "unexpected-message"), ErrorReported("unexpected-message", "host sent ready-declaration"),
    ]


def test_a_non_member_is_ignored_by_the_host_and_a_non_host_is_blamed_by_a_member():
    net = Net(A, min_players=3)
    net.add_member(B, auto_ready=False)
    # a departing member's last messages may still arrive while its link closes: no effect, no blame
    assert net.host.receive(C.peer_id, ReadyDeclarationMsg({}), net.now) == []
    # nothing but the host's link reaches a member machine: anyone else speaking for the room is at fault
    assert net.members[B.peer_id].receive(C.peer_id, MatchStart("0" * 64, 0, "0" * 64, [], {}), net.now) == [
        Misbehaviour(C.peer_id, "not-from-host"),
        ErrorReported("not-from-host", f"{C.peer_id[-4:]} sent match-start but is not this room's host"),
    ]


def test_the_hosts_own_seat_is_never_blamed():
    net = Net(A, min_players=2)
    net.add_member(B)
    assert net.host.phase == "countdown"
    net.route(net.host_member.declare_ready(net.now), A.peer_id)  # the host's player types "ready" too late
    assert codes(net)[-1] == "not-allowed"  # shown, as before
    assert net.blamed(None) == [] and net.blamed(A.peer_id) == []
    bad = MatchStart("0" * 64, 0, "0" * 64, [], {})  # and the host's member machine never blames its own host
    assert net.host_member.receive(A.peer_id, bad, net.now) == [
        ErrorReported("match-start-invalid", "match-start does not match the verified start package"),
    ]


def test_a_bad_relayed_body_is_blamed_on_its_origin_not_the_host():
    net = Net(A, min_players=3)
    net.add_member(B, auto_ready=False)
    net.add_member(C, auto_ready=False)
    member = net.members[B.peer_id]
    actions = member.receive(A.peer_id, Relay(C.peer_id, B.peer_id, b"\xc1 not msgpack"), net.now)
    assert actions == [Misbehaviour(C.peer_id, "malformed-frame"), ErrorReported("malformed-frame", actions[1].message)]
    request = Relay(C.peer_id, B.peer_id, encode_message(VersionRequest(sender=C.peer_id)))
    assert not any(isinstance(a, Misbehaviour) for a in member.receive(A.peer_id, request, net.now))


def test_a_local_error_in_a_host_handler_propagates():
    net = Net(A, min_players=3)
    net.add_member(B, auto_ready=False)

    def broken_check(envelope, now_ms):
        raise LocalError("bug", "a bug in this node")

    net.host.verifier.check = broken_check
    good = build_declaration(B, net.room_id, net.host.config.digest, net.host.members[B.peer_id].epoch, INFO, [LOADOUT], net.now)
    with raises_coded(MachineFault, "internal-error") as info:
        net.host.receive(B.peer_id, ReadyDeclarationMsg(good.to_wire()), net.now)
    assert info.value.outcome is FaultOutcome.RESTORED and not isinstance(info.value, PeerError)
    assert isinstance(info.value.__cause__, LocalError) and info.value.__cause__.code == "bug"


class BuggyAssets(FakeAssets):
    """The shell's asset code with a bug: checking a car fails as this node's own error."""

    def check_rotation(self, peer, rotation):
        raise LocalError("asset-store-broken", "the local asset store failed")


def test_a_local_error_in_a_member_handler_propagates_instead_of_refusing_the_ready_set():
    net = Net(A, min_players=2)
    member = net.add_member(B, assets=BuggyAssets(), auto_ready=False)
    with raises_coded(MachineFault, "internal-error") as info:  # raised while B checks the ReadySet the host sends
        net.route(member.declare_ready(net.now), B.peer_id)
    assert info.value.__cause__.code == "asset-store-broken" and info.value.outcome is FaultOutcome.RESTORED
    assert not net.blamed(B.peer_id) and "asset-store-broken" not in codes(net, B.peer_id)


def test_local_misuse_of_the_machines_raises_local_errors():
    net = Net(A, min_players=3)
    spectator = net.add_member(B, role="spectator")
    with pytest.raises(LocalError) as info:
        spectator.declare_ready(net.now)
    assert info.value.code == "not-allowed"
    with pytest.raises(LocalError) as info:
        MemberRoom(C, net.room_id, A.peer_id, "referee", INFO, FakeAssets())
    assert info.value.code == "role-invalid"
    with pytest.raises(LocalError) as info:  # only a member of the last room state may succeed its host
        HostRoom.succeed(C, net.host.state_message(), A.peer_id, bytes(24), [], net.now)
    assert info.value.code == "succession-invalid"


def test_a_bug_halfway_through_a_host_handler_leaves_the_room_as_it_was_before_the_message():
    """The host's handler of B's declaration has stored it and spent its nonce when a bug raises: the
    room is put back (no declaration, the nonce unspent), so the same declaration, sent again once the
    bug is gone, is taken."""
    net = Net(A, min_players=3)
    net.add_member(B, auto_ready=False)
    good = build_declaration(B, net.room_id, net.host.config.digest, net.host.members[B.peer_id].epoch, INFO, [LOADOUT], net.now)
    epoch = net.host.state_epoch

    def bug(peer):
        raise RuntimeError("a bug after the declaration was stored")

    net.host.strikes.ready = bug
    with raises_coded(MachineFault, "internal-error") as info:
        net.host.receive(B.peer_id, ReadyDeclarationMsg(good.to_wire()), net.now)
    assert info.value.outcome is FaultOutcome.RESTORED and isinstance(info.value.__cause__, RuntimeError)
    assert net.host.members[B.peer_id].declaration is None and net.host.state_epoch == epoch
    del net.host.strikes.ready  # the bug is gone
    net.route(net.host.receive(B.peer_id, ReadyDeclarationMsg(good.to_wire()), net.now), None)
    assert net.host.members[B.peer_id].declaration is not None and not net.blamed(None)


def test_a_bug_halfway_through_a_member_handler_leaves_the_member_as_it_was_before_the_message():
    """B's car chooser fails while B takes a room state it has already stored: B is put back to the
    state before, so the same room state, sent again once the chooser works, is taken (not stale)."""
    net = Net(A, min_players=3)
    member = net.add_member(B, auto_ready=False)
    net.add_member(C, auto_ready=False)
    seen = member.state.stateEpoch
    chooser = member.choose_car
    member.rotation = None

    def broken(rounds):
        raise RuntimeError("the car chooser failed")

    member.choose_car = broken
    state = net.host.state_message()
    assert state.stateEpoch > seen
    with raises_coded(MachineFault, "internal-error") as info:
        member.receive(A.peer_id, state, net.now)
    assert info.value.outcome is FaultOutcome.RESTORED and member.state.stateEpoch == seen
    member.choose_car = chooser
    net.route(member.receive(A.peer_id, state, net.now), B.peer_id)
    assert member.state.stateEpoch >= state.stateEpoch and member.rotation == [LOADOUT]
