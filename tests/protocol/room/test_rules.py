"""Bad cases of the sans-IO room: each is refused with its code and nothing crashes."""


import pytest

from protocol.actions import Misbehaviour
from protocol.identity.keys import Identity
from protocol.room.events import ErrorReported
from protocol.room.invitation import parse_secret, role_proof
from protocol.room.ready import build_declaration
from protocol.room.messages import GridCommitRequest, JoinRequest, ReadyDeclarationMsg, Relay
from protocol.versions.collection import VersionRequest
from protocol.versions.record import BUILTIN_ASSETS_VERSION, COMPARED_FIELDS, DERIVE_LOGIC_VERSION, node_version_info
from protocol.encoding.wire import encode_message
from tests.protocol.room.harness import LOADOUT, FakeAssets, Net, succeed

A, B, C, D, E = (Identity(bytes([i]) * 32) for i in range(1, 6))
DIFFERENT = {
    "client_version": "1.0.0", "rapier_version": "sim_core/2", "protocol_version": "1.0.1",
    "derive_logic_version": DERIVE_LOGIC_VERSION + 1, "builtin_assets_version": BUILTIN_ASSETS_VERSION + 1,
    "economy_config_version": 4,
}


def codes(net, who=None):
    return [e["code"] for e in net.of(who, "error")]


@pytest.mark.parametrize(("token", "field"), COMPARED_FIELDS)
def test_version_mismatch_in_each_field_blocks_the_room(token, field):
    net = Net(A, min_players=2)
    odd = node_version_info("sim_core/1", 1, 0, "t").to_wire() | {field: DIFFERENT[field]}
    from protocol.versions.record import ClientVersionInfo

    net.add_member(B, info=ClientVersionInfo(**odd))
    lines = {e["peer"]: e for e in net.of(A.peer_id, "compatibility")}
    assert lines[B.peer_id]["compatible"] is False and lines[B.peer_id]["reasons"] == [token]
    mine = node_version_info("sim_core/1", 1, 0, "t").to_wire()[field]
    assert lines[B.peer_id]["differences"] == [f"your {field} {mine}, peer's {DIFFERENT[field]}"]
    theirs = {e["peer"]: e for e in net.of(B.peer_id, "compatibility")}
    assert theirs[A.peer_id]["reasons"] == [token]
    assert net.host.phase == "collecting" and not net.started
    assert not any(m.declaration for m in net.host.members.values())


def test_compatible_members_see_a_line_per_peer():
    net = Net(A, min_players=3)
    net.add_member(B)
    net.add_member(C)
    for who in (A, B, C):
        lines = {e["peer"]: e["compatible"] for e in net.of(who.peer_id, "compatibility")}
        assert {p for p, ok in lines.items() if ok} == {A.peer_id, B.peer_id, C.peer_id} - {who.peer_id}


def test_wrong_or_missing_invitation_is_rejected_and_the_seat_freed():
    net = Net(A, max_players=2)
    net.add_member(B, secret="A" * 32)
    assert codes(net, B.peer_id) == ["join-rejected"] and (B.peer_id, "join-rejected") in net.closed
    transcript = b"t" * 32
    empty = JoinRequest(net.room_id, "participant", b"", "x", "")
    net.route(net.host.join(C.peer_id, transcript, empty, net.now), None)
    assert (C.peer_id, "join-rejected") in net.closed
    assert net.host.seats["participant"].occupied == 1
    net.add_member(D)
    assert D.peer_id in net.host.members


def test_proof_is_bound_to_the_link_transcript():
    net = Net(A)
    secret = parse_secret(net.secrets["participant"])
    stolen = role_proof(secret, b"other link", net.room_id, "participant", B.peer_id, A.peer_id)
    request = JoinRequest(net.room_id, "participant", stolen, "b", "")
    net.route(net.host.join(B.peer_id, b"this link", request, net.now), None)
    assert (B.peer_id, "join-rejected") in net.closed


def test_full_room_and_spectator_verdicts():
    net = Net(A, max_players=2, max_spectators=1, min_players=2)
    net.add_member(B, auto_ready=False)
    net.add_member(C, auto_ready=False)
    assert codes(net, C.peer_id) == ["join-rejected"]
    net.add_member(D, role="spectator")
    assert D.peer_id in net.host.members
    net.add_member(E, role="spectator")
    assert codes(net, E.peer_id) == ["spectator-full"]


def test_spectators_disabled():
    net = Net(A, max_spectators=0)
    net.add_member(B, role="spectator")
    assert codes(net, B.peer_id) == ["spectators-disabled"]


