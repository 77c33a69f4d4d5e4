"""The README's main job: ``open4wd-node demo`` as a user runs it (real processes, real sockets)."""

import json
import os
import subprocess
import sys


def test_demo_two_nodes_agree_and_report(tmp_path):
    env = {**os.environ, "OPEN4WD_DATA_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "open4wd_node.cli", "demo", "--nodes", "2", "--track", "builtin:track-01", "--json"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    summary = json.loads(out.stdout)
    assert summary["nodes"] == 2 and summary["finished"] == 2
    assert summary["agreed_hashes"] >= 3 and summary["disagreements"] == 0 and summary["leaves"] == []
    assert [row["node"] for row in summary["standings"]] and len(summary["logs"]) == 2
    for log in summary["logs"]:
        replay = subprocess.run([sys.executable, "-m", "open4wd_node.cli", "replay", log, "--json"],
                                capture_output=True, text=True, env=env, timeout=120)
        assert replay.returncode == 0, replay.stderr
        assert json.loads(replay.stdout)["hashes_checked"] >= summary["agreed_hashes"]


def test_the_readable_demo_shows_its_nodes_and_each_cars_status(tmp_path):
    """Without --json and off a terminal: plain lines (no escape codes), the node table, the standings."""
    env = {**os.environ, "OPEN4WD_DATA_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "open4wd_node.cli", "demo", "--nodes", "2", "--track", "builtin:track-01"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "\x1b" not in out.stdout
    assert "── demo nodes" in out.stdout and "started with node" in out.stdout
    assert "round 1 over at frame" in out.stdout
    final = out.stdout[out.stdout.index("2 nodes raced"):].splitlines()
    assert sorted(line.split()[1] for line in final[1:3]) == ["node0", "node1"]
    assert all(" pts  finished (" in line for line in final[1:3])
