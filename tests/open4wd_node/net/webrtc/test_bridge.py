"""The bridge to aiortc's asyncio thread: calls cross in order with one wake-up per batch, the thread ends
with its block (cancelled or not), and what fails on the asyncio side reaches trio: a coroutine's error as
itself, a loop that dies as ``webrtc-bridge-failed`` on every call and link waiting on it."""

from __future__ import annotations

import asyncio
import threading

import pytest
import trio

from open4wd_node.net.link import LinkClosed
from open4wd_node.net.webrtc.bridge import Handoff, asyncio_bridge, current_bridge
from open4wd_node.net.webrtc.connector import webrtc_endpoint, webrtc_link
from open4wd_node.net.webrtc.signaling import SignalingHub
from protocol.webrtc.channels import LinkKind
from tests.open4wd_node.net.webrtc.helpers import ALICE, BOB, LOOPBACK, SCOPE, open_pair


def _bridge_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "open4wd-aiortc"]


class _Died(SystemExit):
    """What escapes asyncio's loop: a callback's other errors go to its exception handler, these end ``run_forever``."""


def _die() -> None:
    raise _Died("the loop's thread broke")


async def _forever(cancelled: threading.Event) -> None:
    """An asyncio task that never ends by itself; ``cancelled`` is set when it is cancelled."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        cancelled.set()
        raise


def test_calls_cross_in_order_with_one_wake_up_per_batch_and_a_failure_costs_only_its_call():
    wake_ups: list = []
    ran: list[int] = []
    failures: list[BaseException] = []
    handoff = Handoff(wake_ups.append, lambda failed, exc: failed(exc))

    def fail() -> None:
        raise ValueError("refused")

    handoff.put(failures.append, ran.append, 1)
    handoff.put(failures.append, fail)
    handoff.put(failures.append, ran.append, 2)
    assert len(wake_ups) == 1 and ran == []  # one wake-up for the whole batch, nothing run on this side
    wake_ups.pop()()
    assert ran == [1, 2] and [str(f) for f in failures] == ["refused"]
    handoff.put(failures.append, ran.append, 3)  # the next batch wakes the other side again
    assert len(wake_ups) == 1
    wake_ups.pop()()
    assert ran == [1, 2, 3]


def test_a_call_put_after_the_other_side_ended_is_a_failure_not_a_crash():
    failures: list[BaseException] = []

    def ended(_: object) -> None:
        raise RuntimeError("Event loop is closed")

    handoff = Handoff(ended, lambda failed, exc: failed(exc))
    handoff.put(failures.append, print, "never")
    assert [str(f) for f in failures] == ["Event loop is closed"]


async def test_the_thread_ends_with_the_block_and_the_tasks_left_on_its_loop_are_cancelled():
    cancelled = threading.Event()

    async with asyncio_bridge() as bridge:
        assert current_bridge() is bridge and len(_bridge_threads()) == 1
        async with asyncio_bridge() as inner:  # a block inside one shares its loop
            assert inner is bridge
        assert await bridge.run(asyncio.sleep, 0, "on the loop") == "on the loop"
        bridge.loop.call_soon_threadsafe(asyncio.ensure_future, _forever(cancelled))  # a task nobody awaits
    assert current_bridge() is None and _bridge_threads() == [] and cancelled.is_set() and bridge.loop.is_closed()


async def _starts_another_when_cancelled(started: list[asyncio.Task]) -> None:
    """An asyncio task that, as it is cancelled, starts a second task that never ends by itself (as aiortc's
    transports stop through tasks of their own)."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        started.append(asyncio.ensure_future(_forever(threading.Event())))
        raise


async def test_a_task_started_while_the_loop_s_tasks_are_cancelled_is_cancelled_too():
    started: list[asyncio.Task] = []
    async with asyncio_bridge() as bridge:
        bridge.loop.call_soon_threadsafe(asyncio.ensure_future, _starts_another_when_cancelled(started))
        assert await bridge.run(asyncio.sleep, 0) is None  # the first task is running before the block ends
    assert len(started) == 1 and started[0].cancelled() and bridge.loop.is_closed() and _bridge_threads() == []


async def test_a_cancelled_block_still_ends_the_thread_and_cancels_what_it_waited_on():
    cancelled = threading.Event()
    started = trio.Event()

    async def waiting(bridge) -> None:
        started.set()
        await bridge.run(_forever, cancelled)

    with trio.CancelScope() as scope:
        async with asyncio_bridge() as bridge, trio.open_nursery() as nursery:
            nursery.start_soon(waiting, bridge)
            await started.wait()
            scope.cancel()
    assert scope.cancelled_caught and _bridge_threads() == [] and cancelled.is_set()


async def test_an_error_of_a_coroutine_on_the_loop_is_raised_in_trio():
    async def refuse() -> None:
        raise ValueError("aiortc refused it")

    async with asyncio_bridge() as bridge:
        with pytest.raises(ValueError, match="aiortc refused it"):
            await bridge.run(refuse)


async def test_a_loop_that_dies_ends_the_calls_and_the_links_on_it_with_a_code():
    hub = SignalingHub(SCOPE)
    async with asyncio_bridge() as bridge:
        async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.ROOM, LOOPBACK) as alice, \
                webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.ROOM, LOOPBACK) as bob:
            offered, answered = await open_pair(alice, bob)
            link = webrtc_link(answered)
            bridge.loop.call_soon_threadsafe(_die)
            with pytest.raises(LinkClosed) as ended:
                await link.receive()
            assert ended.value.code == "webrtc-bridge-failed" and "the loop's thread broke" in ended.value.message
            with pytest.raises(LinkClosed) as refused:
                await bridge.run(asyncio.sleep, 0)
            assert refused.value.code == "webrtc-bridge-failed"
            with pytest.raises(LinkClosed) as also:
                await offered.receive_first(1024)
            assert also.value.code == "webrtc-bridge-failed"
    assert _bridge_threads() == []


async def test_the_thread_ends_with_the_block_on_a_test_s_autojump_clock(autojump_clock):
    """The end waits for the thread in real time: the virtual clock jumping meanwhile does not cut it short."""
    cancelled = threading.Event()
    async with asyncio_bridge() as bridge:
        bridge.loop.call_soon_threadsafe(asyncio.ensure_future, _forever(cancelled))
        assert await bridge.run(asyncio.sleep, 0, "on the loop") == "on the loop"
    assert _bridge_threads() == [] and cancelled.is_set() and bridge.loop.is_closed()
