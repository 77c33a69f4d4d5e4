"""Runs the NAT lab's scenario: coturn in the public namespace, a signaling relay on a UNIX socket, and
two peer processes, each in its host's namespace behind its NAT (shared by the test and the benchmark)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from tests.layout import REPO_ROOT
from tests.netns import NatLab
from tests.open4wd_node.net.webrtc.unix_signaling import serve_relay

PEER = "tests.open4wd_node.net.webrtc.nat_peer"
COTURN = "tests.open4wd_node.net.webrtc.nat_coturn"
START_TIMEOUT_S = 30.0  # a safety net only: coturn prints its port once it answers STUN


async def run_scenario(lab: NatLab, workdir: Path, *, turn: bool = True, timeout_ms: int = 15_000) -> list[dict[str, Any]]:
    """(offerer's report, answerer's report) of one link between the lab's two hosts, with the lab's STUN
    server and, with ``turn``, its TURN server; each peer gives up after ``timeout_ms``."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    secret = secrets.token_urlsafe(24)
    socket_path = str(workdir / "signal.sock")
    coturn = await trio.lowlevel.open_process([*lab.exec_prefix(lab.inet), sys.executable, "-m", COTURN, lab.public, secret],
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=REPO_ROOT)
    try:
        assert coturn.stdout is not None and coturn.stdin is not None
        with trio.fail_after(START_TIMEOUT_S):
            port = int((await coturn.stdout.receive_some(64)).decode().strip())
        # ``--secret=…``: a URL-safe secret may begin with "-"
        common = ["--socket", socket_path, "--stun", f"stun:{lab.public}:{port}", f"--secret={secret}",
                  "--timeout-ms", str(timeout_ms), *(["--turn", f"turn:{lab.public}:{port}"] if turn else [])]
        reports: dict[str, dict[str, Any]] = {}

        async def peer(name: str, namespace: str, args: list[str]) -> None:
            done = await trio.run_process([*lab.exec_prefix(namespace), sys.executable, "-m", PEER, *args, *common],
                                          capture_stdout=True, capture_stderr=True, env=env, cwd=REPO_ROOT, check=False)
            lines = done.stdout.decode().strip().splitlines()
            report = json.loads(lines[-1]) if lines else {"error": "no-report"}
            if "error" in report:  # what went wrong, for the test's message
                report["stderr"] = done.stderr.decode()[-2000:]
            reports[name] = report

        async with trio.open_nursery() as nursery:
            await nursery.start(serve_relay, socket_path)
            async with trio.open_nursery() as peers:
                peers.start_soon(peer, "answerer", lab.hosts[1], ["--seed", "2", "--host", lab.host_addresses[1]])
                peers.start_soon(peer, "offerer", lab.hosts[0], ["--seed", "1", "--offer", "2", "--host",
                                                                 lab.host_addresses[0]])
            nursery.cancel_scope.cancel()
        return [reports["offerer"], reports["answerer"]]
    finally:
        with trio.CancelScope(shield=True):
            if coturn.stdin is not None:
                await coturn.stdin.aclose()
            with trio.move_on_after(10):
                await coturn.wait()
            if coturn.returncode is None:
                coturn.kill()
                await coturn.wait()
