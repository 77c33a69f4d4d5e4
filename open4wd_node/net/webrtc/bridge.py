"""aiortc (asyncio) inside the node's trio run, through trio-asyncio.

The node is one ``trio.run``; trio-asyncio runs an asyncio event loop as trio tasks inside it, so
aiortc's coroutines, timers and UDP sockets are driven by trio's scheduler and clock. Chosen over trio's
guest mode (trio as a guest of asyncio's loop) by measurement and by fit: both bridges give the same
DataChannel round trip and CPU per message within the machine's noise, but only this one keeps the
node's ``trio.run`` entry point, pytest-trio's runner and the autojump ``MockClock`` (asyncio's timers
read trio's clock, so a link's deadlines run in virtual time in tests), and trio's cancellation reaches
the asyncio side by itself (a cancelled ``run_asyncio`` cancels its asyncio task). Importing trio-asyncio
replaces asyncio's default loop policy for the process, which is why guest mode could not even be
combined with it. The measurement and the command are in ``benchmarks/webrtc_bench.py``.

Callbacks that aiortc fires (a DataChannel message, a state change) run inside the trio-asyncio loop's
own trio task, so they may use trio's synchronous operations (``MemorySendChannel.send_nowait``,
``Event.set``) directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

import trio_asyncio

T = TypeVar("T")


def current_bridge() -> Any:
    """The asyncio loop of trio-asyncio this trio task runs inside (``asyncio_bridge``), or None. A link
    keeps the loop it was made on: the tasks that later send on it or close it (a race's, a room's) need
    not run inside the bridge's block."""
    return trio_asyncio.current_loop.get()


@contextmanager
def on_loop(loop: Any) -> Iterator[None]:
    """Synchronous aiortc calls made in this block find ``loop`` as asyncio's current loop (a send on a
    DataChannel schedules its flush there), whichever trio task makes them."""
    token = trio_asyncio.current_loop.set(loop)
    try:
        yield
    finally:
        trio_asyncio.current_loop.reset(token)


def bridge_open() -> bool:
    """Whether this trio task runs inside an asyncio loop of trio-asyncio (``asyncio_bridge``)."""
    return current_bridge() is not None


@asynccontextmanager
async def asyncio_bridge() -> AsyncIterator[None]:
    """An asyncio loop for aiortc inside this trio run while the block runs (the one already open, if any)."""
    if bridge_open():
        yield
        return
    async with trio_asyncio.open_loop():
        yield


async def run_asyncio(function: Callable[..., Awaitable[T]], *args: Any, loop: Any = None) -> T:
    """``await function(*args)`` on the asyncio side (``loop``: a loop kept from ``current_bridge``, else
    this task's); a trio cancellation cancels it there. The asyncio task, and every callback it registers
    (a TURN allocation's socket reader), runs in a copy of this task's context with ``loop`` current in
    it: aioice schedules tasks from those callbacks."""
    if loop is None:
        result: T = await trio_asyncio.aio_as_trio(function)(*args)
        return result
    with on_loop(loop):
        result = await trio_asyncio.aio_as_trio(function, loop=loop)(*args)
    return result
