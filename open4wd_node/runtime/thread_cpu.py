"""Threads that do part of the event loop's work elsewhere, whose CPU time a race's CPU budget counts.

A race's budget (``open4wd_node.race.budget``) charges the loop thread's CPU time to parts of a frame. Work
that runs in a thread of its own for the whole node, aiortc's asyncio thread (the WebRTC links' DTLS, SCTP
and ICE), would be left out, and a node linked over WebRTC would look cheaper than it is. Such a thread
registers itself here, with the part its work belongs to (``off_loop``), and every budget adds the
thread's CPU time to that part. Short-lived workers (``run_blocking``) do not register: building a
world is not a frame's work.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_CLOCKS: dict[int, str] = {}  # a registered thread's CPU clock id: the part (``CostPart`` value) it works for


@contextmanager
def off_loop(part: str) -> Iterator[None]:
    """While the block runs, the calling thread's CPU time counts in every budget as ``part``'s."""
    clock = time.pthread_getcpuclockid(threading.get_ident())
    _CLOCKS[clock] = part
    try:
        yield
    finally:
        _CLOCKS.pop(clock, None)


def off_loop_clocks() -> dict[int, str]:
    """The CPU clock ids of the threads registered now, with their parts."""
    return dict(_CLOCKS)
