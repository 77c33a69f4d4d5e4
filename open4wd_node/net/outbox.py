"""A bounded queue of outgoing items for one connection, drained by one writer task.

``put`` never waits: a full outbox means the peer does not keep up, and the caller decides (usually:
drop the peer). ``pending`` counts items not yet written, including one a waiting writer took straight
from ``put`` (a memory channel hands it over without buffering), so ``flush`` really waits for them.
The writer signals when ``pending`` drops to zero, so ``flush`` wakes exactly then (no polling).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import trio

T = TypeVar("T")


class Outbox(Generic[T]):
    """The queue between the tasks that produce one connection's items and its one writer task."""

    def __init__(self, capacity: int) -> None:
        self._send, self._receive = trio.open_memory_channel[T](capacity)
        self._pending = 0
        self._empty = trio.Event()  # set while nothing is pending
        self._empty.set()

    @property
    def pending(self) -> int:
        """Items queued and not written yet (one the writer is writing included)."""
        return self._pending

    def put(self, item: T) -> bool:
        """Queue ``item``; False when the outbox is full or closed."""
        try:
            self._send.send_nowait(item)
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        if self._pending == 0:
            self._empty = trio.Event()
        self._pending += 1
        return True

    def close(self) -> None:
        """No more items: the writer finishes what is queued, then ``drain`` returns."""
        self._send.close()

    async def drain(self, write: Callable[[T], Awaitable[None]]) -> None:
        """The writer task's loop: ``write`` each item in order until the outbox is closed and empty.
        An exception from ``write`` ends the drain (it propagates; the item counts as done)."""
        async with self._receive:
            async for item in self._receive:
                try:
                    await write(item)
                finally:
                    self._pending -= 1
                    if self._pending == 0:
                        self._empty.set()

    async def wait_empty(self) -> None:
        """Wait until nothing is pending (at once when nothing is); more may be queued right after."""
        await self._empty.wait()


async def flush(outboxes: Sequence[Outbox[T]], timeout_s: float) -> None:
    """Wait (at most ``timeout_s``) until every item queued in ``outboxes`` has been written: until a
    moment at which none of them has anything pending."""
    with trio.move_on_after(timeout_s):
        while (busy := next((box for box in outboxes if box.pending), None)) is not None:
            await busy.wait_empty()
