"""Headless Chromium's own WebRTC stack opens DataChannels to the node's aiortc link, both ways round,
on loopback only: the browser and the node run in a network namespace the test makes with nothing but
loopback, and removes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import trio

from tests.layout import REPO_ROOT
from tests.netns import PREFIX, missing_tools
from tests.services import require_binary

PEER = "tests.open4wd_node.net.webrtc.browser_peer"


@pytest.mark.parametrize("mode", ["node-offers", "browser-offers"])
async def test_chromium_opens_datachannels_to_the_node(mode):
    require_binary("chromium", "chromium")
    for tool in missing_tools():
        require_binary(tool, "iproute2")
    if os.geteuid() != 0:
        pytest.skip("a network namespace needs root")
    namespace = f"{PREFIX}{os.getpid()}xb{mode[0]}"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", namespace, "ip", "link", "set", "lo", "up"], check=True)
        done = await trio.run_process(["ip", "netns", "exec", namespace, sys.executable, "-m", PEER, mode],
                                      capture_stdout=True, capture_stderr=True, check=False, cwd=REPO_ROOT,
                                      env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    finally:
        subprocess.run(["ip", "netns", "pids", namespace], capture_output=True)
        subprocess.run(["ip", "netns", "del", namespace], check=True)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    report = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert report["echoed"] == 2 and report["path"] in ("host", "prflx")
    assert report["browser_pair"]["local"].startswith("127.0.0.1") and report["browser_pair"]["remote"].startswith("127.0.0.1")
    assert "a=fingerprint:sha-256" in report["browser_sdp"] and len(report["transcript"]) == 64
