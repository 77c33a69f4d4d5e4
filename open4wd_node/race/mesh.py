"""The race's fixed-roster full mesh: one authenticated link per pair of roster peers.

The peer with the smaller PeerId dials the other's contact (its room listen address, or its relays when
that fails: ``open4wd_node.relay.reach``), checking its PeerId; the
other accepts the link on its ``NodeListener`` when the first message names this match, and echoes it
to confirm (a peer whose race has not started yet refuses, and the dialer tries again). A lost link
is re-dialled by the same side every 500 ms while the race runs, so a peer that comes back within the
session's reconnect window resumes on a fresh link. A message is written at once when nothing is queued
for its link (``Link.send_now``: no task switch), else it goes through the link's bounded outbox.

Limits: each side paces what it sends to ``RACE_LIMITS``; what it accepts is ``RACE_INGRESS_LIMITS``,
the same rates with bursts larger by the reconnect window's worth of the peer's pace, so a peer that
resumes after a stall of up to that window (or a receiver that resumes and reads a window's backlog at
once) is never throttled. A message a bucket drops anyway is logged and counted (``drops``).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import replace

import structlog
import trio

from open4wd_base.errors import LocalError
from open4wd_node.net.containment import contain
from open4wd_node.net.link import Link, LinkClosed
from open4wd_node.net.link_rules import LinkLimits
from open4wd_node.net.listener import NodeListener
from open4wd_node.net.outbox import Outbox, flush
from open4wd_node.race.budget import CpuBudget
from open4wd_node.relay.reach import dial_contact
from protocol.errors import ProtocolError
from protocol.relay.contact import Contact
from protocol.identity.keys import Identity
from protocol.race.costs import CostPart
from protocol.race.mesh import MeshHello
from protocol.race.messages import INPUT_TYPES, RACE_LINK
from protocol.race.recovery import RECONNECT_WINDOW_MS
from protocol.encoding.wire import REGISTRY, Message

log = structlog.get_logger("open4wd_node.mesh")

OUTBOX_CAPACITY = 1024
REDIAL_S = 0.5
RACE_LIMITS = LinkLimits(
    general_burst=120, general_per_second=90,
    general_bytes_burst=RACE_LINK.max_frame_bytes + 64 * 1024, general_bytes_per_second=4 * 1024 * 1024,
    expensive_burst=32, expensive_per_second=32,
)
RACE_CONTROL_TYPES = frozenset(t for t in REGISTRY if t.startswith("race-") and t not in INPUT_TYPES)


def with_headroom(limits: LinkLimits, window_ms: int) -> LinkLimits:
    """Ingress limits that accept, all at once, everything a sender paced to ``limits`` may send in
    ``window_ms``: each burst grows by its rate times the window, the rates stay. A paced stream whose
    messages each arrive at most ``window_ms`` late (a stalled sender or receiver catching up) then
    always passes: in any span of arrivals ``T``, they were sent within ``T + window``, which the
    sender's own buckets bound by ``burst + rate × (T + window)``, exactly the wider bucket's bound."""
    grow = window_ms / 1000
    return replace(
        limits,
        general_burst=limits.general_burst + math.ceil(limits.general_per_second * grow),
        general_bytes_burst=limits.general_bytes_burst + math.ceil(limits.general_bytes_per_second * grow),
        expensive_burst=limits.expensive_burst + math.ceil(limits.expensive_per_second * grow),
    )


RACE_INGRESS_LIMITS = with_headroom(RACE_LIMITS, RECONNECT_WINDOW_MS)
"""What a race link accepts: ``RACE_LIMITS`` plus the reconnect window's headroom (``with_headroom``)."""


