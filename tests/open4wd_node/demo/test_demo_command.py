"""The README's main job: ``open4wd-node demo`` as a user runs it (real processes, real sockets)."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from open4wd_node.cli.main import main
from open4wd_node.race.log import LogReader, LogStatus

HANG_LIMIT_S = 300  # generous: only a hung demo reaches it


def cli(*argv: str, env: dict, timeout: float = HANG_LIMIT_S) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "open4wd_node.cli.main", *argv], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_demo_two_nodes_agree_report_and_replay(tmp_path):
    """The README's main job as a user sees it off a terminal (plain lines, no escape codes: the node
    table, the standings with each car's status), then every node's log replayed: the demo's agreed
    hashes are the checksum votes every node agreed on, exactly what replay verifies as agreed votes
    (the round's final state hash is counted apart)."""
    env = {**os.environ, "OPEN4WD_DATA_DIR": str(tmp_path)}
    out = cli("demo", "--nodes", "2", "--track", "builtin:track-01", env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "\x1b" not in out.stdout
    assert "── demo nodes" in out.stdout and "started with node" in out.stdout
    assert "round 1 over at frame" in out.stdout
    final = out.stdout[out.stdout.index("2 nodes raced"):].splitlines()
    assert sorted(line.split()[1] for line in final[1:3]) == ["node0", "node1"]
    assert all(" pts  finished (" in line for line in final[1:3])
    agreed = re.search(r"2 nodes agreed on ([0-9]+) state hashes \(0 disagreements", out.stdout)
    assert agreed and int(agreed[1]) >= 3, out.stdout[-1000:]
    logs = sorted(tmp_path.glob("demo/*/node*/races/*.o4wlog"))
    assert len(logs) == 2
    for log in logs:
        replay = cli("--data-dir", str(log.parent.parent), "replay", str(log), "--json", env=env)
        assert replay.returncode == 0, replay.stderr
        report = json.loads(replay.stdout)
        assert (report["status"], report["end_reason"], report["outcome"]) == ("complete", "ended", "finished")
        assert report["votes_agreed"] == report["votes_verified"] == int(agreed[1])
        assert report["round_ends_verified"] == 1


def processes_where(holds) -> set[int]:
    """The live processes for which ``holds(pid_dir)`` is true (Linux ``/proc``; a process that ended
    meanwhile is left out)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if holds(Path(f"/proc/{entry}")):
                    found.add(int(entry))
            except OSError:
                continue
    return found


def children_of(pid: int) -> set[int]:
    """The live processes whose parent is ``pid``."""
    return processes_where(lambda proc: int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid)


def processes_naming(path: Path) -> set[int]:
    """The live processes whose command line names ``path`` (their data directory is below it)."""
    return processes_where(lambda proc: str(path).encode() in (proc / "cmdline").read_bytes())


def wait_until(predicate, what: str):
    deadline = time.monotonic() + HANG_LIMIT_S
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)
    return value


@pytest.mark.parametrize("signum, reason", [(signal.SIGTERM, "terminated"), (signal.SIGINT, "interrupted")])
def test_a_stopped_demo_stops_and_reaps_every_node_and_their_logs_say_why(tmp_path, signum, reason):
    env = {**os.environ, "OPEN4WD_DATA_DIR": str(tmp_path)}
    demo = subprocess.Popen([sys.executable, "-m", "open4wd_node.cli.main", "demo", "--nodes", "2", "--laps", "10", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
    try:
        logs = wait_until(lambda: len(found := sorted(tmp_path.glob("demo/*/node*/races/*.o4wlog"))) == 2 and found,
                          "both nodes to open their race logs")
        nodes = children_of(demo.pid)
        assert len(nodes) == 2
        demo.send_signal(signum)
        out, err = demo.communicate(timeout=HANG_LIMIT_S)
    finally:
        demo.kill()
    assert demo.returncode == 128 + signum, err[-2000:]
    assert err.strip().splitlines()[-1] == f"error[{reason}]: stopped by {signal.Signals(signum).name}"
    assert all(not Path(f"/proc/{pid}").exists() for pid in nodes), "a node outlived the demo"
    for log in logs:
        reader = LogReader(log)
        records = [r.record for r in reader]
        assert reader.status is LogStatus.COMPLETE and records[-1]["reason"] == reason
        node_dir = log.parent.parent
        replay = cli("--data-dir", str(node_dir), "replay", str(log), "--json", env=env)
        report = json.loads(replay.stdout)
        assert replay.returncode == 0 and (report["status"], report["end_reason"]) == ("complete", reason)


REFUSED = [
    (["--laps", "-1"], "usage", 2),
    (["--rounds", "0"], "usage", 2),
    (["--rounds", "99"], "usage", 2),
    (["--nodes", "1"], "usage", 2),
    (["--nodes", "9"], "usage", 2),
    (["--seed", "-1"], "usage", 2),
    (["--mode", "fast"], "usage", 2),
    (["--frames-per-tick", "0"], "usage", 2),
    (["--frames-per-tick", "5"], "usage", 2),
    (["--track", "builtin:track-99"], "demo-track-invalid", 1),
    (["--track", "builtin:chassis-01"], "demo-track-invalid", 1),
    (["--track", "0" * 64], "demo-track-invalid", 1),
    (["--corrupt", "4@100"], "demo-invalid", 1),  # 4 nodes: 0..3
    (["--corrupt", "1@36000"], "demo-invalid", 1),  # round 1 has 600 s: frames 0..35999
    (["--corrupt", "0@123456789"], "demo-invalid", 1),
    (["--corrupt", "zero@100"], "demo-invalid", 1),
]


@pytest.mark.parametrize("argv, code, status", REFUSED)
def test_bad_options_are_refused_before_any_node_starts(tmp_path, capsys, argv, code, status):
    assert main(["--data-dir", str(tmp_path), "demo", *argv]) == status
    assert capsys.readouterr().err.startswith(f"error[{code}]: ")
    # No node data dir, not even the demo's own directory. Checking a built-in track may warm the data dir's
    # derived cache (built-in products, rebuilt identically by any command), unless this process already holds them.
    assert [path.name for path in tmp_path.iterdir()] in ([], ["cache"])


@pytest.mark.parametrize("below", ["", "deeper"])
def test_a_data_dir_that_is_not_a_writable_directory_is_refused_before_any_node_starts(tmp_path, capsys, below):
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0::/root:/bin/sh\n")
    data_dir = a_file / below if below else a_file
    assert main(["--data-dir", str(data_dir), "demo", "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("error[demo-data-dir-unwritable]: ") and "Not a directory" in captured.err
    assert json.loads(captured.out)["code"] == "demo-data-dir-unwritable"
    assert list(tmp_path.iterdir()) == [a_file] and a_file.read_text().startswith("root:")


def test_a_failing_demo_stops_and_reaps_its_running_nodes(tmp_path):
    """Whatever fails inside the demo (here: its progress view) stops every node with SIGTERM and reaps it."""
    import trio

    from open4wd_node.demo.runner import run_demo
    from open4wd_node.demo.setup import DemoOptions

    seen: dict[str, set[int]] = {}

    def progress(index: int, event: dict) -> None:
        if index == 1 and event["event"] == "log":  # both nodes are racing: one log is open, the other opening
            seen["nodes"] = children_of(os.getpid())
            raise RuntimeError("the progress view broke")

    with pytest.raises(BaseExceptionGroup) as info:
        trio.run(run_demo, DemoOptions(nodes=2, laps=10), tmp_path, progress)
    assert info.group_contains(RuntimeError, match="the progress view broke")
    assert len(seen["nodes"]) == 2
    assert all(not Path(f"/proc/{pid}").exists() for pid in seen["nodes"]), "a node was left running or unreaped"
    logs = sorted(tmp_path.glob("node*/races/*.o4wlog"))
    assert logs  # node 1 had opened its log
    for log in logs:
        reader = LogReader(log)
        assert [r.record for r in reader][-1]["reason"] == "terminated" and reader.status is LogStatus.COMPLETE



def test_a_node_that_ends_before_its_race_fails_the_demo_at_once(tmp_path):
    """A joiner refused at its start (a car that does not exist) ends with exit 1 before its race: the
    demo fails with that node's error instead of leaving the host waiting for it until the time-out, and
    the host is stopped and reaped."""
    import trio

    from open4wd_node.demo.runner import run_demo
    from open4wd_node.demo.setup import DemoOptions
    from open4wd_node.runtime.errors import UserError

    def bad_car(index: int) -> list[str]:
        return ["--car", "no-such-car"] if index == 1 else []

    async def demo() -> None:
        with trio.fail_after(HANG_LIMIT_S):  # only the old behaviour (waiting for the time-out) reaches it
            await run_demo(DemoOptions(nodes=2), tmp_path, lambda index, event: None, extra=bad_car)

    with pytest.raises(BaseExceptionGroup) as info:
        trio.run(demo)
    assert info.group_contains(UserError, match=r"node 1 ended \(exit [12]\) before its race started")
    assert not children_of(os.getpid()), "a node was left running or unreaped"


def test_every_demo_node_is_started_with_the_demos_frames_per_tick(tmp_path):
    """``demo --frames-per-tick N`` is each node's ``--frames-per-tick N`` (docs/node.md "Frames per tick")."""
    from open4wd_node.demo.runner import _node_args
    from open4wd_node.demo.setup import DemoOptions

    for index in range(3):
        argv = _node_args(DemoOptions(nodes=3, frames_per_tick=3), index, tmp_path)
        assert argv[argv.index("--frames-per-tick") + 1] == "3"


def test_demo_over_webrtc_through_the_local_signaling_service_and_coturn(tmp_path):
    """``--transport webrtc``: no node listens; a local ``open4wd-node signal`` carries the offers and a
    local coturn relays every link (``--reachability relay``, credentials from ``/turn-token``); the nodes
    agree as over TCP, and the services are gone afterwards."""
    from tests.services import require_binary

    require_binary("turnserver", "coturn")
    env = {**os.environ, "OPEN4WD_DATA_DIR": str(tmp_path)}
    out = cli("demo", "--nodes", "2", "--track", "builtin:track-01", "--transport", "webrtc", "--json", env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    summary = json.loads(out.stdout)
    assert summary["finished"] == 2 and summary["disagreements"] == 0 and summary["agreed_hashes"] >= 3
    assert not processes_naming(tmp_path)  # the nodes and the signaling service were stopped and reaped

