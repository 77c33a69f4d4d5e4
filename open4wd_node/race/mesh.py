"""The race's fixed-roster full mesh: one authenticated link per pair of roster peers.

The peer with the smaller PeerId dials the other's contact (its room listen address, or over WebRTC when
that fails: the ``Dialler`` the node gives the mesh), checking its PeerId; the other accepts the link at
the node's ``Doorway`` (its listener) when the first message names this match, and echoes it to confirm (a
peer whose race has not started yet refuses, and the dialer tries again). A lost link is re-dialled by the
same side every 500 ms while the race runs, so a peer that comes back within the session's reconnect
window resumes on a fresh link.

Each link has two tasks of its own. Its reader hands every message it receives, and the link's loss or
return, to the race as ``MeshEvent``s through one memory channel (``events``): the race takes them when it
is ready for them (the frame pump once per tick, ``receive_nowait``), never by reading a link itself. Its
writer sends what ``send`` queued in the link's bounded outbox; a full outbox is a peer that does not keep
up, and closes the link (``link-backlog``).

While the frame pump runs, the readers read in step with it (``pace``): each waits for the pump's tick, not
for its socket, takes what its link holds then (``Link.receive_arrived``), hands it over and tells the
pump, which waits for them (``read_links``) before its steps. Messages that arrive between two ticks are
thus read together at the next one, exactly when the pump would have used them, and do not wake the
process one by one (seven wake-ups a frame with 7 peers: most of a node's CPU on a busy machine). Between
rounds and while the pump stands still, each reader reads as messages arrive.

Limits: each side paces what it sends to ``RACE_LIMITS``; what it accepts is ``RACE_INGRESS_LIMITS``,
the same rates with bursts larger by the reconnect window's worth of the peer's pace, so a peer that
resumes after a stall of up to that window (or a receiver that resumes and reads a window's backlog at
once) is never throttled. A message a bucket drops anyway is logged and counted (``drops``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import structlog
import trio

from open4wd_base.errors import LocalError
from open4wd_node.net.link import Link, LinkClosed
from open4wd_node.net.link_rules import LinkLimits
from open4wd_node.net.listener import Doorway
from open4wd_node.net.outbox import Outbox, flush
from open4wd_node.net.transport import Dialler
from open4wd_node.race.budget import CostPart, CpuBudget
from protocol.errors import ProtocolError
from protocol.link.contact import Contact
from protocol.identity.keys import Identity
from protocol.race.mesh import MeshHello
from protocol.race.messages import INPUT_TYPES, RACE_LINK
from protocol.race.recovery import RECONNECT_WINDOW_MS
from protocol.encoding.wire import REGISTRY, Message
from protocol.identity.keys import PeerId

log = structlog.get_logger("open4wd_node.mesh")

OUTBOX_CAPACITY = 1024
EVENTS_CAPACITY = 4096  # the events the race may leave waiting (a round's world built off the loop meanwhile)
REDIAL_S = 0.5
READ_BOUND_S = 1 / 60  # how long the pump waits for its paced readers at most (one stuck in a send: a full socket)
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


@dataclass(frozen=True, slots=True)
class Arrived:
    """A message from ``peer`` on its race ``link``."""

    peer: PeerId
    link: Link
    message: Message


@dataclass(frozen=True, slots=True)
class Lost:
    """``peer``'s race link ended (the mesh re-dials it, or waits for its dial)."""

    peer: PeerId


@dataclass(frozen=True, slots=True)
class Back:
    """``peer``, linked before, has a new race link."""

    peer: PeerId


MeshEvent = Arrived | Lost | Back


