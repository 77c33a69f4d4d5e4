"""Whole nodes that reach each other through a real relay: every link relayed, or some; a relay that
alters bytes; a relay restarted mid-race."""

from __future__ import annotations

import trio

from tests.open4wd_node.race.nodes import race, short_track
from tests.open4wd_node.relay.helpers import start_relay

SHORT = short_track(8.0)


def agreed(recorders, codes, n):
    res = [rec.of("result")[0] for rec in recorders]
    assert codes == {i: 0 for i in range(n)}, [r["detail"] for r in res]
    assert {r["outcome"] for r in res} == {"finished"}
    assert len({str(r["standings"]) for r in res}) == 1 and len(res[0]["standings"]) == n
    assert all(r["agreed_hashes"] >= 1 and r["disagreements"] == 0 for r in res)
    return res


async def test_four_relay_only_nodes_room_and_race_agree(tmp_path, fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        recorders, codes = await race(tmp_path, 4, track_bytes=SHORT, reach={i: ("relay", (address,)) for i in range(4)})
        agreed(recorders, codes, 4)
        invite = recorders[0].of("room-created")[0]["invite"]
        assert invite.startswith("open4wd:///") and f"&relay={address}#" in invite  # no direct address at all
        ends = relay.metrics.exposition().decode()
        # every link was relayed: 3 joins to the host, and the 6 mesh pairs
        assert relay.metrics.circuits._value.get() >= 9, ends
        nursery.cancel_scope.cancel()


async def test_a_mixed_room_some_direct_some_relayed_races_and_agrees(tmp_path, fast_clock):
    """Node 0 (the host) listens directly and uses others' relays, node 1 also reserves (auto), node 2 is
    direct only, node 3 only reachable through the relay. The race mesh's dialler of a pair is the smaller
    PeerId (here 1 < 0 < 3 < 2): nodes 1 and 0 reach node 3 through the relay, everything else is direct."""
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        reach = {0: ("auto", ()), 1: ("auto", (address,)), 2: ("direct", ()), 3: ("relay", (address,))}
        recorders, codes = await race(tmp_path, 4, track_bytes=SHORT, reach=reach)
        res = agreed(recorders, codes, 4)
        peers = [r["peer"] for r in res]
        assert sorted(range(4), key=peers.__getitem__) == [1, 0, 3, 2]
        invite = recorders[0].of("room-created")[0]["invite"]
        assert "relay=" not in invite  # a host without relays hands out the invitation of before
        assert relay.metrics.circuits._value.get() == 2  # 0 → 3 and 1 → 3; the joins and the rest are direct
        assert set(relay.book.reservations) <= {peers[1], peers[3]}
        nursery.cancel_scope.cancel()
