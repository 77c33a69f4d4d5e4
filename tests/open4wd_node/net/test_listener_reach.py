"""The listener, the race mesh and the spectator are given how to dial (a ``Dialler``) and the listener its
WebRTC side (a ``SignalingReach``) by the composition root (``open4wd_node.net.reach``: ``with_listener``,
``contact_dialler``): none of them imports it, nor the WebRTC stack."""

from __future__ import annotations

import ast

import pytest
import trio

from open4wd_base.errors import LocalError
from open4wd_node.net.listener import NodeListener, Reachability
from protocol.identity.keys import Identity
from tests.layout import REPO_ROOT

ME = Identity(bytes([4]) * 32)
GIVEN_HOW_TO_REACH = [*sorted((REPO_ROOT / "open4wd_node" / "net").glob("*.py")),
                      REPO_ROOT / "open4wd_node" / "race" / "mesh.py", REPO_ROOT / "open4wd_node" / "race" / "runner.py",
                      REPO_ROOT / "open4wd_node" / "spectate" / "watcher.py"]
COMPOSITION_ROOT = REPO_ROOT / "open4wd_node" / "net" / "reach.py"


@pytest.mark.parametrize("path", [p for p in GIVEN_HOW_TO_REACH if p != COMPOSITION_ROOT],
                         ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_the_listener_the_mesh_and_the_viewer_import_neither_the_dialler_nor_webrtc(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert not [name for name in imported if name.startswith(("open4wd_node.net.reach", "open4wd_node.net.webrtc",
                                                               "aiortc"))]


class Registered:
    """A WebRTC side registered at one service (what ``SignalingReach`` tells the listener)."""

    signals = ("ws://127.0.0.1:9",)
    serving = True


def test_a_relay_only_listener_needs_a_signaling_service():
    with pytest.raises(LocalError) as refused:  # the command line refuses this first (a usage error)
        NodeListener(ME, reachability="relay")
    assert refused.value.code == "listener-unreachable"


async def test_a_relay_only_listener_listens_nowhere_and_announces_its_service(autojump_clock):
    listener = NodeListener(ME, reachability="relay", webrtc=Registered())  # type: ignore[arg-type]
    assert listener.reachability is Reachability.RELAY and not listener.direct
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(listener.run, "127.0.0.1", 0)
        assert bound is None and str(listener.contact) == "signal=ws://127.0.0.1:9"
        nursery.cancel_scope.cancel()
