"""Runs a room's sans-IO machines over real links: routing, per-link outboxes, timers, asset transfer.

One driver per node. In a host node the host's own ``MemberRoom`` talks to its ``HostRoom`` in
process (the host's PeerId is the sender both ways); every other member is a ``Link``. All machine
calls happen synchronously in trio tasks of one nursery, so no locking is needed; sends go through a
bounded outbox per link and a slow peer whose outbox overflows is disconnected instead of stalling
the room.

Actions are delivered first in, first out: everything one machine call produced is routed, in order,
before the reactions it causes in the other machine. Routing the host's own seat depth-first (handling
its reaction in the middle of a broadcast) put the seat's version request on a newcomer's link ahead
of the room-state that lists the host, and every room waited out a version-collection timeout.
"""

from __future__ import annotations

import math
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog
import trio

from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.assets.transfer import AssetTransfer
from open4wd_node.runtime.blocking import run_blocking
from open4wd_node.runtime.clock import NodeClock
from open4wd_node.events.sink import EventSink
from open4wd_node.net.containment import contained, contained_link
from open4wd_node.net.link import Link, LinkClosed
from open4wd_node.net.outbox import Outbox, flush
from open4wd_node.net.transport import BUSY_RETRY_S
from open4wd_node.net.reach import dial_contact
from open4wd_node.net.listener import SignalingReach
from open4wd_base.errors import CodedError, LocalError
from protocol.errors import ProtocolError
from protocol.actions import UserEvent
from protocol.room.actions import CloseLink, FetchAssets, HostSuccession, MatchStarted, Misbehaviour, RelayedIn, RoomAction, Send
from protocol.room.events import (
    ErrorReported, GridCancelled, MemberLeft, ReadyChanged, ReadySetFormed, ReadySetRefused, RoomDecided,
)
from protocol.room.host import HostRoom
from protocol.room.member import MemberRoom
from protocol.identity.keys import Identity
from protocol.room.states import Departure
from protocol.room.messages import EXPENSIVE_TYPES, JoinRequest
from protocol.encoding.wire import Message
from open4wd_node.events.vocabulary import RoomHosted
from protocol.identity.keys import PeerId

log = structlog.get_logger("open4wd_node.room")

OUTBOX_CAPACITY = 512
# In a host node the member machine reports what every member sees; the host adds only these, and its
# ``MemberLeft`` (which knows why) replaces the member view's (which sees only a name vanish).
HOST_EVENTS = (ReadyChanged, ReadySetFormed, ReadySetRefused, GridCancelled, ErrorReported, MemberLeft)


@dataclass
class LinkOutbox:
    """One room link and the outbox its writer task drains."""

    link: Link
    queue: Outbox[Message]


@dataclass(frozen=True)
class SuccessionPlan:
    """What a participant needs to take over, or follow, a new host (spec/rooms.md §4.2)."""

    identity: Identity
    participant_secret: bytes
    listen: str  # this node's own contact: "host:port", and its signaling services (protocol.link.contact)
    new_member: Callable[[PeerId], MemberRoom]  # host PeerId -> a fresh member machine for that host
    webrtc: SignalingReach | None = None  # dial it over WebRTC in the room's scope (docs/webrtc.md)


@dataclass
class RoomOutcome:
    """How the room ended for this node: the match it started (None: it did not) and every roster
    member's listen address, which the race mesh dials."""

    started: MatchStarted | None = None
    addresses: dict[PeerId, str] = field(default_factory=dict)  # roster PeerId -> listen "host:port"


