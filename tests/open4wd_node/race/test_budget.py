"""The CPU budget: every nanosecond of the loop thread charged to exactly one part, nested parts to the
innermost, task steps to the task's role. Bounded by work (a fixed number of hashes), never by time."""

from __future__ import annotations

import hashlib

import trio

import open4wd_node.race.budget as budget_module
from open4wd_node.race.budget import NO_SPLIT, CostPart, CostSplit, CpuBudget


def work(rounds: int = 3000) -> None:
    data = b"x"
    for _ in range(rounds):
        data = hashlib.sha256(data).digest()


def test_nested_parts_charge_the_innermost_and_restore_the_outer():
    budget = CpuBudget()
    before = budget.split(0)
    with budget.part(CostPart.MESSAGES):
        work()
        with budget.part(CostPart.INPUT):
            work()
        mid = budget.split(0)
        work()  # back in messages
    after = budget.split(10)
    inner = CpuBudget.since(mid, before)
    assert inner.nanos[CostPart.MESSAGES] > 0 and inner.nanos[CostPart.INPUT] > 0
    late = CpuBudget.since(after, mid)
    assert late.nanos[CostPart.MESSAGES] > 0 and late.nanos[CostPart.INPUT] == 0
    assert all(CpuBudget.since(after, before).nanos[p] == 0 for p in (CostPart.STEP, CostPart.LINK))


def test_a_part_is_closed_even_when_its_work_raises():
    budget = CpuBudget()
    try:
        with budget.part(CostPart.MESSAGES):
            raise ValueError
    except ValueError:
        pass
    before = budget.split(0)
    work()
    assert CpuBudget.since(budget.split(0), before).nanos[CostPart.MESSAGES] == 0


async def test_task_steps_are_charged_to_the_tasks_role():
    budget = CpuBudget()
    trio.lowlevel.add_instrument(budget)
    try:
        before = budget.split(0)

        async def link_task() -> None:
            budget.role(CostPart.LINK)
            for _ in range(3):
                work()
                await trio.sleep(0)

        async def other_task() -> None:
            for _ in range(3):
                work()
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(link_task)
            nursery.start_soon(other_task)
        split = CpuBudget.since(budget.split(0), before)
    finally:
        trio.lowlevel.remove_instrument(budget)
    assert split.nanos[CostPart.LINK] > 0 and split.nanos[CostPart.SHELL] > 0
    assert split.nanos[CostPart.MESSAGES] == 0


def test_a_split_per_frame_and_its_shares():
    split = CostSplit(100, dict.fromkeys(CostPart, 0) | {CostPart.MESSAGES: 3_000_000, CostPart.SHELL: 1_000_000})
    data = split.to_json()
    assert data["frames"] == 100 and data["per_frame_us"] == 40.0
    assert data["parts_us"]["messages"] == 30.0 and data["shares"]["messages"] == 75.0 and data["shares"]["link"] == 0
    assert (split + split).per_frame_us() == 40.0 and NO_SPLIT.per_frame_us() == 0.0


class FakeClocks:
    """A wall clock 10 ns further at each read, and a CPU clock the test sets."""

    def __init__(self, monkeypatch) -> None:
        self.wall_reads = 0
        self.cpu = 0
        self.cpu_reads = 0
        monkeypatch.setattr(budget_module, "_wall_clock", self._wall)
        monkeypatch.setattr(budget_module, "_cpu_clock", self._cpu)

    def _wall(self) -> int:
        self.wall_reads += 1
        return (self.wall_reads - 1) * 10

    def _cpu(self) -> int:
        self.cpu_reads += 1
        return self.cpu


def test_a_switch_to_the_current_part_reads_no_clock_and_charges_the_same(monkeypatch):
    """Most boundaries of a frame stay in the part they are in; they cost no clock read, and the time goes
    on accruing to that part. A boundary reads only the wall clock; the CPU time read at ``split`` is
    shared by the parts' wall time."""
    clocks = FakeClocks(monkeypatch)
    budget = CpuBudget()  # wall t = 0
    assert budget.switch(CostPart.SHELL) is CostPart.SHELL and clocks.wall_reads == 1
    budget.switch(CostPart.MESSAGES)  # wall t = 10: 10 to the shell
    budget.switch(CostPart.MESSAGES)
    budget.switch(CostPart.MESSAGES)
    assert clocks.wall_reads == 2 and clocks.cpu_reads == 1
    budget.switch(CostPart.STEP)  # wall t = 20: 10 to messages
    clocks.cpu = 1001
    split = budget.split(1)  # wall t = 30: 10 to step; 1001 ns of CPU in thirds, the rounding's 2 ns to the shell
    assert clocks.cpu_reads == 2
    assert split.nanos[CostPart.SHELL] == 335 and split.nanos[CostPart.MESSAGES] == 333
    assert split.nanos[CostPart.STEP] == 333 and split.total_ns == 1001


def test_the_wait_for_io_is_no_part_s_time_and_the_cpu_clock_is_read_only_at_a_split(monkeypatch):
    """trio tells the budget of every wait for I/O (several a tick): the wait's wall time is nobody's, and
    no CPU clock is read for it (a system call); the CPU time read at the next split is shared by the parts'
    wall time, the waits left out."""
    clocks = FakeClocks(monkeypatch)
    budget = CpuBudget()  # wall t = 0
    budget.switch(CostPart.MESSAGES)  # t = 10: 10 to the shell
    budget.before_io_wait(1.0)  # t = 20: 10 to messages
    clocks.wall_reads += 1000  # the wait: 10 µs of wall time pass
    budget.after_io_wait(1.0)  # t = 10030
    budget.switch(CostPart.MESSAGES)  # t = 10040: 10 ns of shell since the wait
    assert clocks.cpu_reads == 1  # at the start only
    clocks.cpu = 150
    split = budget.split(1)  # t = 10050: 10 to messages; 20 and 20 of wall time: 150 ns of CPU half and half
    assert clocks.cpu_reads == 2
    assert split.nanos[CostPart.SHELL] == 75 and split.nanos[CostPart.MESSAGES] == 75 and split.total_ns == 150


def test_a_thread_that_does_a_part_s_work_off_the_loop_is_charged_to_that_part():
    """aiortc's asyncio thread registers as the links' work (``off_loop``): its CPU time counts, from the
    first reading on, while the loop thread's own is charged as before."""
    import threading

    from open4wd_node.runtime.thread_cpu import off_loop

    budget = CpuBudget()
    registered, go, done, release = (threading.Event() for _ in range(4))

    def worker() -> None:
        with off_loop(CostPart.LINK.value):
            registered.set()
            go.wait()
            work()
            done.set()
            release.wait()

    thread = threading.Thread(target=worker)
    thread.start()
    registered.wait()
    before = budget.split(0)  # the thread's first reading: its time so far is not this budget's
    go.set()
    done.wait()
    after = budget.split(0)
    release.set()
    thread.join()
    charged = CpuBudget.since(after, before)
    assert charged.nanos[CostPart.LINK] > 0 and charged.nanos[CostPart.STEP] == 0
    assert CpuBudget.since(budget.split(0), after).nanos[CostPart.LINK] == 0  # an ended thread counts no more
