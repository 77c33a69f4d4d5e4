"""``trio.run`` for the commands: SIGINT and SIGTERM cancel the command's tasks, then end it cleanly."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import trio

from open4wd_base.errors import LocalError
from open4wd_node.runtime.signals import STOP_SIGNALS, Interrupted, note, received_signal, stop_signals_noted

T = TypeVar("T")


def run_trio(async_fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run(async_fn, *args)``; a stop signal cancels it (its ``finally`` blocks run: race logs
    are closed, child processes reaped), then ``Interrupted`` is raised instead of a traceback. A
    signal that arrives while trio starts or stops, outside its receiver, is noted and ends the
    command the same way (``stop_signals_noted``)."""

    async def until_signal() -> T:
        outcome: list[T] = []
        with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    async for signum in signals:
                        note(signum)
                        nursery.cancel_scope.cancel()
                        return

                if received_signal() is not None:  # noted before the receiver was listening
                    nursery.cancel_scope.cancel()
                nursery.start_soon(watch)
                outcome.append(await async_fn(*args))
                nursery.cancel_scope.cancel()
        return outcome[0] if outcome else _stopped()

    with stop_signals_noted():
        result = trio.run(until_signal)
    if received_signal() is not None:
        _stopped()
    return result


def _stopped() -> NoReturn:
    signum = received_signal()
    if signum is None:
        raise LocalError("stop-without-signal", "the command was cancelled without a stop signal")
    raise Interrupted(signum)
