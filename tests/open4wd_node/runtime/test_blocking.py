"""``run_blocking``: worker threads on a real clock, inline work on the tests' autojump clock."""

from __future__ import annotations

import threading
import time

import trio

from open4wd_node.runtime.blocking import run_blocking


async def test_the_work_runs_in_a_worker_thread_on_a_real_clock():
    loop_thread = threading.get_ident()
    ticks = []

    async def ticker() -> None:
        while True:
            ticks.append(trio.current_time())
            await trio.sleep(0.01)

    release = threading.Event()

    def work() -> int:
        release.wait(30)  # held until the event loop has shown it keeps running meanwhile
        return threading.get_ident()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)

        async def let_go() -> None:
            while len(ticks) < 5:
                await trio.sleep(0.01)
            release.set()

        nursery.start_soon(let_go)
        worker = await run_blocking(work)
        nursery.cancel_scope.cancel()
    assert worker != loop_thread
    assert len(ticks) >= 5  # the loop ticked while the work was blocked


async def test_inline_on_the_autojump_clock_the_work_costs_no_virtual_time(fast_clock):
    start = trio.current_time()
    worker = await run_blocking(lambda: (time.sleep(0.05), threading.get_ident())[1])
    assert worker == threading.get_ident()  # ran in the calling task: the clock could not jump meanwhile
    assert trio.current_time() == start


async def test_a_cancelled_caller_still_lets_the_work_finish():
    release, finished = threading.Event(), []

    def work() -> None:
        release.wait(30)
        finished.append(True)

    async with trio.open_nursery() as nursery:
        async def caller() -> None:
            with trio.CancelScope() as scope:
                nursery.start_soon(cancel_then_release, scope)
                await run_blocking(work)
                await trio.lowlevel.checkpoint()  # the cancellation arrives at the next checkpoint
            assert scope.cancelled_caught
            assert finished == [True]  # not abandoned: the call returned only once the work was done

        async def cancel_then_release(scope: trio.CancelScope) -> None:
            await trio.sleep(0.01)
            scope.cancel()
            await trio.sleep(0.01)
            release.set()

        nursery.start_soon(caller)
