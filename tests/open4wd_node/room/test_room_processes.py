"""Real node processes started from the command line form a room and all reach match-start."""

import json
import os
import subprocess
import sys


def spawn(tmp_path, name, *args):
    env = {**os.environ, "OPEN4WD_DATA_DIR": str(tmp_path / name)}
    return subprocess.Popen(
        [sys.executable, "-m", "open4wd_node.cli.main", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, env=env,
    )


def events(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def test_three_processes_reach_the_same_match(tmp_path):
    host = spawn(tmp_path, "host", "host", "--listen", "127.0.0.1:0", "--min-players", "3", "--auto-ready", "--json")
    first = json.loads(host.stdout.readline())
    assert first["event"] == "room-created"
    joiners = [spawn(tmp_path, f"j{i}", "join", first["invite"], "--car", car, "--auto-ready", "--json")
               for i, car in enumerate(["heavy", "control"])]
    outputs = []
    try:
        for proc in joiners + [host]:  # each node races after match-start; the room is what this test checks
            seen = []
            for line in proc.stdout:
                if line.startswith("{"):
                    seen.append(json.loads(line))
                    if seen[-1]["event"] in ("match-start", "error"):
                        break
            outputs.append(seen)
    finally:
        for proc in joiners + [host]:
            proc.kill()
            proc.wait()
    starts = [[e for e in evs if e["event"] == "match-start"] for evs in outputs]
    assert all(len(s) == 1 for s in starts)
    assert len({s[0]["match_id"] for s in starts}) == 1 and all(len(s[0]["roster"]) == 3 for s in starts)
    assert first["invite"].startswith("open4wd://127.0.0.1:") and ":0/" not in first["invite"]


def test_bad_invitation_is_a_coded_error(tmp_path):
    proc = spawn(tmp_path, "j", "join", "open4wd://nowhere")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and err.startswith("error[invitation-invalid]")
