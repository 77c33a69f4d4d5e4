"""Match standings across rounds: points, then total finish time (DNF = the limit), then PeerId."""


from protocol.errors import LocalError
from protocol.race.results import Quit, RaceStatus, RoundResult, match_standings, rank_with_quits, round_result
from tests.coded import raises_coded

F, DNF, LEFT, DESYNC = RaceStatus.FINISHED, RaceStatus.DNF, RaceStatus.LEFT, RaceStatus.DESYNC


def test_points_then_finish_time_then_peer_id():
    r1 = RoundResult({"a": 3, "b": 2, "c": 1}, {"a": 100, "b": 120, "c": None}, 36_000, {"a": F, "b": F, "c": DNF})
    r2 = RoundResult({"a": 1, "b": 2, "c": 3}, {"a": None, "b": 110, "c": 90}, 36_000, {"a": DNF, "b": F, "c": F})
    table = match_standings([r1, r2])
    assert [(row["rank"], row["peer"], row["points"], row["finishFrames"]) for row in table] == [
        (1, "b", 4, 230), (2, "c", 4, 36_090), (3, "a", 4, 36_100),  # a DNF counts the whole limit
    ]
    assert [(row["status"], row["rounds"]) for row in table] == [
        ("finished", ["finished", "finished"]), ("dnf", ["dnf", "finished"]), ("dnf", ["finished", "dnf"]),
    ]
    same = RoundResult({"y": 1, "x": 1}, {"y": None, "x": None}, 600, {"y": DNF, "x": DNF})
    assert [row["peer"] for row in match_standings([same])] == ["x", "y"]


def test_a_match_status_is_the_first_departure_else_dnf_else_finished():
    r1 = RoundResult({"a": 3, "b": 2, "c": 1}, {"a": 100, "b": None, "c": None}, 600, {"a": F, "b": DNF, "c": DESYNC})
    r2 = RoundResult({"a": 3, "b": 2, "c": 1}, {"a": 90, "b": None, "c": None}, 600, {"a": F, "b": LEFT, "c": LEFT})
    table = {row["peer"]: row for row in match_standings([r1, r2])}
    assert table["a"]["status"] == "finished" and table["b"]["status"] == "left" and table["c"]["status"] == "desync"
    assert table["c"]["rounds"] == ["desync", "left"]


def test_round_result_maps_slots_to_peers():
    standings = [
        {"rank": 1, "slot": 1, "points": 2, "finished_frame": 900, "status": "finished"},
        {"rank": 2, "slot": 0, "points": 1, "finished_frame": None, "status": "dnf"},
    ]
    result = round_result(standings, {"p0": 0, "p1": 1}, 36_000)
    assert result.points == {"p1": 2, "p0": 1} and result.finish_frames == {"p1": 900, "p0": None}
    assert result.statuses == {"p1": F, "p0": DNF}
    with raises_coded(LocalError, "race-results-invalid"):
        round_result(standings, {"p0": 0, "p1": 1, "p2": 2}, 36_000)
    with raises_coded(LocalError, "race-results-invalid"):
        match_standings([])


def test_round_result_from_the_real_simulation():
    from sim_core import World

    world = World.demo(3, seed=2)
    for _ in range(30):
        world.step({})
    slots = {"a": 0, "b": 1, "c": 2}
    result = round_result(rank_with_quits(world.standings(), slots, {}), slots, world.track.time_limit_frames)
    assert sorted(result.points.values()) == [1, 2, 3]
    assert set(result.finish_frames.values()) == {None} and set(result.statuses.values()) == {DNF}


def test_quitters_go_to_the_last_block_but_a_finish_is_never_demoted():
    slots = {"pa": 0, "pb": 1, "pc": 2, "pd": 3}
    standings = [
        {"rank": 1, "slot": 0, "status": "finished", "laps": 1, "progress_um": 50, "finished_frame": 900, "points": 4},
        {"rank": 2, "slot": 3, "status": "racing", "laps": 0, "progress_um": 40, "finished_frame": None, "points": 3},
        {"rank": 3, "slot": 1, "status": "racing", "laps": 0, "progress_um": 30, "finished_frame": None, "points": 2},
        {"rank": 4, "slot": 2, "status": "racing", "laps": 0, "progress_um": 10, "finished_frame": None, "points": 1},
    ]
    # pa finished at 900 and left afterwards; pd was voted out at 700
    rows = rank_with_quits(standings, slots, {"pa": Quit(900, "voluntary"), "pd": Quit(700, "desync")})
    assert [(r["slot"], r["rank"], r["points"], r["status"], r["car"]) for r in rows] == [
        (0, 1, 4, "finished", "finished"), (1, 2, 3, "dnf", "racing"), (2, 3, 2, "dnf", "racing"),
        (3, 4, 1, "desync", "racing"),
    ]
    assert rows[3]["reason"] == "desync" and "reason" not in rows[0]
    late = rank_with_quits(standings, slots, {"pa": Quit(899, "disconnect")})  # pa left before its car crossed the line
    assert [(r["slot"], r["status"]) for r in late] == [(3, "dnf"), (1, "dnf"), (2, "dnf"), (0, "left")]
    assert late[3]["reason"] == "disconnect"
    kept = rank_with_quits(standings, slots, {})
    assert [(r["rank"], r["points"], r["status"]) for r in kept] == [(1, 4, "finished"), (2, 3, "dnf"), (3, 2, "dnf"),
                                                                      (4, 1, "dnf")]
