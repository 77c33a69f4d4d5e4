"""``LinkFaults``: a node's links cut or frozen from outside, by wrapping what makes them.

A node gets its race's links from two places, its dialler and its doorway (the listener where the peers'
links arrive). ``LinkFaults.dial`` and ``LinkFaults.doorway`` wrap them, so that every link of the race
(and of its spectators) passes through here, and:

- a **cut** (``cut``) closes every such link with ``fault-disconnect`` (the peer is told) and keeps the node
  unreachable for a while: a dial waits for the end of it, an arriving link is refused with
  ``mesh-offline``;
- a **cut of one link** (``cut_peer``) does the same to the link with one peer only (the lowest PeerId
  among the open links: every node knows which that is), so the node still reaches every other peer;
- a **freeze** (``freeze``) makes the node stand still, as a process stopped by SIGSTOP would: every such
  link's carrier is wrapped (``FrozenCarrier``), so that nothing is read from it or written to it until the
  freeze ends, and a read or write the freeze holds is not cancelled meanwhile (a stopped process's send
  does not time out); dials and arriving links wait for it too. Then everything carries on where it was,
  as after SIGCONT: a freeze longer than a link's idle timeout ends that link by its keepalive, on either
  side.

Closing links needs a task: ``run`` is that task, started beside the race by whoever installs the faults.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog
import trio

from open4wd_node.net.link import Carrier, Link
from protocol.link.lane import Lane
from open4wd_node.net.link_rules import ROOM_LIMITS, LinkLimits
from open4wd_node.net.listener import Doorway
from open4wd_node.net.transport import Dialler
from protocol.encoding.wire import Channel, Message
from protocol.identity.keys import PeerId
from protocol.webrtc.ice import LinkPath

log = structlog.get_logger("open4wd_node.faults")
M = TypeVar("M", bound=Message)


class LinkFaults:
    """Cuts and freezes of the links made through ``dial`` and ``doorway`` (module docstring)."""

    def __init__(self) -> None:
        self.offline_until = -math.inf  # trio time before which the node is unreachable (a cut)
        self.frozen_until = -math.inf  # trio time before which its links stand still (a freeze)
        self.cut_off: PeerId | None = None  # the one peer unreachable until ``cut_off_until`` (a cut of one link)
        self.cut_off_until = -math.inf
        self._links: list[Link] = []
        self._cuts_in, self._cuts = trio.open_memory_channel[PeerId | None](math.inf)

    def cut(self, seconds: float) -> None:
        """Drop every link now and stay unreachable for ``seconds`` (trio's clock)."""
        self.offline_until = trio.current_time() + seconds
        self._cuts_in.send_nowait(None)

    def cut_peer(self, seconds: float) -> PeerId | None:
        """Drop the link to the lowest PeerId among the open links now, and neither dial nor admit that peer
        for ``seconds``; returns that peer (None: no link is open)."""
        peers = sorted(link.peer_id for link in self._links if link.closed is None)
        if not peers:
            return None
        self.cut_off, self.cut_off_until = peers[0], trio.current_time() + seconds
        self._cuts_in.send_nowait(peers[0])
        return peers[0]

    def unreachable(self, peer: PeerId) -> bool:
        """Whether a cut keeps ``peer`` away now."""
        now = trio.current_time()
        return now < self.offline_until or (peer == self.cut_off and now < self.cut_off_until)

    def freeze(self, seconds: float) -> None:
        """Let every link stand still for ``seconds`` from now."""
        self.frozen_until = max(self.frozen_until, trio.current_time() + seconds)

    async def thaw(self) -> None:
        """Return at once unless frozen; then at the end of the freeze, whatever cancels meanwhile (a stopped
        process's send does not time out either)."""
        if trio.current_time() < self.frozen_until:
            with trio.CancelScope(shield=True):
                await trio.sleep_until(self.frozen_until)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Close the links at every cut, until cancelled."""
        async with trio.open_nursery() as nursery:
            task_status.started()
            async for peer in self._cuts:
                for link in self._links:
                    if link.closed is None and peer in (None, link.peer_id):
                        nursery.start_soon(link.aclose, "fault-disconnect", "this node dropped its links (fault injection)")
                self._links = [link for link in self._links if link.closed is None and peer not in (None, link.peer_id)]

    def adopt(self, link: Link) -> Link:
        """A link made through here: its carrier may freeze, and a cut closes it."""
        link.carrier = FrozenCarrier(link.carrier, self)
        self._links = [known for known in self._links if known.closed is None] + [link]
        return link

    def dial(self, inner: Dialler) -> Dialler:
        """``inner``, waiting out a cut or a freeze before it dials."""

        async def dial(contact: str, peer: PeerId, *, expensive: frozenset[str] = frozenset(),
                       limits: LinkLimits = ROOM_LIMITS) -> Link:
            await trio.sleep_until(self.offline_until)
            if peer == self.cut_off:
                await trio.sleep_until(self.cut_off_until)
            await self.thaw()
            return self.adopt(await inner(contact, peer, expensive=expensive, limits=limits))

        return dial

    def doorway(self, inner: Doorway) -> Doorway:
        """``inner``, whose arriving links wait out a freeze and are refused during a cut."""
        return _FaultyDoorway(inner, self)


class _FaultyDoorway:
    """A doorway whose handlers see only links ``faults`` lets through (``LinkFaults.doorway``)."""

    def __init__(self, inner: Doorway, faults: LinkFaults) -> None:
        self.inner = inner
        self.faults = faults

    def add_handler(self, kind: type[M], handler: Callable[[Link, M], Awaitable[None]]) -> None:
        """``handler`` gets the links of ``kind`` that arrive while the node is reachable."""

        async def admitted(link: Link, first: M) -> None:
            await self.faults.thaw()
            if self.faults.unreachable(link.peer_id):
                await link.aclose("mesh-offline", "this node is unreachable for now")
                return
            await handler(self.faults.adopt(link), first)

        self.inner.add_handler(kind, admitted)

    def remove_handler(self, kind: type[Message]) -> None:
        """As the inner doorway."""
        self.inner.remove_handler(kind)


class FrozenCarrier:
    """``inner``, standing still while ``faults`` is frozen: no body is read or written, and a call the freeze
    holds is not cancelled meanwhile."""

    def __init__(self, inner: Carrier, faults: LinkFaults) -> None:
        self.inner = inner
        self.faults = faults

    @property
    def address(self) -> str | None:
        """The inner carrier's."""
        return self.inner.address

    @property
    def path(self) -> LinkPath:
        """The inner carrier's."""
        return self.inner.path

    @property
    def rtt_ms(self) -> float | None:
        """The inner carrier's."""
        return self.inner.rtt_ms

    async def receive(self, channel: Channel) -> bytes:
        """The next body, read only while not frozen, and handed over only then."""
        await self.faults.thaw()
        body = await self.inner.receive(channel)
        await self.faults.thaw()
        return body

    async def receive_arrived(self, channel: Channel) -> list[bytes]:
        """What has arrived, and nothing while frozen (a stopped process reads nothing)."""
        if trio.current_time() < self.faults.frozen_until:
            return []
        return await self.inner.receive_arrived(channel)

    async def receive_first(self, max_frame_bytes: int) -> bytes:
        """As ``receive``, for the first body."""
        await self.faults.thaw()
        body = await self.inner.receive_first(max_frame_bytes)
        await self.faults.thaw()
        return body

    async def send(self, body: bytes, lane: Lane) -> None:
        """Send once not frozen."""
        await self.faults.thaw()
        await self.inner.send(body, lane)

    async def aclose(self) -> None:
        """Close at once, frozen or not."""
        await self.inner.aclose()
