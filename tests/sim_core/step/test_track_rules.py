"""Track rules (spec §6): finish sweep edge cases, checkpoints, kill zones, penalties and respawn,
laps and progress, start grid, time limit, endgame window and ranking."""

from fractions import Fraction

import pytest

from open4wd_base.errors import LocalError
from sim_core.errors import SimError
from sim_core.state.layout import (
    BROKEN_MASK, FINISHED_FRAME, LAPS, LEGAL_ARC, LEGAL_LAT, NEXT_CP, OUTSIDE, PENALTY_KIND, PENALTY_TIMER, PROGRESS,
    RETIRED_FRAME, STATUS, STATUS_FINISHED, ARMED,
)
from sim_core.step.sweeps import box_bounds, earliest_entry, segment_box_entry

from tests.sim_core.helpers import Box, M, RespawnPoint, loop_track, place, straight_track, world
from tests.coded import raises_coded

L = 10 * M  # straight_track length
FAST = 1_200_000  # 1.2 m/s = 20 mm per frame


def finishing_world(**track_overrides):
    w = world(straight_track(**track_overrides))
    return w


def test_linear_finish_needs_an_armed_negative_to_positive_crossing():
    w = finishing_world()
    place(w, 0, arc=L - 5_000, h=0, vh=0, vs=FAST)
    assert w._cars[0][ARMED] == 1
    w.step({})
    assert w._cars[0][STATUS] == STATUS_FINISHED and w._cars[0][FINISHED_FRAME] == 1


def test_unarmed_finish_does_not_count():
    w = finishing_world()
    place(w, 0, arc=L - 500, h=0, vh=0, vs=FAST)  # behind by 0.5 mm: inside the ±1 mm plane band
    assert w._cars[0][ARMED] == 0
    w.step({})
    assert w._cars[0][STATUS] != STATUS_FINISHED


def test_reverse_crossing_does_not_count():
    w = finishing_world()
    place(w, 0, arc=L + 5_000, h=0, vh=0, vs=-FAST)
    w._cars[0][ARMED] = 1
    w.step({})
    assert w._cars[0][STATUS] != STATUS_FINISHED


def test_coplanar_and_from_the_plane_motion_does_not_count():
    plane = world().rules.finish  # plane z = -10 m, normal -Z
    on_plane_a, on_plane_b = (0, 30_000, -L), (200_000, 30_000, -L)
    assert not plane.crossed(on_plane_a, on_plane_b, plane.side(on_plane_a), plane.side(on_plane_b))
    ahead = (0, 30_000, -L - 10_000)
    assert not plane.crossed(on_plane_a, ahead, plane.side(on_plane_a), plane.side(ahead))  # starts at 0
    behind = (0, 30_000, -L + 10_000)
    assert plane.crossed(behind, ahead, plane.side(behind), plane.side(ahead))


@pytest.mark.parametrize(("lateral", "finishes"), [(500_000 + 999, True), (500_000 + 1_001, False)])
def test_crossing_must_be_within_half_width_plus_one_millimetre(lateral, finishes):
    w = world(straight_track(track_type="open"))
    place(w, 0, arc=L - 5_000, lat=lateral, h=0, vh=0, vs=FAST)
    w.step({})
    assert (w._cars[0][STATUS] == STATUS_FINISHED) is finishes


def test_crossing_with_a_checkpoint_missing_changes_nothing_and_lit_checkpoints_persist():
    boxes = (Box((0, 0, -3 * M), (M, M, 100_000)), Box((0, 0, -6 * M), (M, M, 100_000)))
    w = finishing_world(checkpoints=boxes)
    place(w, 0, arc=L - 5_000, h=0, vh=0, vs=FAST)
    w._cars[0][NEXT_CP] = 1  # first lit, second missing
    w.step({})
    assert w._cars[0][STATUS] != STATUS_FINISHED and w._cars[0][NEXT_CP] == 1
    place(w, 0, arc=L - 5_000, h=0, vh=0, vs=FAST)
    w._cars[0][NEXT_CP] = 2
    w.step({})
    assert w._cars[0][STATUS] == STATUS_FINISHED


def test_checkpoints_light_only_in_order():
    boxes = (Box((0, 0, -3 * M), (M, M, 100_000)), Box((0, 0, -6 * M), (M, M, 100_000)))
    w = finishing_world(checkpoints=boxes)
    place(w, 0, arc=6 * M - 110_000, h=0, vh=0, vs=FAST)
    for _ in range(5):
        w.step({})
    assert w._cars[0][NEXT_CP] == 0  # drove through the second box first
    place(w, 0, arc=3 * M - 110_000, h=0, vh=0, vs=FAST)
    for _ in range(5):
        w.step({})
    assert w._cars[0][NEXT_CP] == 1


