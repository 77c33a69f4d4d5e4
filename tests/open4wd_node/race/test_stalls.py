"""A race never hangs, between whole nodes over loopback TCP on the autojump clock: a node stopped for
3 s (its pump, and its links neither read nor written: the in-process SIGSTOP) recovers with no message
dropped and the race finishes in agreement; a node stopped for 20 s, or one whose links answer while its
race stands still, makes every node's race end by the rules, with a reason, well within 60 s."""

from __future__ import annotations

from pathlib import Path

import pytest

from open4wd_node.race.coalesce import TickSends
from open4wd_node.race import mesh as race_mesh
from open4wd_node.race.log import LogReader
from tests.open4wd_node.race.nodes import race, short_track
from tests.open4wd_node.race.test_races import replays, results

TRACK = short_track(40.0)  # a round of about 27 s: a node stopped for 20 s comes back while it runs
BRIEF = short_track(20.0)  # about 14 s: a 3 s stop a second in is long over
STALL_FRAME = 60  # round 1 starts about 5 s into the run; the stall begins one second later


def log_records(result: dict, kind: str) -> list[dict]:
    return [r.record for r in LogReader(Path(result["log"])) if r.record["kind"] == kind]


def ended_at(recorders, start: float) -> list[float]:
    """When each node's race ended (its ``result`` event), in seconds after ``start``."""
    return [rec.first_at["result"] - start for rec in recorders]


@pytest.mark.parametrize("n", [2, 4])
async def test_a_three_second_stall_recovers_without_a_drop_and_the_race_agrees(tmp_path, fast_clock, n):
    recorders, codes = await race(tmp_path, n, track_bytes=BRIEF, stalls={n - 1: (STALL_FRAME, 3.0)})
    res = results(recorders)
    assert codes == {i: 0 for i in range(n)} and {r["outcome"] for r in res} == {"finished"}
    assert len({str(r["standings"]) for r in res}) == 1
    assert [e["kind"] for e in recorders[n - 1].of("fault")] == ["stall"]
    assert not any(rec.of("peer-lost") for rec in recorders)  # nobody was given up on
    assert all(r["drops"] == {} for r in res), [r["drops"] for r in res]  # no bucket, no refusal: nothing lost
    assert sum(r["liveness"]["probes_sent"] for r in res[:-1]) >= n - 1  # each waited 2 s, and probed
    assert res[-1]["liveness"]["probes_answered"] >= 1
    for r in res:  # the race log has the same counts, per round
        (liveness,) = log_records(r, "liveness")
        assert liveness["drops"] == {} and liveness["probes_sent"] == r["liveness"]["probes_sent"]
    replays(tmp_path, recorders)


async def test_without_headroom_the_resumed_node_drops_the_burst_and_redundancy_repairs_it(
        tmp_path, fast_clock, monkeypatch):
    """The old race link (receiver limits equal to the sender's pace) drops part of the backlog a stalled
    node reads on resuming: every drop is counted and logged, and the race still finishes in agreement,
    because each later message carries the inputs the dropped ones did."""
    monkeypatch.setattr(race_mesh, "RACE_INGRESS_LIMITS", race_mesh.RACE_LIMITS)
    # and one race-inputs per stepped frame, as before TickSends: a node catching up at 4 frames a tick then
    # sends 240 a second, the burst the old limits drop (one per tick, 60 a second, they would not)
    monkeypatch.setattr(TickSends, "hold", lambda self: None)
    recorders, codes = await race(tmp_path, 2, track_bytes=BRIEF, stalls={1: (STALL_FRAME, 3.0)})
    res = results(recorders)
    assert {r["outcome"] for r in res} == {"finished"} and codes == {0: 0, 1: 0}
    assert res[1]["drops"].get("link-bucket-messages", 0) > 0, res[1]["drops"]
    assert log_records(res[1], "liveness")[0]["drops"] == res[1]["drops"]
    assert len({str(r["standings"]) for r in res}) == 1
    replays(tmp_path, recorders)


