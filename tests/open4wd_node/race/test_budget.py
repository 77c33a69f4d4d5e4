"""The CPU budget: every nanosecond of the loop thread charged to exactly one part, nested parts to the
innermost, task steps to the task's role. Bounded by work (a fixed number of hashes), never by time."""

from __future__ import annotations

import hashlib

import trio

from open4wd_node.race.budget import NO_SPLIT, CostSplit, CpuBudget
from protocol.race.costs import NO_COST_METER, CostPart


def work(rounds: int = 3000) -> None:
    data = b"x"
    for _ in range(rounds):
        data = hashlib.sha256(data).digest()


def test_nested_parts_charge_the_innermost_and_restore_the_outer():
    budget = CpuBudget()
    before = budget.split(0)
    with budget.part(CostPart.VERIFY):
        work()
        with budget.part(CostPart.SIGN):
            work()
        mid = budget.split(0)
        work()  # back in verify
    after = budget.split(10)
    inner = CpuBudget.since(mid, before)
    assert inner.nanos[CostPart.VERIFY] > 0 and inner.nanos[CostPart.SIGN] > 0
    late = CpuBudget.since(after, mid)
    assert late.nanos[CostPart.VERIFY] > 0 and late.nanos[CostPart.SIGN] == 0
    untouched = (CostPart.CODEC, CostPart.LINK, CostPart.SIMULATION, CostPart.RESIMULATION)
    assert all(CpuBudget.since(after, before).nanos[p] == 0 for p in untouched)


def test_a_part_is_closed_even_when_its_work_raises():
    budget = CpuBudget()
    try:
        with budget.part(CostPart.VERIFY):
            raise ValueError
    except ValueError:
        pass
    before = budget.split(0)
    work()
    assert CpuBudget.since(budget.split(0), before).nanos[CostPart.VERIFY] == 0


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
    assert split.nanos[CostPart.VERIFY] == 0


def test_a_split_per_frame_and_its_shares():
    split = CostSplit(100, dict.fromkeys(CostPart, 0) | {CostPart.VERIFY: 3_000_000, CostPart.SHELL: 1_000_000})
    data = split.to_json()
    assert data["frames"] == 100 and data["per_frame_us"] == 40.0
    assert data["parts_us"]["verify"] == 30.0 and data["shares"]["verify"] == 75.0 and data["shares"]["link"] == 0
    assert (split + split).per_frame_us() == 40.0 and NO_SPLIT.per_frame_us() == 0.0


def test_nobody_measuring_costs_a_no_op():
    with NO_COST_METER.part(CostPart.VERIFY):
        work(1)


def test_a_switch_to_the_current_part_reads_no_clock_and_charges_the_same(monkeypatch):
    """Most boundaries of a frame stay in the part they are in; they cost no clock read, and the time goes
    on accruing to that part (a fake clock: each read is 10 ns after the previous one)."""
    import open4wd_node.race.budget as budget_module

    reads = []

    def clock() -> int:
        reads.append(len(reads) * 10)
        return reads[-1]

    monkeypatch.setattr(budget_module, "_clock", clock)
    budget = CpuBudget()  # read 0: t = 0
    assert budget.switch(CostPart.SHELL) is CostPart.SHELL and len(reads) == 1
    budget.switch(CostPart.VERIFY)  # read 1: t = 10 to the shell
    budget.switch(CostPart.VERIFY)
    budget.switch(CostPart.VERIFY)
    assert len(reads) == 2
    split = budget.split(1)  # read 2: t = 20, 10 ns to verify
    assert split.nanos[CostPart.SHELL] == 10 and split.nanos[CostPart.VERIFY] == 10 and split.total_ns == 20