def test_segment_box_entry_is_exact():
    (box,) = box_bounds((Box((0, 0, 0), (10, 10, 10)),))
    assert segment_box_entry((-30, 0, 0), (30, 0, 0), box) == Fraction(1, 3)
    assert segment_box_entry((0, 0, 0), (30, 0, 0), box) == 0  # starts inside
    assert segment_box_entry((-30, 11, 0), (30, 11, 0), box) is None
    assert segment_box_entry((-30, 0, 0), (-10, 0, 0), box) == 1  # touches the closed face at the end


def test_kill_zone_earliest_entry_wins_and_ties_go_to_the_lowest_index():
    near, far, twin = box_bounds((Box((-5, 0, 0), (10, 10, 10)), Box((20, 0, 0), (10, 10, 10)),
                                  Box((-5, 0, 0), (10, 20, 10))))  # twin: same entry face as near
    assert earliest_entry((-40, 0, 0), (40, 0, 0), (far, near)) == 1
    assert earliest_entry((-40, 0, 0), (40, 0, 0), (twin, near)) == 0
    assert earliest_entry((-40, 0, 0), (40, 0, 0), (near, twin)) == 0
    assert earliest_entry((-40, 50, 0), (40, 50, 0), (near, twin)) == -1


def test_kill_zone_fall_out_respawns_at_the_nearest_respawn_point_after_the_penalty():
    track = straight_track(
        kill_zones=(Box((0, 50_000, -5 * M), (M, 200_000, 50_000)),),
        respawn_points=(RespawnPoint((0, 0, -2 * M), (0, 0, -M), (0, M, 0)),
                        RespawnPoint((0, 0, -4 * M), (0, 0, -M), (0, M, 0))),
    )
    w = world(track)
    place(w, 0, arc=5 * M - 100_000, h=0, vh=0, vs=FAST)
    w._cars[0][LEGAL_ARC] = 5 * M - 100_000
    for _ in range(10):
        w.step({})
    c = w._cars[0]
    assert c[PENALTY_KIND] == 2 and c[PENALTY_TIMER] > 0
    remaining, frames = c[PENALTY_TIMER], 0
    while c[PENALTY_TIMER]:
        w.step({})
        frames += 1
    assert frames == remaining  # the timer counts the 1.0 s deceleration + 0.6 s fade exactly
    state = w.car_state(0)
    assert (state["penalty_kind"], state["penalty_timer"], state["vs_um_s"], state["h_um"]) == (0, 0, 0, 0)
    assert state["arc_um"] == w.rules.respawns[1][0]  # 4 m is nearer to the last legal point than 2 m
    assert state["finish_armed"] == 0  # a teleport resets arming (it re-arms on the next frame)


def test_falling_below_the_track_aabb_is_a_fall_out_and_respawns_at_rp1_without_respawn_points():
    w = world(straight_track())
    place(w, 0, arc=3 * M, h=-6 * M, vh=0)
    w.step({})
    assert w._cars[0][PENALTY_KIND] == 2
    for _ in range(96):
        w.step({})
    state = w.car_state(0)
    assert state["penalty_timer"] == 0 and abs(state["arc_um"]) < 5_000 and state["h_um"] >= 0


def test_b_soft_on_the_apron_respawns_at_the_last_legal_point():
    w = world(straight_track(apron_um=400_000))
    place(w, 0, arc=2 * M, lat=700_000, h=0, vh=0)
    w._cars[0][OUTSIDE] = 1
    w._cars[0][LEGAL_ARC], w._cars[0][LEGAL_LAT] = M, -100_000
    w.step({})
    assert w._cars[0][PENALTY_KIND] == 1
    for _ in range(96):
        w.step({})
    state = w.car_state(0)
    assert state["penalty_kind"] == 0
    assert abs(state["arc_um"] - M) < 20_000 and state["lat_um"] == -100_000 and state["outside"] == 0


def test_b_soft_cancels_when_the_car_returns_to_the_corridor_during_deceleration():
    w = world(straight_track(apron_um=400_000))
    place(w, 0, arc=2 * M, lat=700_000, h=0, vh=0)
    w._cars[0][OUTSIDE] = 1
    w.step({})
    assert w._cars[0][PENALTY_KIND] == 1
    place(w, 0, lat=0)
    w._cars[0][OUTSIDE] = 0
    w.step({})
    assert w._cars[0][PENALTY_KIND] == 0 and w._cars[0][PENALTY_TIMER] == 0


