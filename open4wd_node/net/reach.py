"""How this node reaches its peers and is reached (docs/webrtc.md, "Rooms, races and spectators over WebRTC").

Dialling a peer by its ``Contact``: its direct address first (TCP + Noise); then, as soon as the direct
attempt has failed or ``FALLBACK_AFTER_S`` (2 s) has passed without it succeeding, a WebRTC link through
the room's signaling service, when the peer announces one and this node answers there. That link's ICE
tries host and server-reflexive pairs, and TURN relay pairs when this node was given a TURN server
(``--reachability relay``: relay pairs only), so the ladder is direct, then WebRTC, then TURN. The first
link that opens wins and the other attempt is cancelled (a late winner is closed). Each race-mesh pair and
each joiner dials this way, so every pair falls back on its own: the race mesh is given ``contact_dialler``
by the node (``open4wd_node.node``). Being reached: ``listening`` runs the node's listener.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import structlog
import trio

from open4wd_node.net.link import Link, LinkClosed
from open4wd_node.net.link_rules import ROOM_LIMITS, LinkLimits
from open4wd_node.net.listener import NodeListener, SignalingReach
from open4wd_node.net.transport import Dialler, dial
from open4wd_node.runtime.addresses import AUTOMATIC, Advertise, parse_address
from open4wd_node.runtime.errors import UserError
from protocol.encoding.wire import Message
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.link.contact import Contact
from protocol.identity.keys import PeerId

log = structlog.get_logger("open4wd_node.net.reach")

FALLBACK_AFTER_S = 2.0
T = TypeVar("T")


async def dial_contact(
    contact: str,
    identity: Identity,
    peer: PeerId,
    *,
    expensive: frozenset[str] = frozenset(),
    limits: LinkLimits = ROOM_LIMITS,
    registry: dict[str, type[Message]] | None = None,
    busy_retry_s: float = 0.0,
    fallback_after_s: float = FALLBACK_AFTER_S,
    webrtc: SignalingReach | None = None,
    report: Callable[[Link], None] | None = None,
) -> Link:
    """A link to ``peer`` reached at ``contact`` (text: ``HOST:PORT signal=URL …``), directly, or over WebRTC
    through ``webrtc`` when the contact names a signaling service; ``report`` is told of the link. Raises
    ``LinkClosed``: the direct attempt's code when there was one, else WebRTC's; its message names every
    attempt. ``contact-invalid`` when the contact does not parse or names no way this node may use."""
    try:
        parsed = Contact.parse(contact)
    except ProtocolError as exc:
        raise LinkClosed(exc.code, exc.message) from None
    signalled = webrtc is not None and webrtc.serving and bool(parsed.signals)
    if parsed.direct is None and not signalled:
        why = "; it is reachable only through signaling and this node answers at no service" if parsed.signals else ""
        raise LinkClosed("contact-invalid", f"{peer} announced no address this node can dial ({contact!r}{why})")
    failures: list[tuple[str, LinkClosed]] = []
    won: list[Link] = []
    direct_over = trio.Event()

    async with trio.open_nursery() as nursery:

        async def attempt(route: str, connect: Callable[[], Awaitable[Link]]) -> None:
            try:
                link = await connect()
            except (LinkClosed, OSError) as exc:
                closed = exc if isinstance(exc, LinkClosed) else LinkClosed("dial-failed", f"{route}: {exc}")
                failures.append((route, closed))
                log.debug("dial-route-failed", peer=peer, route=route, code=closed.code, reason=closed.message)
                return
            if won:
                with trio.CancelScope(shield=True):
                    await link.aclose("link-duplicate", "another route to this peer opened first")
                return
            won.append(link)
            nursery.cancel_scope.cancel()

        async def direct(address: str) -> None:
            try:
                try:
                    host, port = parse_address(address)
                except UserError as exc:
                    failures.append((address, LinkClosed(exc.code, exc.message)))
                    return
                await attempt(address, lambda: dial(host, port, identity, expected_peer=peer, expensive=expensive,
                                                    limits=limits, registry=registry, busy_retry_s=busy_retry_s))
            finally:
                direct_over.set()

        async def over_webrtc(reach: SignalingReach) -> None:
            if parsed.direct is not None:
                with trio.move_on_after(fallback_after_s):
                    await direct_over.wait()
            await attempt("webrtc", lambda: reach.dial(peer, expensive=expensive, limits=limits))

        if parsed.direct is not None:
            nursery.start_soon(direct, parsed.direct)
        if signalled:
            assert webrtc is not None
            nursery.start_soon(over_webrtc, webrtc)
    if won:
        if report is not None:
            report(won[0])
        return won[0]
    first = failures[0][1]
    tried = "; ".join(f"{route}: {exc.code} ({exc.message})" for route, exc in failures)
    raise LinkClosed(first.code, f"cannot reach {peer}: {tried}" if len(failures) > 1 else first.message, by_peer=first.by_peer)


def contact_dialler(listener: NodeListener) -> Dialler:
    """``dial_contact`` as the node of ``listener`` dials: its identity, over WebRTC in its room's scope,
    every link reported to the listener."""

    async def dial_peer(contact: str, peer: PeerId, *, expensive: frozenset[str] = frozenset(),
                        limits: LinkLimits = ROOM_LIMITS) -> Link:
        return await dial_contact(contact, listener.identity, peer, expensive=expensive,
                                  limits=limits, webrtc=listener.webrtc, report=listener.report_link)

    return dial_peer


@asynccontextmanager
async def listening(
    identity: Identity, host: str, port: int, advertise: Advertise = AUTOMATIC, reachability: str = "auto",
    webrtc: SignalingReach | None = None, listen_directly: bool = True,
) -> AsyncIterator[NodeListener]:
    """This node's listener, serving on ``host:port`` (unless ``listen_directly`` is False) and, once a room's
    scope is entered, answering WebRTC offers, while the context is open; it stops when the context closes."""
    async with trio.open_nursery() as nursery:
        listener = NodeListener(identity, advertise, reachability=reachability, webrtc=webrtc,
                                listen_directly=listen_directly)
        await nursery.start(listener.run, host, port)
        yield listener
        nursery.cancel_scope.cancel()


async def with_listener(
    identity: Identity, host: str, port: int, body: Callable[[NodeListener], Awaitable[T]], advertise: Advertise = AUTOMATIC,
    reachability: str = "auto", webrtc: SignalingReach | None = None, listen_directly: bool = True,
) -> T:
    """Run ``body`` while this node's listener serves on ``host:port`` (``listening``)."""
    async with listening(identity, host, port, advertise, reachability, webrtc, listen_directly) as listener:
        return await body(listener)
