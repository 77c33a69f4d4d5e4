"""``Wakeup``: tasks wait until synchronous code says that the state they watch has changed.

The shell's state changes in synchronous callbacks (a message arrived on a link, a link was lost), and
a task sometimes has to wait until that state satisfies a condition: every peer is ready at the race
barrier, a session timer is due or the anchor is decided. Sleeping in a loop and re-checking (polling)
costs a wake-up per period and answers up to a period late; a ``Wakeup`` is notified by the code that
changes the state, so a waiting task runs exactly when there is something new to look at.

It is a condition variable without a lock (trio runs one task at a time, so none is needed): ``notify``
wakes every task in ``wait``; ``until(condition)`` re-checks the condition after every notification.
Nothing is lost between the check and the wait, because there is no checkpoint between them.

``notify`` is called for every message a race node reads (seven a frame with 7 peers), and most of the
time no task waits: then it does nothing, rather than set an event nobody watches and build the next.
"""

from __future__ import annotations

from collections.abc import Callable

import trio


class Wakeup:
    """Wakes the tasks waiting on it whenever ``notify`` is called (see the module docstring)."""

    def __init__(self) -> None:
        self._event = trio.Event()
        self._waiting = 0  # tasks in ``wait``: ``notify`` has something to do only when there are some

    def notify(self) -> None:
        """Wake every task now in ``wait`` (synchronous: call it from any callback that changed the state)."""
        if self._waiting:
            self._event.set()
            self._event = trio.Event()

    async def wait(self) -> None:
        """Wait for the next ``notify``; an earlier one does not count (check the state first)."""
        self._waiting += 1
        try:
            await self._event.wait()
        finally:
            self._waiting -= 1

    async def until(self, condition: Callable[[], bool]) -> None:
        """Return once ``condition()`` is true, checking it now and after every ``notify``. A caller's
        cancel scope (``trio.move_on_after``) bounds the wait."""
        while not condition():
            await self.wait()
