"""One listener per node for a whole match: the first message on a link says what the link is for.

A room join (``join-request``) goes to the room, a race-mesh greeting to the race; a link that says
nothing within 5 s of its handshake (``join-timeout``), or opens with anything no phase is waiting for
(``join-expected``), is closed with a code; what a connection may cost until then is the transport's
``ListenerLimits`` (docs/transport.md, "The listener's door"). Once
bound, the listener knows the address it advertises (``open4wd_node.net.advertise``): what invitations
and the room announcement carry, never a wildcard.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar, cast

import structlog
import trio

from open4wd_base.errors import LocalError
from open4wd_node.runtime.addresses import AUTOMATIC, Address, Advertise, parse_address
from open4wd_node.net.advertise import Advertised, Source, advertised_address, is_loopback_host
from open4wd_node.view.events import EventSink
from open4wd_node.net.link import Link
from open4wd_node.runtime.errors import UserError
from open4wd_node.net.admission import LISTENER_LIMITS, ListenerLimits
from open4wd_node.net.transport import serve
from protocol.identity.keys import Identity
from protocol.room.messages import EXPENSIVE_TYPES
from protocol.encoding.wire import Message

__all__ = ["NodeListener", "parse_address", "with_listener"]

log = structlog.get_logger("open4wd_node.listener")
Handler = Callable[[Link, Message], Awaitable[None]]
T = TypeVar("T")
M = TypeVar("M", bound=Message)


class NodeListener:
    """This node's one listener: hands each authenticated link to the handler of its first message's
    type (``add_handler``), which the room and the race register while they accept links."""

    def __init__(self, identity: Identity, advertise: Advertise = AUTOMATIC, door: ListenerLimits = LISTENER_LIMITS) -> None:
        self.identity = identity
        self.advertise = advertise
        self.door = door  # what opening connections may cost
        self.handlers: dict[type[Message], Handler] = {}  # first message type -> its handler
        self.address: Address | None = None  # where it is bound (the real port, also when 0 was asked)
        self.advertised: Advertised | None = None  # what peers are told to dial

    def add_handler(self, kind: type[M], handler: Callable[[Link, M], Awaitable[None]]) -> None:
        """From now on a link whose first message is a ``kind`` goes to ``handler(link, first)``
        (replacing an earlier handler of that kind)."""
        self.handlers[kind] = cast(Handler, handler)  # sound: ``_accept`` passes it only a ``kind``

    def remove_handler(self, kind: type[Message]) -> None:
        """Links opening with a ``kind`` are refused again (``join-expected``); no error if none was set."""
        self.handlers.pop(kind, None)

    def serving(self) -> tuple[Address, Advertised]:
        """Where the listener is bound and what it advertises; ``LocalError`` before ``run`` bound it."""
        if self.address is None or self.advertised is None:
            raise LocalError("listener-not-bound", "the node's listener is not serving yet")
        return self.address, self.advertised

    @property
    def announced(self) -> str:
        """``HOST:PORT`` for invitations and the room's member list (empty until bound)."""
        return str(self.advertised.address) if self.advertised else ""

    async def run(self, host: str, port: int, *, task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; ``await nursery.start(listener.run, host, port)`` gives the address.
        ``UserError`` ``listen-failed`` when the address cannot be bound."""
        async with trio.open_nursery() as nursery:
            try:
                self.address = await nursery.start(
                    partial(serve, self._accept, self.identity, host, port, expensive=EXPENSIVE_TYPES, door=self.door)
                )
            except OSError as exc:
                raise UserError("listen-failed", f"cannot listen on {Address(host, port)}: {exc.strerror}") from None
            self.advertised = advertised_address(self.address, self.advertise)
            task_status.started(self.address)

    def report_advertised(self, events: EventSink, room_host: str | None = None) -> None:
        """Say (an event and a log line) when the advertised address was guessed, because this node
        listens on a wildcard; and when a joiner announces loopback to a host ``room_host`` on another
        machine, whose peers could then not open race links to it."""
        bound, advertised = self.serving()
        if advertised.guessed:
            where = ("this machine's primary interface" if advertised.source is Source.PRIMARY_INTERFACE
                     else "loopback, as no interface has a route: only this machine can join")
            log.warning("advertise-guessed", listen=str(bound), advertise=str(advertised.address),
                        hint=f"listening on {bound} (every interface), peers are told {advertised.address}: {where}; "
                             "give --advertise HOST[:PORT] when they must dial another address (docs/network.md)")
            events.emit("advertise", address=str(advertised.address), listen=str(bound), source=advertised.source.value)
        if room_host is not None and is_loopback_host(advertised.address.host) and not is_loopback_host(room_host):
            log.warning("advertise-unreachable", advertise=str(advertised.address), room_host=room_host,
                        hint="peers on other machines cannot open race links to a loopback address: "
                             "listen with --listen 0.0.0.0:PORT (docs/network.md)")
            events.emit("advertise-unreachable", address=str(advertised.address), room_host=room_host)

    async def _accept(self, link: Link) -> None:
        first = await link.receive()  # at once: ``serve`` hands a link over when its first message is in
        handler = self.handlers.get(type(first))
        if handler is None:
            await link.aclose("join-expected", f"this node is not waiting for a {first.TYPE} link now")
            return
        await handler(link, first)


async def with_listener(
    identity: Identity, host: str, port: int, body: Callable[[NodeListener], Awaitable[T]], advertise: Advertise = AUTOMATIC
) -> T:
    """Run ``body`` while this node's listener serves on ``host:port``; stop listening afterwards."""
    async with trio.open_nursery() as nursery:
        listener = NodeListener(identity, advertise)
        await nursery.start(listener.run, host, port)
        result = await body(listener)
        nursery.cancel_scope.cancel()
    return result