def test_loop_laps_and_finish():
    w = world(loop_track())
    for _ in range(4000):
        if w.done:
            break
        w.step({})
    assert w.done and w.end_reason == "all-finished"
    row = w.standings()[0]
    assert row["laps"] == 2 and row["status"] == "finished" and row["progress_um"] == w.route.length_um


def test_progress_is_capped_at_the_next_unlit_checkpoint():
    beside = Box((3 * M, 0, -5 * M), (100_000, 100_000, 100_000))  # off the track: never lit
    w = finishing_world(checkpoints=(beside,))
    place(w, 0, arc=4 * M, h=0, vh=0, vs=FAST)
    for _ in range(120):
        w.step({})
    assert w._cars[0][PROGRESS] == w.rules.checkpoint_arcs[0]
    assert w.car_state(0)["arc_um"] > w.rules.checkpoint_arcs[0]


def test_start_grid_slots_and_capacity():
    w = world(straight_track(width_um=1_500_000), count=8)
    lats = [w.car_state(s)["lat_um"] for s in range(8)]
    assert lats == [(2 * s - 7) * 90_000 for s in range(8)]
    assert all(w.car_state(s)["h_um"] == 50_000 for s in range(8))
    with raises_coded(SimError, "world-too-many-cars"):
        world(straight_track(width_um=500_000), count=3)


def test_time_limit_ends_the_round():
    w = world(straight_track(length_m=500, time_limit_s=60))
    w._cars[0][BROKEN_MASK] = 0
    for _ in range(3600):
        w.step({})
    assert w.done and w.end_reason == "time-limit" and w.frame == 3600
    with raises_coded(LocalError, "sim-round-over"):  # stepping an ended round is the caller's bug
        w.step({})


def _endgame_world(disabled_speed):
    w = world(count=2)
    place(w, 0, arc=L - 5_000, h=0, vh=0, vs=FAST)
    place(w, 1, arc=M, h=0, vh=0, vs=disabled_speed)
    w._cars[1][BROKEN_MASK] = 1 << w.models[1].motor
    return w


def test_endgame_window_closes_after_15_settled_frames():
    w = _endgame_world(0)
    frames = 0
    while not w.done:
        w.step({})
        frames += 1
    assert w.end_reason == "endgame-closed" and frames == 1 + 15


def test_endgame_window_lasts_at_most_120_frames():
    w = _endgame_world(FAST // 2)
    frames = 0
    while not w.done:
        w.step({})
        frames += 1
    assert w.end_reason == "endgame-closed" and frames == 1 + 120


def test_retired_cars_count_as_settled_in_the_endgame_window():
    w = world(count=2)
    place(w, 0, arc=L - 5_000, h=0, vh=0, vs=FAST)
    place(w, 1, arc=M, h=0, vh=0, vs=FAST)  # retired while moving: removed from physics, so at rest
    w._cars[1][BROKEN_MASK] = 1 << w.models[1].chassis
    w._cars[1][STATUS], w._cars[1][RETIRED_FRAME] = 2, 0
    frames = 0
    while not w.done:
        w.step({})
        frames += 1
    assert w.end_reason == "endgame-closed" and frames == 1 + 15


def test_ranking_blocks_and_points():
    w = world(straight_track(width_um=1_000_000), count=4)
    cars = w._cars
    cars[0][STATUS], cars[0][FINISHED_FRAME], cars[0][LAPS] = STATUS_FINISHED, 500, 1
    cars[2][STATUS], cars[2][FINISHED_FRAME], cars[2][LAPS] = STATUS_FINISHED, 400, 1
    cars[1][PROGRESS] = 3 * M
    cars[3][PROGRESS] = 8 * M
    cars[3][BROKEN_MASK] = 1 << w.models[3].battery  # disabled: ranks below every alive car
    table = w.standings()
    assert [(r["slot"], r["status"], r["points"]) for r in table] == [
        (2, "finished", 4), (0, "finished", 3), (1, "racing", 2), (3, "disabled", 1)]
    assert table[0]["finished_frame"] == 400 and table[2]["finished_frame"] is None


def test_alive_cars_rank_by_laps_then_progress_then_slot():
    w = world(loop_track(), count=3)
    cars = w._cars
    cars[0][LAPS], cars[0][PROGRESS] = 0, 5 * M
    cars[1][LAPS], cars[1][PROGRESS] = 1, 1 * M
    cars[2][LAPS], cars[2][PROGRESS] = 0, 5 * M
    assert [r["slot"] for r in w.standings()] == [1, 0, 2]
