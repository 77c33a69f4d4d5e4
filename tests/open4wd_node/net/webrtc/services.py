"""The real services a race of node processes over WebRTC meets, on 127.0.0.1: ``open4wd-node signal``
and coturn (the product's ``local_coturn``, run by ``nat_coturn`` in a process of its own), sharing a
generated secret, so ``/turn-token`` mints credentials coturn accepts."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.node_process import drain_service

WEBRTC = ("--ice-host", "127.0.0.1")  # loopback only: aioice offers no loopback candidate by itself


def start_signal(tmp_path: Path, *options: str) -> tuple[subprocess.Popen, str]:
    """A real signaling service on 127.0.0.1 (with ``options``; no metrics port, whose default is fixed and
    would collide with another test's service) and its ``ws://`` URL."""
    process = subprocess.Popen([sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(tmp_path / "signal"),
                                "signal", "--listen", "127.0.0.1:0", "--metrics", "", *options, "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    started = json.loads(line) if line else {}
    assert started.get("event") == "signal-listening", (line, process.stderr.read() if not line else "")
    return process, f"ws://{started['address']}"


@dataclass(frozen=True)
class TurnServices:
    """A signaling service whose ``/turn-token`` serves the coturn at ``turn_url``."""

    signal_url: str
    turn_url: str


@contextmanager
def turn_services(tmp_path: Path) -> Iterator[TurnServices]:
    """coturn and the signaling service, both stopped (the service drained) when the block ends."""
    secret = "s3cret-" + tmp_path.name
    coturn = subprocess.Popen([sys.executable, "-m", "tests.open4wd_node.net.webrtc.nat_coturn", "127.0.0.1", secret],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert coturn.stdout is not None
        port = int(coturn.stdout.readline())
        turn_url = f"turn:127.0.0.1:{port}"
        secret_file = tmp_path / "turn-secret"
        secret_file.write_text(secret + "\n")
        secret_file.chmod(0o600)
        service, url = start_signal(tmp_path, "--turn-secret-file", str(secret_file), "--turn-url", turn_url)
        try:
            yield TurnServices(url, turn_url)
        finally:
            drain_service(service, "signal", 5)
    finally:
        coturn.communicate(timeout=60)  # its standard input closed: it stops coturn and exits
