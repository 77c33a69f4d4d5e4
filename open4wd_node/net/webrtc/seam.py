"""The shape a link's carrier has, whatever moves its bytes: the seam between the link's rules (strict
decoding, rate limits, keepalive and round trip, coded close: ``open4wd_node.net.link_rules`` and the
link) and the transport below them.

A carrier moves whole message bodies between two authenticated peers: ``send(body, lane)`` and
``receive() -> body``, ``aclose(code, message)`` telling the peer why, and what authenticated the peer
(``peer_id``) and the link's ``transcript`` (role admission's HMAC covers it). The TCP carrier moves
``u32be length ‖ Noise-sealed body`` frames and has one lane; ``WebRTCCarrier`` moves DataChannel
messages and has the lanes of its link kind (``protocol.webrtc.channels``). Whatever ends a carrier,
``send`` and ``receive`` raise the link's ``LinkClosed`` with the reason's code.
"""

from __future__ import annotations

from typing import Protocol

from protocol.webrtc.channels import Lane
from protocol.identity.keys import PeerId


class MessageCarrier(Protocol):
    """Whole bodies between two authenticated peers."""

    peer_id: PeerId
    transcript: bytes

    async def send(self, body: bytes, lane: Lane = Lane.RELIABLE) -> None:
        """Send one body on ``lane`` (``LinkClosed`` once the carrier has ended)."""
        ...

    async def receive(self) -> bytes:
        """The next body from the peer (``LinkClosed`` once the carrier has ended)."""
        ...

    async def aclose(self, code: str = "link-closed", message: str = "the link was closed normally") -> None:
        """Tell the peer ``code`` and close; idempotent."""
        ...