class StallGate:
    """Fault injection: while stalled, the pump and (unless only the pump stalls) the mesh's readers,
    writers and dialler stand still, as in a process stopped by SIGSTOP (``stall``); everything resumes
    at the deadline. A pump-only stall keeps the links read and answered: a node alive but stuck."""

    def __init__(self) -> None:
        self.until = -math.inf
        self.links_until = -math.inf

    def stall(self, seconds: float, links: bool = True) -> None:
        """Stand still for ``seconds`` from now (trio's clock): the pump, and the links if ``links``."""
        self.until = max(self.until, trio.current_time() + seconds)
        if links:
            self.links_until = max(self.links_until, self.until)

    async def wait(self) -> None:
        """The pump's gate: return at once unless stalled; then at the end of the stall."""
        if trio.current_time() < self.until:
            await trio.sleep_until(self.until)

    def links_open(self) -> bool:
        """Whether the links run now (not stalled). No clock read unless a stall was ever asked for: the
        mesh asks before every message it writes."""
        return self.links_until == -math.inf or trio.current_time() >= self.links_until

    async def wait_links(self) -> None:
        """The links' gate: return at once unless the links are stalled; then at the end of the stall."""
        if not self.links_open():
            await trio.sleep_until(self.links_until)


class Mesh:
    """This node's links to the other roster peers of one match (see the module docstring).

    ``on_message(peer, message)`` gets every race message, ``on_lost(peer)`` hears that a link ended
    (not when the mesh itself closes), ``on_back(peer)`` that a peer linked before has a new link;
    ``linked`` is set once every peer was linked at least once."""

    def __init__(
        self,
        identity: Identity,
        match_id: str,
        addresses: dict[str, str],
        listener: NodeListener,
        on_message: Callable[[str, Message], None],
        on_lost: Callable[[str], None],
        on_back: Callable[[str], None],
        budget: CpuBudget | None = None,
    ) -> None:
        self.me = identity.peer_id
        self.identity = identity
        self.match_id = match_id
        self.addresses = addresses  # every other roster peer -> "host:port"
        self.listener = listener
        self.on_message, self.on_lost, self.on_back = on_message, on_lost, on_back
        self.outboxes: dict[str, Outbox[Message | None]] = {}
        self.links: dict[str, Link] = {}
        self._offline_until = 0.0  # trio time before which this node refuses and makes no mesh links
        self.ever_linked: set[str] = set()
        self.linked = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._closing = False
        self.gate = StallGate()
        self.budget = budget
        """Charged with the links' CPU time (their tasks and codecs); the messages' handling is the shell's."""
        self._pump_reads = False  # the frame pump reads the links (``take_reads``)
        self.drops: dict[str, int] = {}
        """Incoming messages a link's rate limit dropped, by ``link-bucket-<bucket>`` (never expected)."""

    @property
    def peers(self) -> list[str]:
        """The other roster peers, in PeerId order."""
        return sorted(self.addresses)

    @property
    def _tasks(self) -> trio.Nursery:
        """The nursery of ``run``; ``LocalError`` when the mesh is not running (a shell bug)."""
        if self._nursery is None:
            raise LocalError("mesh-not-running", "the race mesh is not running")
        return self._nursery

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Dial the peers this node dials, accept the others' links on the listener, and keep every
        link (re-dialling lost ones) until cancelled; ``nursery.start`` returns once it accepts links."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.listener.add_handler(MeshHello, self._accept)
            for peer in self.peers:
                if self.me < peer:
                    nursery.start_soon(self._dial_loop, peer)
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._closing = True
                self.listener.remove_handler(MeshHello)

    def send(self, peer: str, message: Message) -> None:
        """Send ``message`` to ``peer`` without waiting: written at once when nothing is queued for its link
        (``Link.send_now``), else queued for the link's writer. Not linked, or its link just ended: dropped (the
        session predicts the peer and, once it is back, re-sends what it lacks); a full outbox closes the
        link (``link-backlog``)."""
        outbox = self.outboxes.get(peer)
        if outbox is None:
            return  # not linked (lost): the session predicts the peer and relays what it missed later
        link = self.links.get(peer)
        if link is not None and not outbox.pending and self.gate.links_open() and link.send_now(message):
            if link.unsent:  # the socket took part of the frame: the writer sends the rest
                outbox.put(None)
            return  # written at once, in order (nothing was queued before it)
        if outbox.put(message):
            return
        if outbox.pending < OUTBOX_CAPACITY:  # the writer is gone: the reader reports the end next
            log.debug("mesh-send-after-link-end", peer=peer, type=message.TYPE)
            return
        log.info("mesh-backlog", peer=peer)
        self._tasks.start_soon(self.links[peer].aclose, "link-backlog", "the peer does not keep up")

    # ---- the pump's reads -------------------------------------------------------------------------

    def take_reads(self) -> None:
        """The frame pump reads every TCP race link once per tick from now on (``read_now``), and the
        links' reader tasks stand aside until ``give_back_reads``: one read per link per tick in the
        pump's task instead of a task wake-up per message. Nothing waits longer for it: what arrives
        between two ticks is used by the next tick's steps either way (docs/node.md, "CPU per frame")."""
        self._pump_reads = True
        for link in self.links.values():
            if link.reads_takeable:
                link.take_reads()

    def give_back_reads(self) -> None:
        """The links' reader tasks read them again (the pump stopped, or stands still: ``pause_pump``)."""
        self._pump_reads = False
        for link in self.links.values():
            link.give_back_reads()

    def read_now(self) -> None:
        """Hand every message the race links hold now to ``on_message``, without waiting: every link is
        read first (in PeerId order), then the messages are handled link by link, in order. A link that
        ended is ended by its reader task; what a message's handling raises closes that peer's link
        (``contain``), as when the reader task handles it. Called from the pump's task, whose time is
        the shell's, so only the reading is charged to ``link``: one boundary per tick, not per link."""
        links = sorted(self.links.items())
        if self.budget is None:
            batches = [(peer, link, link.read_now()) for peer, link in links]
        else:
            with self.budget.part(CostPart.LINK):
                batches = [(peer, link, link.read_now()) for peer, link in links]
        for peer, link, messages in batches:
            for message in messages:
                try:
                    self.on_message(peer, message)
                except Exception as exc:
                    self._tasks.start_soon(contain, peer, message.TYPE, link.aclose, exc)

    async def pause_pump(self) -> None:
        """The pump's gate (``StallGate.wait``): while the pump stands still, the reader tasks read the
        links (unless the links are stalled too)."""
        if trio.current_time() >= self.gate.until:
            return
        self.give_back_reads()
        try:
            await self.gate.wait()
        finally:
            self.take_reads()

    async def flush(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until every queued message has been written to its link."""
        await flush(list(self.outboxes.values()), timeout_s)

    def close(self, peer: str, code: str, text: str) -> None:
        """Close the link to ``peer`` with ``code`` (the session asked: ``CloseLink``); the dialling side
        dials again, and the session's rejoin rules decide what the new link is worth."""
        link = self.links.get(peer)
        if link is not None:
            self._tasks.start_soon(link.aclose, code, text)

    def _dropped(self, peer: str, bucket: str, kind: str) -> None:
        reason = f"link-bucket-{bucket}"
        self.drops[reason] = self.drops.get(reason, 0) + 1
        log.warning("race-message-dropped", peer=peer, reason=reason, type=kind)

    def cut(self, seconds: float) -> None:
        """Fault injection for soak tests: drop every mesh link and stay unreachable for ``seconds``."""
        self._offline_until = trio.current_time() + seconds
        for link in list(self.links.values()):
            self._tasks.start_soon(link.aclose, "fault-disconnect", "this node dropped its links (fault injection)")

    async def _dial_loop(self, peer: str) -> None:
        try:
            Contact.parse(self.addresses[peer])
        except ProtocolError as invalid:  # one name per exception type in a function: setup.py RACE_SHELL
            log.info("mesh-address-invalid", peer=peer, reason=invalid.message)
            return  # the session predicts the peer, then removes it when its reconnect window ends
        while not self._closing:
            await trio.sleep_until(self._offline_until)
            await self.gate.wait_links()
            try:  # directly, or through the peer's relays when that fails (docs/relay.md): each pair on its own
                link = await dial_contact(self.addresses[peer], self.identity, peer, use_relays=self.listener.use_relays,
                                          expensive=RACE_CONTROL_TYPES, limits=RACE_LIMITS)
                link.repurpose(RACE_LINK, RACE_LIMITS, RACE_CONTROL_TYPES, RACE_INGRESS_LIMITS)
                await link.send(MeshHello(self.match_id))
                with trio.fail_after(REDIAL_S * 10):
                    echo = await link.receive()  # the peer's race has started and it took this link
                if echo != MeshHello(self.match_id):
                    await link.aclose("mesh-refused", "the peer did not confirm the race link")
                    raise LinkClosed("mesh-refused", "no confirmation")
            except (LinkClosed, OSError, trio.TooSlowError) as exc:
                log.debug("mesh-dial-failed", peer=peer, reason=str(exc))
                await trio.sleep(REDIAL_S)  # the re-dial interval: nothing to wake on, a peer does not call back
                continue
            await self._run_link(link)
            await trio.sleep(REDIAL_S)

    async def _accept(self, link: Link, first: MeshHello) -> None:
        peer = link.peer_id
        await self.gate.wait_links()
        if trio.current_time() < self._offline_until:
            await link.aclose("mesh-offline", "this node is unreachable for now")
            return
        if first.matchId != self.match_id or peer not in self.addresses or not peer < self.me:
            await link.aclose("mesh-refused", "this node is not racing that match with that peer")
            return
        link.repurpose(RACE_LINK, RACE_LIMITS, RACE_CONTROL_TYPES, RACE_INGRESS_LIMITS)
        await link.send(MeshHello(self.match_id))  # confirm: from now on this is the race link
        await self._run_link(link)

    async def _run_link(self, link: Link) -> None:
        peer = link.peer_id
        old = self.outboxes.pop(peer, None)
        if old is not None:
            old.close()
        outbox: Outbox[Message | None] = Outbox(OUTBOX_CAPACITY)  # None: the tail of a frame ``send_now`` began
        self.outboxes[peer] = outbox
        self.links[peer] = link
        returning = peer in self.ever_linked
        self.ever_linked.add(peer)
        if self.ever_linked >= set(self.addresses):
            self.linked.set()
        link.on_drop = lambda bucket, kind: self._dropped(peer, bucket, kind)
        if self._pump_reads and link.reads_takeable:
            link.take_reads()
        budget = self.budget
        if budget is not None:
            link.meter = budget
            budget.role(CostPart.LINK)
        if returning:
            self.on_back(peer)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._writer, link, outbox, self.gate.wait_links, budget)
                try:
                    async for message in link:
                        await self.gate.wait_links()  # stalled: the link is not read meanwhile
                        try:  # contained (a fault closes this link only), without a context manager per message
                            if budget is None:
                                self.on_message(peer, message)
                            else:
                                with budget.part(CostPart.SHELL):
                                    self.on_message(peer, message)
                        except LinkClosed:
                            raise
                        except Exception as fault:  # one name per exception type in a function: setup.py
                            await contain(peer, message.TYPE, link.aclose, fault)
                except LinkClosed as ended:
                    log.info("mesh-link-ended", peer=peer, code=ended.code, reason=ended.message)
                nursery.cancel_scope.cancel()
        except BaseException:  # not ``finally``: no ``await`` in a ``finally`` of a compiled module (setup.py)
            await self._unlink(peer, link, outbox)
            raise
        await self._unlink(peer, link, outbox)

    async def _unlink(self, peer: str, link: Link, outbox: Outbox[Message | None]) -> None:
        """``_run_link``'s end, however it ended: forget the link (unless a newer one for the peer took its
        place), report the peer lost, and close the link."""
        if self.outboxes.get(peer) is outbox:
            del self.outboxes[peer]
            del self.links[peer]
            if not self._closing:
                self.on_lost(peer)
        with trio.CancelScope(shield=True):
            await link.aclose("mesh-closed", "the race mesh closed this link")

    @staticmethod
    async def _writer(link: Link, outbox: Outbox[Message | None], gate: Callable[[], Awaitable[None]],
                      budget: CpuBudget | None) -> None:
        """Sends until the outbox closes or the link ends (the reader reports the end); holds while stalled.
        Most messages never come here: ``send`` writes them at once when nothing is queued."""
        if budget is not None:
            budget.role(CostPart.LINK)

        async def write(message: Message | None) -> None:
            await gate()
            if message is None:
                await link.flush_unsent()
            else:
                await link.send(message)

        try:
            await outbox.drain(write)
        except LinkClosed:
            return
