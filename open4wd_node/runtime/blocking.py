"""``run_blocking``: the one way a trio task runs blocking file I/O or CPU-heavy work (admission,
building a round's world, fsync, reading or writing the asset store) without stalling the event loop.

The work runs in a worker thread (``trio.to_thread.run_sync``), so links keep reading, timers keep
firing and the frame pump keeps its pace meanwhile. The call is not abandoned on cancellation: a write
or an fsync that has started finishes before the task goes on (a cancelled task sees ``Cancelled`` at
its next checkpoint).

Inline mode, for tests on an autojump ``MockClock``: that clock jumps to the next deadline as soon as
every task is blocked, and a task waiting for a thread counts as blocked. Virtual time would then pass
while the thread computes (a 10 s link timeout could fire in the middle of an admission), so what a
test sees would depend on how fast the machine computes. Inside ``blocking_work_inline()`` the work
runs in the calling task instead, where CPU time costs no virtual time. The mode is a context variable,
set by the test harness around the trio run; trio tasks and worker threads inherit it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import trio

T = TypeVar("T")

_INLINE: ContextVar[bool] = ContextVar("open4wd_blocking_work_inline", default=False)


async def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` off the event loop (or inline, see the module docstring); its exceptions propagate."""
    if not _INLINE.get():
        return await trio.to_thread.run_sync(fn, *args)
    await trio.lowlevel.checkpoint_if_cancelled()  # the same cancellation points as the threaded path
    result = fn(*args)
    await trio.lowlevel.cancel_shielded_checkpoint()
    return result


@contextmanager
def blocking_work_inline() -> Iterator[None]:
    """Run every ``run_blocking`` started in this context in the calling task (autojump-clock tests)."""
    token = _INLINE.set(True)
    try:
        yield
    finally:
        _INLINE.reset(token)