def test_forged_replayed_and_impersonated_declarations():
    net = Net(A, min_players=3)
    net.add_member(B, auto_ready=False)
    net.add_member(C, auto_ready=False)
    state = net.host.members[B.peer_id]
    good = build_declaration(B, net.room_id, net.host.config.digest, state.epoch,
                             node_version_info("sim_core/1", 1, 0, "t"), [LOADOUT], net.now)
    forged = good.to_wire() | {"payload": good.payload | {"carRotation": [LOADOUT, LOADOUT]}}
    net.route(net.host.receive(B.peer_id, ReadyDeclarationMsg(forged), net.now), None)
    assert codes(net)[-1] == "invalid-signature"
    net.route(net.host.receive(C.peer_id, ReadyDeclarationMsg(good.to_wire()), net.now), None)
    assert codes(net)[-1] == "ready-invalid"  # B's declaration on C's link
    net.route(net.host.receive(B.peer_id, ReadyDeclarationMsg(good.to_wire()), net.now), None)
    assert net.host.members[B.peer_id].declaration is not None
    net.route(net.host.receive(B.peer_id, ReadyDeclarationMsg(good.to_wire()), net.now), None)
    assert codes(net)[-1] == "nonce-replay"
    stale = build_declaration(
        C, net.room_id, net.host.config.digest, 0, node_version_info("sim_core/1", 1, 0, "t"), [LOADOUT], net.now
    )
    net.route(net.host.receive(C.peer_id, ReadyDeclarationMsg(stale.to_wire()), net.now), None)
    assert codes(net)[-1] == "ready-stale"
    late = build_declaration(C, net.room_id, net.host.config.digest, net.host.members[C.peer_id].epoch,
                             node_version_info("sim_core/1", 1, 0, "t"), [LOADOUT], net.now - 31_000)
    net.route(net.host.receive(C.peer_id, ReadyDeclarationMsg(late.to_wire()), net.now), None)
    assert codes(net)[-1] == "timestamp-out-of-range"


def test_relay_origin_is_attested_by_the_host():
    net = Net(A, min_players=3)
    net.add_member(B)
    net.add_member(C)
    body = encode_message(VersionRequest(sender=C.peer_id))  # B pretends to be C
    actions = net.host.receive(B.peer_id, Relay("", "*", body), net.now)
    assert {a.message.origin for a in actions} == {B.peer_id}
    # members refuse the impersonated request (origin B, claimed sender C) and blame its origin
    replies = net.members[C.peer_id].receive(A.peer_id, actions[0].message, net.now)
    assert [(type(a), getattr(a, "code", None)) for a in replies] == [
        (Misbehaviour, "relay-sender-mismatch"), (ErrorReported, "relay-sender-mismatch")]
    assert replies[0].peer == B.peer_id


def test_unusable_asset_blocks_the_ack_and_the_start():
    net = Net(A, min_players=2)
    bad = dict(LOADOUT, motor="ipfs-unusable-motor")
    net.members.pop(A.peer_id).assets = FakeAssets()
    net.members[A.peer_id] = net.host_member
    net.add_member(B, rotation=[bad], auto_ready=False)
    net.route(net.members[B.peer_id].declare_ready(net.now), B.peer_id)
    refused = net.of(None, "ready-set-refused")
    assert refused and refused[0]["code"] == "asset-version-unusable"
    # the host's seat refused B's car, nobody accepts it: B's Ready is withdrawn, a strike, everyone is told
    decision = {"participant": B.peer_id, "decision": "declaration-refused", "code": "asset-version-unusable",
                "detail": "asset-version-unusable:ipfs-unusable-motor", "by": [A.peer_id], "strikes": 1, "removed": False}
    assert net.of(None, "room-decision") == net.of(B.peer_id, "room-decision") == [decision]
    assert net.host.phase == "collecting" and net.host.members[B.peer_id].declaration is None
    assert net.of(B.peer_id, "ready-withdrawn")[-1]["reason"] == "declaration-refused"
    assert not net.started


def test_missing_assets_are_fetched_from_their_owner():
    net = Net(A, min_players=3)
    have = set(FakeAssets().rotation_refs([LOADOUT]))
    net.add_member(B, rotation=[dict(LOADOUT, body="cid-body-of-b")])
    net.add_member(C, assets=FakeAssets(have))
    fetch = [f for f in net.fetches if f.owner == B.peer_id]
    assert fetch and fetch[0].refs == ["cid-body-of-b"]


def test_cancel_ready_and_leaving_invalidate_the_ceremony():
    net = Net(A, min_players=3)
    net.add_member(B)
    net.add_member(C, auto_ready=False)
    net.route(net.members[B.peer_id].cancel_ready(), B.peer_id)
    assert net.host.members[B.peer_id].declaration is None
    assert net.host.members[A.peer_id].declaration is not None  # others' declarations survive
    net.route(net.members[C.peer_id].declare_ready(net.now), C.peer_id)
    assert net.host.phase == "collecting"  # B is not ready
    net.route(net.members[B.peer_id].declare_ready(net.now), B.peer_id)
    assert net.host.phase == "countdown"


def test_a_leaver_during_verification_sends_the_room_back_to_collecting():
    net = Net(A, min_players=2)
    net.deaf[B.peer_id] = (GridCommitRequest,)
    net.add_member(B)
    assert net.host.phase == "grid-commit"  # A and B acked; B never commits
    net.add_member(C, auto_ready=False)
    assert net.host.phase == "collecting"  # a newcomer invalidates the acks, not the declarations
    assert net.host.members[A.peer_id].declaration is not None
    net.drop(B.peer_id)
    assert B.peer_id not in net.host.members and net.host.phase == "collecting"
    assert net.of(A.peer_id, "grid-cancelled")[0]["reason"] == "membership-changed"


