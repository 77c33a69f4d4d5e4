"""Spectators watching whole racers over loopback TCP (autojump clock): they agree with the players,
join late through a checkpoint, and move to another source when theirs is killed."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path


from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.assets.store import AssetStore
from open4wd_node.race.replay import replay
from open4wd_node.runtime.config import DEFAULTS
from protocol.spectate.source import SpectateSource
from tests.open4wd_node.race.nodes import short_track
from rich.console import Console

from open4wd_node.view.live_console import LiveConsole
from tests.open4wd_node.spectate.nodes import racer_identity, spectator_identity, watch_room

TRACK = short_track(20.0)
LONGER = short_track(40.0)  # a race of about 27 s: a spectator stopped for 12 s comes back while it runs


def result(node) -> dict:
    return node.of("result")[0]


def agreed_votes(node) -> dict[int, bool]:
    return {e["frame"]: e["agreed"] for e in node.of("checksum")}


async def test_three_players_two_spectators_agree(tmp_path, fast_clock) -> None:
    screen = io.StringIO()  # what a person reads on the first spectator's plain (non-terminal) view
    view = LiveConsole(spectator_identity(0).peer_id, screen, interactive=False, width=140)
    room = await watch_room(tmp_path, 3, 2, track_bytes=TRACK, views={0: view})
    assert room.codes == {"n0": 0, "n1": 0, "n2": 0, "s0": 0, "s1": 0}
    players = [result(r) for r in room.racers]
    watchers = [result(s) for s in room.spectators]
    assert all(w["outcome"] == "match-end" and w["mismatches"] == 0 and w["agreed_hashes"] >= 1 for w in watchers)
    assert all(w["standings"] == players[0]["standings"] for w in watchers)
    ends = [r.of("round-end")[0] for r in room.racers + room.spectators]
    assert all((e["frame"], e["standings"]) == (ends[0]["frame"], ends[0]["standings"]) for e in ends)
    for s in room.spectators:  # every hash a spectator checked is one the players agreed on
        assert all(agreed_votes(s).values())
        assert set(agreed_votes(s)) <= {f for f, ok in agreed_votes(room.racers[0]).items() if ok}
    sources = sorted(racer_identity(i).peer_id for i in range(3))
    assert sorted(w["sources"] for w in watchers) == [[sources[0]], [sources[1]]]  # least loaded, then roster order
    table = io.StringIO()  # the live view's race table, as a terminal would draw it
    Console(file=table, width=140, color_system=None).print(view.renderable())
    drawn = table.getvalue()
    assert "round 1 of 1" in drawn and all(racer_identity(i).peer_id[-4:] in drawn for i in range(3))
    assert drawn.count("finished") >= 3
    text = screen.getvalue()
    assert "watching match" in text and "checkpoint of frame 1 loaded from the source" in text
    assert "round 1 over at frame" in text and "watched to its end: match-end" in text and "Traceback" not in text
    for j, w in enumerate(watchers):
        report = replay(Path(w["log"]), NodeRoomAssets(AssetStore.in_data_dir(tmp_path / f"s{j}"), DEFAULTS))
        assert report.status == "complete" and report.votes_verified >= 1 and report.round_ends_verified == 1


async def test_a_late_spectator_catches_up_from_a_checkpoint(tmp_path, fast_clock) -> None:
    room = await watch_room(tmp_path, 3, 1, track_bytes=TRACK, watch_delay={0: 5.0})
    assert room.codes["s0"] == 0
    watcher = room.spectators[0]
    first = watcher.of("checkpoint")[0]
    assert first["reason"] == "source" and first["frame"] >= 241  # 5 s = 300 frames in: a later checkpoint
    assert result(watcher)["standings"] == result(room.racers[0])["standings"]
    report = replay(Path(result(watcher)["log"]), NodeRoomAssets(AssetStore.in_data_dir(tmp_path / "s0"), DEFAULTS))
    assert report.frames < room.racers[0].of("round-end")[0]["frame"]  # it never saw the frames before
    assert report.round_ends_verified == 1


async def test_the_source_killed_mid_race_the_viewer_moves_to_another(tmp_path, fast_clock) -> None:
    source = 0  # the first spectator's source is the first racer in roster order
    order = sorted(range(3), key=lambda i: racer_identity(i).peer_id)
    room = await watch_room(tmp_path, 3, 1, track_bytes=TRACK, kill={order[source]: 240})
    watcher = room.spectators[0]
    starts = watcher.of("spectate-start")
    assert [s["source_epoch"] for s in starts][:2] == [1, 2]
    assert starts[0]["source"] == racer_identity(order[0]).peer_id != starts[1]["source"]
    survivors = [room.racers[i] for i in order[1:]]
    assert room.codes["s0"] == 0
    assert result(watcher)["standings"] == result(survivors[0])["standings"]
    assert result(watcher)["mismatches"] == 0


async def test_a_stopped_spectator_does_not_change_the_players_lag_or_result(tmp_path, fast_clock) -> None:
    calm = await watch_room(tmp_path / "calm", 3, 1, track_bytes=LONGER)
    stopped = await watch_room(tmp_path / "stopped", 3, 1, track_bytes=LONGER, stall={0: (120, 12.0)})
    assert stopped.codes == calm.codes == {"n0": 0, "n1": 0, "n2": 0, "s0": 0}
    for before, after in zip(calm.racers, stopped.racers, strict=True):  # (each room has its own grid: the
        assert result(after)["max_lag"] == result(before)["max_lag"] <= 2  # standings are compared within a room)
        for run in (before, after):
            assert (result(run)["outcome"], result(run)["disagreements"], result(run)["leaves"]) == ("finished", 0, [])
            assert result(run)["standings"] == result((calm if run is before else stopped).racers[0])["standings"]
    watcher = stopped.spectators[0]
    assert watcher.of("fault")[0]["frame"] == 120
    assert [s["source_epoch"] for s in watcher.of("spectate-start")] == [1, 2]  # its source dropped it meanwhile
    assert [c["reason"] for c in watcher.of("checkpoint")] == ["source", "source"]  # back through a checkpoint
    assert result(watcher)["outcome"] == "match-end" and result(watcher)["mismatches"] == 0
    assert result(watcher)["standings"] == result(stopped.racers[0])["standings"]


async def test_a_source_that_alters_an_input_is_dropped_and_another_serves(tmp_path, fast_clock, monkeypatch) -> None:
    honest = SpectateSource.confirmed
    forged: list[int] = []

    def forging(self, frame, inputs):  # the source serving the spectator alters one racer's input of frame 300
        # once: the next source may confirm frame 300 after the spectator came to it (the racers confirm a
        # frame at their own ticks), and it is honest
        if frame == 300 and self.subscribers and not forged:
            forged.append(frame)
            first, *rest = inputs
            inputs = [replace(first, events=[] if first.events else [["brake", False]]), *rest]
        return honest(self, frame, inputs)

    monkeypatch.setattr(SpectateSource, "confirmed", forging)
    room = await watch_room(tmp_path, 3, 1, track_bytes=TRACK)
    watcher = room.spectators[0]
    starts = watcher.of("spectate-start")
    assert [s["source_epoch"] for s in starts] == [1, 2] and starts[0]["source"] != starts[1]["source"]
    assert room.codes["s0"] == 0 and result(watcher)["mismatches"] == 0
    assert result(watcher)["standings"] == result(room.racers[0])["standings"]
    report = replay(Path(result(watcher)["log"]), NodeRoomAssets(AssetStore.in_data_dir(tmp_path / "s0"), DEFAULTS))
    assert report.round_ends_verified == 1  # the altered input never reached the log
