"""The typed vocabulary of what a world reports keeps the strings (and saved integers) it replaced, so
JSON events, race logs and saved states read exactly as before (docs/sim.md, "Typed vocabulary")."""

import json

from sim_core import SKILLS, CarStatus, DisableReason, RoundEndReason, Skill
from sim_core.state.layout import END_ALL_FINISHED, END_ENDGAME, END_NONE, END_REASONS, END_TIME_LIMIT
from tests.sim_core.helpers import car, straight_track, world


def test_the_saved_end_reason_is_its_position_in_round_end_reason():
    assert END_REASONS == tuple(RoundEndReason)
    assert [END_REASONS[i] for i in (END_NONE, END_ALL_FINISHED, END_TIME_LIMIT, END_ENDGAME)] == [
        "", "all-finished", "time-limit", "endgame-closed"]


def test_values_are_the_strings_json_always_showed():
    assert [s.value for s in CarStatus] == ["racing", "finished", "retired", "disabled"]
    assert [r.value for r in DisableReason] == ["disallow-chip", "chip-broken", "functional-disabled", "physics-retired"]
    assert [s.value for s in Skill] == ["boost", "brake", "swerve_left", "swerve_right", "jump", "slam", "stabilize", "weapon"]


def test_skill_names_stay_plain_strings():
    """They end up in ChipSlot, whose repr is hashed into the state's topology digest."""
    assert SKILLS == tuple(Skill) and all(type(name) is str for name in SKILLS)


def test_a_world_reports_typed_values_that_serialise_as_plain_strings():
    w = world(straight_track(length_m=500, time_limit_s=60), [car(chip=())])
    while not w.done:
        w.step({})
    assert w.end_reason is RoundEndReason.TIME_LIMIT and w.disable_reason(0) is DisableReason.DISALLOW_CHIP
    row = w.standings()[0]
    assert row["status"] is CarStatus.RACING
    assert json.dumps({"end_reason": w.end_reason, "disable": w.disable_reason(0), "standings": w.standings()}) == (
        '{"end_reason": "time-limit", "disable": "disallow-chip", "standings": [{"rank": 1, "slot": 0, '
        f'"status": "racing", "laps": 0, "progress_um": {row["progress_um"]}, "finished_frame": null, "points": 1, '
        '"destructions": 0}]}')
