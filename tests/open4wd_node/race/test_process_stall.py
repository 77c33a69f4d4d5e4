"""The stall the issue measured, as a user would meet it: three real node processes (host and two
joiners, real sockets) race; one joiner is stopped with SIGSTOP for 3 s mid-race and resumed with
SIGCONT. The race must recover and finish in agreement on every node (it once froze forever).

Bounded by work, not by the clock: the stall is the injected fault; the only time limit is one that
only a hang reaches."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.open4wd_node.race.nodes import short_track

HANG_LIMIT_S = 300
STALL_S = 3.0


class Node:
    """One ``open4wd-node`` process whose ``--json`` events are read as they come."""

    def __init__(self, data_dir: Path, *argv: str) -> None:
        self.events: list[dict] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(data_dir), *argv, "--json"],
            stdout=subprocess.PIPE, stderr=open(data_dir / "stderr.txt", "w"), stdin=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.events.append(json.loads(line))

    def of(self, name: str) -> list[dict]:
        return [e for e in list(self.events) if e.get("event") == name]

    def wait_for(self, name: str) -> dict:
        deadline = time.monotonic() + HANG_LIMIT_S
        while not (found := self.of(name)):
            assert self.process.poll() is None or self.of(name), f"the node ended before {name}: {self.events[-3:]}"
            assert time.monotonic() < deadline, f"no {name} event"
            time.sleep(0.05)
        return found[0]


def test_a_node_stopped_for_three_seconds_by_sigstop_resumes_and_the_race_agrees(tmp_path):
    track_file = tmp_path / "track.glb"
    track_file.write_bytes(short_track(40.0))
    dirs = [tmp_path / f"n{i}" for i in range(3)]
    for data_dir in dirs:
        data_dir.mkdir()
    imported = subprocess.run([sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(dirs[0]), "asset", "import",
                               str(track_file), "--json"], capture_output=True, text=True, timeout=HANG_LIMIT_S)
    assert imported.returncode == 0, imported.stderr
    track = json.loads(imported.stdout)["files"][0]["content_id"]
    nodes = [Node(dirs[0], "host", "--track", track, "--min-players", "3", "--max-players", "3", "--auto-ready",
                  "--listen", "127.0.0.1:0")]
    try:
        invite = nodes[0].wait_for("room-created")["invite"]
        nodes += [Node(dirs[i], "join", invite, "--auto-ready", "--listen", "127.0.0.1:0") for i in (1, 2)]
        stopped = nodes[2]
        stopped.wait_for("race-start")
        time.sleep(1.0)  # into the race (the test's result does not depend on how far)
        os.kill(stopped.process.pid, signal.SIGSTOP)
        time.sleep(STALL_S)
        os.kill(stopped.process.pid, signal.SIGCONT)
        for node in nodes:
            node.process.wait(timeout=HANG_LIMIT_S)
            node.reader.join(timeout=HANG_LIMIT_S)
    finally:
        for node in nodes:
            if node.process.poll() is None:
                node.process.kill()
                node.process.wait()
    assert [node.process.returncode for node in nodes] == [0, 0, 0], [(d / "stderr.txt").read_text()[-1500:] for d in dirs]
    results = [node.of("result")[0] for node in nodes]
    assert {r["outcome"] for r in results} == {"finished"}
    assert len({json.dumps(r["standings"]) for r in results}) == 1
    assert all(r["agreed_hashes"] >= 1 and r["disagreements"] == 0 for r in results)
    assert not any(node.of("leave") for node in nodes)  # nobody was given up on for good
