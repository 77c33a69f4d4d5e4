"""aiortc (asyncio) beside the node's trio run: aiortc on its own asyncio loop in a thread of its own.

The node is one ``trio.run``; aiortc is asyncio. The bridge runs a plain asyncio event loop in a
dedicated thread for as long as its block (``asyncio_bridge``) runs, and the two sides talk through
one ordered queue each way, shared by every link, one wake-up of the other side per batch of calls
(``Handoff``): a race tick's sends to every peer wake the loop once, and the messages of every peer that
came in one turn of the loop wake trio once.

- to the asyncio side: a coroutine awaited from trio (``AsyncioThread.run``: a negotiation's steps, a
  peer connection's close), and a link's synchronous aiortc calls (a DataChannel ``send``), posted without
  waiting (``AsyncioThread.call_on_loop``);
- to trio: every callback aiortc fires for a link (a message, a channel opening or closing, a state
  change) is posted in the order aiortc fired it and runs in trio's thread (``AsyncioThread.call_in_trio``),
  so a link's rules, buffers and events live in trio alone.

Why a thread rather than an asyncio loop inside trio (trio-asyncio) or trio as a guest of asyncio (guest
mode): aiortc schedules several asyncio callbacks, tasks and timers for every DataChannel message; on a
plain asyncio loop each costs what asyncio charges, while either in-run bridge makes each one a trio task
step as well. The measurement and the command are in docs/webrtc.md ("Performance").

What a thread costs in fit: asyncio's timers run on the real clock, not trio's (a test on the autojump
``MockClock`` sees aiortc's work as time in which every trio task waits, so its virtual clock jumps). A
trio cancellation cancels the asyncio task a ``run`` waits on. The loop's end is the block's end: every
task still on it is cancelled, the loop stops and the thread is joined, also when the block is cancelled;
if the loop dies first, every ``run`` waiting on it and every link on it ends with ``webrtc-bridge-failed``.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
import concurrent.futures
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

import structlog
import trio

from open4wd_node.net.link import LinkClosed
from open4wd_node.runtime.thread_cpu import off_loop

T = TypeVar("T")
log = structlog.get_logger("open4wd_node.webrtc")

STOP_SWEEPS = 8  # rounds of cancelling the tasks still on the loop when it ends (tasks start tasks as they stop)
STOP_TIMEOUT_S = 5.0  # how long the end of the block waits for the loop's tasks to finish and the thread to end

_CURRENT: ContextVar[AsyncioThread | None] = ContextVar("open4wd_webrtc_bridge", default=None)


class BridgeUser(Protocol):
    """What lives on the bridge's loop and must end if the loop dies (a link's carrier)."""

    def bridge_ended(self, reason: LinkClosed) -> None:
        """The loop has died: end with ``reason``."""


class Handoff:
    """Calls made on one side of the bridge, run in the order they were made on the other side, with one
    wake-up of that side per batch: a call put while an earlier batch waits to run joins it. ``schedule``
    is the other side's thread-safe "run this soon" (``loop.call_soon_threadsafe``,
    ``TrioToken.run_sync_soon``); what a call raises goes to its own ``failed`` through ``report``
    (``report(failed, exc)``: at once, or handed on to the side ``failed`` lives on), and the calls after it
    still run."""

    def __init__(self, schedule: Callable[[Callable[[], None]], object],
                 report: Callable[[Callable[[BaseException], None], BaseException], None]) -> None:
        self._calls: deque[tuple[Callable[[BaseException], None], Callable[..., object], tuple[Any, ...]]] = deque()
        self._scheduled = False
        self._schedule = schedule
        self._report = report

    def put(self, failed: Callable[[BaseException], None], function: Callable[..., object], *args: Any) -> None:
        """Run ``function(*args)`` on the other side, after every call put before it; ``failed`` gets what it raises."""
        self._calls.append((failed, function, args))
        if not self._scheduled:  # the batch's run resets this before it reads the queue: nothing is left behind
            self._scheduled = True
            try:
                self._schedule(self._run)
            except RuntimeError as exc:  # the other side has ended (a closed loop, a finished trio run)
                self._scheduled = False
                while self._calls:
                    self._report(self._calls.popleft()[0], exc)

    def _run(self) -> None:
        self._scheduled = False
        while self._calls:
            failed, function, args = self._calls.popleft()
            try:
                function(*args)
            except Exception as exc:  # noqa: BLE001 - handed to the call's owner, which ends its link with a code
                self._report(failed, exc)


class AsyncioThread:
    """A plain asyncio loop in a thread of its own, for aiortc, while an ``asyncio_bridge`` block runs."""

    def __init__(self) -> None:
        self.loop = asyncio.SelectorEventLoop()  # never the process's loop policy: this loop is the bridge's own
        self.loop.set_exception_handler(self._unhandled)
        self.token = trio.lowlevel.current_trio_token()
        self.failure: BaseException | None = None  # why the loop ended before the block did
        self._ended = trio.Event()  # the thread has finished (set in trio)
        self._waiting: set[trio.Event] = set()  # the ``run`` calls waiting on the loop
        self._users: weakref.WeakSet[BridgeUser] = weakref.WeakSet()  # a link gone is forgotten
        self._thread = threading.Thread(target=self._serve, name="open4wd-aiortc", daemon=True)
        self._into_trio = Handoff(self.token.run_sync_soon, _report_here)
        self._onto_loop = Handoff(self.loop.call_soon_threadsafe, self._report_in_trio)

    # ---- the asyncio thread ----------------------------------------------------------------------

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            with off_loop("link"):  # a race's CPU budget counts this thread's time as its links' work
                self.loop.run_forever()
        except BaseException as exc:  # noqa: BLE001 - reported to trio below: every link on the loop ends with it
            self.failure = exc
        finally:
            try:
                if self.failure is not None:  # the links learn why before the tidying up closes their channels
                    self._post_to_trio(self._end_users)
                self._cancel_what_is_left()
                self.loop.close()
            finally:
                self._post_to_trio(self._finished)

    def _post_to_trio(self, function: Callable[[], None]) -> None:
        try:
            self.token.run_sync_soon(function)
        except trio.RunFinishedError:
            pass

    def _cancel_what_is_left(self) -> None:
        """After the loop stopped: cancel and finish the tasks still on it (there are some only when the loop
        died rather than being stopped by ``_stop``), so none is destroyed pending when the loop closes; a
        loop too broken to run them again is logged."""
        left = asyncio.all_tasks(self.loop)
        if not left:
            return
        for task in left:
            task.cancel()
        try:
            self.loop.run_until_complete(asyncio.wait(left, timeout=STOP_TIMEOUT_S))
        except BaseException as exc:  # noqa: BLE001 - the loop has already failed; this is only its tidying up
            log.error("webrtc-bridge-tasks-left", tasks=len(left), error=repr(exc))

    def _unhandled(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """What an aiortc task or callback raised that nobody awaited: logged with its context (the link it
        belongs to ends through its own state change, which aiortc reports)."""
        exc = context.get("exception")
        log.error("webrtc-asyncio-error", message=context.get("message"), error=repr(exc) if exc else None)

    async def _stop(self) -> None:
        """Cancel every task still on the loop, wait for them, then stop it (on the asyncio side). A task
        being cancelled may start others (aiortc's transports stop through tasks of their own), so the
        sweep repeats until none is left, at most ``STOP_SWEEPS`` times: a task left pending when the loop
        closes would be destroyed with its coroutine suspended, raising into nobody."""
        current = asyncio.current_task()
        for _ in range(STOP_SWEEPS):
            tasks = [task for task in asyncio.all_tasks() if task is not current]
            if not tasks:
                break
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        else:
            left = [task for task in asyncio.all_tasks() if task is not current]
            if left:
                log.error("webrtc-bridge-tasks-left", tasks=len(left))
        await self.loop.shutdown_asyncgens()
        self.loop.stop()

    # ---- trio's side -----------------------------------------------------------------------------

    def _end_users(self) -> None:
        log.error("webrtc-bridge-failed", error=repr(self.failure))
        reason = self.ended_reason()
        for user in list(self._users):
            user.bridge_ended(reason)

    def _finished(self) -> None:
        self._ended.set()
        for waiting in self._waiting:
            waiting.set()

    def ended_reason(self) -> LinkClosed:
        """What a link on this loop ends with once the loop has ended."""
        why = f"the asyncio loop that runs aiortc ended: {self.failure!r}" if self.failure else "the asyncio loop ended"
        return LinkClosed("webrtc-bridge-failed", why)

    def watch(self, user: BridgeUser) -> None:
        """Tell ``user`` (in trio) if the loop dies while the block still runs and ``user`` lives."""
        self._users.add(user)

    def call_on_loop(self, failed: Callable[[BaseException], None], function: Callable[..., object], *args: Any) -> None:
        """Run ``function(*args)`` on the loop after every call posted before it, without waiting;
        ``failed`` runs in trio with what it raised."""
        self._onto_loop.put(failed, function, *args)

    def call_in_trio(self, failed: Callable[[BaseException], None], function: Callable[..., object], *args: Any) -> None:
        """Run ``function(*args)`` in trio after every call posted before it (from aiortc's callbacks);
        ``failed`` gets what it raised."""
        self._into_trio.put(failed, function, *args)

    def _report_in_trio(self, failed: Callable[[BaseException], None], exc: BaseException) -> None:
        """What a call on the loop raised, to its owner in trio."""
        self._into_trio.put(_logged, failed, exc)

    async def run(self, function: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """``await function(*args)`` on the loop; a trio cancellation cancels it there. ``LinkClosed``
        ``webrtc-bridge-failed`` when the loop has ended or ends meanwhile."""
        if self._ended.is_set() or self.loop.is_closed():
            raise self.ended_reason()
        done = trio.Event()
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(function(*args), self.loop)
        future.add_done_callback(lambda _: self.token.run_sync_soon(done.set))
        self._waiting.add(done)
        try:
            await done.wait()
        except trio.Cancelled:
            future.cancel()
            raise
        finally:
            self._waiting.discard(done)
        if self.failure is not None or not future.done():  # a loop that died cancels what it still ran
            raise self.ended_reason()
        return future.result()

    async def _open(self) -> None:
        self._thread.start()

    async def _close(self) -> None:
        """End the loop: its tasks cancelled, then the thread joined, within ``STOP_TIMEOUT_S`` of real time
        (the thread's work does not run on trio's clock, which a test's autojump ``MockClock`` would move)."""
        if not self.loop.is_closed():
            try:
                asyncio.run_coroutine_threadsafe(self._stop(), self.loop)
            except RuntimeError:  # the loop closed meanwhile
                pass
        await trio.to_thread.run_sync(self._thread.join, STOP_TIMEOUT_S)
        if self._thread.is_alive():
            log.error("webrtc-bridge-stuck", seconds=STOP_TIMEOUT_S)


def _report_here(failed: Callable[[BaseException], None], exc: BaseException) -> None:
    failed(exc)


def _logged(exc: BaseException) -> None:
    """What a call's own failure handler raised: nobody left to tell but the log."""
    log.error("webrtc-bridge-report-failed", error=repr(exc))


def current_bridge() -> AsyncioThread | None:
    """The bridge this trio task runs inside (``asyncio_bridge``), or None. A link keeps the bridge it was
    made on: the tasks that later send on it or close it (a race's, a room's) need not run inside the
    bridge's block."""
    return _CURRENT.get()


@asynccontextmanager
async def asyncio_bridge() -> AsyncIterator[AsyncioThread]:
    """aiortc's asyncio loop while the block runs (the one already open in this task, if any)."""
    bridge = current_bridge()
    if bridge is not None:
        yield bridge
        return
    bridge = AsyncioThread()
    await bridge._open()
    token = _CURRENT.set(bridge)
    try:
        yield bridge
    finally:
        _CURRENT.reset(token)
        with trio.CancelScope(shield=True):
            await bridge._close()
