"""``Wakeup``: a waiting task runs when synchronous code reports a change, and only then."""

from __future__ import annotations

import trio

from open4wd_node.runtime.wakeup import Wakeup


async def test_until_returns_as_soon_as_a_notified_change_makes_the_condition_true(fast_clock):
    wakeup = Wakeup()
    state = {"ready": 0}
    checks = []

    def all_ready() -> bool:
        checks.append(trio.current_time())
        return state["ready"] == 2

    async def arrive(after: float) -> None:
        await trio.sleep(after)
        state["ready"] += 1
        wakeup.notify()

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(arrive, 0.3)
        nursery.start_soon(arrive, 1.7)
        await wakeup.until(all_ready)
    assert trio.current_time() - start == 1.7
    assert [round(t - start, 6) for t in checks] == [0, 0.3, 1.7]  # checked at each change, never in between


async def test_until_returns_at_once_when_the_condition_holds(fast_clock):
    start = trio.current_time()
    await Wakeup().until(lambda: True)
    assert trio.current_time() == start


async def test_a_notify_before_the_wait_does_not_count_and_a_timeout_bounds_the_wait(fast_clock):
    wakeup = Wakeup()
    wakeup.notify()
    with trio.move_on_after(3) as scope:
        await wakeup.wait()
    assert scope.cancelled_caught


async def test_notify_wakes_every_waiter(fast_clock):
    wakeup = Wakeup()
    woken = []

    async def waiter(name: str) -> None:
        await wakeup.wait()
        woken.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter, "a")
        nursery.start_soon(waiter, "b")
        await trio.sleep(1)
        wakeup.notify()
    assert sorted(woken) == ["a", "b"]


async def test_a_cancelled_wait_does_not_hide_the_other_waiters_from_notify(fast_clock):
    wakeup = Wakeup()
    woken = []

    async def waiter() -> None:
        await wakeup.wait()
        woken.append(trio.current_time())

    start = trio.current_time()
    with trio.move_on_after(10):  # a lost wake-up shows as an empty list, not a test that hangs
        async with trio.open_nursery() as nursery:
            with trio.move_on_after(1):  # a wait that gives up, while another goes on waiting
                nursery.start_soon(waiter)
                await wakeup.wait()
            await trio.sleep(1)
            wakeup.notify()
    assert woken == [start + 2]
    with trio.move_on_after(3) as scope:  # with nobody waiting, that notify left nothing behind
        await wakeup.wait()
    assert scope.cancelled_caught
