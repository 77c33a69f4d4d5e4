"""``Outbox`` and ``flush``: the writer's progress wakes a flush exactly when the last item is written."""

from __future__ import annotations

import trio

from open4wd_node.net.outbox import Outbox, flush


async def _slow_writer(box: Outbox[int], written: list[tuple[int, float]], seconds: float) -> None:
    async def write(item: int) -> None:
        await trio.sleep(seconds)
        written.append((item, trio.current_time()))

    await box.drain(write)


async def test_flush_returns_when_the_last_item_is_written(fast_clock):
    box: Outbox[int] = Outbox(8)
    written: list[tuple[int, float]] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_slow_writer, box, written, 0.003)
        start = trio.current_time()
        assert all(box.put(i) for i in range(3)) and box.pending == 3
        await flush([box], 5)
        assert trio.current_time() - start == written[-1][1] - start  # not a polling period later
        assert [item for item, _ in written] == [0, 1, 2] and box.pending == 0
        nursery.cancel_scope.cancel()


async def test_flush_waits_for_every_outbox_and_for_items_queued_meanwhile(fast_clock):
    first: Outbox[int] = Outbox(8)
    second: Outbox[int] = Outbox(8)
    written: list[tuple[int, float]] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_slow_writer, first, written, 0.001)
        nursery.start_soon(_slow_writer, second, written, 0.004)
        first.put(1)
        second.put(2)

        async def more() -> None:  # after the first outbox ran empty once, it gets one more item
            await first.wait_empty()
            first.put(3)

        nursery.start_soon(more)
        await flush([first, second], 5)
        assert first.pending == second.pending == 0 and sorted(item for item, _ in written) == [1, 2, 3]
        nursery.cancel_scope.cancel()


async def test_flush_gives_up_after_its_timeout_when_nothing_is_written(fast_clock):
    box: Outbox[int] = Outbox(8)
    box.put(1)  # no writer
    start = trio.current_time()
    await flush([box], 2)
    assert trio.current_time() - start == 2 and box.pending == 1


async def test_flush_of_empty_outboxes_returns_at_once(fast_clock):
    start = trio.current_time()
    await flush([Outbox[int](4), Outbox[int](4)], 2)
    await flush([], 2)
    assert trio.current_time() == start


async def test_a_full_or_closed_outbox_refuses_without_counting():
    box: Outbox[str] = Outbox(1)
    assert box.put("a") and not box.put("b") and box.pending == 1
    box.close()
    assert not box.put("c") and box.pending == 1
