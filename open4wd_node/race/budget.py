"""``CpuBudget``: this node's CPU time per race frame, split by part (``CostPart``).

The race session is sans-IO and reads no clock, so the shell measures it from outside: around each call
into the session (``advance_frame``, ``add_local_input``, the handling of a peer's message), around the
links' own work (their reader and writer tasks), and everything else is the shell's. Every nanosecond of
the event-loop thread's CPU time while a budget runs is charged to exactly one part: the runner says which
part the synchronous work it is about to do belongs to (``part``), a trio instrument charges each task step
to the task's role (a link's reader and writer are ``LINK``, every other task ``SHELL``) and the scheduler's
own time between steps to ``SHELL``. So the parts add up to the thread's CPU time, and "shell" is honestly
the rest. CPU time (``time.thread_time_ns``), not wall time: the figure holds on a loaded machine, where
wall-clock lag does not. Work off the loop (``run_blocking``: building a world, fsync) runs in other
threads and is not charged, except in a thread that does a part's work for the whole node and registered
itself (``open4wd_node.runtime.thread_cpu``: aiortc's asyncio thread, the WebRTC links' work): its CPU
time is added to its part at every reading.

How it is read: the thread's CPU clock is a system call, so the budget reads it only at ``split`` (a few
times a second: the live view, the ``progress`` events, a round's end). Every boundary reads the wall clock
instead (``perf_counter_ns``, no system call), and the CPU time between two splits is shared among the
parts in proportion to their wall time in it; while the thread waits for I/O (trio's ``before_io_wait``
and ``after_io_wait``, the instrument's hooks) no part's wall time runs. The total stays the thread's exact
CPU time; a part's share is exact up to preemption (a busy machine that stops the thread mid-step lends
that stop's proportion to the step), which the proportions of many frames average out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import trio

from open4wd_node.runtime.thread_cpu import off_loop_clocks

_cpu_clock = time.thread_time_ns
_wall_clock = time.perf_counter_ns


class CostPart(StrEnum):
    """The parts a race node's CPU per frame is split into: what the ``result`` event's ``cpu`` shows."""

    STEP = "step"
    """``RaceSession.advance_frame``: stepping the world (the first time, and again after a rollback, with the
    saving and loading of states), this node's checksum votes, and the verification of the peers' inputs
    the session checks a run at a time as frames become final."""
    INPUT = "input"
    """``RaceSession.add_local_input``: this node's input, signed, and the ``race-inputs`` built for each peer."""
    MESSAGES = "messages"
    """The session's handling of the peers' messages and of links lost and back (``RaceSession.receive``,
    ``peer_lost``, ``peer_reconnected``): verifying signatures, buffering inputs, votes, recovery."""
    LINK = "link"
    """The links' own tasks: reading, framing, opening and sealing (AEAD), decoding and encoding, the rate
    limits and keepalives, writing."""
    SHELL = "shell"
    """Everything else: the frame pump, the driver's decisions, trio's scheduling, events, the race log."""


_PARTS = tuple(CostPart)


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


class PartSpan:
    """The ``with`` block of one part; one per part and budget, reused (the outer part goes on a stack)."""

    __slots__ = ("budget", "part")

    def __init__(self, budget: CpuBudget, part: CostPart) -> None:
        self.budget = budget
        self.part = part

    def __enter__(self) -> PartSpan:
        budget = self.budget
        budget.outer.append(budget.switch(self.part))
        return self

    def __exit__(self, *exc: object) -> None:
        budget = self.budget
        budget.switch(budget.outer.pop())


class CpuBudget(trio.abc.Instrument):
    """Charges the loop thread's CPU time to parts (module docstring): ``part`` for the runner's calls into
    the session, and, while installed as a trio instrument, the tasks' roles and the loop's waits."""

    def __init__(self) -> None:
        self.nanos = dict.fromkeys(CostPart, 0)
        self.wall = dict.fromkeys(CostPart, 0)  # wall time by part since the last CPU reading
        self.current: CostPart | None = CostPart.SHELL  # None: the thread waits for I/O
        self.last = _wall_clock()
        self.cpu_last = _cpu_clock()
        self.outer: list[CostPart] = []
        self._spans = {part: PartSpan(self, part) for part in CostPart}
        self._roles: dict[trio.lowlevel.Task, CostPart] = {}
        self._off_loop_last: dict[int, int] = {}  # a registered thread's CPU clock at the last reading

    def part(self, part: CostPart) -> PartSpan:
        """Charge the synchronous work inside the ``with`` block to ``part`` (never across an await)."""
        return self._spans[part]

    def role(self, part: CostPart) -> None:
        """The calling task's steps are charged to ``part`` from now on (a link's reader or writer)."""
        self._roles[trio.lowlevel.current_task()] = part
        self.switch(part)

    def switch(self, part: CostPart) -> CostPart:
        """Close the current part's stretch of time, make ``part`` current; returns the part that was
        current. A switch to the current part reads no clock: its time goes on accruing to that part."""
        previous = self.current
        if part is previous:
            return part
        now = _wall_clock()
        if previous is not None:
            self.wall[previous] += now - self.last
        self.last = now
        self.current = part
        return previous if previous is not None else CostPart.SHELL

    def settle(self) -> None:
        """Charge the CPU time since the last reading to the parts, in proportion to their wall time
        since then (the current part's stretch closed first); the rounding's few ns go to the shell."""
        current = self.current
        now = _wall_clock()
        if current is not None:
            self.wall[current] += now - self.last
        self.last = now
        cpu_now = _cpu_clock()
        cpu = cpu_now - self.cpu_last
        self.cpu_last = cpu_now
        walls = self.wall
        total = sum(walls.values())
        given = 0
        if total > 0:
            for part in _PARTS:
                wall = walls[part]
                if wall:
                    share = cpu * wall // total
                    self.nanos[part] += share
                    given += share
                    walls[part] = 0
        self.nanos[CostPart.SHELL] += cpu - given
        self._settle_off_loop()

    def _settle_off_loop(self) -> None:
        """Charge the CPU time the registered threads spent since the last reading to their parts (a thread
        first seen now is only read: its time before this budget is not this budget's)."""
        for clock, part in off_loop_clocks().items():
            try:
                now = time.clock_gettime_ns(clock)
            except OSError:  # the thread ended meanwhile
                self._off_loop_last.pop(clock, None)
                continue
            last = self._off_loop_last.get(clock)
            self._off_loop_last[clock] = now
            if last is not None:
                self.nanos[CostPart(part)] += now - last

    def split(self, frames: int) -> CostSplit:
        """What was charged so far (up to now), as the split of ``frames`` frames; subtract two of them
        with ``since`` to get the split of a span of frames."""
        self.settle()
        return CostSplit(frames, dict(self.nanos))

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
        """The loop is about to wait: the current part's stretch of wall time ends, and the wait's is no part's."""
        current = self.current
        if current is not None:
            self.wall[current] += _wall_clock() - self.last
        self.current = None

    def after_io_wait(self, timeout: float) -> None:
        """The wait is over: the scheduler runs on, as the shell."""
        self.last = _wall_clock()
        self.current = CostPart.SHELL

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        """Forget an ended task's role."""
        self._roles.pop(task, None)