def test_grid_timeout_when_a_participant_never_commits():
    net = Net(A, min_players=3)
    net.deaf[C.peer_id] = (GridCommitRequest,)  # C acks, then never commits
    net.add_member(B)
    net.add_member(C)
    assert net.host.phase == "grid-commit"
    net.advance(14_999)
    assert net.host.phase == "grid-commit"
    net.advance(1)
    assert net.of(None, "grid-cancelled") == [{"missing": [C.peer_id]}]
    assert net.host.phase == "collecting" and net.host.members[C.peer_id].declaration is None
    assert net.of(B.peer_id, "grid-cancelled")[0]["missing"] == [C.peer_id]


@pytest.mark.parametrize(("leavers", "continues"), [(1, True), (2, False)])
def test_countdown_disconnects_by_strict_majority(leavers, continues):
    people = [A, B, C, D]
    net = Net(A, min_players=4)
    for p in people[1:]:
        net.add_member(p)
    assert net.host.phase == "countdown"
    for p in people[4 - leavers:]:
        net.drop(p.peer_id)
    net.advance(5_000)
    if continues:
        assert set(net.started) == {A.peer_id, B.peer_id, C.peer_id}
        assert {tuple(s.pre_start_disconnects) for s in net.started.values()} == {(D.peer_id,)}
    else:
        assert not net.started and net.host.phase == "collecting"
        assert net.of(A.peer_id, "countdown-cancelled")[0]["leavers"] == [C.peer_id, D.peer_id]
        assert all(m.declaration is None for m in net.host.members.values())


def test_tampered_match_start_is_ignored():
    net = Net(A, min_players=2)
    net.add_member(B)
    member = net.members[B.peer_id]
    from protocol.room.messages import MatchStart

    bad = MatchStart("0" * 64, member.locked.started_at, member.locked.digest, [], {})
    misbehaviour, error = member.receive(A.peer_id, bad, net.now)
    assert misbehaviour == Misbehaviour(A.peer_id, "match-start-invalid")  # the host sent it: the host is blamed
    assert (error.EVENT, error.code) == ("error", "match-start-invalid")
    assert not member.started


def test_tampered_package_is_refused():
    net = Net(A, min_players=2)
    net.add_member(B, auto_ready=False)
    member = net.members[B.peer_id]
    net.route(member.declare_ready(net.now), B.peer_id)
    package = dict(net.host.package)
    from protocol.room.messages import LockedStartPackageMsg

    for change in ({"startedAt": package["startedAt"] + 1}, {"matchId": "f" * 64}, {"acks": package["acks"][:1]}):
        result = member.receive(A.peer_id, LockedStartPackageMsg(package | change), net.now)
        assert [type(a) for a in result] == [Misbehaviour, ErrorReported], change
        assert result[0].peer == A.peer_id and result[0].code == result[1].code, change


def test_host_succession_while_waiting():
    net = Net(A, min_players=3, max_spectators=2)
    net.add_member(B, auto_ready=False)
    net.add_member(C, auto_ready=False)
    net.add_member(D, role="spectator")
    assert not net.started
    epochs = {p: m.epoch for p, m in net.host.members.items()}
    moved = succeed(net, B, [C])
    assert moved.host.identity.peer_id == B.peer_id
    assert list(moved.host.members) == [B.peer_id, C.peer_id]
    assert {p: m.epoch for p, m in moved.host.members.items()} == {B.peer_id: epochs[B.peer_id], C.peer_id: epochs[C.peer_id]}
    assert moved.host.secrets["spectator"] is None  # the successor never knew it: spectating closes
    moved.add_member(D, role="spectator")
    assert [e["code"] for e in moved.of(D.peer_id, "error")] == ["spectators-disabled"]
    assert moved.host.phase == "collecting"  # min players 3: B and C wait
    moved.add_member(E)
    assert moved.host.phase == "countdown"


def test_succession_reaches_a_match():
    net = Net(A, min_players=2)
    net.add_member(B, auto_ready=False)
    moved = succeed(net, B, [], auto_ready=True)
    moved.add_member(C)
    assert moved.host.phase == "countdown"
    moved.advance(5_000)
    assert set(moved.started) == {B.peer_id, C.peer_id}


def test_no_succession_after_the_start_or_for_spectators():
    net = Net(A, min_players=2)
    net.add_member(B)
    net.advance(5_000)
    codes_after = [a.code for a in net.members[B.peer_id].host_lost(net.now) if isinstance(a, ErrorReported)]
    assert codes_after == ["host-lost"]


def test_room_closed_after_the_start_and_voluntary_leave():
    net = Net(A, min_players=2)
    net.add_member(B)
    net.advance(5_000)
    assert net.started
    net.add_member(C)
    assert codes(net, C.peer_id) == ["room-closed"]
    fresh = Net(A, min_players=3)
    fresh.add_member(B)
    fresh.route(fresh.members[B.peer_id].leave(), B.peer_id)
    assert B.peer_id not in fresh.host.members
    assert fresh.of(A.peer_id, "member-left") == [{"peer": B.peer_id}]