@pytest.mark.parametrize("n", [2, 3])
async def test_a_twenty_second_stall_ends_by_the_rules_on_every_node_within_a_minute(tmp_path, fast_clock, n):
    recorders, codes = await race(tmp_path, n, track_bytes=TRACK, stalls={n - 1: (STALL_FRAME, 20.0)}, limit_s=300)
    res = results(recorders)
    assert len(res) == n and len(codes) == n  # every node's match ended: nobody waits for ever
    stalled_at = recorders[n - 1].first_at["fault"]
    assert all(t < 60 for t in ended_at(recorders, stalled_at)), ended_at(recorders, stalled_at)
    if n == 2:  # neither side of a 2-player split is a majority, and no snapshot can be vouched for: both void
        assert [r["outcome"] for r in res] == ["catch-up-impossible"] * 2
    else:  # the majority goes on and finishes
        assert [r["outcome"] for r in res[:-1]] == ["finished"] * (n - 1)
        stalled = res[-1]["peer"]
        if res[-1]["outcome"] == "finished":
            # a link the others re-dialled was taken at the stall's end (+20 s), while the reconnect window
            # they opened when they lost the node (+12 s) was still open: it rejoins about 890 frames behind,
            # inside the 900-frame catch-up bound, and catches up, by the rules. Which end comes depends on
            # where the re-dial cycle stands at the stall's end (docs/race.md, "A race never hangs").
            assert all(any(e["peer"] == stalled for e in rec.of("rejoin")) for rec in recorders[:-1])
            assert recorders[-1].of("caught-up") and len({str(r["standings"]) for r in res}) == 1
            replays(tmp_path, recorders)
        else:  # too far behind to catch up, or no strict majority vouched in time (one link not back): it leaves
            assert res[-1]["outcome"] in ("catch-up-impossible", "catch-up-failed", "partition-void")
            assert all(any(e["peer"] == stalled for e in rec.of("leave")) for rec in recorders[:-1])
            replays(tmp_path, recorders[:-1])
    assert all(r["outcome"] == "finished" or r["detail"] for r in res)  # an end always says why


async def test_a_node_whose_race_stands_still_while_its_links_answer_is_given_up_on_and_comes_back(
        tmp_path, fast_clock):
    """Only the pump stops for 20 s: the links stay up and answer pings and probes, so no link times out.
    The watchdog gives up on the node after the reconnect window without progress, closes its links, and
    the rejoin rules take over: it catches up from a snapshot and the race finishes in agreement."""
    recorders, codes = await race(tmp_path, 3, track_bytes=TRACK, stalls={2: (STALL_FRAME, 20.0)}, stall_links=False,
                                  limit_s=300)
    res = results(recorders)
    stalled_at = recorders[2].first_at["fault"]
    assert all(t < 60 for t in ended_at(recorders, stalled_at))
    assert [e["kind"] for e in recorders[2].of("fault")] == ["pump-stall"]
    assert [r["liveness"]["watchdog_lost"] for r in res[:2]] == [1, 1]
    assert all(r["liveness"]["probes_sent"] >= 2 for r in res[:2])
    assert all(rec.of("peer-lost") for rec in recorders[:2])
    lost_after = [rec.first_at["peer-lost"] - stalled_at for rec in recorders[:2]]
    assert all(15 <= t < 17 for t in lost_after), lost_after  # the reconnect window without progress
    assert [r["outcome"] for r in res] == ["finished"] * 3, [r["detail"] for r in res]
    assert recorders[2].of("caught-up") and len({str(r["standings"]) for r in res}) == 1
    replays(tmp_path, recorders)


async def test_the_stall_hook_stops_the_pump_and_the_links_then_resumes_them(tmp_path, fast_clock):
    """The hook the SIGSTOP tests build on: the stalled node steps no frame for the stall's length (its
    pump is then that far behind, and says so; the tick that hit the stall, and the first after it, step up to 4 frames each),
    the other node hears nothing from it meanwhile (it waits for its inputs and probes it), and the race
    goes on afterwards."""
    recorders, codes = await race(tmp_path, 2, track_bytes=BRIEF, stalls={1: (STALL_FRAME, 2.5)})
    assert codes == {0: 0, 1: 0}
    stalled_at = recorders[1].first_at["fault"]
    lags = recorders[1].of("lag")
    assert lags and lags[0]["frame"] <= STALL_FRAME + 8 and max(e["frames"] for e in lags) >= 140
    assert recorders[1].first_at["lag"] - stalled_at >= 2.5
    assert results(recorders)[0]["liveness"]["probes_sent"] == 1  # the other side waited 2 s and probed
