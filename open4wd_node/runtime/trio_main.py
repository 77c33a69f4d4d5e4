"""``trio.run`` for the commands: SIGINT and SIGTERM cancel the command's tasks, then end it cleanly."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

from open4wd_node.runtime.signals import STOP_SIGNALS, Interrupted, note, received_signal

T = TypeVar("T")


def run_trio(async_fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run(async_fn, *args)``; a stop signal cancels it (its ``finally`` blocks run: race logs
    are closed, child processes reaped), then ``Interrupted`` is raised instead of a traceback."""

    async def until_signal() -> T:
        outcome: list[T] = []
        with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    async for signum in signals:
                        note(signum)
                        nursery.cancel_scope.cancel()
                        return

                nursery.start_soon(watch)
                outcome.append(await async_fn(*args))
                nursery.cancel_scope.cancel()
        signum = received_signal()
        if signum is not None:
            raise Interrupted(signum)
        return outcome[0]

    return trio.run(until_signal)
