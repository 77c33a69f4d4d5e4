"""What a WebRTC link needs from signaling, as a small typed interface, and an in-memory implementation.

A link sends its SDP offer or answer and ICE candidates to a PeerId, and receives the other side's,
each with its sender's PeerId **already verified** (the signaling client checks the ``signal-v1``
signature, scope and nonce before anything reaches a link). ``Signaling`` is that interface: the
node's signaling client over the spec's WebSocket wire satisfies it, and ``SignalingHub`` connects
endpoints in one process (tests, benchmarks, a demo on one machine). The spec's wire cannot carry an
empty end-of-candidates marker, so no such signal exists here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import trio

from protocol.errors import LocalError
from protocol.identity.keys import PeerId

INBOX_SIGNALS = 256  # per endpoint of a hub: a flood beyond it waits at the sender (the signaling service's rate)


class SdpKind(StrEnum):
    """The two SDP messages of the signaling wire."""

    OFFER = "sdp-offer"
    ANSWER = "sdp-answer"


@dataclass(frozen=True)
class SdpSignal:
    """An SDP offer or answer."""

    kind: SdpKind
    sdp: str


@dataclass(frozen=True)
class CandidateSignal:
    """One trickled ICE candidate, in the wire's four fields (``candidate`` is the ``candidate:…`` line)."""

    candidate: str
    sdp_mid: str | None = None
    sdp_mline_index: int | None = None
    username_fragment: str | None = None


Signal = SdpSignal | CandidateSignal


@dataclass(frozen=True)
class ReceivedSignal:
    """A signal and the PeerId that signed it (verified by the signaling layer)."""

    sender: PeerId
    signal: Signal


class Signaling(Protocol):
    """One node's signaling in one scope (a room or a match)."""

    @property
    def peer_id(self) -> str:
        """This node's PeerId, as registered."""
        ...

    @property
    def scope(self) -> str:
        """The scope (``room:<uuid>`` or ``match:<64 hex>``) the signals travel in."""
        ...

    async def send(self, target: str, signal: Signal) -> None:
        """Send ``signal`` to ``target`` (signed by this node); delivery is not confirmed."""
        ...

    async def receive(self) -> ReceivedSignal:
        """The next signal addressed to this node."""
        ...


class SignalingHub:
    """Endpoints in one process and one scope; a signal to a PeerId without an endpoint is dropped, as
    the spec's server drops one whose target is not registered."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        self._inboxes: dict[str, trio.MemorySendChannel[ReceivedSignal]] = {}

    def endpoint(self, peer_id: PeerId) -> "HubSignaling":
        """Register ``peer_id`` (once) and return its endpoint."""
        if peer_id in self._inboxes:
            raise LocalError("signaling-duplicate", f"{peer_id} already has an endpoint on this hub")
        send, receive = trio.open_memory_channel[ReceivedSignal](INBOX_SIGNALS)
        self._inboxes[peer_id] = send
        return HubSignaling(self, peer_id, receive)

    async def deliver(self, sender: PeerId, target: str, signal: Signal) -> None:
        """Put ``signal`` in ``target``'s inbox (waits while it is full; dropped when ``target`` is unknown)."""
        inbox = self._inboxes.get(target)
        if inbox is not None:
            try:
                await inbox.send(ReceivedSignal(sender, signal))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass


class HubSignaling:
    """One endpoint of a ``SignalingHub`` (a ``Signaling``)."""

    def __init__(self, hub: SignalingHub, peer_id: PeerId, inbox: trio.MemoryReceiveChannel[ReceivedSignal]) -> None:
        self._hub = hub
        self._peer_id = peer_id
        self._inbox = inbox

    @property
    def peer_id(self) -> str:
        """This endpoint's PeerId."""
        return self._peer_id

    @property
    def scope(self) -> str:
        """The hub's scope."""
        return self._hub.scope

    async def send(self, target: str, signal: Signal) -> None:
        """Deliver ``signal`` to ``target``'s endpoint, signed by construction (the hub knows who sends)."""
        await self._hub.deliver(self._peer_id, target, signal)

    async def receive(self) -> ReceivedSignal:
        """The next signal addressed to this endpoint."""
        return await self._inbox.receive()
