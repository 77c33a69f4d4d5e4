"""Shared pieces of the WebRTC link tests: identities, a hub of in-memory signaling, loopback settings."""

from __future__ import annotations

from protocol.encoding.wire import Channel
from protocol.identity.keys import Identity
from protocol.webrtc.ice import HostAddresses
from open4wd_node.net.webrtc.connector import WebRTCSettings

ALICE, BOB, CAROL = (Identity(bytes([n]) * 32) for n in (1, 2, 3))
SCOPE = "room:2f1c3b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b"
LOOPBACK = WebRTCSettings(hosts=HostAddresses.only("127.0.0.1"))
ANY = Channel("any", 8 << 20)  # what a carrier test reads: bodies of any size its lanes carry


from collections.abc import Callable  # noqa: E402
from dataclasses import replace  # noqa: E402

import trio  # noqa: E402

from protocol.signaling.client import Signal  # noqa: E402
from protocol.signaling.envelope import SignalMessage  # noqa: E402
from open4wd_node.net.webrtc.signaling import Signaling  # noqa: E402


class Tampered:
    """A party in the middle of one endpoint's signaling: ``inbound`` rewrites (or drops, by returning
    None) what it receives, ``outbound`` returns the signals to send in place of one (a test's tool)."""

    def __init__(self, inner: Signaling, *, inbound: Callable[[SignalMessage], SignalMessage | None] = lambda s: s,
                 outbound: Callable[[SignalMessage], list[SignalMessage]] = lambda s: [s]) -> None:
        self.inner, self.inbound, self.outbound = inner, inbound, outbound

    @property
    def peer_id(self) -> str:
        return self.inner.peer_id

    @property
    def scope(self) -> str:
        return self.inner.scope

    async def send(self, target: str, signal: SignalMessage) -> None:
        for each in self.outbound(signal):
            await self.inner.send(target, each)

    async def receive(self) -> Signal:
        while True:
            received = await self.inner.receive()
            changed = self.inbound(received.message)
            if changed is not None:
                return replace(received, message=changed)


async def open_pair(offerer, answerer, answer_from: str | None = None):
    """(offerer's link, answerer's link), opened concurrently."""
    links = {}

    async def answer():
        links["answerer"] = await answerer.accept(answer_from)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer)
        links["offerer"] = await offerer.connect(answerer.signaling.peer_id)
    return links["offerer"], links["answerer"]
