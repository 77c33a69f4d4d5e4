"""The host assigns each spectator a source racer at match start (spec/netcode.md §6.4)."""

from __future__ import annotations


from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.room.messages import MatchStart
from protocol.spectate.assign import assign_sources, check_sources
from tests.protocol.room.harness import Net
from tests.coded import raises_coded

PEOPLE = [Identity(bytes([i + 1]) * 32) for i in range(8)]


def test_least_loaded_then_roster_order() -> None:
    assert assign_sources(["a", "b", "c"], ["s1", "s2", "s3", "s4", "s5"]) == {
        "s1": "a", "s2": "b", "s3": "c", "s4": "a", "s5": "b"}
    assert assign_sources(["a", "b", "c"], ["s1", "s2"], load={"a": 2, "b": 1}) == {"s1": "c", "s2": "b"}
    assert assign_sources([], ["s1"]) == {}


def test_match_start_carries_the_assignment_to_every_member() -> None:
    host, *players = PEOPLE[:3]
    spectators = PEOPLE[3:5]
    net = Net(host, min_players=3, max_spectators=2)
    for s in spectators:
        net.add_member(s, role="spectator")
    for p in players:
        net.add_member(p)
    net.advance(5_000)
    assert set(net.started) == {p.peer_id for p in PEOPLE[:5]}  # spectators are kept past the start
    roster = sorted(p.peer_id for p in PEOPLE[:3])
    expected = {spectators[0].peer_id: roster[0], spectators[1].peer_id: roster[1]}
    assert all(s.spectator_sources == expected for s in net.started.values())


def test_an_assignment_that_is_not_one_to_one_is_refused() -> None:
    with raises_coded(ProtocolError, "match-start-invalid", match="cover exactly"):
        check_sources({"s1": "a"}, ["s1", "s2"], ["a"])
    with raises_coded(ProtocolError, "match-start-invalid", match="not a racer"):
        check_sources({"s1": "z"}, ["s1"], ["a"])
    host, player, watcher = PEOPLE[:3]
    net = Net(host, min_players=2, max_spectators=1)
    net.add_member(watcher, role="spectator")
    net.deaf[player.peer_id] = (MatchStart,)  # the real match-start never reaches it: a forged one does
    member = net.add_member(player)
    net.advance(5_000)
    locked = member.locked
    assert locked is not None and not member.started
    actions = member.receive(host.peer_id, MatchStart(locked.match_id, locked.started_at, locked.digest, [], {}), net.now)
    assert [a.code for a in actions if hasattr(a, "code")][0] == "match-start-invalid" and not member.started
