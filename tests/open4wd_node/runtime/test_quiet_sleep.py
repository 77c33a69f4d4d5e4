"""``QuietSleep``: waits in ``poll`` only while nothing else could want to run, and hands every other
case to trio at once, so a task woken by I/O, a thread, a signal or a deadline runs when it would have.

These tests wait on the real clock (a quiet wait is a real ``poll``), for tens of milliseconds; what they
check is the order of events and which way each wait went, never how long anything took, so a slow
machine only makes them slower. The one exception to the autojump rule of this suite, on purpose.
"""

from __future__ import annotations

import os
import signal
import socket
import threading

import pytest
import structlog
import structlog.testing
import trio
import trio.testing

from open4wd_node.runtime.quiet_sleep import QuietSleep

LATER_S = 0.02  # "a little later" for a helper thread; any value works, the order is what is checked
FAR_S = 30.0  # a wait the test ends by cancelling it: it must never be reached


class Watcher:
    """Records the wait hooks a quiet wait calls (as the CPU budget, a trio instrument, hears them)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def before_io_wait(self, timeout: float) -> None:
        self.calls.append("before")

    def after_io_wait(self, timeout: float) -> None:
        self.calls.append("after")


def _later(action) -> threading.Thread:
    """Run ``action`` in a plain thread after ``LATER_S`` (not a trio thread: it must wake trio itself)."""
    thread = threading.Thread(target=lambda: (threading.Event().wait(LATER_S), action()))
    thread.start()
    return thread


async def test_alone_on_the_real_clock_every_wait_is_quiet_and_reaches_its_deadline():
    watcher = Watcher()
    sleep = QuietSleep(watcher)
    start = trio.current_time()
    for tick in range(1, 4):
        await sleep.until(start + tick * LATER_S)
        assert trio.current_time() >= start + tick * LATER_S
    assert (sleep.quiet, sleep.through_trio) == (3, 0)
    assert watcher.calls == ["before", "after"] * 3


async def test_a_deadline_already_past_returns_at_once_without_a_wait():
    watcher = Watcher()
    sleep = QuietSleep(watcher)
    await sleep.until(trio.current_time() - 1)
    assert (sleep.quiet, sleep.through_trio, watcher.calls) == (1, 0, [])


async def test_on_a_mock_clock_it_is_trio_sleep_until(fast_clock):
    sleep = QuietSleep()
    start = trio.current_time()
    await sleep.until(start + 5)
    assert trio.current_time() == start + 5
    assert (sleep.quiet, sleep.through_trio) == (0, 1)


async def test_another_tasks_earlier_deadline_wakes_it_on_time():
    sleep = QuietSleep()
    order: list[str] = []
    start = trio.current_time()

    async def earlier() -> None:
        await trio.sleep_until(start + LATER_S)
        order.append("earlier")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(earlier)
        await trio.sleep(0)  # ``earlier`` now waits on its deadline (nothing runnable)
        await sleep.until(start + 3 * LATER_S)
        order.append("tick")
    assert order == ["earlier", "tick"]
    assert sleep.through_trio == 1 and trio.current_time() >= start + 3 * LATER_S


async def test_a_socket_another_task_waits_on_wakes_it_at_once():
    sleep = QuietSleep()
    served: list[bytes] = []
    left, right = socket.socketpair()
    with left, right:
        left.setblocking(False)
        async with trio.open_nursery() as nursery:
            async def reader() -> None:
                await trio.lowlevel.wait_readable(left)
                served.append(left.recv(16))
                nursery.cancel_scope.cancel()  # the tick below must not be waited for

            nursery.start_soon(reader)
            await trio.sleep(0)
            thread = _later(lambda: right.send(b"ping"))
            await sleep.until(trio.current_time() + FAR_S)
        thread.join()
    assert served == [b"ping"]
    assert (sleep.quiet, sleep.through_trio) == (0, 1)


async def test_a_threads_run_sync_soon_wakes_it_at_once():
    sleep = QuietSleep()
    token = trio.lowlevel.current_trio_token()
    with trio.CancelScope() as scope:
        thread = _later(lambda: token.run_sync_soon(scope.cancel))
        await sleep.until(trio.current_time() + FAR_S)
    thread.join()
    assert scope.cancelled_caught and (sleep.quiet, sleep.through_trio) == (0, 1)


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="POSIX signals")
async def test_a_signal_a_task_listens_for_wakes_it_at_once():
    sleep = QuietSleep()
    heard: list[int] = []
    with trio.open_signal_receiver(signal.SIGUSR1) as signals:
        async with trio.open_nursery() as nursery:
            async def listen() -> None:
                async for number in signals:
                    heard.append(number)
                    nursery.cancel_scope.cancel()

            nursery.start_soon(listen)
            await trio.sleep(0)
            thread = _later(lambda: os.kill(os.getpid(), signal.SIGUSR1))
            await sleep.until(trio.current_time() + FAR_S)
        thread.join()
    assert heard == [signal.SIGUSR1] and sleep.quiet == 0


async def test_a_pending_cancellation_is_delivered_not_slept_through():
    sleep = QuietSleep()
    with trio.CancelScope() as scope:
        scope.cancel()  # by the caller itself, in synchronous code: no other task was woken
        await sleep.until(trio.current_time() + FAR_S)
    assert scope.cancelled_caught and (sleep.quiet, sleep.through_trio) == (0, 1)


async def test_a_runnable_task_runs_before_the_wait():
    sleep = QuietSleep()
    order: list[str] = []
    async def other() -> None:
        order.append("other")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)  # runnable, not yet run
        await sleep.until(trio.current_time() + LATER_S)
        order.append("tick")
    assert order == ["other", "tick"] and (sleep.quiet, sleep.through_trio) == (0, 1)


async def test_a_task_resumed_in_the_same_batch_runs_before_the_wait():
    """trio takes the whole run queue as a batch and runs it in a random order: a task woken together
    with the caller may still wait its turn in that batch (no longer in the run queue) when the caller
    asks for a quiet wait. Ten rounds, so that both orders come up (each has a 1/2 chance per round)."""
    sleep = QuietSleep()

    async def other(go: trio.Event, order: list[str]) -> None:
        await go.wait()
        order.append("other")

    async def caller(go: trio.Event, order: list[str]) -> None:
        await go.wait()
        await sleep.until(trio.current_time() + 0.001)
        order.append("tick")

    for _ in range(10):
        order: list[str] = []
        go = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(other, go, order)
            nursery.start_soon(caller, go, order)
            await trio.testing.wait_all_tasks_blocked()
            go.set()  # both resumed in one batch
        assert order == ["other", "tick"]


def test_each_run_gets_its_own_view_of_the_loop():
    """A view of an earlier run (its epoll closed since) would make every wait fall back to trio."""
    sleep = QuietSleep()

    async def ticks() -> int:
        before = sleep.quiet
        for _ in range(3):
            await sleep.until(trio.current_time() + 0.001)
        return sleep.quiet - before

    assert trio.run(ticks) >= 2  # the first may go through trio once: the run's own tasks start with it
    assert trio.run(ticks) >= 2


async def test_a_run_loop_it_cannot_read_is_said_once_and_every_wait_goes_through_trio(monkeypatch):
    """Another I/O backend (kqueue, IOCP) or another trio: the node still works, each tick costs a pass of
    trio's loop, and the log says why once per run."""
    import select

    class NotEpoll:
        pass

    monkeypatch.setattr(select, "epoll", NotEpoll)  # trio's own epoll object was made before: unchanged
    sleep = QuietSleep()
    with structlog.testing.capture_logs() as logs:
        for _ in range(3):
            await sleep.until(trio.current_time() + 0.001)
    assert (sleep.quiet, sleep.through_trio) == (0, 3)
    assert [entry["event"] for entry in logs] == ["quiet-wait-unavailable"]
    assert logs[0]["reason"] == "trio's I/O backend is not epoll"
