"""The source side of spectating, in the race shell: spectator links and their bounded queues.

A spectator dials a racer's listener and opens with ``mode-select`` (``protocol.spectate``); the hub
asks this node's ``SpectateSource`` whether to serve it, and from then on every message the source
produces for it goes into that spectator's own bounded ``Outbox``, written by its own task. Nothing
here ever waits for a spectator: the frame pump only puts messages into queues (``deliver``), and a
spectator whose queue is full — it stopped reading, it is too slow, its process is stopped — is
dropped with ``spectator-too-slow``, so it can never slow this node's race.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog
import trio

from open4wd_base.errors import LocalError
from open4wd_node.net.link import Link, LinkClosed
from open4wd_node.net.link_rules import LinkLimits
from protocol.encoding.wire import ROOM
from open4wd_node.net.listener import Doorway
from open4wd_node.net.outbox import Outbox, flush
from open4wd_node.runtime.clock import NodeClock
from protocol.actions import Send
from protocol.errors import ProtocolError
from protocol.encoding.wire import Message
from protocol.spectate.messages import SPECTATE_LINK, ModeSelect
from protocol.spectate.source import SpectateSource
from protocol.identity.keys import PeerId

log = structlog.get_logger("open4wd_node.spectators")

QUEUE_MESSAGES = 300
"""Messages queued for one spectator at most: a subscription's whole backlog (a checkpoint, up to 129
frames, two votes) and about 2.5 s of the live stream behind it; more is a spectator that does not read."""
SOURCE_LIMITS = LinkLimits(
    general_burst=120, general_per_second=90,
    general_bytes_burst=6_706_518, general_bytes_per_second=4 * 1024 * 1024,
    expensive_burst=1, expensive_per_second=1,
)
"""What a source sends on a spectator link and what a viewer accepts (spec/netcode.md §6.4's source
ingress: 120 / 90 per s, 6,706,518 B / 4 MiB per s)."""
VIEWER_LIMITS = LinkLimits(
    general_burst=8, general_per_second=4, general_bytes_burst=ROOM.max_frame_bytes, general_bytes_per_second=512,
    expensive_burst=1, expensive_per_second=1,
)
"""What a viewer may send on its spectator link (spec §6.4's viewer ingress: 8 / 4 per s, 512 B per s; the byte
burst is the transport's least, one largest room frame, instead of 1 KiB: the source refuses a
``mode-select`` over 128 bytes itself, and a viewer sends nothing else but the link's keepalives)."""


class SpectatorHub:
    """This racer's spectator links (module docstring). ``deliver`` the source's ``Send`` actions."""

    def __init__(self, source: SpectateSource, doorway: Doorway) -> None:
        self.source = source
        self.doorway = doorway
        self.clock = NodeClock()
        self.outboxes: dict[str, Outbox[Message]] = {}
        self.links: dict[str, Link] = {}
        self.dropped: dict[str, int] = {}
        """Spectators dropped, by code (``spectator-too-slow`` …)."""
        self._nursery: trio.Nursery | None = None

    @property
    def _tasks(self) -> trio.Nursery:
        if self._nursery is None:
            raise LocalError("spectators-not-running", "the spectator hub is not running")
        return self._nursery

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Take spectator links at the doorway (the node's listener) until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.doorway.add_handler(ModeSelect, self._accept)
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self.doorway.remove_handler(ModeSelect)

    def deliver(self, sends: Sequence[Send]) -> None:
        """Queue each message for its spectator without waiting; a full queue drops that spectator."""
        for send in sends:
            outbox = self.outboxes.get(send.peer)
            if outbox is None or outbox.put(send.message):
                continue
            self._drop(send.peer, "spectator-too-slow", "the spectator does not keep up with the race")

    async def flush(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until every queued message was written (the match's end, say)."""
        await flush(list(self.outboxes.values()), timeout_s)

    def _drop(self, peer: PeerId, code: str, text: str, *, close: bool = True) -> None:
        """Stop serving ``peer``; with ``close``, its link is closed with ``code`` by a task of the hub (the
        caller never waits). The link's own task passes ``close=False``: it closes the link itself, and
        may run after the hub has stopped (the race over), when the hub can start no task."""
        outbox, link = self.outboxes.pop(peer, None), self.links.pop(peer, None)
        self.source.drop(peer)
        if outbox is None or link is None:
            return
        outbox.close()
        self.dropped[code] = self.dropped.get(code, 0) + 1
        log.info("spectator-dropped", peer=peer, code=code)
        if close:
            self._tasks.start_soon(link.aclose, code, text)

    async def _accept(self, link: Link, first: ModeSelect) -> None:
        peer = link.peer_id
        link.repurpose(SPECTATE_LINK, SOURCE_LIMITS, frozenset(), VIEWER_LIMITS)
        if peer in self.links:  # the same spectator again (a new epoch): the new link replaces the old one
            self._drop(peer, "spectate-superseded", "a newer link of this spectator replaced this one")
        try:
            backlog = self.source.receive(peer, first, self.clock.now_ms())
        except ProtocolError as exc:
            log.info("spectator-refused", peer=peer, code=exc.code, reason=exc.message)
            await link.aclose(exc.code, exc.message)
            return
        outbox: Outbox[Message] = Outbox(QUEUE_MESSAGES)
        self.outboxes[peer], self.links[peer] = outbox, link
        log.info("spectator-joined", peer=peer, epoch=first.sourceEpoch, backlog=len(backlog))
        self.deliver(backlog)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._writer, link, outbox)
                try:
                    async for message in link:  # a spectator sends nothing after mode-select
                        log.info("spectator-refused", peer=peer, code="spectate-unexpected-message", type=message.TYPE)
                        break
                except LinkClosed as exc:
                    log.info("spectator-link-ended", peer=peer, code=exc.code)
                nursery.cancel_scope.cancel()
        finally:
            if self.outboxes.get(peer) is outbox:
                self._drop(peer, "spectate-link-ended", "the spectator link ended", close=False)  # closed just below
            with trio.CancelScope(shield=True):
                await link.aclose("spectate-closed", "the source closed this spectator link")

    @staticmethod
    async def _writer(link: Link, outbox: Outbox[Message]) -> None:
        try:
            await outbox.drain(link.send)
        except LinkClosed:
            return
