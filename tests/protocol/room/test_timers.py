"""A healthy room never waits on a timer: no message is lost to join ordering, no request is repeated.

Sans-IO, on the in-memory star of ``harness.py``: time only moves when a test calls ``advance``, so a
room that reaches its countdown without it used no timer at all.
"""

from protocol.identity.keys import Identity
from protocol.room.actions import Send
from protocol.room.messages import Relay
from protocol.versions.collection import VersionInfoMessage, VersionRequest
from protocol.encoding.wire import decode_message, encode_message
from tests.protocol.room.harness import LOADOUT, FakeAssets, Net, fetching_room

A, B, C = (Identity(bytes([i]) * 32) for i in range(1, 4))


def test_a_version_request_ahead_of_the_room_state_is_answered():
    """The host's own seat once reached a newcomer's link before the room-state that lists the host.

    The newcomer dropped the request (a relay from a peer it did not list yet), the host never heard
    back and the room waited out VERSION_COLLECT_TIMEOUT_MS before the retry succeeded. Serving a
    request needs no membership (spec §3 ``serveVersionRequests``): the host attests the origin.
    """
    net = Net(A, min_players=3)
    newcomer = net.add_member(B, link=False)
    assert newcomer.state is None
    request = Relay(A.peer_id, B.peer_id, encode_message(VersionRequest(sender=A.peer_id)))
    (reply,) = newcomer.receive(A.peer_id, request, net.now)
    assert isinstance(reply, Send) and reply.peer == A.peer_id and reply.message.target == A.peer_id
    answer = decode_message(reply.message.body, {VersionInfoMessage.TYPE: VersionInfoMessage})
    assert answer == VersionInfoMessage(sender=B.peer_id, payload=newcomer.my_info.to_wire())


def test_a_ready_set_refused_while_an_asset_is_on_its_way_is_acked_when_it_arrives():
    """A late joiner's custom car reaches nodes that were already Ready: they refuse the ReadySet
    (asset-missing) while the fetch runs, and ack it as soon as the asset is stored; nothing times out."""
    body = "cid-body-of-c"
    net = fetching_room(A, B, C, body)
    assert {e["peer"] for e in net.of(None, "ready-set-refused")} == {A.peer_id, B.peer_id}
    assert sorted(f.owner for f in net.fetches) == [C.peer_id, C.peer_id]
    for peer in (A.peer_id, B.peer_id):
        member = net.members[peer]
        assert member.ready_blockers() == ["fetching the track or the assets of other members' cars"]
        member.assets.have.add(body)
        net.route(member.asset_stored(body, net.now), peer)
    assert net.host.phase == "countdown"
    net.advance(5_000)
    assert set(net.started) == {A.peer_id, B.peer_id, C.peer_id}


def test_a_node_still_fetching_a_car_does_not_declare_ready():
    have = set(FakeAssets().rotation_refs([LOADOUT]))
    net = Net(A, min_players=2)
    net.host_member.assets = FakeAssets(set(have))
    net.add_member(B, rotation=[dict(LOADOUT, body="cid-body-of-b")])
    assert net.host.members[A.peer_id].declaration is None and net.host.phase == "collecting"
    assert not net.of(None, "ready-set-refused")
    net.host_member.assets.have.add("cid-body-of-b")
    net.route(net.host_member.asset_stored("cid-body-of-b", net.now), A.peer_id)
    assert net.host.phase == "countdown"


def test_a_join_costs_each_member_one_request_and_one_answer():
    """Members keep the records they hold: the newcomer asks everyone once, each member asks only the
    newcomer, so a join relays 4 version messages per member already present (not a round with all)."""
    people = [Identity(bytes([i]) * 32) for i in range(1, 9)]
    net = Net(people[0], min_players=8)
    relayed: list[Relay] = []
    host_receive = net.host.receive

    def counting(peer, msg, now_ms):
        actions = host_receive(peer, msg, now_ms)
        relayed.extend(a.message for a in actions if isinstance(a, Send) and isinstance(a.message, Relay))
        return actions

    net.host.receive = counting
    for present, newcomer in enumerate(people[1:], start=1):
        relayed.clear()
        net.add_member(newcomer)
        assert len(relayed) == 4 * present, newcomer
    assert net.host.phase == "countdown"  # no timer was needed on the way
    for who in people:
        lines = net.of(who.peer_id, "compatibility")
        assert len(lines) == 7 and all(line["compatible"] for line in lines)  # one line per peer, never repeated