class RoomDriver:
    """Drives this node's room machines over its links (module docstring). ``on_notices(member)`` runs
    after every delivery (the notice board); ``succession`` lets a participant take over or follow a
    new host when the host's link is lost."""

    def __init__(
        self, member: MemberRoom, events: EventSink, transfer: AssetTransfer, host: HostRoom | None = None,
        on_notices: Callable[[MemberRoom], None] | None = None, succession: SuccessionPlan | None = None,
    ) -> None:
        self.member = member
        self.host = host
        self.events = events
        self.transfer = transfer
        self.me = member.me
        self.outboxes: dict[str, LinkOutbox] = {}
        self._held: list[Link] = []  # every room link attached, ended or not: all closed when the room ends
        self.outcome = RoomOutcome()
        self.done = trio.Event()
        self.clock = NodeClock()
        self._nursery: trio.Nursery | None = None
        self._on_notices = on_notices
        self.succession = succession
        self._pending: deque[tuple[Callable[[RoomAction], None], RoomAction]] = deque()
        self._delivering = False
        self._timer: trio.CancelScope | None = None  # the ticker's sleep, aimed at the next machine deadline

    @property
    def _plan(self) -> SuccessionPlan:
        """How to succeed the host; ``LocalError`` without one (succession is only offered with a plan)."""
        if self.succession is None:
            raise LocalError("room-no-succession", "this node has no host succession plan")
        return self.succession

    # ---- routing (synchronous) --------------------------------------------------------------------

    def from_host(self, actions: list[RoomAction]) -> None:
        """Route what the host machine returned (after everything queued before it)."""
        self._deliver([(self._host_action, a) for a in actions])

    def from_member(self, actions: list[RoomAction]) -> None:
        """Route what the member machine returned (after everything queued before it)."""
        self._deliver([(self._member_action, a) for a in actions])

    def _deliver(self, batch: list[tuple[Callable[[RoomAction], None], RoomAction]]) -> None:
        """Route ``batch`` after everything queued before it; a call made while routing only queues."""
        self._pending.extend(batch)
        if self._delivering:
            return
        self._delivering = True
        try:
            while self._pending:
                route, action = self._pending.popleft()
                route(action)
        finally:
            self._delivering = False
        if self._timer is not None:
            self._timer.deadline = self._next_wake()
        if self._on_notices is not None:
            self._on_notices(self.member)
        self.events.room_changed(self.member)

    def _host_action(self, action: RoomAction) -> None:
        if isinstance(action, Send):
            if action.peer == self.me:
                self.from_member(self.member.receive(self.me, action.message, self.clock.now_ms()))
            else:
                self._enqueue(action.peer, action.message)
        elif isinstance(action, CloseLink):
            self._close_soon(action.peer, action.code)
        elif isinstance(action, Misbehaviour):
            log.info("room-misbehaviour", peer=action.peer, code=action.code)
        elif isinstance(action, RoomDecided):  # shown by this node's own seat, which the decision reaches too
            log.info("room-decision", **action.data())
        elif isinstance(action, HOST_EVENTS):
            self.events.emit(action)

    def _member_action(self, action: RoomAction) -> None:
        if isinstance(action, Send):
            if self.host is not None:
                self.from_host(self.host.receive(self.me, action.message, self.clock.now_ms()))
            else:
                self._enqueue(self.member.host_peer, action.message)
        elif isinstance(action, Misbehaviour):
            log.info("room-misbehaviour", peer=action.peer, code=action.code)
        elif isinstance(action, MemberLeft) and self.host is not None:
            pass  # the host machine reported this leave with its reason (HOST_EVENTS)
        elif isinstance(action, UserEvent):
            self.events.emit(action)
        elif isinstance(action, FetchAssets):
            self._tasks().start_soon(self._fetch, action)
        elif isinstance(action, RelayedIn):
            self._tasks().start_soon(self._relayed, action)
        elif isinstance(action, MatchStarted):
            state = self.member.state  # a member reports the start only after room states
            self.outcome.started = action
            self.outcome.addresses = {m.peerId: m.listen for m in state.members} if state is not None else {}
            self.done.set()
        elif isinstance(action, HostSuccession):
            self._follow_successor(action)

    def _tasks(self) -> trio.Nursery:
        """The room's nursery, where routing starts background work (``_drive`` sets it before any routing)."""
        if self._nursery is None:
            raise LocalError("room-not-running", "the room driver routes actions only while it runs")
        return self._nursery

    def _enqueue(self, peer: PeerId, message: Message) -> None:
        outbox = self.outboxes.get(peer)
        if outbox is not None and not outbox.queue.put(message):
            self._close_soon(peer, "link-backlog")

    def _close_soon(self, peer: PeerId, code: str) -> None:
        outbox = self.outboxes.get(peer)
        if outbox is not None:
            outbox.queue.close()  # the writer flushes what is queued (a verdict), then closes the link

    async def _fetch(self, request: FetchAssets) -> None:
        for ref in request.refs:
            async with contained(request.owner, f"its asset {ref[:12]}", self._relayed_work_failed):
                stored = await self.transfer.fetch(request.owner, ref, self._relay_send)
                assets = self.member.assets
                if stored and isinstance(assets, NodeRoomAssets):  # the shell's members all hold NodeRoomAssets
                    await run_blocking(assets.prepare, [ref])  # admitted off the loop, checked below
                if stored:
                    self.from_member(self.member.asset_stored(ref, self.clock.now_ms()))

    async def _relayed(self, action: RelayedIn) -> None:
        async with contained(action.origin, f"a relayed {action.message.TYPE}", self._relayed_work_failed):
            for reply in await self.transfer.on_relayed(action.origin, action.message):
                self._relay_send(reply)

    async def _relayed_work_failed(self, code: str, text: str) -> None:
        """Work for a peer reached through the host's relay has no link of its own to close: its end is
        an ``error`` event (the asset stays missing, so that peer's car cannot be checked)."""
        self.events.emit(ErrorReported(code=code, message=text))

    def _relay_send(self, message: Message) -> None:
        self.from_member([Send(self.member.host_peer, message)])

    # ---- per-link tasks ---------------------------------------------------------------------------

    def attach(self, link: Link) -> LinkOutbox:
        """A fresh outbox for ``link`` (replacing, and closing, the peer's previous one)."""
        old = self.outboxes.get(link.peer_id)
        if old is not None:
            old.queue.close()
        outbox = LinkOutbox(link, Outbox(OUTBOX_CAPACITY))
        self.outboxes[link.peer_id] = outbox
        self._held.append(link)
        return outbox

    def links(self) -> list[Link]:
        """Every room link this node attached (to its host, to its members), for closing when the room ends."""
        return list(self._held)

    async def _writer(self, outbox: LinkOutbox) -> None:
        """Sends until the outbox closes (then closes the link) or the link ends (the reader reports it)."""
        try:
            await outbox.queue.drain(outbox.link.send)
        except LinkClosed:
            return
        await outbox.link.aclose("closed-by-host", "the room closed this link")

    async def flush(self, timeout_s: float) -> None:
        """Let what is queued (``match-start``, say) reach the links before the room stops."""
        await flush([o.queue for o in self.outboxes.values()], timeout_s)

    async def run_link(
        self, outbox: LinkOutbox, on_message: Callable[[PeerId, Message], None],
        on_closed: Callable[[PeerId, LinkClosed | None], None],
    ) -> None:
        """Read and write one link until it ends; report its end exactly once, with why it ended (None
        when this node closed it for its own reasons)."""
        link = outbox.link
        ended: LinkClosed | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._writer, outbox)
                try:
                    async for message in link:
                        async with contained_link(link, message.TYPE):
                            on_message(link.peer_id, message)
                except LinkClosed as exc:
                    ended = exc
                    log.info("link-ended", peer=link.peer_id, code=exc.code, reason=exc.message)
                nursery.cancel_scope.cancel()
        finally:
            if self.outboxes.get(link.peer_id) is outbox:
                del self.outboxes[link.peer_id]
                on_closed(link.peer_id, ended)

    def _next_wake(self) -> float:
        """The trio time of the machines' next deadline (countdown, grid phase, version retry), or never."""
        host = self.host.next_deadline() if self.host is not None else None
        deadlines = [d for d in (host, self.member.next_deadline()) if d is not None]
        if not deadlines:
            return math.inf
        return trio.current_time() + max(0, min(deadlines) - self.clock.now_ms()) / 1000

    async def ticker(self) -> None:
        """Fires the machines' timers at their deadlines, re-aimed after every delivery (no polling, so
        the countdown ends on time rather than up to a polling period late)."""
        while True:
            with trio.CancelScope(deadline=self._next_wake()) as self._timer:
                await trio.sleep_forever()
            now = self.clock.now_ms()
            if self.host is not None:
                self.from_host(self.host.tick(now))
            self.from_member(self.member.tick(now))

    # ---- host side --------------------------------------------------------------------------------

    async def accept_join(self, link: Link, first: JoinRequest) -> None:
        """A link whose first message is a join request (``NodeListener`` enforces the 10 s limit)."""
        if self.host is None:
            await link.aclose("not-host", "this node is not hosting the room (yet)")
            return
        host = self.host  # never replaced while this node hosts (a successor only ever replaces None)
        outbox = self.attach(link)
        self.from_host(host.join(link.peer_id, link.transcript, first, self.clock.now_ms()))
        await self.run_link(
            outbox,
            lambda peer, msg: self.from_host(host.receive(peer, msg, self.clock.now_ms())),
            lambda peer, ended: self.from_host(host.link_closed(peer, self.clock.now_ms(), self._departure(ended))),
        )

    def _departure(self, ended: LinkClosed | None) -> str:
        """Why a member's link ended: ``room-ended`` once the room is over (every room link closes then),
        else the peer's code, or ``link-closed`` when this node closed it."""
        if self.done.is_set():
            return Departure.ROOM_ENDED
        return Departure.LINK_CLOSED if ended is None else ended.code

    # ---- member side ------------------------------------------------------------------------------

    async def run_member_link(self, link: Link) -> None:
        """This member's link to the host: messages go to the member machine; its end is ``_host_lost``."""
        outbox = self.attach(link)
        await self.run_link(
            outbox,
            lambda peer, msg: self.from_member(self.member.receive(peer, msg, self.clock.now_ms())),
            self._host_lost,
        )

    def _host_lost(self, peer: PeerId, ended: LinkClosed | None) -> None:
        if self.done.is_set() or peer != self.member.host_peer:
            return
        actions = self.member.host_lost(self.clock.now_ms())
        if self.succession is None or not any(isinstance(a, HostSuccession) for a in actions):
            why = "" if ended is None else f" ({ended.code}: {ended.message})"
            self.events.emit(ErrorReported(code="host-lost", message=f"the link to the host ended before the match started{why}"))
            self.done.set()
            return
        self.from_member(actions)

    def _follow_successor(self, succession: HostSuccession) -> None:
        plan = self._plan
        now = self.clock.now_ms()
        if succession.successor == self.me:
            config = self.member.config
            if config is None:
                raise LocalError("room-no-state", "a host succession before the first room state")
            digests = self.member.assets.track_digests(config)
            self.host = HostRoom.succeed(
                plan.identity, succession.state, self.member.host_peer, plan.participant_secret, digests, now, plan.listen
            )
            self.member = plan.new_member(self.me)
            self.events.emit(RoomHosted(room_id=self.host.room_id, listen=plan.listen))
            self.from_member(self.member.receive(self.me, self.host.state_message(), now))
        else:
            self.member = plan.new_member(succession.successor)
            self._tasks().start_soon(self._dial_successor, succession)

    async def _dial_successor(self, succession: HostSuccession) -> None:
        plan = self._plan
        try:
            link = await dial_contact(succession.listen, plan.identity, succession.successor,
                                      expensive=EXPENSIVE_TYPES, busy_retry_s=BUSY_RETRY_S, webrtc=plan.webrtc)
        except LinkClosed as exc:
            self.events.emit(ErrorReported(code="succession-failed", message=f"cannot reach the new host: {exc}"))
            self.done.set()
            return
        request = self.member.join_request(link.transcript, plan.participant_secret)
        await link.send(request)
        await self.run_member_link(link)

    def handle_error(self, exc: CodedError) -> None:
        """Show a refused local command (``ready`` at the wrong moment, say) as an ``error`` event."""
        self.events.emit(ErrorReported(code=exc.code, message=exc.message))


