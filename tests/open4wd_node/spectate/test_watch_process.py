"""``open4wd-node watch`` as real processes beside real racer processes: a spectator stopped with SIGSTOP
changes nothing for the racers, and still watches the match to its end once it is continued."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from open4wd_node.assets.store import AssetStore
from tests.open4wd_node.race.nodes import short_track

HANG_LIMIT_S = 240  # only a hang reaches it
STOP_S = 3.0


class Process:
    """A node process whose ``--json`` events are read as they come (stderr goes to a file)."""

    def __init__(self, tmp_path: Path, name: str, *argv: str) -> None:
        self.name = name
        self.err = open(tmp_path / f"{name}.err", "w")  # noqa: SIM115 - closed in ``wait``
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(tmp_path / name), *argv, "--json"],
            stdout=subprocess.PIPE, stderr=self.err, stdin=subprocess.DEVNULL, text=True)
        self.events: list[dict] = []
        self._lines: queue.Queue[dict | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(json.loads(line))
        self._lines.put(None)

    def wait_for(self, event: str) -> dict:
        """The first ``event`` (waiting for it, up to the hang limit)."""
        deadline = time.monotonic() + HANG_LIMIT_S
        while True:
            found = [e for e in self.events if e["event"] == event]
            if found:
                return found[0]
            item = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert item is not None, f"{self.name} ended before {event}: {self.events[-3:]}"
            self.events.append(item)

    def wait(self) -> int:
        code = self.proc.wait(timeout=HANG_LIMIT_S)
        while (item := self._lines.get(timeout=HANG_LIMIT_S)) is not None:
            self.events.append(item)
        self.err.close()
        return code

    def of(self, event: str) -> list[dict]:
        return [e for e in self.events if e["event"] == event]


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
