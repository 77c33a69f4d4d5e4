"""``open4wd-node watch`` as real processes beside real racer processes: a spectator stopped with SIGSTOP
changes nothing for the racers, and still watches the match to its end once it is continued."""

from __future__ import annotations

import os
import signal
import time

import pytest

from open4wd_node.assets.store import AssetStore
from tests.node_process import Process
from tests.open4wd_node.race.nodes import short_track

STOP_S = 3.0


@pytest.mark.slow
def test_a_stopped_spectator_changes_nothing_for_the_racers(tmp_path) -> None:
    track = short_track(20.0)
    for name in ("host", "p1", "p2", "w1", "w2"):
        ref = AssetStore.in_data_dir(tmp_path / name).put(track)
    listen = ("--listen", "127.0.0.1:0")
    host = Process(tmp_path, "host", "host", "--track", ref, "--laps", "1", "--min-players", "3", "--max-players", "3",
                   "--spectators", "2", "--auto-ready", *listen)
    invites = host.wait_for("room-created")["invites"]
    watchers = [Process(tmp_path, name, "watch", invites["spectator"], *listen) for name in ("w1", "w2")]
    for watcher in watchers:
        watcher.wait_for("joined")
    players = [Process(tmp_path, name, "join", invites["participant"], "--auto-ready", *listen) for name in ("p1", "p2")]
    stopped = watchers[1]
    stopped.wait_for("frame")
    os.kill(stopped.proc.pid, signal.SIGSTOP)
    time.sleep(STOP_S)
    os.kill(stopped.proc.pid, signal.SIGCONT)
    racers = [host, *players]
    codes = {p.name: p.wait() for p in racers + watchers}
    assert codes == {"host": 0, "p1": 0, "p2": 0, "w1": 0, "w2": 0}
    results = {p.name: p.of("result")[0] for p in racers + watchers}
    for name in ("host", "p1", "p2"):
        assert results[name]["outcome"] == "finished" and results[name]["disagreements"] == 0
        assert results[name]["standings"] == results["host"]["standings"]
    for name in ("w1", "w2"):
        assert results[name]["outcome"] == "match-end" and results[name]["mismatches"] == 0
        assert results[name]["standings"] == results["host"]["standings"]
    print("players' max lag (frames):", {name: results[name]["max_lag"] for name in ("host", "p1", "p2")})
