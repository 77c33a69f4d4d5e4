"""Ctrl-C and SIGTERM end every kind of command with one line, no traceback, and 128 + signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

START_LIMIT_S = 120  # generous: only a hung start-up can reach it


def catches(pid: int, signum: int) -> bool:
    """The process has its own handler for ``signum`` (Linux ``/proc``: the SigCgt mask)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            mask = next(int(line.split()[1], 16) for line in status if line.startswith("SigCgt:"))
    except (FileNotFoundError, StopIteration):
        return False
    return bool(mask >> (signum - 1) & 1)


def start(tmp_path, *argv: str) -> subprocess.Popen:
    env = {**os.environ, "OPEN4WD_DATA_DIR": str(tmp_path / "node")}
    return subprocess.Popen([sys.executable, "-m", "open4wd_node.cli.main", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)


def wait_until(predicate, what: str) -> None:
    deadline = time.monotonic() + START_LIMIT_S
    while not predicate():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def stop(process: subprocess.Popen, signum: int) -> tuple[int, str, str]:
    process.send_signal(signum)
    out, err = process.communicate(timeout=START_LIMIT_S)
    return process.returncode, out, err


@pytest.mark.parametrize("signum, status, code", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_trio_command_stops_cleanly(tmp_path, signum, status, code):
    host = start(tmp_path, "host", "--json")
    first = host.stdout.readline()  # room-created: the listener and the room's tasks are running
    assert '"room-created"' in first
    returncode, out, err = stop(host, signum)
    assert returncode == status
    assert err.strip().splitlines() == [f"error[{code}]: stopped by {signal.Signals(signum).name}"]
    assert f'"code": "{code}"' in out


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_synchronous_command_stops_cleanly(tmp_path, signum, status):
    sim = start(tmp_path, "sim", "--frames", "10000000", "--inputs", "none")
    wait_until(lambda: catches(sim.pid, signal.SIGTERM), "the SIGTERM handler")
    returncode, out, err = stop(sim, signum)
    assert returncode == status and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
