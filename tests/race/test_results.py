"""Match standings across rounds: points, then total finish time (DNF = the limit), then PeerId."""

import pytest

from protocol.errors import ProtocolError
from protocol.race_results import RoundResult, match_standings, round_result


def test_points_then_finish_time_then_peer_id():
    r1 = RoundResult({"a": 3, "b": 2, "c": 1}, {"a": 100, "b": 120, "c": None}, 36_000)
    r2 = RoundResult({"a": 1, "b": 2, "c": 3}, {"a": None, "b": 110, "c": 90}, 36_000)
    table = match_standings([r1, r2])
    assert [(row["rank"], row["peer"], row["points"], row["finishFrames"]) for row in table] == [
        (1, "b", 4, 230), (2, "c", 4, 36_090), (3, "a", 4, 36_100),  # a DNF counts the whole limit
    ]
    same = RoundResult({"y": 1, "x": 1}, {"y": None, "x": None}, 600)
    assert [row["peer"] for row in match_standings([same])] == ["x", "y"]


def test_round_result_maps_slots_to_peers():
    standings = [
        {"rank": 1, "slot": 1, "points": 2, "finished_frame": 900},
        {"rank": 2, "slot": 0, "points": 1, "finished_frame": None},
    ]
    result = round_result(standings, {"p0": 0, "p1": 1}, 36_000)
    assert result.points == {"p1": 2, "p0": 1} and result.finish_frames == {"p1": 900, "p0": None}
    with pytest.raises(ProtocolError):
        round_result(standings, {"p0": 0, "p1": 1, "p2": 2}, 36_000)
    with pytest.raises(ProtocolError):
        match_standings([])


def test_round_result_from_the_real_simulation():
    from sim_core import World

    world = World.demo(3, seed=2)
    for _ in range(30):
        world.step({})
    result = round_result(world.standings(), {"a": 0, "b": 1, "c": 2}, world.track.time_limit_frames)
    assert sorted(result.points.values()) == [1, 2, 3]
    assert set(result.finish_frames.values()) == {None}


def test_quitters_go_to_the_last_block_but_a_finish_is_never_demoted():
    from protocol.race_results import rank_with_quits

    slots = {"pa": 0, "pb": 1, "pc": 2, "pd": 3}
    standings = [
        {"rank": 1, "slot": 0, "status": "finished", "laps": 1, "progress_um": 50, "finished_frame": 900, "points": 4},
        {"rank": 2, "slot": 3, "status": "racing", "laps": 0, "progress_um": 40, "finished_frame": None, "points": 3},
        {"rank": 3, "slot": 1, "status": "racing", "laps": 0, "progress_um": 30, "finished_frame": None, "points": 2},
        {"rank": 4, "slot": 2, "status": "racing", "laps": 0, "progress_um": 10, "finished_frame": None, "points": 1},
    ]
    rows = rank_with_quits(standings, slots, {"pa": 900, "pd": 700})  # pa finished at 900, still playing
    assert [(r["slot"], r["rank"], r["points"], r["status"]) for r in rows] == [
        (0, 1, 4, "finished"), (1, 2, 3, "racing"), (2, 3, 2, "racing"), (3, 4, 1, "quit"),
    ]
    late = rank_with_quits(standings, slots, {"pa": 899})  # pa had left before its car crossed the line
    assert [(r["slot"], r["status"]) for r in late] == [(3, "racing"), (1, "racing"), (2, "racing"), (0, "quit")]
    assert rank_with_quits(standings, slots, {}) == [dict(r) for r in standings]
