"""Two nodes, each behind its own NAT in network namespaces the test makes and removes (root, TEST-NET
addresses only), race each other through ``open4wd-node signal`` and coturn in the lab's public namespace:
behind ordinary NATs their links are punched through with STUN, behind symmetric NATs (``--random-fully``)
STUN alone cannot connect two peers and coturn relays them; either way every hash agrees. (With TURN
offered too, aioice's aggressive nomination takes whichever pair answers first, which behind NATs that drop
unsolicited packets is often the relay: the punching case is therefore run with STUN only.)"""

from __future__ import annotations

import os
from functools import partial

import pytest
import trio

from tests.netns import lab_namespaces, missing_tools, nat_lab
from tests.open4wd_node.net.webrtc.nat_lab import lab_coturn, race_across_nats, run_scenario
from tests.services import require_binary

RACE_LIMIT_S = 300  # generous: only a hung race reaches it (a short race takes well under a minute)


def _require_lab() -> None:
    require_binary("turnserver", "coturn")
    for tool in missing_tools():
        require_binary(tool, "iptables" if tool == "iptables" else "iproute2")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")


@pytest.mark.parametrize(("symmetric", "turn", "paths"), [
    (False, False, {"srflx", "prflx"}),
    (True, True, {"relay"}),
], ids=["ordinary-nats-punch-through-with-stun", "symmetric-nats-race-through-turn"])
async def test_two_nodes_behind_nats_race_and_agree(tmp_path, symmetric, turn, paths):
    _require_lab()
    with nat_lab(symmetric=symmetric) as lab:
        assert lab.namespaces <= set(lab_namespaces())
        async with lab_coturn(lab) as coturn:
            with trio.fail_after(RACE_LIMIT_S):  # the lab's removal then kills every process of the race
                racers, codes = await trio.to_thread.run_sync(partial(race_across_nats, lab, coturn, tmp_path, turn=turn),
                                                              abandon_on_cancel=True)
    assert not lab.namespaces & set(lab_namespaces())  # every namespace of the lab is gone, its rules with it
    assert codes == {"host": 0, "joiner": 0}, {racer.name: racer.events[-3:] for racer in racers}
    created = racers[0].of("room-created")[0]
    assert created["listen"] == "" and f"&signal=ws://{lab.public}:" in created["invite"]  # reached through the service only
    results = {racer.name: racer.of("result")[0] for racer in racers}
    assert {r["outcome"] for r in results.values()} == {"finished"}, results
    assert len({str(r["standings"]) for r in results.values()}) == 1
    assert all(r["agreed_hashes"] >= 1 and r["disagreements"] == 0 for r in results.values()), results
    for racer, other in (racers, racers[::-1]):  # the room's link and the race mesh's, each reported once opened
        reports = racer.of("link-path")
        assert {report["peer"] for report in reports} == {results[other.name]["peer"]}, (racer.name, reports)
        assert {report["path"] for report in reports} <= paths, (racer.name, reports)
        assert all(report["rtt_ms"] is not None and report["rtt_ms"] >= 0 for report in reports)


async def test_behind_symmetric_nats_stun_alone_cannot_connect(tmp_path):
    """Why the symmetric case needs coturn: hole punching is what fails there (a coded refusal, in bounded time)."""
    _require_lab()
    with nat_lab(symmetric=True) as lab:
        offerer, answerer = await run_scenario(lab, tmp_path, turn=False, timeout_ms=6_000)
    assert offerer.get("error") in ("webrtc-connect-timeout", "webrtc-ice-failed"), offerer
    assert answerer.get("error") in ("webrtc-connect-timeout", "webrtc-ice-failed", "link-broken"), answerer


def test_the_lab_is_removed_when_the_test_fails():
    _require_lab()
    with pytest.raises(RuntimeError), nat_lab() as lab:
        raise RuntimeError("a failing test")
    assert not lab.namespaces & set(lab_namespaces())
