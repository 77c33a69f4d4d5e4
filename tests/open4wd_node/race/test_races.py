"""Races between whole nodes over loopback TCP: the room, the mesh, the pump, votes, logs, replay."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import trio

from open4wd_node.assets.store import AssetStore
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.runtime.errors import UserError
from open4wd_node.demo.view import DemoBoard
from open4wd_node.view.live_console import LiveConsole, Screen
from open4wd_node.race.replay import replay
from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.race.state_files import read_state_file, state_differences
from tests.open4wd_node.race.nodes import race, short_track

SHORT = short_track(8.0)


def results(recorders):
    return [rec.of("result")[0] for rec in recorders]


def replays(tmp_path, recorders):
    for i, result in enumerate(results(recorders)):
        assets = NodeRoomAssets(AssetStore.in_data_dir(tmp_path / f"n{i}"), DEFAULTS)
        report = replay(Path(result["log"]), assets)
        assert report.frames > 0 and report.hashes_checked >= 2


@pytest.mark.parametrize("n", [2, 4, 8])
async def test_nodes_race_and_agree(tmp_path, fast_clock, n):
    recorders, codes = await race(tmp_path, n, track_bytes=SHORT)
    assert codes == {i: 0 for i in range(n)}
    res = results(recorders)
    assert {r["outcome"] for r in res} == {"finished"}
    assert len({str(r["standings"]) for r in res}) == 1 and len(res[0]["standings"]) == n
    assert all(r["agreed_hashes"] >= 1 and r["disagreements"] == 0 for r in res)
    ends = [rec.of("round-end")[0]["standings"] for rec in recorders]
    assert all(e == ends[0] for e in ends)
    for r in res:  # the budget: CPU of every part a race spends on, over the frames the pump stepped
        cpu = r["cpu"]
        assert cpu["frames"] == recorders[0].of("round-end")[0]["frame"] and cpu["per_frame_us"] > 0
        assert all(cpu["parts_us"][part] > 0 for part in ("step", "input", "messages", "link", "shell"))
        assert set(cpu["parts_us"]) == {"step", "input", "messages", "link", "shell"}
        assert abs(sum(cpu["shares"].values()) - 100) < 1
    replays(tmp_path, recorders)


@pytest.mark.parametrize("mode", ["rollback", "lockstep"])
async def test_nodes_that_tick_every_1_2_3_or_4_frames_race_together_and_agree(tmp_path, fast_clock, mode):
    """``frames_per_tick`` changes when a node steps and sends its frames, never what they compute: a
    room whose nodes tick at four different rates finishes with the same standings and hashes, and
    every log replays."""
    recorders, codes = await race(tmp_path, 4, track_bytes=SHORT, mode=mode, frames_per_tick={1: 2, 2: 3, 3: 4})
    assert codes == {i: 0 for i in range(4)}
    res = results(recorders)
    for per_tick, r in enumerate(res, start=1):  # each pump woke once per its own number of frames: none
        frames = r["cpu"]["frames"]  # fell behind (in lockstep thanks to the input delay of N - 1 frames)
        assert frames > 300 and frames / per_tick <= r["ticks"] <= frames / per_tick * 1.1 + 2
        assert r["max_lag"] <= 2 * per_tick
    assert {r["outcome"] for r in res} == {"finished"} and len({str(r["standings"]) for r in res}) == 1
    assert all(r["agreed_hashes"] >= 1 and r["disagreements"] == 0 for r in res)
    replays(tmp_path, recorders)


async def test_lockstep_mode_agrees_too(tmp_path, fast_clock):
    recorders, codes = await race(tmp_path, 3, track_bytes=SHORT, mode="lockstep")
    assert codes == {0: 0, 1: 0, 2: 0}
    assert {r["rollbacks"] for r in results(recorders)} == {0}  # lockstep never predicts, never rolls back


async def test_a_corrupted_node_is_outvoted_and_leaves(tmp_path, fast_clock):
    views = {}

    def view(identity):  # what a person would read on node 0 and node 3 (stdout not a terminal: plain lines)
        views[identity.peer_id] = LiveConsole(identity.peer_id, io.StringIO(), interactive=False)
        return views[identity.peer_id]

    recorders, codes = await race(tmp_path, 4, track_bytes=short_track(20.0), faults={3: 30}, views=view)
    res = results(recorders)
    assert res[3]["outcome"] == "persistent-desync" and codes[3] == 1
    assert [r["outcome"] for r in res[:3]] == ["finished"] * 3
    assert all(r["disagreements"] >= 3 for r in res[:3])  # each saw the minority three times
    left = [e for rec in recorders[:3] for e in rec.of("leave")]
    assert left and {e["reason"] for e in left} == {"desync"}
    last = recorders[0].of("round-end")[0]["standings"][-1]
    assert last["peer"] == left[0]["peer"] and last["status"] == "desync" and last["points"] == 1, \
        recorders[0].of("round-end")[0]["standings"]
    states = sorted((tmp_path / "n0" / "races").glob("*.states/*.state"))
    theirs = sorted((tmp_path / "n3" / "races").glob("*.states/*.state"))
    assert states and theirs
    diff = state_differences(read_state_file(states[0]), read_state_file(theirs[0]))
    assert diff and diff[0][0].endswith("lat_um")
    replays(tmp_path, recorders[:3])
    seen_by_0, seen_by_3 = (views[res[i]["peer"]].screen.stream.getvalue() for i in (0, 3))
    voted_out = f"…{res[3]['peer'][-4:]}"
    assert "\x1b" not in seen_by_0 and "start locked: match" in seen_by_0 and "round 1 over at frame" in seen_by_0
    assert f"{voted_out}  1 pts  desync (voted out)" in seen_by_0  # round-end and match-end rows
    last_view = seen_by_0[seen_by_0.rindex("── round 1 of 1 · over"):]
    assert voted_out in last_view and "desync" in next(line for line in last_view.splitlines() if voted_out in line)
    assert "the race ended for this node in round 1: persistent-desync" in seen_by_3
    board = DemoBoard(4, Screen(io.StringIO(), interactive=False))
    for index, recorder in enumerate(recorders):  # the demo's table, from the same events as JSON
        for event, data in recorder.events:
            board(index, json.loads(json.dumps({"event": event, **data}, default=str)))
    table = {row[0]: row for row in board.rows()}
    assert table["node3"][1] == "desync (voted out)" and {table[f"node{i}"][1] for i in range(3)} == {"finished"}
    assert all(int(table[f"node{i}"][5].split()[0]) == res[i]["agreed_hashes"] for i in range(4))
    assert "node3 left the race (desync)" in board.screen.queued


async def test_two_nodes_that_diverge_end_consensus_invalid(tmp_path, fast_clock):
    recorders, codes = await race(tmp_path, 2, track_bytes=short_track(20.0), faults={1: 30})
    assert [r["outcome"] for r in results(recorders)] == ["consensus-invalid", "consensus-invalid"]
    assert codes == {0: 1, 1: 1}


async def test_a_damaged_log_fails_with_its_code(tmp_path, fast_clock):
    recorders, _ = await race(tmp_path, 2, track_bytes=SHORT)
    path = Path(results(recorders)[0]["log"])
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(UserError) as info:
        replay(path, NodeRoomAssets(AssetStore.in_data_dir(tmp_path / "n0"), DEFAULTS))
    assert info.value.code == "race-log-damaged" and "good up to round 1 frame" in info.value.message


async def test_a_disconnected_node_reconnects_and_the_race_goes_on(tmp_path, fast_clock):
    recorders, codes = await race(tmp_path, 4, track_bytes=short_track(20.0), cuts={3: (120, 3.0)})
    res = results(recorders)
    assert [r["outcome"] for r in res] == ["finished"] * 4, [r["detail"] for r in res]
    assert any(rec.of("peer-lost") for rec in recorders[:3])
    assert len({str(r["standings"]) for r in res}) == 1
    replays(tmp_path, recorders)


async def test_a_two_two_partition_is_void(tmp_path, fast_clock):
    recorders, _ = await race(tmp_path, 4, track_bytes=short_track(60.0), cuts={2: (60, 30.0), 3: (60, 30.0)})
    outcomes = [r["outcome"] for r in results(recorders)]
    assert outcomes[:2] == ["partition-void", "partition-void"]


async def test_two_rounds_rotate_the_grid_and_sum_the_points(tmp_path, fast_clock):
    recorders, codes = await race(tmp_path, 3, track_bytes=SHORT, rounds=2)
    assert codes == {0: 0, 1: 0, 2: 0}
    starts = [e for e in recorders[0].of("race-start")]
    assert [s["round"] for s in starts] == [0, 1] and starts[0]["slot"] != starts[1]["slot"]
    ends = recorders[0].of("round-end")
    assert len(ends) == 2
    final = results(recorders)[0]["standings"]
    per_round = {}
    for end in ends:
        for row in end["standings"]:
            per_round[row["peer"]] = per_round.get(row["peer"], 0) + row["points"]
    assert {row["peer"]: row["points"] for row in final} == per_round
    assert len({str(r["standings"]) for r in results(recorders)}) == 1
    replays(tmp_path, recorders)


async def test_a_game_ui_steers_through_the_control_api(tmp_path, fast_clock):
    received: list[dict] = []

    async def ui(recorders) -> None:
        while not recorders[1].of("control-api"):
            await trio.sleep(0.05)
        stream = await trio.open_tcp_stream("127.0.0.1", recorders[1].of("control-api")[0]["port"])
        await stream.send_all(b'{"op": "subscribe", "topics": ["frames", "events"]}\n')
        buffer = b""
        pressed = False
        async for chunk in stream:
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                received.append(json.loads(line))
                if received[-1].get("type") == "frame" and not pressed:
                    pressed = True
                    skill = next(s for s in ("stabilize", "swerve_left") if s in hello()["skills"])
                    await stream.send_all(json.dumps({"op": "hold", "skill": skill, "on": True}).encode() + b"\n")
                    await stream.send_all(b'{"op": "subscribe", "topics": ["events"]}\n')  # enough frames seen
                if received[-1].get("event") == "match-end":
                    return

    def hello() -> dict:
        return [m for m in received if m.get("type") == "hello"][-1]

    async with trio.open_nursery() as nursery:
        holder = {}

        async def run_race():
            holder["result"] = await race(tmp_path, 2, track_bytes=SHORT, drivers={1: "external"},
                                          recorders_out=holder)

        nursery.start_soon(run_race)
        while "recorders" not in holder:
            await trio.sleep(0.01)
        await ui(holder["recorders"])
    recorders, codes = holder["result"]
    assert codes == {0: 0, 1: 0}
    assert hello()["slot"] in (0, 1) and hello()["skills"]
    assert [m for m in received if m.get("type") == "frame"]
    assert [m for m in received if m.get("type") == "ack" and m.get("op") == "hold"]
    # The round may start in the very instant the control API opens (nothing delays the mesh barrier), before
    # any UI can connect: a late UI learns its round from ``hello``. What is emitted after it subscribed reaches it.
    assert {m.get("event") for m in received} >= {"round-end", "match-end"}, \
        [m.get("event") or m.get("type") for m in received][-6:]


async def test_replay_refuses_a_rewritten_input(tmp_path, fast_clock):
    """A log whose records are intact but whose inputs were altered (and re-checksummed) is caught."""
    from open4wd_node.race.log import MAGIC, LogReader, encode_record

    recorders, _ = await race(tmp_path, 2, track_bytes=SHORT)
    path = Path(results(recorders)[0]["log"])
    records = [r.record for r in LogReader(path)]
    frame = next(r for r in records if r["kind"] == "frame" and r["frame"] == 5)
    slot, peer, events, prev, signature = frame["inputs"][0]
    frame["inputs"][0] = [slot, peer, [["brake", False]] if events != [["brake", False]] else [], prev, signature]
    path.write_bytes(MAGIC + b"".join(encode_record(r) for r in records))
    with pytest.raises(UserError) as info:
        replay(path, NodeRoomAssets(AssetStore.in_data_dir(tmp_path / "n0"), DEFAULTS))
    assert info.value.code == "replay-signature-invalid" and "frame 5" in info.value.message
