"""A bounded queue of outgoing items for one connection, drained by one writer task.

``put`` never waits: a full outbox means the peer does not keep up, and the caller decides (usually:
drop the peer). ``pending`` counts items not yet written, including one a waiting writer took straight
from ``put`` (a memory channel hands it over without buffering), so ``flush`` really waits for them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import trio

T = TypeVar("T")


class Outbox(Generic[T]):
    def __init__(self, capacity: int) -> None:
        self._send, self._receive = trio.open_memory_channel[T](capacity)
        self.pending = 0

    def put(self, item: T) -> bool:
        """Queue ``item``; False when the outbox is full or closed."""
        try:
            self._send.send_nowait(item)
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        self.pending += 1
        return True

    def close(self) -> None:
        """No more items: the writer finishes what is queued, then ``drain`` returns."""
        self._send.close()

    async def drain(self, write: Callable[[T], Awaitable[None]]) -> None:
        async with self._receive:
            async for item in self._receive:
                try:
                    await write(item)
                finally:
                    self.pending -= 1


async def flush(outboxes: list[Outbox], timeout_s: float) -> None:
    """Wait (at most ``timeout_s``) until every item queued in ``outboxes`` has been written."""
    with trio.move_on_after(timeout_s):
        while any(box.pending for box in outboxes):
            await trio.sleep(0.01)
