"""Two peers, each behind its own NAT in network namespaces the test makes and removes (root, TEST-NET
addresses only): behind ordinary NATs they connect by STUN hole punching; behind symmetric NATs
(``--random-fully``) only coturn relays them. Real processes in the namespaces; signaling crosses them on
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


@pytest.mark.parametrize(("symmetric", "paths"), [(False, {"srflx", "prflx"}), (True, {"relay"})],
                         ids=["ordinary-nats-punch-through", "symmetric-nats-relay"])
async def test_two_peers_behind_nats_connect(tmp_path, symmetric, paths):
    _require_lab()
    with nat_lab(symmetric=symmetric) as lab:
        made = set(lab_namespaces())
        assert {lab.inet, *lab.hosts} <= made
        offerer, answerer = await run_scenario(lab, tmp_path)
    assert "error" not in offerer and "error" not in answerer, (offerer, answerer)
    assert offerer["path"] in paths and answerer["path"] in paths, (offerer, answerer)
    assert not made & set(lab_namespaces())  # every namespace of the lab is gone


def test_the_lab_is_removed_when_the_test_fails():
    _require_lab()
    with pytest.raises(RuntimeError), nat_lab() as lab:
        names = {lab.inet, *lab.hosts}
        raise RuntimeError("a failing test")
    assert not names & set(lab_namespaces())
