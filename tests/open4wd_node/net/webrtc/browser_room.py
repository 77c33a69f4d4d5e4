"""A browser joins a room of real node processes, on loopback: run inside a network namespace that has nothing
but loopback (``test_browser.py`` makes it). ``open4wd-node signal`` and ``open4wd-node host --signal`` run as
they would for players; headless Chromium loads ``browser_room_page.html`` with the host's invitation, and the
page joins through the service over Chromium's own WebRTC stack. Prints a JSON report line: what the page
saw, and the host's events about the page's PeerId; then the same page with a forged invitation secret, which
the host must refuse."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import trio

from protocol.versions.record import PROTOCOL_VERSION
from tests.open4wd_node.net.webrtc.browser_peer import CHROMIUM_WEBRTC_FLAGS
from tests.services import headless_chromium

PAGE = Path(__file__).with_name("browser_room_page.html")
JOIN_LIMIT_S = 60.0  # a generous bound for a join that takes well under a second: only a hang reaches it


class NodeProcess:
    """An ``open4wd-node … --json`` process; its events are read as they come."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.events: list[dict[str, Any]] = []
        self._changed = trio.Event()

    async def read(self) -> None:
        """Collect every event the process prints, until its output ends."""
        assert self.process.stdout is not None
        pending = b""
        async for chunk in self.process.stdout:
            pending += chunk
            *lines, pending = pending.split(b"\n")
            self.events += [json.loads(line) for line in lines if line.strip()]
            self._changed.set()
            self._changed = trio.Event()

    async def wait_for(self, event: str, **fields: object) -> dict[str, Any]:
        """The first ``event`` whose fields hold ``fields`` (waiting for it)."""
        while True:
            for item in self.events:
                if item["event"] == event and all(item.get(k) == v for k, v in fields.items()):
                    return item
            if self.process.returncode is not None:
                raise AssertionError(f"the node ended before {event}: {self.events[-3:]}")
            await self._changed.wait()


async def node(nursery: trio.Nursery, data_dir: Path, *argv: str) -> NodeProcess:
    """A node process started in ``nursery`` (killed when the nursery is cancelled), its events read."""
    command = [sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(data_dir), *argv, "--json"]
    process = await nursery.start(lambda task_status: trio.run_process(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=False,
        task_status=task_status))
    started = NodeProcess(process)
    nursery.start_soon(started.read)
    return started


def page_url(invite: str) -> str:
    """The page, given ``invite`` and the link protocol version this node speaks."""
    return f"{PAGE.as_uri()}?{urlencode({'invite': invite, 'protocol': PROTOCOL_VERSION})}"


async def main() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="open4wd-browser-room-") as work, trio.fail_after(JOIN_LIMIT_S):
        async with trio.open_nursery() as nursery:
            service = await node(nursery, Path(work, "signal"), "signal", "--listen", "127.0.0.1:0")
            url = "ws://" + (await service.wait_for("signal-listening"))["address"]
            host = await node(nursery, Path(work, "host"), "host", "--signal", url, "--ice-host", "127.0.0.1")
            invite = (await host.wait_for("room-created"))["invite"]
            async with headless_chromium(*CHROMIUM_WEBRTC_FLAGS) as browser:
                page = await browser.open(page_url(invite))
                joined_page = "window.report.roomState && window.report.pair !== undefined"  # pair: null if none
                seen = await page.wait_for(f"({joined_page} || window.report.error) && window.report", timeout_s=JOIN_LIMIT_S)
                joined = path = None
                if "roomState" in seen:
                    joined = await host.wait_for("member-joined", peer=seen["peerId"])
                    path = await host.wait_for("link-path", peer=seen["peerId"])
                # the same page with a secret one character off: the host must refuse its proof
                forger = await browser.open(page_url(invite[:-1] + ("A" if invite[-1] != "A" else "B")))
                refused = await forger.wait_for("(window.report.verdict || window.report.error) && window.report",
                                                timeout_s=JOIN_LIMIT_S)
                # the page keeps its link: it answers the host's keepalive ping (one every 3 s)
                seen = await page.wait_for("window.report.pongs >= 1 && window.report", timeout_s=JOIN_LIMIT_S)
                report = {"invite": invite, "page": seen, "member_joined": joined, "link_path": path,
                          "console": page.console, "exceptions": page.exceptions + forger.exceptions,
                          "forger": refused}
            report["host_joins"] = [e["peer"] for e in host.events if e["event"] == "member-joined"]
            report["host_leaves"] = [e["peer"] for e in host.events if e["event"] == "member-left"]
            nursery.cancel_scope.cancel()
    return report


if __name__ == "__main__":
    print(json.dumps(trio.run(main)), flush=True)
