"""Chromium's own WebRTC stack against the node's aiortc link, on loopback: run inside a network namespace
that has nothing but loopback (``test_browser.py`` makes it), so neither side can gather or reach any other
address. The page answers the node's offer (``node-offers``) or offers to the node (``browser-offers``); the
signals cross through the DevTools protocol (``Runtime.evaluate``): the link alone, without a signaling
service (``browser_room.py`` joins a room through one). Prints a JSON report line: path, round trip, echoed
bodies, the browser's pair, its SDP."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import trio

from protocol.link.lane import Lane

from tests.open4wd_node.net.webrtc.helpers import ANY

from open4wd_node.net.webrtc.connector import webrtc_endpoint
from protocol.signaling.client import Signal
from protocol.signaling.envelope import IceCandidate, Sdp, SdpKind, SignalMessage
from protocol.identity.keys import Identity
from protocol.webrtc.channels import LinkKind
from protocol.webrtc.ice import HostAddresses
from open4wd_node.net.webrtc.connector import WebRTCSettings
from tests.services import Page, headless_chromium

PAGE = Path(__file__).with_name("browser_page.html")
NODE, BROWSER = Identity(bytes([7]) * 32), Identity(bytes([8]) * 32)
SCOPE = "room:2f1c3b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b"
CHROMIUM_WEBRTC_FLAGS = (
    "--allow-loopback-in-peer-connection",  # loopback host candidates (Chromium leaves them out otherwise)
    "--disable-features=WebRtcHideLocalIpsWithMdns",  # IP literals, not mDNS names (a link resolves no names)
)
POLL_S = 0.02


class PageSignaling:
    """The page as the other end of ``Signaling``: what the node sends is handed to ``receiveSignal``; what
    the page queued in ``window.signals`` is taken by polling (the page is the browser peer's PeerId)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.sdps: list[str] = []
        self._pending: list[Signal] = []

    @property
    def peer_id(self) -> str:
        return NODE.peer_id

    @property
    def scope(self) -> str:
        return SCOPE

    async def send(self, target: str, signal: SignalMessage) -> None:
        assert target == BROWSER.peer_id
        if isinstance(signal, Sdp):
            data = {"kind": signal.kind.value, "sdp": signal.sdp}
        else:
            data = {"candidate": signal.candidate, "sdpMid": signal.sdp_mid, "sdpMLineIndex": signal.sdp_mline_index}
        await self.page.evaluate(f"window.receiveSignal({json.dumps(data)})")

    async def receive(self) -> Signal:
        while not self._pending:
            for item in await self.page.evaluate("window.takeSignals()"):
                if "sdp" in item:
                    self.sdps.append(item["sdp"])
                    signal: SignalMessage = Sdp(SdpKind(item["kind"]), item["sdp"])
                else:
                    signal = IceCandidate(item["candidate"], item.get("sdpMid"), item.get("sdpMLineIndex"),
                                             item.get("usernameFragment"))
                self._pending.append(Signal(BROWSER.peer_id, signal))
            if not self._pending:
                await trio.sleep(POLL_S)
        return self._pending.pop(0)


async def main(mode: str) -> dict[str, object]:
    settings = WebRTCSettings(hosts=HostAddresses.only("127.0.0.1"))
    async with headless_chromium(*CHROMIUM_WEBRTC_FLAGS) as browser:
        page = await browser.open(PAGE.as_uri())
        signaling = PageSignaling(page)
        async with webrtc_endpoint(signaling, LinkKind.ROOM, settings) as endpoint:
            if mode == "node-offers":
                link = await endpoint.connect(BROWSER.peer_id)
            else:
                await page.evaluate("window.makeOffer()")
                link = await endpoint.accept(BROWSER.peer_id)
            bodies = [b"hello browser", bytes(range(256)) * 64]
            for body in bodies:
                await link.send(body, Lane.CONTROL)
                assert await link.receive(ANY) == body
            pair = await page.wait_for("window.pairState()")
            report = {"path": link.path.value if link.path else None, "rtt_ms": link.rtt_ms,
                      "echoed": await page.evaluate("window.received"), "browser_pair": pair,
                      "transcript": link.transcript.hex(), "browser_sdp": signaling.sdps[0]}
            await link.aclose()
            return report


if __name__ == "__main__":
    print(json.dumps(trio.run(main, sys.argv[1])), flush=True)
