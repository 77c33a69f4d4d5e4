"""``CpuBudget``: this node's CPU time per race frame, split by part (``protocol.race.costs.CostPart``).

Every nanosecond of the event-loop thread's CPU time while a budget runs is charged to exactly one part:
the session and the links say which part their synchronous work belongs to (``part``), a trio
instrument charges each task step to the task's role (a link's reader and writer are ``LINK``, every
other task ``SHELL``) and the scheduler's own time between steps to ``SHELL``. So the parts add up to
the thread's CPU time, and "shell" is honestly the rest. CPU time (``time.thread_time_ns``), not wall
time: the figure holds on a loaded machine, where wall-clock lag does not. Work off the loop
(``run_blocking``: building a world, fsync) runs in other threads and is not charged.

How it is read: the thread's CPU clock is a system call (about 0.25 µs warm, more in a busy race), and a
frame with 7 peers crosses some 60 boundaries, so the budget reads it only where the thread goes to wait
for I/O (the instrument's ``before_io_wait`` and ``after_io_wait``, which trio calls around its own waits
and the pump's ``QuietSleep`` around its quiet ones: once a frame) and at ``split``. Between two such
readings each boundary reads the wall clock (``perf_counter_ns``, no system call), and the interval's CPU
time is shared among the parts in proportion to their wall time in it; the wait itself is charged to
the shell. The total stays the thread's exact CPU time; a part's share is
exact up to preemption inside the interval (a busy machine that stops the thread mid-verification
lends that stop's proportion to verification), which the proportions of many frames average out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import trio

from open4wd_node.race.part_clock import PartClock, PartSpan
from protocol.race.costs import CostPart


@dataclass(frozen=True)
class CostSplit:
    """CPU charged per part over some frames: the figures the ``result`` event and the live view show."""

    frames: int
    nanos: dict[CostPart, int]

    @property
    def total_ns(self) -> int:
        """All parts together."""
        return sum(self.nanos.values())

    def per_frame_us(self) -> float:
        """Total CPU per frame in µs (0 before the first frame)."""
        return self.total_ns / self.frames / 1000 if self.frames else 0.0

    def shares(self) -> dict[str, float]:
        """Each part's share of the total, in percent (one decimal)."""
        total = self.total_ns or 1
        return {part.value: round(100 * self.nanos[part] / total, 1) for part in CostPart}

    def to_json(self) -> dict[str, Any]:
        """The ``result`` event's ``cpu`` field: frames, µs per frame in all and per part, and the shares."""
        frames = self.frames or 1
        return {
            "frames": self.frames, "per_frame_us": round(self.per_frame_us(), 1),
            "parts_us": {part.value: round(self.nanos[part] / frames / 1000, 1) for part in CostPart},
            "shares": self.shares(),
        }

    def __add__(self, other: CostSplit) -> CostSplit:
        return CostSplit(self.frames + other.frames, {p: self.nanos[p] + other.nanos[p] for p in CostPart})


NO_SPLIT = CostSplit(0, dict.fromkeys(CostPart, 0))


class CpuBudget(trio.abc.Instrument):
    """Charges the loop thread's CPU time to parts (module docstring); a ``CostMeter`` for the session
    and the links, and a trio instrument while ``running``. The accounting is its ``clock``'s (compiled
    with the race core: ``part`` and ``switch`` are the clock's own methods, so a boundary costs no
    interpreted call); this class adds the tasks' roles and trio's hooks."""

    def __init__(self) -> None:
        self.clock = PartClock()
        self.part: Callable[[CostPart], PartSpan] = self.clock.part
        """Charge the synchronous work inside the ``with`` block to ``part`` (never across an await)."""
        self.switch: Callable[[CostPart], CostPart] = self.clock.switch
        """Make ``part`` current (``PartClock.switch``); returns the part that was."""
        self._roles: dict[trio.lowlevel.Task, CostPart] = {}

    def role(self, part: CostPart) -> None:
        """The calling task's steps are charged to ``part`` from now on (a link's reader or writer)."""
        self._roles[trio.lowlevel.current_task()] = part
        self.switch(part)

    def split(self, frames: int) -> CostSplit:
        """What was charged so far (up to now), as the split of ``frames`` frames; subtract two of them
        with ``since`` to get the split of a span of frames."""
        return CostSplit(frames, self.clock.charged())

    @staticmethod
    def since(now: CostSplit, then: CostSplit) -> CostSplit:
        """The split between two ``split`` readings."""
        return CostSplit(now.frames - then.frames, {p: now.nanos[p] - then.nanos[p] for p in CostPart})

    # ---- the trio instrument -------------------------------------------------------------------------

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        """The scheduler's time since the last step is the shell's; the step is the task's role's."""
        self.switch(self._roles.get(task, CostPart.SHELL))

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        """Back to the scheduler (charged to the shell)."""
        self.switch(CostPart.SHELL)

    def before_io_wait(self, timeout: float) -> None:
        """The loop is about to wait: charge what ran since the last reading, then charge nothing but
        the wait's own CPU (the shell's, in ``after_io_wait``)."""
        self.clock.wait_begins()

    def after_io_wait(self, timeout: float) -> None:
        """The wait is over: its CPU (the system call, the wake-up) is the shell's; the scheduler runs on."""
        self.clock.wait_ends()

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        """Forget an ended task's role."""
        self._roles.pop(task, None)
