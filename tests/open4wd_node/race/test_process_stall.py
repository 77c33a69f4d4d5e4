"""The stall the issue measured, as a user would meet it: three real node processes (host and two
joiners, real sockets) race; one joiner is stopped with SIGSTOP for 3 s mid-race and resumed with
SIGCONT. The race must recover and finish in agreement on every node (it once froze forever).

Bounded by work, not by the clock: the stall is the injected fault; the only time limit is one that
only a hang reaches."""

from __future__ import annotations

import json
import os
import signal
import time

from open4wd_node.assets.store import AssetStore
from tests.node_process import Process
from tests.open4wd_node.race.nodes import short_track

STALL_S = 3.0


def test_a_node_stopped_for_three_seconds_by_sigstop_resumes_and_the_race_agrees(tmp_path):
    track = AssetStore.in_data_dir(tmp_path / "n0").put(short_track(20.0))  # only the host has it: joiners fetch it
    listen = ("--listen", "127.0.0.1:0")
    nodes = [Process(tmp_path, "n0", "host", "--track", track, "--min-players", "3", "--max-players", "3",
                     "--auto-ready", *listen)]
    try:
        invite = nodes[0].wait_for("room-created")["invite"]
        nodes += [Process(tmp_path, f"n{i}", "join", invite, "--auto-ready", *listen) for i in (1, 2)]
        stopped = nodes[2]
        stopped.wait_for("race-start")
        time.sleep(1.0)  # into the race (the test's result does not depend on how far)
        os.kill(stopped.proc.pid, signal.SIGSTOP)
        time.sleep(STALL_S)
        os.kill(stopped.proc.pid, signal.SIGCONT)
        codes = [node.wait() for node in nodes]
    finally:
        for node in nodes:
            if node.proc.poll() is None:
                node.proc.kill()
                node.proc.wait()
    assert codes == [0, 0, 0], [(tmp_path / f"n{i}.err").read_text()[-1500:] for i in range(3)]
    results = [node.of("result")[0] for node in nodes]
    assert {r["outcome"] for r in results} == {"finished"}
    assert len({json.dumps(r["standings"]) for r in results}) == 1
    assert all(r["agreed_hashes"] >= 1 and r["disagreements"] == 0 for r in results)
    assert not any(node.of("leave") for node in nodes)  # nobody was given up on for good
