import pytest
import trio

from open4wd_node.race.pump import FramePump


async def test_exactly_60_frames_per_second_without_drift(autojump_clock):
    frames = []
    pump = FramePump(lambda: frames.append(trio.current_time()) or True, lambda: len(frames))
    start = trio.current_time()
    await pump.run(lambda: len(frames) >= 600)
    assert len(frames) == 600
    # frame k is stepped at its own tick: start + k/60, never later, and 10 s take exactly 10 s
    assert all(abs(t - (start + k / 60)) < 1e-9 for k, t in enumerate(frames))
    assert pump.max_lag == 0


async def test_when_behind_it_steps_at_most_4_per_tick_and_reports_lag(autojump_clock):
    frames = []
    ticks = []

    def step():
        if len(frames) == 30:
            autojump_clock.jump(0.5)  # the machine was busy for half a second inside this step
        frames.append(trio.current_time())
        ticks.append(pump.ticks)
        return True

    lags = []
    pump = FramePump(step, lambda: len(frames), lags.append)
    await pump.run(lambda: len(frames) >= 150)
    assert lags == [26]  # reported once (at most once a second), only above 8 frames
    assert pump.max_lag == 26  # 30 frames fell due during the stall; the next tick stepped 4 of them
    per_tick: dict[int, int] = {}
    for tick in ticks:
        per_tick[tick] = per_tick.get(tick, 0) + 1
    assert max(per_tick.values()) == 4  # catching up, at most 4 frames per tick
    assert pump.lag == 0 and len(frames) == 150


async def test_a_waiting_step_ends_the_tick(autojump_clock):
    frames = []
    allowed = {"n": 0}

    def step():
        if len(frames) >= allowed["n"]:
            return False  # lockstep: an input is missing
        frames.append(trio.current_time())
        return True

    pump = FramePump(step, lambda: len(frames))

    async def inputs_arrive():
        for n in range(1, 31):
            await trio.sleep(1 / 30)  # inputs come at half the frame rate
            allowed["n"] = n

    async with trio.open_nursery() as nursery:
        nursery.start_soon(inputs_arrive)
        await pump.run(lambda: len(frames) >= 30)
    assert len(frames) == 30 and pump.max_lag > 0


async def test_before_tick_runs_before_every_tick_but_the_first(autojump_clock):
    """The runner reads the race links in ``before_tick``: before each tick's steps, so what arrived since
    the last tick is there for them; not before the first, which follows the round's start at once."""
    log = []

    async def read() -> None:
        log.append(("read", pump.ticks))

    pump = FramePump(lambda: log.append(("step", pump.ticks)) or True, lambda: sum(1 for e in log if e[0] == "step"),
                     before_tick=read)
    await pump.run(lambda: pump.ticks >= 5)
    assert log == [("step", 0)] + [entry for tick in range(1, 5) for entry in (("read", tick), ("step", tick))]


async def test_two_frames_per_tick_step_the_same_frames_in_pairs_at_60_hz(autojump_clock):
    """A headless node's pump (``frames_per_tick=2``) wakes every 2/60 s and steps the frames due by
    then: the same 60 frames a second, each stepped at its own time or one frame after it, never
    before, and never drifting."""
    frames = []
    ticks = []
    pump = FramePump(lambda: frames.append(trio.current_time()) or ticks.append(pump.ticks) or True,
                     lambda: len(frames), frames_per_tick=2)
    start = trio.current_time()
    await pump.run(lambda: len(frames) >= 601)
    assert len(frames) == 601 and pump.max_lag == 0
    assert all(start + k / 60 - 1e-9 <= t <= start + (k + 1) / 60 + 1e-9 for k, t in enumerate(frames))
    assert abs(frames[600] - (start + 10)) < 1e-9  # 10 s of frames take exactly 10 s
    assert pump.ticks == 301  # tick 0 steps frame 0; every later tick steps the two frames due since
    assert ticks[:5] == [0, 1, 1, 2, 2]


async def test_frames_per_tick_scales_the_catch_up_and_the_tick_length(autojump_clock):
    frames = []
    ticks = []

    def step():
        if len(frames) == 30:
            autojump_clock.jump(0.5)  # 30 frames fall due inside this step
        frames.append(trio.current_time())
        ticks.append(pump.ticks)
        return True

    pump = FramePump(step, lambda: len(frames), frames_per_tick=3)
    await pump.run(lambda: len(frames) >= 151)  # frame 0, then 50 ticks of 3 frames
    per_tick: dict[int, int] = {}
    for tick in ticks:
        per_tick[tick] = per_tick.get(tick, 0) + 1
    assert max(per_tick.values()) == 12  # catching up at most 4 frames per frame of the tick
    assert pump.lag == 0 and pump.max_lag > 8


def test_frames_per_tick_is_1_to_4():
    for wrong in (0, 5, -1):
        with pytest.raises(ValueError, match="frames_per_tick is 1..4"):
            FramePump(lambda: True, lambda: 0, frames_per_tick=wrong)


async def test_frames_due_after_the_end_are_not_lag(autojump_clock):
    """The round ends at frame 5, in the middle of a 4-frame tick: the 3 frames the clock says are due
    after it do not exist, and are not reported as lag."""
    frames = []
    pump = FramePump(lambda: frames.append(trio.current_time()) or True, lambda: len(frames), frames_per_tick=4)
    await pump.run(lambda: len(frames) >= 6)
    assert len(frames) == 6 and pump.ticks == 3 and pump.max_lag == 0
