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

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio_asyncio

T = TypeVar("T")


def bridge_open() -> bool:
    """Whether this trio task runs inside an asyncio loop of trio-asyncio (``asyncio_bridge``)."""
    return trio_asyncio.current_loop.get() is not None


@asynccontextmanager
async def asyncio_bridge() -> AsyncIterator[None]:
    """An asyncio loop for aiortc inside this trio run while the block runs (the one already open, if any)."""
    if bridge_open():
        yield
        return
    async with trio_asyncio.open_loop():
        yield


async def run_asyncio(function: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``await function(*args)`` on the asyncio side; a trio cancellation cancels it there."""
    result: T = await trio_asyncio.aio_as_trio(function)(*args)
    return result
