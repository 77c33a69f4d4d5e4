"""Races over a bad network: every node behind its own impairment proxy (docs/node.md), on the autojump
clock, so delays are virtual time and a slow machine changes nothing the nodes see."""

from __future__ import annotations

import pytest

from open4wd_node.net.impair import Impairment, ImpairmentProxy
from tests.open4wd_node.race.nodes import race_behind_proxies, short_track
from tests.open4wd_node.race.test_races import replays, results

SHORT = short_track(8.0)


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
