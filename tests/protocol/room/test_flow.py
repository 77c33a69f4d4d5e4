import pytest

from protocol.identity.keys import Identity
from tests.protocol.room.harness import Net


def ids(n):
    return [Identity(bytes([i + 1]) * 32) for i in range(n)]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_everyone_reaches_the_same_match(n):
    people = ids(n)
    net = Net(people[0], min_players=n)
    for ident in people[1:]:
        assert net.host.phase == "collecting"
        net.add_member(ident)
    assert not net.started and net.host.phase == "countdown"
    net.advance(5_000)
    assert set(net.started) == {p.peer_id for p in people}
    match_ids = {s.locked.match_id for s in net.started.values()}
    assert len(match_ids) == 1
    slots = {s.locked.slots(0)[people[0].peer_id] for s in net.started.values()}
    assert len(slots) == 1
