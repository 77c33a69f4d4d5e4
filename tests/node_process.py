"""A real ``open4wd-node`` process for tests, its ``--json`` events read as they come (stderr to a file), and
the signaling service such processes reach each other through."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

HANG_LIMIT_S = 240  # per wait: only a hung node reaches it


class Process:
    """A node process whose ``--json`` events are read as they come (stderr goes to a file); ``prefix`` runs
    it through another program (``ip netns exec NAMESPACE``: a node of the NAT lab)."""

    def __init__(self, tmp_path: Path, name: str, *argv: str, prefix: Sequence[str] = ()) -> None:
        self.name = name
        self.err = open(tmp_path / f"{name}.err", "w")  # noqa: SIM115 - closed in ``wait``
        self.proc = subprocess.Popen(
            [*prefix, *node_command(tmp_path / name), *argv, "--json"],
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
        """The exit status, once the process ended and every event it printed was read."""
        code = self.proc.wait(timeout=HANG_LIMIT_S)
        while (item := self._lines.get(timeout=HANG_LIMIT_S)) is not None:
            self.events.append(item)
        self.err.close()
        return code

    def of(self, event: str) -> list[dict]:
        return [e for e in self.events if e["event"] == event]

    def kill(self) -> None:
        """End the process if it still runs (a failed check leaves no node behind)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def node_command(data_dir: Path) -> list[str]:
    """The command line of an ``open4wd-node`` process with its own data directory (options follow)."""
    return [sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(data_dir)]


def start_signal(tmp_path: Path, *argv: str, listen: str = "127.0.0.1:0",
                 prefix: Sequence[str] = ()) -> tuple[subprocess.Popen, str]:
    """A real signaling service (``open4wd-node signal --listen LISTEN ARGV…``, through ``prefix``) and its
    ``ws://`` URL, once it listens. Its metrics are off: the built-in metrics port is one per machine, and
    other tests run services at the same time."""
    process = subprocess.Popen([*prefix, *node_command(tmp_path / "signal"), "signal", "--listen", listen, "--metrics", "",
                                *argv, "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    started = json.loads(process.stdout.readline())
    assert started["event"] == "signal-listening", started
    return process, f"ws://{started['address']}"


def drain_service(process: subprocess.Popen, service: str, grace_s: int) -> list[dict]:
    """SIGTERM a service process that serves (``signal``) and check its drain: after the signal
    it reports ``<service>-draining`` (with the grace), ``<service>-drained`` and the ``terminated``
    error, and exits 143 without a traceback. Its events."""
    try:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["event"] for e in events] == [f"{service}-draining", f"{service}-drained", "error"]
    assert events[0]["signal"] == "SIGTERM" and events[0]["grace_s"] == grace_s and events[2]["code"] == "terminated"
    assert process.returncode == 143 and "Traceback" not in err
    return events
