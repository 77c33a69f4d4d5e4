"""Links over real TCP: ``dial`` a listener, or ``serve`` and hand every opened link to a handler.

The listener runs the opening of each accepted connection (the handshake, then its first message) in its
own task, under ``ListenerLimits`` (docs/transport.md, "The listener's door"): a connection over its
source address's share of the opening places, or beyond all of them, is refused at once with
``listener-busy``; an opening connection cannot buffer more than one small frame, and has 5 s for its
first message. A connection that fails to open, or a handler that ends by ``LinkClosed`` or a coded
``ProtocolError``, costs only that connection, never the listener; every end is logged with its code
and the peer's address. ``dial`` can keep trying a busy listener for a while (``busy_retry_s``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Protocol

import structlog
import trio

from protocol.errors import ProtocolError
from protocol.link.handshake import DIALER, LISTENER
from protocol.identity.keys import Identity
from protocol.encoding.wire import Message
from protocol.identity.keys import PeerId
from open4wd_node.runtime.addresses import Address
from open4wd_node.net.admission import LISTENER_BUSY, LISTENER_LIMITS, BusyBackoff, ListenerLimits, OpeningPlaces, source_of
from open4wd_node.net.containment import contained_link
from open4wd_node.net.link import Carrier, Link, LinkAuth, LinkClosed
from open4wd_node.net.stream_carrier import open_link, peer_endpoint, refuse_unopened
from open4wd_node.net.link_rules import ROOM_LIMITS, LinkLimits

__all__ = ["Dialler", "Door", "Link", "LinkClosed", "LinkLimits", "ListenerLimits", "dial", "serve"]

log = structlog.get_logger("open4wd_node.transport")
BUSY_RETRY_S = 10.0  # how long a joiner keeps trying a listener that answers listener-busy

LinkHandler = Callable[[Link], Awaitable[None]]


class Dialler(Protocol):
    """How a part of the node dials a peer it knows by PeerId and contact (``HOST:PORT``, perhaps with signaling
    services): ``open4wd_node.net.reach.contact_dialler`` in the product, a test's or the soak's wrapper of it."""

    async def __call__(self, contact: str, peer: PeerId, *, expensive: frozenset[str] = frozenset(),
                       limits: LinkLimits = ROOM_LIMITS) -> Link:
        """A link to ``peer`` at ``contact``; ``LinkClosed`` (or ``OSError``) when none opens."""


async def dial(
    host: str,
    port: int,
    identity: Identity,
    *,
    expected_peer: str | None = None,
    expensive: frozenset[str] = frozenset(),
    limits: LinkLimits = ROOM_LIMITS,
    registry: dict[str, type[Message]] | None = None,
    busy_retry_s: float = 0.0,
) -> Link:
    """Connect and authenticate; ``expected_peer`` (from an invitation) refuses any other listener.

    A listener that refuses with ``listener-busy`` is dialled again, with backoff (``BusyBackoff``), as
    long as the next attempt starts within ``busy_retry_s`` of the first; no other refusal is retried.
    Raises ``LinkClosed``: ``dial-failed`` when no connection is made within the handshake timeout,
    ``listener-busy`` when the listener stayed busy, else a handshake code (docs/transport.md)."""
    where = Address(host, port)
    backoff = BusyBackoff(busy_retry_s)
    started = trio.current_time()
    while True:
        try:
            return await _dial_once(where, identity, expected_peer, expensive, limits, registry)
        except LinkClosed as exc:
            if exc.code != LISTENER_BUSY or not exc.by_peer:
                raise
            elapsed = trio.current_time() - started
            delay = backoff.next_delay_s(elapsed)
            if delay is None:
                tries = f"{backoff.refusals} attempts over {elapsed:.1f} s" if backoff.refusals > 1 else "the attempt"
                raise LinkClosed(LISTENER_BUSY, f"{where} refused {tries}: too many links are opening there "
                                                f"(the last answer: {exc.message}); try again later",
                                 by_peer=True) from None
            log.warning("dial-busy", address=str(where), refusals=backoff.refusals, retry_in_s=round(delay, 2),
                        reason=exc.message)
            await trio.sleep(delay)


async def _dial_once(
    where: Address,
    identity: Identity,
    expected_peer: str | None,
    expensive: frozenset[str],
    limits: LinkLimits,
    registry: dict[str, type[Message]] | None,
) -> Link:
    try:
        with trio.fail_after(limits.handshake_timeout_ms / 1000):
            stream = await trio.open_tcp_stream(where.host, where.port)
    except (OSError, trio.TooSlowError) as exc:
        reason = "timed out" if isinstance(exc, trio.TooSlowError) else (exc.strerror or str(exc))
        raise LinkClosed("dial-failed", f"cannot connect to {where}: {reason}") from None
    try:
        return await open_link(
            stream, identity, DIALER, expected_peer=expected_peer, expensive=expensive, limits=limits, registry=registry
        )
    except LinkClosed as exc:
        if exc.code == "peer-not-open4wd":  # say which address that was: usually a mistyped port
            raise LinkClosed(exc.code, f"{where}: {exc.message}", by_peer=exc.by_peer) from None
        raise


class Door:
    """The listener's door (docs/transport.md): admits opening links, each in its own task, under
    ``ListenerLimits``, and hands each link whose first message arrived to ``handler``. ``serve`` admits its
    TCP connections through one (``admit``); every other way in goes through the same door (``enter``): the
    links answered through signaling (docs/webrtc.md), so a link costs
    what a direct one does before it says what it is for, whatever carried it here."""

    def __init__(
        self,
        handler: LinkHandler,
        identity: Identity,
        *,
        expensive: frozenset[str] = frozenset(),
        limits: LinkLimits = ROOM_LIMITS,
        registry: dict[str, type[Message]] | None = None,
        door: ListenerLimits = LISTENER_LIMITS,
    ) -> None:
        self.handler = handler
        self.identity = identity
        self.expensive = expensive
        self.limits = limits
        self.registry = registry
        self.door = door
        self.places = OpeningPlaces(door.openings, door.openings_per_source)

    def link(self, carrier: Carrier, auth: LinkAuth) -> Link:
        """A link over an authenticated ``carrier`` with the settings of the links this door admits."""
        return Link(carrier, auth, expensive=self.expensive, limits=self.limits, registry=self.registry)

    async def admit(self, stream: trio.abc.Stream, address: str, source: str) -> None:
        """Run one accepted stream from ``address`` (counted under ``source``) to its end: refused at once
        (``listener-busy`` in the clear) when its source's share or every opening place is taken, else
        handshake, first message, handler."""

        async def refuse(code: str, text: str) -> None:
            await refuse_unopened(stream, code, text)

        await self.enter(address, source, partial(open_link, stream, self.identity, LISTENER, expensive=self.expensive,
                                                  limits=self.limits, registry=self.registry), refuse)

    async def enter(self, address: str, source: str, opening: Callable[[], Awaitable[Link]],
                    refuse: Callable[[str, str], Awaitable[None]]) -> None:
        """Run one opening link to its end: ``opening()`` authenticates it (the expensive part, done only once
        ``source`` has a place: else ``refuse(code, text)`` is told ``listener-busy``), then its first message
        is awaited within the door's limits and the link goes to the handler. ``address`` names it in the logs
        until the link knows its own."""
        try:
            self.places.take(source)
        except ProtocolError as exc:
            log.info("link-refused", code=exc.code, reason=exc.message, address=address)
            await refuse(exc.code, exc.message)
            return
        try:
            opened = await self._open(opening, address)
        finally:
            self.places.give_back(source)  # before any close notice: the link is no longer opening
        if opened is None:
            return
        link, arrived = opened
        try:
            if arrived:
                async with contained_link(link, "its link"):
                    await self.handler(link)
            else:  # a link that ended while opening keeps its own reason (frame-too-large, link-eof, …)
                await link.aclose("join-timeout", f"no first message within {self.door.first_message_timeout_ms / 1000:g} s")
        except (LinkClosed, ProtocolError) as exc:
            await link.aclose(exc.code, exc.message)  # a link that has already ended keeps its own reason
        finally:
            await link.aclose()
            ended = link.closed
            assert ended is not None
            log.info("link-closed", code=ended.code, reason=ended.message, by_peer=ended.by_peer, peer=link.peer_id,
                     address=link.address or address)

    async def _open(self, opening: Callable[[], Awaitable[Link]], address: str) -> tuple[Link, bool] | None:
        """The authentication, then the wait for the first message, under the door's limits: None when the
        link did not open (logged here), else the link and whether its first message arrived."""
        try:
            link = await opening()
        except LinkClosed as exc:
            log.info("link-refused", code=exc.code, reason=exc.message, address=address)
            return None
        with trio.move_on_after(self.door.first_message_timeout_ms / 1000):
            try:
                await link.peek_first(self.door.first_frame_bytes)
                return link, True
            except LinkClosed:
                pass  # the link has ended with its reason, logged when the caller closes it
        return link, False


async def serve(
    handler: LinkHandler,
    identity: Identity,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    expensive: frozenset[str] = frozenset(),
    limits: LinkLimits = ROOM_LIMITS,
    registry: dict[str, type[Message]] | None = None,
    door: ListenerLimits | Door = LISTENER_LIMITS,
    task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on ``host:port`` until cancelled; use ``await nursery.start(serve, ...)`` to get the
    bound ``Address`` (the real port, also when 0 was asked for). Each link whose first message has
    arrived goes to ``handler(link)`` (its first ``receive`` returns that message) and is closed when
    the handler returns; the dialer must speak first. ``door`` may be a ``Door`` shared with other
    ways in (then its handler and link settings are used, not the arguments)."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound_host, bound_port = listeners[0].socket.getsockname()[:2]
    gate = door if isinstance(door, Door) else Door(handler, identity, expensive=expensive, limits=limits,
                                                       registry=registry, door=door)

    async def on_connection(stream: trio.SocketStream) -> None:
        endpoint = peer_endpoint(stream)
        address = "unknown" if endpoint is None else str(endpoint)
        source = "unknown" if endpoint is None else source_of(endpoint.host)
        await gate.admit(stream, address, source)

    task_status.started(Address(bound_host, bound_port))
    await trio.serve_listeners(on_connection, listeners)