class Mesh:
    """This node's links to the other roster peers of one match (see the module docstring).

    ``events`` delivers every ``MeshEvent`` in the order each link's reader saw it (a link's loss after its
    last message); ``linked`` is set once every peer was linked at least once."""

    def __init__(
        self,
        identity: Identity,
        match_id: str,
        addresses: dict[PeerId, str],
        doorway: Doorway,
        dial: Dialler,
        budget: CpuBudget | None = None,
    ) -> None:
        self.me = identity.peer_id
        self.match_id = match_id
        self.addresses = addresses  # every other roster peer -> its contact
        self.doorway = doorway
        self.dial = dial
        self.outboxes: dict[str, Outbox[Message]] = {}
        self.links: dict[str, Link] = {}
        self.ever_linked: set[str] = set()
        self.linked = trio.Event()
        self._send_events, self.events = trio.open_memory_channel[MeshEvent](EVENTS_CAPACITY)
        self._pacing = False
        self._tick = trio.Event()  # set when the paced readers may read (a new one for every tick)
        self._parked = 0  # paced readers waiting for the tick
        self._reading = 0  # readers the last tick released that have not handed over yet
        self._read = trio.Event()  # set once they all have
        self._nursery: trio.Nursery | None = None
        self._closing = False
        self.budget = budget
        """Charged with the links' tasks (``CostPart.LINK``); the race's handling of the events is its own."""
        self.drops: dict[str, int] = {}
        """Incoming messages a link's rate limit dropped, by ``link-bucket-<bucket>`` (never expected)."""

    @property
    def peers(self) -> list[PeerId]:
        """The other roster peers, in PeerId order."""
        return sorted(self.addresses)

    @property
    def linked_peers(self) -> set[str]:
        """The peers with a race link now."""
        return set(self.links)

    @property
    def _tasks(self) -> trio.Nursery:
        """The nursery of ``run``; ``LocalError`` when the mesh is not running (a shell bug)."""
        if self._nursery is None:
            raise LocalError("mesh-not-running", "the race mesh is not running")
        return self._nursery

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Dial the peers this node dials, accept the others' links at the doorway, and keep every link
        (re-dialling lost ones) until cancelled; ``nursery.start`` returns once it accepts links."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.doorway.add_handler(MeshHello, self._accept)
            for peer in self.peers:
                if self.me < peer:
                    nursery.start_soon(self._dial_loop, peer)
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._closing = True
                self.doorway.remove_handler(MeshHello)

    def send(self, peer: PeerId, message: Message) -> None:
        """Queue ``message`` for ``peer``'s writer, without waiting. Not linked, or its link just ended:
        dropped (the session predicts the peer and, once it is back, re-sends what it lacks); a full
        outbox closes the link (``link-backlog``)."""
        outbox = self.outboxes.get(peer)
        if outbox is None:
            return  # not linked (lost): the session predicts the peer and relays what it missed later
        if outbox.put(message):
            return
        if outbox.pending < OUTBOX_CAPACITY:  # the writer is gone: the reader reports the end next
            log.debug("mesh-send-after-link-end", peer=peer, type=message.TYPE)
            return
        log.info("mesh-backlog", peer=peer)
        self._tasks.start_soon(self.links[peer].aclose, "link-backlog", "the peer does not keep up")

    # ---- reading in step with the pump ------------------------------------------------------------

    def pace(self, on: bool) -> None:
        """The readers read at the pump's ticks only (``on``: the pump runs), or as messages arrive."""
        self._pacing = on
        if not on:
            self._release()  # parked readers go back to reading as messages arrive

    def _release(self) -> None:
        tick, self._tick = self._tick, trio.Event()
        self._reading, self._parked = self._parked, 0
        self._read = trio.Event()
        if not self._reading:
            self._read.set()
        tick.set()

    async def read_links(self) -> None:
        """The pump's tick begins: every paced reader takes what its link holds now and hands it over; this
        returns once they all have (at most ``READ_BOUND_S``: what a reader hands over later is taken at the
        next tick). A reader still waiting for a message it began to wait for before the pump ran hands it
        over as it arrives."""
        self._release()
        with trio.move_on_after(READ_BOUND_S):
            await self._read.wait()

    async def _read_in_step(self, peer: PeerId, link: Link) -> None:
        """One tick of a paced reader: wait for it, take what has arrived, hand it over, say so."""
        self._parked += 1
        tick = self._tick
        try:
            await tick.wait()
        except BaseException:
            if tick is self._tick:
                self._parked -= 1
            raise
        if not self._pacing:
            return  # released to read as messages arrive
        try:
            for message in await link.receive_arrived():
                await self._hand(Arrived(peer, link, message))
        finally:
            self._reading -= 1
            if not self._reading:
                self._read.set()

    async def _reader(self, peer: PeerId, link: Link) -> None:
        """The link's reader, until the link ends (``LinkClosed``)."""
        while True:
            if self._pacing:
                await self._read_in_step(peer, link)
            else:
                await self._hand(Arrived(peer, link, await link.receive()))

    async def flush(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until every queued message has been written to its link."""
        await flush(list(self.outboxes.values()), timeout_s)

    def close(self, peer: PeerId, code: str, text: str) -> None:
        """Close the link to ``peer`` with ``code`` (the session asked: ``CloseLink``); the dialling side
        dials again, and the session's rejoin rules decide what the new link is worth."""
        link = self.links.get(peer)
        if link is not None:
            self._tasks.start_soon(link.aclose, code, text)

    def _dropped(self, peer: PeerId, bucket: str, kind: str) -> None:
        reason = f"link-bucket-{bucket}"
        self.drops[reason] = self.drops.get(reason, 0) + 1
        log.warning("race-message-dropped", peer=peer, reason=reason, type=kind)

    async def _dial_loop(self, peer: PeerId) -> None:
        try:
            Contact.parse(self.addresses[peer])
        except ProtocolError as invalid:
            log.info("mesh-address-invalid", peer=peer, reason=invalid.message)
            return  # the session predicts the peer, then removes it when its reconnect window ends
        while not self._closing:
            try:  # directly, or over WebRTC when that fails (docs/webrtc.md): each pair on its own
                link = await self.dial(self.addresses[peer], peer, expensive=RACE_CONTROL_TYPES, limits=RACE_LIMITS)
                link.repurpose(RACE_LINK, RACE_LIMITS, RACE_CONTROL_TYPES, RACE_INGRESS_LIMITS, INPUT_TYPES)
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
        if first.matchId != self.match_id or peer not in self.addresses or not peer < self.me:
            await link.aclose("mesh-refused", "this node is not racing that match with that peer")
            return
        link.repurpose(RACE_LINK, RACE_LIMITS, RACE_CONTROL_TYPES, RACE_INGRESS_LIMITS, INPUT_TYPES)
        await link.send(MeshHello(self.match_id))  # confirm: from now on this is the race link
        await self._run_link(link)

    async def _hand(self, event: MeshEvent) -> None:
        """Give the race ``event``: at once while the channel has room, else when the race has taken some."""
        try:
            self._send_events.send_nowait(event)
        except trio.WouldBlock:
            await self._send_events.send(event)

    async def _run_link(self, link: Link) -> None:
        peer = link.peer_id
        old = self.outboxes.pop(peer, None)
        if old is not None:
            old.close()
        outbox: Outbox[Message] = Outbox(OUTBOX_CAPACITY)
        self.outboxes[peer] = outbox
        self.links[peer] = link
        returning = peer in self.ever_linked
        self.ever_linked.add(peer)
        if self.ever_linked >= set(self.addresses):
            self.linked.set()
        link.on_drop = lambda bucket, kind: self._dropped(peer, bucket, kind)
        if self.budget is not None:
            self.budget.role(CostPart.LINK)
        try:
            if returning:
                await self._hand(Back(peer))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._writer, link, outbox, self.budget)
                try:
                    await self._reader(peer, link)
                except LinkClosed as ended:
                    log.info("mesh-link-ended", peer=peer, code=ended.code, reason=ended.message)
                nursery.cancel_scope.cancel()
        finally:
            current = self.outboxes.get(peer) is outbox  # else a newer link for the peer took its place
            if current:
                del self.outboxes[peer]
                del self.links[peer]
            with trio.CancelScope(shield=True):
                await link.aclose("mesh-closed", "the race mesh closed this link")
        if current and not self._closing:  # the link ended (not the mesh): the race hears it after its last message
            await self._hand(Lost(peer))

    @staticmethod
    async def _writer(link: Link, outbox: Outbox[Message], budget: CpuBudget | None) -> None:
        """Sends until the outbox closes or the link ends (the reader reports the end)."""
        if budget is not None:
            budget.role(CostPart.LINK)
        try:
            await outbox.drain(link.send)
        except LinkClosed:
            return
