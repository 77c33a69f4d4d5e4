"""``QuietSleep``: the frame pump's wait for its next tick, without a trip through trio's scheduler when
nothing else in the process has anything to do.

Why (issue 17, docs/node.md "Sixth pass"): on the virtual machines this node is measured on, a process
that slept most of a 1/60 s frame wakes with cold caches, and every line of Python it then runs costs
several times its warm price. ``trio.sleep_until`` runs a good deal of it: a cancel scope entered and
left, a ``Cancelled`` raised and caught, a pass of the run loop (deadlines, the run queue's batch, the
instruments) — about 23 µs warm and 250–270 µs of CPU per 60 Hz tick cold, against 105–115 µs for the
bare system call that waits. In a race most ticks find nothing else to run: the pump reads the links
itself and writes its sends at once, so the rest of the node sleeps.

What it does: when the calling task could not be interrupted by anything but I/O or a deadline — no
other task is runnable (in the run queue, or left in the batch the scheduler resumed the caller in), the
caller has no cancellation pending, the run uses the real clock — it waits
in ``poll(2)`` on trio's own epoll descriptor, until the tick or the earliest deadline of any task,
whichever is first. trio's descriptor becomes readable exactly when trio would have woken (a socket a
task waits on, a thread's ``run_sync_soon``, a signal's wake-up byte). If the wait reaches the tick
with nothing ready, it returns without a checkpoint; anything else (something ready, another task's
deadline first, a runnable task, a pending cancellation) goes through ``trio.sleep_until`` as before,
which serves it at once. So every task runs when it would have run, and cancellation is delivered as
promptly: nothing in the process can cancel the caller while it sits in ``poll`` except a deadline
(which bounds the wait) or another task (which must first be woken by I/O or a deadline).

The cost of that: a view into trio's run loop through private names (the runner, its run queue, its
deadline heap, its epoll object, its tasks' pending resumptions and schedule points), on the versions
``pyproject.toml`` allows. ``_LoopView.of_current_run`` checks every name once per run and, if any is
missing (another trio, another I/O backend: said in the log) or the clock is a ``MockClock``,
``QuietSleep`` is ``trio.sleep_until`` and nothing else (``quiet`` stays 0). Whoever charges the loop's
waits (``trio.abc.Instrument``'s ``before_io_wait`` / ``after_io_wait``: the CPU budget) is told of a
quiet wait exactly as trio would tell it of its own.
"""

from __future__ import annotations

import math
import select
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
import trio

log = structlog.get_logger("open4wd_node.quiet_sleep")
UNAVAILABLE = "quiet-wait-unavailable"


class WaitWatcher(Protocol):
    """Told of every wait for I/O, as a trio instrument is (``trio.abc.Instrument``'s hooks)."""

    def before_io_wait(self, timeout: float) -> None:
        """The thread is about to wait for at most ``timeout`` seconds."""

    def after_io_wait(self, timeout: float) -> None:
        """The wait is over."""


@dataclass(frozen=True)
class _LoopView:
    """The parts of trio's run loop a quiet wait reads (private names, checked once per run)."""

    tasks: Any
    run_queue: Any
    next_deadline: Any  # the deadline heap's earliest live deadline (stale entries dropped), or inf
    clock: Any
    poller: Any

    @staticmethod
    def of_current_run() -> _LoopView | None:
        """The current run's view, or None when a quiet wait would not be exact: a clock that is not the
        system's (a ``MockClock`` jumps, ``poll`` would not: expected, said nothing of), or a trio whose
        run loop does not have the names read here or whose I/O backend is not epoll (another platform
        or version: logged once per run as ``quiet-wait-unavailable``, since every tick then costs a
        pass of trio's loop; docs/node.md, "Sixth pass")."""
        runner = trio._core._run.GLOBAL_RUN_CONTEXT.runner
        if type(runner.clock) is not trio._core._run.SystemClock:
            return None
        try:
            epoll = runner.io_manager._epoll
            run_queue, next_deadline, tasks = runner.runq, runner.deadlines.next_deadline, runner.tasks
            task = trio.lowlevel.current_task()
            task._schedule_points, task._next_send_fn  # noqa: B018 - names a quiet wait reads
        except AttributeError as exc:
            log.warning(UNAVAILABLE, reason=f"trio's run loop has no {exc.name!r}")
            return None
        if not isinstance(epoll, select.epoll):
            log.warning(UNAVAILABLE, reason="trio's I/O backend is not epoll")
            return None
        poller = select.poll()
        poller.register(epoll.fileno(), select.POLLIN)
        return _LoopView(tasks, run_queue, next_deadline, runner.clock, poller)


class QuietSleep:
    """``until(deadline)`` waits like ``trio.sleep_until(deadline)``, quietly when it can (module
    docstring); ``watcher`` hears of each quiet wait as an instrument hears of trio's waits. ``quiet``
    and ``through_trio`` count the two kinds of wait (what the tests and the benchmark look at)."""

    def __init__(self, watcher: WaitWatcher | None = None) -> None:
        self.watcher = watcher
        self.quiet = 0
        self.through_trio = 0
        self._view: _LoopView | None = None
        self._view_of: object = None  # the runner ``_view`` belongs to (a new ``trio.run``, a new view)
        self._alone: tuple[object, int] | None = None  # (task, its schedule points) when it was last alone

    def _current_view(self) -> _LoopView | None:
        runner = trio._core._run.GLOBAL_RUN_CONTEXT.runner
        if runner is not self._view_of:
            self._view, self._view_of, self._alone = _LoopView.of_current_run(), runner, None
        return self._view

    async def until(self, deadline: float) -> None:
        """Return at ``deadline`` (trio's clock) or later; quietly when nothing else could want to run
        before it, else through ``trio.sleep_until``."""
        view = self._current_view()
        if view is not None and self._alone_in_the_loop(view):
            wake_at = min(deadline, view.next_deadline())
            timeout = wake_at - view.clock.current_time()
            ready = timeout > 0 and self._wait(view, timeout)
            if not ready and wake_at >= deadline:
                self.quiet += 1
                return
        self.through_trio += 1
        await trio.sleep_until(deadline)

    def _alone_in_the_loop(self, view: _LoopView) -> bool:
        """No other task is runnable and the caller has no cancellation pending. Runnable means in the
        run queue, or still waiting its turn in the batch the scheduler took from it when it resumed the
        caller (trio runs a batch in a random order): so after every time the caller went through the
        scheduler (its schedule points moved), the tasks are looked over once for one resumed but not yet
        run; from one quiet wait to the next, the caller did not yield, and that batch is still empty."""
        if view.run_queue or trio.current_effective_deadline() == -math.inf:
            return False
        task = trio.lowlevel.current_task()
        points = task._schedule_points
        if self._alone != (task, points):
            if any(other._next_send_fn is not None for other in view.tasks if other is not task):
                return False
            self._alone = (task, points)
        return True

    def _wait(self, view: _LoopView, timeout: float) -> bool:
        """Wait in ``poll`` on trio's descriptor for at most ``timeout`` s (rounded up to the next
        millisecond, as trio's own wait is); whether trio has something to serve."""
        watcher = self.watcher
        if watcher is not None:
            watcher.before_io_wait(timeout)
        try:
            return bool(view.poller.poll(math.ceil(timeout * 1000)))
        finally:
            if watcher is not None:
                watcher.after_io_wait(timeout)