PLAYER_COMMANDS = "ready | cancel | leave"


async def read_player_commands(driver: RoomDriver) -> None:
    """Lines on stdin steer the player's seat: ``ready``, ``cancel`` (un-ready), ``leave``.

    A command the seat refuses in its state (``ready`` without a car, say) is the player's to know: it
    becomes an ``error`` event, whether the member machine calls it a protocol rule or a local misuse
    (``LocalError``). A ``LocalError`` from routing the seat's answer is a bug of this node and propagates."""
    while True:
        try:
            line = await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        except OSError:
            return
        if not line:
            return  # no terminal (or end of input): --auto-ready or the host's view only
        command = line.strip().lower()
        try:  # only the member machine's answer: a bug while routing it must not pass for a refused command
            if command == "ready":
                actions = driver.member.declare_ready(driver.clock.now_ms())
            elif command == "cancel":
                actions = driver.member.cancel_ready()
            elif command == "leave":
                actions = driver.member.leave()
            else:
                actions = []
        except (LocalError, ProtocolError) as exc:  # a command refused now, or a car that cannot be signed
            driver.handle_error(exc)
            continue
        driver.from_member(actions)
        if command == "leave":
            driver.events.emit(ErrorReported(code="left", message="you left the room"))
            driver.done.set()
            return
        if command and command not in ("ready", "cancel"):
            driver.events.emit(ErrorReported(code="unknown-command", message=f"commands: {PLAYER_COMMANDS}"))
