"""The WebRTC doorway: offers answered in a signaling scope go through the listener's door, as a TCP
connection does (docs/transport.md, "The listener's door").

Each offer takes an opening place of its own source (``webrtc/<PeerId>``: the signer the service
verified) before any work is done for it; without a place it is dropped unanswered (the offerer's
negotiation times out). With a place, the answer, the ICE checks, DTLS and the binding of the
transcript are the door's opening step, and the link's first message is awaited within the door's
limits, so an answered link costs what a direct one does before it says what it is for. Every offer is
answered in its own task: one peer that never finishes its ICE checks holds its own place only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from open4wd_node.net.link import Link
from open4wd_node.net.transport import Door
from open4wd_node.net.webrtc.connector import WebRTCEndpoint, carrier_auth
from protocol.identity.keys import PeerId


async def admit_offers(endpoint: WebRTCEndpoint, gate: Door, prepare: Callable[[], Awaitable[None]]) -> None:
    """Answer every offer ``endpoint`` receives through ``gate``, until cancelled; ``prepare()`` runs
    before each answer (fresh TURN credentials in the endpoint's settings)."""
    async with trio.open_nursery() as nursery:
        while True:
            peer = await endpoint.next_offer()
            nursery.start_soon(_admit, endpoint, gate, peer, prepare)


async def _admit(endpoint: WebRTCEndpoint, gate: Door, peer: PeerId, prepare: Callable[[], Awaitable[None]]) -> None:
    async def opening() -> Link:
        await prepare()
        carrier = await endpoint.accept(peer)
        return gate.link(carrier, carrier_auth(carrier))

    async def refuse(code: str, text: str) -> None:
        endpoint.drop_offer(peer)

    source = f"webrtc/{peer}"
    await gate.enter(source, source, opening, refuse)
