"""``Signaling`` over the signaling service's client: what a node's WebRTC links use outside one process.

``open_service_signaling(urls, scope, identity)`` registers this node in ``scope`` at the first of
``urls`` that answers (in the given order: the invitation's or the configuration's preference), and
fails over to the next while none has: a service that is down, refuses the registration or does not
answer within the client's 30 s costs that attempt only. Once registered, the client keeps its socket
itself (it reconnects to the same service with backoff and registers again: docs/signaling.md, "The
client"); peers that registered at another service are not reached through this one, so every node of a
room uses the room's services in the same order (the invitation's). ``UserError`` ``signal-unreachable``
names every attempt when none answers.

What reaches a link is what the client verified (signer present in the room, scope, target, ±30 s, nonce,
signature): each ``Signal`` event, with its signer as ``Signal.signer``; presence and server errors are
the client's business, not a link's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import structlog

from open4wd_node.net.link import LinkClosed
from open4wd_node.runtime.errors import UserError
from open4wd_node.signal.client import SignalingClient
from protocol.identity.keys import Identity, PeerId
from protocol.signaling.client import Signal
from protocol.signaling.envelope import SignalMessage
from protocol.signaling.turn import TurnCredentials

log = structlog.get_logger("open4wd_node.webrtc")


class ServiceSignaling:
    """One node's ``Signaling`` in one scope at one signaling service (its ``client``)."""

    def __init__(self, client: SignalingClient, identity: Identity) -> None:
        self.client = client
        self._peer_id = identity.peer_id

    @property
    def peer_id(self) -> PeerId:
        """This node's PeerId, as registered."""
        return self._peer_id

    @property
    def scope(self) -> str:
        """The scope this node is registered in."""
        return self.client.session.scope

    @property
    def url(self) -> str:
        """The service that answered."""
        return self.client.url

    async def send(self, target: PeerId, signal: SignalMessage) -> None:
        """Sign and send ``signal`` to ``target``; ``LinkClosed`` ``signal-unavailable`` when the service
        stays unreachable (the negotiation that sends it fails, nothing else)."""
        try:
            await self.client.send(target, signal)
        except UserError as exc:
            raise LinkClosed(exc.code, exc.message, by_peer=True) from None

    async def receive(self) -> Signal:
        """The next verified signal addressed to this node."""
        while True:
            event = await self.client.next_event()
            if isinstance(event, Signal):
                return event

    async def turn_credentials(self) -> TurnCredentials:
        """Fresh TURN credentials from the service's ``/turn-token`` (``UserError`` when it refuses)."""
        return await self.client.turn_credentials()


@asynccontextmanager
async def open_service_signaling(urls: tuple[str, ...], scope: str, identity: Identity) -> AsyncIterator[ServiceSignaling]:
    """This node registered in ``scope`` at the first of ``urls`` that answers (module docstring)."""
    if not urls:
        raise UserError("signal-missing", "no signaling service to register at (give --signal URL)")
    failures: list[str] = []
    for url in urls:
        stack = AsyncExitStack()
        try:
            client = await stack.enter_async_context(SignalingClient.connect(url, scope, identity))
        except UserError as exc:
            failures.append(f"{url}: {exc.code} ({exc.message})")
            log.warning("signal-failover", url=url, code=exc.code, reason=exc.message)
            continue
        async with stack:
            yield ServiceSignaling(client, identity)
        return
    raise UserError("signal-unreachable", "no signaling service answered: " + "; ".join(failures))
