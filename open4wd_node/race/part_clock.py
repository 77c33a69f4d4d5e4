"""``PartClock``: the CPU budget's accounting core — which part the loop thread's time belongs to now, and
the CPU time charged to each part so far (``open4wd_node.race.budget`` says how, and why this way).

Its own module, with no trio in it, because it runs at every part boundary (some 40 a frame with 7
peers: each message sent and read, each input's digest, the step) and is compiled with the race core
(setup.py ``RACE_CORE``): the session (compiled) and the links call ``part`` and the span's ``__enter__``
and ``__exit__`` as C functions, where the interpreted ones cost about a tenth of a frame's CPU in an
8-node race (docs/node.md, "Sixth pass"). The trio instrument that charges task steps and I/O waits
(``CpuBudget``) stays interpreted and hands its hooks here.
"""

from __future__ import annotations

import time

from protocol.race.costs import CostPart

_cpu_clock = time.thread_time_ns
_wall_clock = time.perf_counter_ns
_PARTS = tuple(CostPart)
"""The parts in their order, iterated at every ``settle``: iterating the enum class itself runs ``enum``'s
interpreted ``__iter__`` (about 1 % of a racer's busy samples, once per tick and split)."""


class PartSpan:
    """The ``with`` block of one part; one per part and clock, reused (the outer part goes on a stack)."""

    __slots__ = ("clock", "part")

    def __init__(self, clock: PartClock, part: CostPart) -> None:
        self.clock = clock
        self.part = part

    def __enter__(self) -> PartSpan:
        clock = self.clock
        clock.outer.append(clock.switch(self.part))
        return self

    def __exit__(self, *exc: object) -> None:
        clock = self.clock
        clock.switch(clock.outer.pop())


class PartClock:
    """Charges the thread's CPU time to parts: the current part's stretch of wall time at every switch, the
    CPU time since the last reading shared in proportion to those stretches at every ``settle``, and a
    wait's own CPU to the shell (``wait_begins``, ``wait_ends``)."""

    def __init__(self) -> None:
        self.nanos = dict.fromkeys(CostPart, 0)
        self.wall = dict.fromkeys(CostPart, 0)  # wall time by part since the last CPU reading
        self.current: CostPart | None = CostPart.SHELL  # None: the thread waits for I/O
        self.last = _wall_clock()
        self.cpu_last = _cpu_clock()
        self.outer: list[CostPart] = []
        self.spans = {part: PartSpan(self, part) for part in CostPart}

    def switch(self, part: CostPart) -> CostPart:
        """Close the current part's stretch of time, make ``part`` current; returns the part that was
        current. A switch to the current part reads no clock: its time goes on accruing to that part,
        so the charge is the same, and most boundaries of a frame are such."""
        previous = self.current
        if part is previous:
            return part
        now = _wall_clock()
        if previous is not None:
            self.wall[previous] += now - self.last
        self.last = now
        self.current = part
        return previous if previous is not None else CostPart.SHELL

    def part(self, part: CostPart) -> PartSpan:
        """Charge the synchronous work inside the ``with`` block to ``part`` (never across an await)."""
        return self.spans[part]

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

    def wait_begins(self) -> None:
        """The thread is about to wait for I/O: charge what ran since the last reading, then nothing but
        the wait's own CPU (``wait_ends``)."""
        self.settle()
        self.current = None

    def wait_ends(self) -> None:
        """The wait is over: its CPU (the system call, the wake-up) is the shell's, which runs on."""
        cpu_now = _cpu_clock()
        self.nanos[CostPart.SHELL] += cpu_now - self.cpu_last
        self.cpu_last = cpu_now
        self.last = _wall_clock()
        self.current = CostPart.SHELL

    def charged(self) -> dict[CostPart, int]:
        """The CPU charged to each part up to now (settled first)."""
        self.settle()
        return dict(self.nanos)
