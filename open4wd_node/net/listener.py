"""One listener per node for a whole match: the first message on a link says what the link is for.

A room join (``join-request``) goes to the room, a race-mesh greeting to the race; a link that says
nothing within 5 s of its handshake (``join-timeout``), or opens with anything no phase is waiting for
(``join-expected``), is closed with a code; what a connection may cost until then is the transport's
``ListenerLimits`` (docs/transport.md, "The listener's door"). Once
bound, the listener knows the address it advertises (``open4wd_node.net.advertise``): what invitations
and the room announcement carry, never a wildcard. A node with a signaling service also answers WebRTC
offers in its room's scope through the same door (``SignalingReach``); what it announces is then its
contact (``protocol.link.contact``): the direct address (none with ``reachability = relay``, or with a
service and no listen address of its own) and its services.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from enum import StrEnum
from functools import partial
from typing import Protocol, TypeVar, cast

import structlog
import trio

from open4wd_base.errors import LocalError
from open4wd_node.runtime.addresses import AUTOMATIC, Address, Advertise, parse_address
from open4wd_node.net.advertise import Advertised, Source, advertised_address, is_loopback_host
from open4wd_node.events.sink import EventSink
from open4wd_node.net.link import Link
from open4wd_node.net.link_rules import ROOM_LIMITS, LinkLimits
from open4wd_node.runtime.errors import UserError
from open4wd_node.net.admission import LISTENER_LIMITS, ListenerLimits
from open4wd_node.net.transport import Door, serve
from protocol.identity.keys import Identity, PeerId
from protocol.link.contact import Contact
from protocol.room.messages import EXPENSIVE_TYPES
from protocol.encoding.wire import Message
from open4wd_node.events.vocabulary import AdvertiseGuessed, AdvertiseUnreachable

__all__ = ["Doorway", "NodeListener", "Reachability", "SignalingReach", "parse_address"]

log = structlog.get_logger("open4wd_node.listener")
Handler = Callable[[Link, Message], Awaitable[None]]
T = TypeVar("T")
M = TypeVar("M", bound=Message)


class Reachability(StrEnum):
    """How peers reach this node (the ``reachability`` setting)."""

    AUTO = "auto"  # listens directly (unless reached through signaling only), and uses every ICE server given
    DIRECT = "direct"  # never through TURN: host and server-reflexive WebRTC pairs, and direct TCP
    RELAY = "relay"  # accepts no direct link: reachable only over WebRTC, through TURN relay candidates only


class SignalingReach(Protocol):
    """This node's WebRTC side (``open4wd_node.net.webrtc.reach.WebRTCReach``): registered in a room's scope
    at a signaling service, it answers offers there through the listener's door and opens links there."""

    @property
    def signals(self) -> tuple[str, ...]:
        """The services this node announces (the one it registered at first)."""

    @property
    def serving(self) -> bool:
        """Whether it is registered and answers offers."""

    async def serve(self, scope: str, signals: tuple[str, ...], gate: Door, *,
                    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Register in ``scope`` (at ``signals`` first) and answer offers through ``gate`` until cancelled."""

    async def dial(self, peer: PeerId, *, expensive: frozenset[str] = frozenset(), limits: LinkLimits = ROOM_LIMITS) -> Link:
        """A link to ``peer`` in this node's scope; ``LinkClosed`` when none opens."""


class Doorway(Protocol):
    """Where links arrive, handed over by their first message's type: the node's listener, or a test's or
    the soak's wrapper of it (``open4wd_node.faults``)."""

    def add_handler(self, kind: type[M], handler: Callable[[Link, M], Awaitable[None]]) -> None:
        """From now on a link whose first message is a ``kind`` goes to ``handler(link, first)``."""

    def remove_handler(self, kind: type[Message]) -> None:
        """Links opening with a ``kind`` are refused again."""


class NodeListener:
    """This node's one listener: hands each authenticated link to the handler of its first message's
    type (``add_handler``), which the room and the race register while they accept links."""

    def __init__(self, identity: Identity, advertise: Advertise = AUTOMATIC, door: ListenerLimits = LISTENER_LIMITS,
                 reachability: str = "auto", webrtc: SignalingReach | None = None, listen_directly: bool = True) -> None:
        """``webrtc``: this node's WebRTC side, which answers in a room's scope once ``enter_scope`` names it;
        ``listen_directly`` False: no TCP listener (a node reached through signaling only). ``LocalError``
        ``listener-unreachable`` for ``reachability = relay`` without a signaling service (the command line
        refuses that first: ``open4wd_node.net.webrtc.reach.check_reachability``)."""
        self.identity = identity
        self.advertise = advertise
        self.door = door  # what opening connections may cost
        self.reachability = Reachability(reachability)
        self.webrtc = webrtc
        self.listen_directly = listen_directly and self.reachability is not Reachability.RELAY
        if self.reachability is Reachability.RELAY and (webrtc is None or not webrtc.signals):
            raise LocalError("listener-unreachable", "a relay-only listener needs a signaling service to be reached through")
        self.gate = Door(self._accept, identity, expensive=EXPENSIVE_TYPES, door=door)  # TCP and WebRTC links
        self.handlers: dict[type[Message], Handler] = {}  # first message type -> its handler
        self.address: Address | None = None  # where it is bound (the real port, also when 0 was asked)
        self.advertised: Advertised | None = None  # what peers are told to dial
        self.on_link: Callable[[Link], None] | None = None
        """Told of every link this node opens or admits, whatever carries it (the ``link-path`` event)."""
        self._nursery: trio.Nursery | None = None

    def add_handler(self, kind: type[M], handler: Callable[[Link, M], Awaitable[None]]) -> None:
        """From now on a link whose first message is a ``kind`` goes to ``handler(link, first)``
        (replacing an earlier handler of that kind)."""
        self.handlers[kind] = cast(Handler, handler)  # sound: ``_accept`` passes it only a ``kind``

    def remove_handler(self, kind: type[Message]) -> None:
        """Links opening with a ``kind`` are refused again (``join-expected``); no error if none was set."""
        self.handlers.pop(kind, None)

    @property
    def direct(self) -> bool:
        """Whether this node accepts direct TCP links (not with ``reachability = relay``, nor when it is
        reached through signaling only)."""
        return self.listen_directly

    def serving(self) -> tuple[Address, Advertised]:
        """Where the listener is bound and what it advertises; ``LocalError`` before ``run`` bound it, or on
        a node that accepts no direct links."""
        if self.address is None or self.advertised is None:
            raise LocalError("listener-not-bound", "the node's listener is not serving (yet, or at all: reachability relay)")
        return self.address, self.advertised

    @property
    def contact(self) -> Contact:
        """How peers reach this node: its advertised address (once bound; none without a TCP listener) and
        its signaling services once it answers there."""
        signals = self.webrtc.signals if self.webrtc is not None and self.webrtc.serving else ()
        return Contact(str(self.advertised.address) if self.advertised else None, signals)

    def report_link(self, link: Link) -> None:
        """Tell ``on_link`` of a link this node opened or admitted."""
        if self.on_link is not None:
            self.on_link(link)

    async def enter_scope(self, scope: str, signals: tuple[str, ...] = ()) -> None:
        """Answer WebRTC offers in ``scope`` (a room's), registered at ``signals`` (an invitation's) or this
        node's own services, from now until the listener stops; nothing without a WebRTC side or a service,
        or when already answering. ``UserError`` ``signal-unreachable`` when no service answers."""
        if self.webrtc is None or self.webrtc.serving or not (signals or self.webrtc.signals):
            return
        assert self._nursery is not None, "enter_scope is called while the listener runs"
        await self._nursery.start(partial(self.webrtc.serve, scope, signals, self.gate))

    async def close_links(self, links: list[Link], code: str, text: str) -> None:
        """Close ``links`` with ``code``. While the listener runs, in its nursery, so the caller goes on at
        once (the race starts): a link's close is bounded (it tells the peer for at most a second, and a
        WebRTC carrier waits at most a second for the peer), and the listener's end cancels what is left
        of it (the carrier still closes). A cancelled caller (the node leaving, the listener stopping with
        it) closes them here, shielded, within those bounds."""
        if self._nursery is not None and trio.current_effective_deadline() > -math.inf:
            for link in links:
                self._nursery.start_soon(link.aclose, code, text)
            return
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for link in links:
                    nursery.start_soon(link.aclose, code, text)

    @property
    def announced(self) -> str:
        """The contact text for the room's member list: ``HOST:PORT`` for a node only directly reachable
        (empty until bound)."""
        return str(self.contact)

    async def run(self, host: str, port: int, *, task_status: trio.TaskStatus[Address | None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; ``await nursery.start(listener.run, host, port)`` gives the address (None
        for a node that accepts no TCP links). ``UserError`` ``listen-failed`` when the address cannot be bound."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                if self.direct:
                    try:
                        self.address = await nursery.start(partial(serve, self._accept, self.identity, host, port,
                                                                   door=self.gate))
                    except OSError as exc:
                        raise UserError("listen-failed", f"cannot listen on {Address(host, port)}: {exc.strerror}") from None
                    self.advertised = advertised_address(self.address, self.advertise)
                task_status.started(self.address)
                await trio.sleep_forever()  # the nursery stays open for what ``enter_scope`` starts, until cancelled
        finally:
            self._nursery = None

    def report_advertised(self, events: EventSink, room_host: str | None = None) -> None:
        """Say (an event and a log line) when the advertised address was guessed, because this node
        listens on a wildcard; and when a joiner announces loopback to a host ``room_host`` on another
        machine, whose peers could then not open race links to it. Nothing to say without a direct address."""
        if not self.direct:
            return
        bound, advertised = self.serving()
        if advertised.guessed:
            where = ("this machine's primary interface" if advertised.source is Source.PRIMARY_INTERFACE
                     else "loopback, as no interface has a route: only this machine can join")
            log.warning("advertise-guessed", listen=str(bound), advertise=str(advertised.address),
                        hint=f"listening on {bound} (every interface), peers are told {advertised.address}: {where}; "
                             "give --advertise HOST[:PORT] when they must dial another address (docs/network.md)")
            events.emit(AdvertiseGuessed(address=str(advertised.address), listen=str(bound), source=advertised.source.value))
        if room_host is not None and is_loopback_host(advertised.address.host) and not is_loopback_host(room_host):
            log.warning("advertise-unreachable", advertise=str(advertised.address), room_host=room_host,
                        hint="peers on other machines cannot open race links to a loopback address: "
                             "listen with --listen 0.0.0.0:PORT (docs/network.md)")
            events.emit(AdvertiseUnreachable(address=str(advertised.address), room_host=room_host))

    async def _accept(self, link: Link) -> None:
        self.report_link(link)
        first = await link.receive()  # at once: ``serve`` hands a link over when its first message is in
        handler = self.handlers.get(type(first))
        if handler is None:
            await link.aclose("join-expected", f"this node is not waiting for a {first.TYPE} link now")
            return
        await handler(link, first)

