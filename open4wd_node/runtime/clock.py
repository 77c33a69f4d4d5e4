"""Wall-clock milliseconds derived from trio's clock.

Signed payloads carry epoch milliseconds that peers compare (±30 s), so the protocol needs wall time;
deriving it from trio's monotonic clock (offset fixed once) keeps it monotonic on a real run and lets
``trio.testing.MockClock`` drive every protocol deadline in tests.
"""

from __future__ import annotations

import time

import trio


class NodeClock:
    """Epoch milliseconds that advance with trio's clock (see the module docstring). Create it inside
    ``trio.run``: the offset between the two clocks is fixed then."""

    def __init__(self) -> None:
        self._clock = trio.lowlevel.current_clock()  # the run's clock, read directly: see ``now_ms``
        self._offset_ms = time.time_ns() // 1_000_000 - int(self._clock.current_time() * 1000)

    def now_ms(self) -> int:
        """Now, in epoch milliseconds: the ``now_ms`` every protocol machine takes. It reads the run's
        clock object, which is what ``trio.current_time()`` reads too, minus the run-context lookup: a race
        node asks for every message it handles."""
        return self._offset_ms + int(self._clock.current_time() * 1000)
