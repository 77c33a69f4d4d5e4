"""Two peers, each behind its own NAT in network namespaces the test makes and removes (root, TEST-NET
addresses only): behind ordinary NATs they connect by STUN hole punching; behind symmetric NATs
(``--random-fully``) STUN alone fails and coturn relays them. (With TURN offered too, aioice's aggressive
nomination takes whichever pair answers first, which behind NATs that drop unsolicited packets is often
the relay: the punching case is therefore shown with STUN only.) Real processes in the namespaces; signaling crosses them on
a UNIX socket."""

from __future__ import annotations

import os

import pytest

from tests.netns import lab_namespaces, missing_tools, nat_lab
from tests.open4wd_node.net.webrtc.nat_lab import run_scenario
from tests.services import require_binary


def _require_lab() -> None:
    require_binary("turnserver", "coturn")
    for tool in missing_tools():
        require_binary(tool, "iptables" if tool == "iptables" else "iproute2")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")


@pytest.mark.parametrize(("symmetric", "turn", "paths"), [
    (False, False, {"srflx", "prflx"}),
    (True, True, {"relay"}),
], ids=["ordinary-nats-punch-through-with-stun", "symmetric-nats-relay-through-turn"])
async def test_two_peers_behind_nats_connect(tmp_path, symmetric, turn, paths):
    _require_lab()
    with nat_lab(symmetric=symmetric) as lab:
        assert lab.namespaces <= set(lab_namespaces())
        offerer, answerer = await run_scenario(lab, tmp_path, turn=turn)
    assert "error" not in offerer and "error" not in answerer, (offerer, answerer)
    assert offerer["path"] in paths and answerer["path"] in paths, (offerer, answerer)
    assert not lab.namespaces & set(lab_namespaces())  # every namespace of the lab is gone


async def test_behind_symmetric_nats_stun_alone_cannot_connect(tmp_path):
    """The other half of the relay case: hole punching is what fails there (a coded refusal, in bounded time)."""
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
