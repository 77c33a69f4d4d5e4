"""The NAT lab's scenarios (shared by the tests and the benchmark): coturn in the public namespace, and either
two peer processes that open one link (signaling on a UNIX socket through a relay in this process), or two
whole node processes that race, each in its host's namespace behind its NAT, through a real ``open4wd-node
signal`` in the public namespace."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from open4wd_node.assets.store import AssetStore
from open4wd_node.signal.coturn import CoturnSettings, RunningCoturn
from tests.layout import REPO_ROOT
from tests.netns import NatLab
from tests.node_process import Process, drain_service, start_signal
from tests.open4wd_node.net.webrtc.unix_signaling import serve_relay
from tests.open4wd_node.race.nodes import short_track

PEER = "tests.open4wd_node.net.webrtc.nat_peer"
COTURN = "tests.open4wd_node.net.webrtc.nat_coturn"
START_TIMEOUT_S = 30.0  # a safety net only: coturn prints its port once it answers STUN
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


@asynccontextmanager
async def lab_coturn(lab: NatLab) -> AsyncIterator[RunningCoturn]:
    """coturn in the lab's public namespace (STUN and TURN on one port of the public address, REST
    credentials of a fresh secret), once it answers STUN; stopped when the block ends."""
    secret = secrets.token_urlsafe(24)
    coturn = await trio.lowlevel.open_process([*lab.exec_prefix(lab.inet), sys.executable, "-m", COTURN, lab.public, secret],
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=ENV, cwd=REPO_ROOT)
    try:
        assert coturn.stdout is not None and coturn.stdin is not None
        started = b""
        with trio.fail_after(START_TIMEOUT_S):
            while not started.endswith(b"\n"):
                chunk = await coturn.stdout.receive_some(4096)
                assert chunk, "the lab's coturn ended before it answered STUN"
                started += chunk
        reported = json.loads(started)
        yield RunningCoturn(CoturnSettings(host=lab.public, port=reported["port"], secret=secret), Path(reported["log"]))
    finally:
        with trio.CancelScope(shield=True):
            if coturn.stdin is not None:
                await coturn.stdin.aclose()
            with trio.move_on_after(10):
                await coturn.wait()
            if coturn.returncode is None:
                coturn.kill()
                await coturn.wait()


async def run_scenario(lab: NatLab, workdir: Path, *, turn: bool = True, timeout_ms: int = 15_000) -> list[dict[str, Any]]:
    """(offerer's report, answerer's report) of one link between the lab's two hosts, with the lab's STUN
    server and, with ``turn``, its TURN server; each peer gives up after ``timeout_ms``."""
    socket_path = str(workdir / "signal.sock")
    async with lab_coturn(lab) as coturn:
        # ``--secret=…``: a URL-safe secret may begin with "-"
        common = ["--socket", socket_path, "--stun", coturn.stun_url, f"--secret={coturn.settings.secret}",
                  "--timeout-ms", str(timeout_ms), *(["--turn", coturn.turn_url] if turn else [])]
        reports: dict[str, dict[str, Any]] = {}

        async def peer(name: str, namespace: str, args: list[str]) -> None:
            done = await trio.run_process([*lab.exec_prefix(namespace), sys.executable, "-m", PEER, *args, *common],
                                          capture_stdout=True, capture_stderr=True, env=ENV, cwd=REPO_ROOT, check=False)
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


def race_across_nats(lab: NatLab, coturn: RunningCoturn, workdir: Path, *, turn: bool) -> tuple[list[Process], dict[str, int]]:
    """A short race of two node processes, the host in the lab's first home and a joiner in its second, that
    reach each other only through ``open4wd-node signal`` in the public namespace (no TCP listener, no port
    forwarded), with the lab's STUN server and, with ``turn``, its TURN server (credentials from the service's
    ``/turn-token``). The racers and their exit codes once both ended; a failed check leaves nothing running."""
    secret = workdir / "turn-secret"
    secret.write_text(coturn.settings.secret + "\n")
    secret.chmod(0o600)
    service, url = start_signal(workdir, "--turn-secret-file", str(secret), "--turn-url", coturn.turn_url,
                                listen=f"{lab.public}:0", prefix=lab.exec_prefix(lab.inet))
    ice = ["--signal", url, "--ice-server", coturn.stun_url, *(["--ice-server", coturn.turn_url] if turn else [])]
    racers: list[Process] = []
    try:
        track = short_track(8.0)
        for name in ("host", "joiner"):
            ref = AssetStore.in_data_dir(workdir / name).put(track)
        racers.append(Process(workdir, "host", "host", "--track", ref, "--laps", "1", "--min-players", "2",
                              "--max-players", "2", "--auto-ready", *ice, "--ice-host", lab.host_addresses[0],
                              prefix=lab.exec_prefix(lab.hosts[0])))
        invite = racers[0].wait_for("room-created")["invite"]
        racers.append(Process(workdir, "joiner", "join", invite, "--auto-ready", *ice, "--ice-host", lab.host_addresses[1],
                              prefix=lab.exec_prefix(lab.hosts[1])))
        return racers, {racer.name: racer.wait() for racer in racers}
    finally:
        for racer in racers:
            racer.kill()
        drain_service(service, "signal", 5)
