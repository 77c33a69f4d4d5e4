"""Races over a bad network: every node behind its own impairment proxy (docs/node.md), on the autojump
clock, so delays are virtual time and a slow machine changes nothing the nodes see; and races with a
party in the middle of one link that alters or forges a frame."""

from __future__ import annotations

import pytest
import trio

from open4wd_node.net.impair import Direction, Impairment, ImpairmentProxy
from open4wd_node.net.link import LINK_COUNTERS
from protocol.identity.keys import Identity
from protocol.race.messages import RaceLeave
from tests.open4wd_node.net.peers import plain_frame
from tests.open4wd_node.race.nodes import race_behind_proxies, short_track
from tests.open4wd_node.race.test_races import replays, results

SHORT = short_track(8.0)
LONGER = short_track(20.0)  # a round of about 14 s: the attack comes 1.5 s into it


@pytest.mark.parametrize("n", [2, 4])
async def test_races_across_a_delaying_jittering_network_agree_and_finish(tmp_path, fast_clock, n):
    delay = Impairment(delay_ms=50, jitter_ms=30)  # each way: a round trip of 40..160 ms
    proxies = [ImpairmentProxy(up=delay, down=delay) for _ in range(n)]
    recorders, codes = await race_behind_proxies(tmp_path, proxies, track_bytes=SHORT)
    assert codes == {i: 0 for i in range(n)}
    res = results(recorders)
    assert {r["outcome"] for r in res} == {"finished"}
    assert len({str(r["standings"]) for r in res}) == 1
    assert all(r["agreed_hashes"] >= 1 and r["disagreements"] == 0 for r in res)
    assert all(r["rollbacks"] > 0 for r in res)  # the delay made every node predict and correct
    joins, mesh_pairs = n - 1, n * (n - 1) // 2
    assert sum(proxy.stats.connections for proxy in proxies) >= joins + mesh_pairs  # every link crossed a proxy
    replays(tmp_path, recorders)


ATTACKS = {
    "flip a frame to the listener": lambda proxy: proxy.flip_next_frame(Direction.UP),
    "flip a frame to the dialer": lambda proxy: proxy.flip_next_frame(Direction.DOWN),
    "inject a race-leave": lambda proxy: proxy.inject(
        Direction.UP, plain_frame(RaceLeave(reason="voluntary", signature=bytes(64)))),
}


@pytest.mark.parametrize("attack", ATTACKS)
async def test_a_party_in_the_middle_of_a_race_link_costs_one_link_and_the_race_agrees(tmp_path, fast_clock, attack):
    """One altered or forged frame on a race-mesh link mid-race: the receiving end closes the link as
    tampered, the dialling side dials again, the peer rejoins on the new link, and the race finishes in
    agreement, with nobody leaving (an injected leave changes nothing)."""
    n = 3
    peer_ids = [Identity(bytes([i + 1]) * 32).peer_id for i in range(n)]
    target = max(range(n), key=peer_ids.__getitem__)  # the greatest PeerId is dialled by every other node
    proxies = [ImpairmentProxy() for _ in range(n)]  # clean: only the attack alters anything
    live: dict = {}
    tampered_before = LINK_COUNTERS.tampered

    async def attack_mid_race() -> None:
        while not (live.get("recorders") and live["recorders"][target].of("race-start")):
            await trio.sleep(0.05)
        await trio.sleep(1.5)  # a second and a half into round 1: every mesh link is busy
        outcome = ATTACKS[attack](proxies[target])
        if outcome is not None:
            assert await outcome >= n - 1  # into every race link to the target

    async with trio.open_nursery() as nursery:
        nursery.start_soon(attack_mid_race)
        recorders, codes = await race_behind_proxies(tmp_path, proxies, track_bytes=LONGER, recorders_out=live)
    assert codes == {i: 0 for i in range(n)}
    res = results(recorders)
    assert {r["outcome"] for r in res} == {"finished"} and len({str(r["standings"]) for r in res}) == 1
    assert all(r["agreed_hashes"] >= 1 and r["disagreements"] == 0 for r in res)
    assert LINK_COUNTERS.tampered > tampered_before
    assert proxies[target].stats.connections > n - 1  # a race link was dialled again through the proxy
    # the link was dialled again within the grace: its peer was waited for meanwhile, not lost (docs/race.md,
    # "A broken link"); a peer-lost, should the new link be slower, must have been answered
    for rec in recorders:  # every peer lost came back (or the node that lost them all caught up, spec 6.2)
        back = {e["peer"] for e in rec.of("rejoin")}
        assert {e["peer"] for e in rec.of("peer-lost")} <= back or rec.of("caught-up")
        assert not rec.of("leave")  # nobody left, nor was made to by a forged leave
    replays(tmp_path, recorders)
