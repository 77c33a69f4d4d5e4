"""A circuit's bytes, copied both ways between two streams under its ``CircuitMeter`` (docs/relay.md).

The relay reads at most ``COPY_CHUNK_BYTES`` from one end, waits while the circuit's or the relay's
bandwidth bucket is short (slowing the sender through TCP rather than dropping), counts the bytes against
the circuit's budget and writes them to the other end, as they are. The circuit ends when either end
hangs up or breaks, or when a limit ends it (duration, bytes, idle); the reason is returned.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from open4wd_node.net.link import now_ms
from protocol.relay.limits import COPY_CHUNK_BYTES, CircuitEnd
from protocol.relay.meter import CircuitMeter, CircuitOver

Forwarded = Callable[[int, float], None]
"""Told ``(bytes, seconds)`` for every chunk forwarded: its size and how long it was held."""


async def splice(a: trio.abc.Stream, b: trio.abc.Stream, meter: CircuitMeter, forwarded: Forwarded) -> tuple[CircuitEnd, str]:
    """Copy ``a`` → ``b`` and ``b`` → ``a`` until the circuit ends; why it ended (the streams stay open:
    the caller closes them)."""
    ended: list[tuple[CircuitEnd, str]] = []

    async with trio.open_nursery() as nursery:

        def finish(end: CircuitEnd, why: str) -> None:
            if not ended:
                ended.append((end, why))
            nursery.cancel_scope.cancel()

        async def copy(source: trio.abc.Stream, sink: trio.abc.Stream, forward: bool) -> None:
            while True:
                try:
                    data = await source.receive_some(COPY_CHUNK_BYTES)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return finish(CircuitEnd.CLOSED, "an end's connection broke")
                if not data:
                    return finish(CircuitEnd.CLOSED, "an end hung up")
                arrived = trio.current_time()
                while (wait_ms := meter.delay_ms(forward, len(data), now_ms())) > 0:
                    await trio.sleep(wait_ms / 1000)
                try:
                    meter.carry(len(data), now_ms())
                except CircuitOver as over:
                    return finish(over.end, over.message)
                try:
                    await sink.send_all(data)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return finish(CircuitEnd.CLOSED, "an end's connection broke")
                forwarded(len(data), trio.current_time() - arrived)

        async def watch() -> None:
            while True:
                await trio.sleep_until(meter.deadline_ms() / 1000)
                try:
                    meter.check(now_ms())
                except CircuitOver as over:
                    return finish(over.end, over.message)

        nursery.start_soon(copy, a, b, True)
        nursery.start_soon(copy, b, a, False)
        nursery.start_soon(watch)
    return ended[0]  # the nursery ends only through ``finish`` (or a cancellation from outside, which raises)
