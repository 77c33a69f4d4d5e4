"""Headless Chromium's own WebRTC stack against the node, on loopback only: the browser and the node run in a
network namespace the test makes with nothing but loopback, and removes.

- Chromium opens DataChannels to the node's aiortc link, both ways round (``browser_peer.py``).
- A page joins a room hosted by a real ``open4wd-node host`` process through a real ``open4wd-node signal``
  (``browser_room.py``, ``browser_room_page.html``): its own Ed25519 identity, the signed registration and
  signals, the link's framing, the role proof over the transcript, and the room state it receives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
import trio

from tests.layout import REPO_ROOT
from tests.netns import PREFIX, missing_tools
from tests.services import require_binary

PEER = "tests.open4wd_node.net.webrtc.browser_peer"
ROOM = "tests.open4wd_node.net.webrtc.browser_room"
ROOM_LIMIT_S = 120  # the harness bounds its own join at 60 s; this only catches a harness that hangs


async def run_in_loopback_namespace(tag: str, module: str, *args: str) -> dict[str, Any]:
    """Run ``python -m module args`` in a fresh network namespace that has only loopback (removed after);
    the JSON report on its last line. Skips without Chromium, iproute2 or root."""
    require_binary("chromium", "chromium")
    for tool in missing_tools():
        require_binary(tool, "iproute2")
    if os.geteuid() != 0:
        pytest.skip("a network namespace needs root")
    namespace = f"{PREFIX}{os.getpid()}x{tag}"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", namespace, "ip", "link", "set", "lo", "up"], check=True)
        done = await trio.run_process(["ip", "netns", "exec", namespace, sys.executable, "-m", module, *args],
                                      capture_stdout=True, capture_stderr=True, check=False, cwd=REPO_ROOT,
                                      env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    finally:
        subprocess.run(["ip", "netns", "pids", namespace], capture_output=True)
        subprocess.run(["ip", "netns", "del", namespace], check=True)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return report


@pytest.mark.parametrize("mode", ["node-offers", "browser-offers"])
async def test_chromium_opens_datachannels_to_the_node(mode):
    report = await run_in_loopback_namespace(f"b{mode[0]}", PEER, mode)
    assert report["echoed"] == 2 and report["path"] in ("host", "prflx")
    assert report["browser_pair"]["local"].startswith("127.0.0.1") and report["browser_pair"]["remote"].startswith("127.0.0.1")
    assert "a=fingerprint:sha-256" in report["browser_sdp"] and len(report["transcript"]) == 64


async def test_a_browser_page_joins_a_room_through_the_signaling_service():
    with trio.fail_after(ROOM_LIMIT_S):
        report = await run_in_loopback_namespace("br", ROOM)
    page = report["page"]
    assert "error" not in page and not report["exceptions"], (page, report["exceptions"])
    me, host = page["peerId"], page["host"]
    assert f"?host={host}&" in report["invite"] and me != host
    # the host admitted the page: its role proof matched the transcript the host bound on its side
    assert page["verdict"] == {"ok": True, "reason": "ok", "detail": "joined"}
    assert report["member_joined"] == {"event": "member-joined", "peer": me, "role": "participant", "nickname": "chromium"}
    # the room state the page received names the host and the page
    state = page["roomState"]
    assert state["hostPeerId"] == host and state["roomId"] == page["roomId"] and state["phase"] == "collecting"
    assert [(m["peerId"], m["role"]) for m in state["members"]] == [(host, "participant"), (me, "participant")]
    # over Chromium's own WebRTC stack, on loopback (Chromium offers no loopback host candidate: its checks
    # from 127.0.0.1 make a peer-reflexive pair with the node's 127.0.0.1 host candidate)
    assert report["link_path"]["path"] in ("host", "prflx") and report["link_path"]["rtt_ms"] >= 0
    assert page["pair"]["local"].startswith("127.0.0.1 ") and page["pair"]["remote"].startswith("127.0.0.1 ")
    assert len(page["transcript"]) == 64 and page["ignored"] == 0
    # a page whose invitation secret is one character off is refused, and never becomes a member
    forger = report["forger"]
    assert forger["verdict"] == {"ok": False, "reason": "join-rejected", "detail": "the invitation proof does not match"}
    assert "roomState" not in forger and report["host_joins"] == [me]
    # and the page stays a member: it answers the link's keepalive
    assert page["pongs"] >= 1 and report["host_leaves"] == []
