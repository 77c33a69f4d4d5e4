"""A race's pace is frames per second of real time over 60, whatever frames per tick its nodes' pumps step:
a pump stepping N frames a tick ticks 60/N times a second, so the simulation still runs 60 frames a second."""

import pytest

from open4wd_node.soak.plan import SoakOptions, plan_race
from open4wd_node.soak.profiles import Profile
from open4wd_node.soak.race import _Harness


@pytest.mark.parametrize("frames_per_tick", [1, 2, 3, 4])
def test_a_race_in_real_time_has_a_realtime_ratio_of_one_at_any_frames_per_tick(frames_per_tick):
    plan = plan_race(SoakOptions(races=1, profiles=(Profile.CLEAN,), frames_per_tick=frames_per_tick), 0)
    harness = _Harness(plan, "127.64.0")
    harness.race_start[0], harness.race_end[0] = 100.0, (130.0, 1800)  # 1,800 frames in 30 s
    harness.race_start[1], harness.race_end[1] = 100.0, (160.0, 1800)  # the same frames in 60 s: half real time
    assert (harness.realtime_ratio(0), harness.realtime_ratio(1), harness.realtime_ratio(2)) == (1.0, 0.5, None)
