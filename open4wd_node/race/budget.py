"""``CpuBudget``: this node's CPU time per race frame, split by part (``protocol.race.costs.CostPart``).

Every nanosecond of the event-loop thread's CPU time while a budget runs is charged to exactly one part:
the session and the links say which part their synchronous work belongs to (``part``), a trio
instrument charges each task step to the task's role (a link's reader and writer are ``LINK``, every
other task ``SHELL``) and the scheduler's own time between steps to ``SHELL``. So the parts add up to
the thread's CPU time, and "shell" is honestly the rest. CPU time (``time.thread_time_ns``), not wall
time: the figure holds on a loaded machine, where wall-clock lag does not. Work off the loop
(``run_blocking``: building a world, fsync) runs in other threads and is not charged.

How it is read: the thread's CPU clock is a system call (about 0.25 µs warm, more in a busy race), and a
frame with 7 peers crosses some 60 boundaries, so the budget reads it only where the loop goes to wait
for I/O (the instrument's ``before_io_wait`` and ``after_io_wait``, once or twice a frame) and at
``split``. Between two such readings each boundary reads the wall clock (``perf_counter_ns``, no system
call), and the interval's CPU time is shared among the parts in proportion to their wall time in it;
the wait itself is charged to the shell. The total stays the thread's exact CPU time; a part's share is
exact up to preemption inside the interval (a busy machine that stops the thread mid-verification
lends that stop's proportion to verification), which the proportions of many frames average out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import trio

from protocol.race.costs import CostPart

_cpu_clock = time.thread_time_ns
_wall_clock = time.perf_counter_ns


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


class _Span:
    """The ``with`` block of one part; one per part and budget, reused (the outer part goes on a stack)."""

    __slots__ = ("budget", "part")

    def __init__(self, budget: CpuBudget, part: CostPart) -> None:
        self.budget, self.part = budget, part

    def __enter__(self) -> _Span:
        budget = self.budget
        budget._outer.append(budget.switch(self.part))
        return self

    def __exit__(self, *exc: object) -> None:
        budget = self.budget
        budget.switch(budget._outer.pop())


class CpuBudget(trio.abc.Instrument):
    """Charges the loop thread's CPU time to parts (module docstring); a ``CostMeter`` for the session
    and the links, and a trio instrument while ``running``."""

    def __init__(self) -> None:
        self._nanos = dict.fromkeys(CostPart, 0)
        self._wall = dict.fromkeys(CostPart, 0)  # wall time by part since the last CPU reading
        self._current: CostPart | None = CostPart.SHELL  # None: the loop waits for I/O
        self._last = _wall_clock()
        self._cpu_last = _cpu_clock()
        self._outer: list[CostPart] = []
        self._spans = {part: _Span(self, part) for part in CostPart}
        self._roles: dict[trio.lowlevel.Task, CostPart] = {}

    # ---- charging ------------------------------------------------------------------------------------

    def switch(self, part: CostPart) -> CostPart:
        """Close the current part's stretch of time, make ``part`` current; returns the part that was
        current. A switch to the current part reads no clock: its time goes on accruing to that part,
        so the charge is the same, and most boundaries of a frame are such (a task step of the shell
        between two of the scheduler's)."""
        previous = self._current
        if part is previous:
            return previous
        now = _wall_clock()
        if previous is not None:
            self._wall[previous] += now - self._last
        self._last = now
        self._current = part
        return previous if previous is not None else CostPart.SHELL

    def _settle(self) -> None:
        """Charge the CPU time since the last reading to the parts, in proportion to their wall time
        since then (the current part's stretch closed first); the rounding's few ns go to the shell."""
        current = self._current
        now = _wall_clock()
        if current is not None:
            self._wall[current] += now - self._last
        self._last = now
        cpu_now = _cpu_clock()
        cpu, self._cpu_last = cpu_now - self._cpu_last, cpu_now
        walls = self._wall
        total = sum(walls.values())
        given = 0
        if total > 0:
            for part, wall in walls.items():
                if wall:
                    share = cpu * wall // total
                    self._nanos[part] += share
                    given += share
                    walls[part] = 0
        self._nanos[CostPart.SHELL] += cpu - given

    def part(self, part: CostPart) -> _Span:
        """Charge the synchronous work inside the ``with`` block to ``part`` (never across an await)."""
        return self._spans[part]

    def role(self, part: CostPart) -> None:
        """The calling task's steps are charged to ``part`` from now on (a link's reader or writer)."""
        self._roles[trio.lowlevel.current_task()] = part
        self.switch(part)

    def split(self, frames: int) -> CostSplit:
        """What was charged so far (up to now), as the split of ``frames`` frames; subtract two of them
        with ``since`` to get the split of a span of frames."""
        self._settle()
        return CostSplit(frames, dict(self._nanos))

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
        self._settle()
        self._current = None

    def after_io_wait(self, timeout: float) -> None:
        """The wait is over: its CPU (the system call, the wake-up) is the shell's; the scheduler runs on."""
        cpu_now = _cpu_clock()
        self._nanos[CostPart.SHELL] += cpu_now - self._cpu_last
        self._cpu_last = cpu_now
        self._last = _wall_clock()
        self._current = CostPart.SHELL

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        """Forget an ended task's role."""
        self._roles.pop(task, None)
