"""A local coturn (the TURN and STUN server the Open4WD spec relays through), started as a child process.

Operators run coturn themselves (docs/operators.md); this module starts one for what runs on one
machine: the demo with ``--transport webrtc --reachability relay``, the soak's ``turn`` profile and the
tests. The configuration follows the spec's ``open-4wd-turn`` template (REST credentials with
``use-auth-secret``, ``fingerprint``, ``no-multicast-peers``, the private ranges denied as peers), with
three differences that a server bound to one machine needs:

- it listens and relays on the given address only (``listening-ip``, ``relay-ip``), never on a wildcard;
- ``allow-loopback-peers`` when that address is a loopback one: the template denies loopback peers, and
  on one machine every peer is on loopback;
- no TLS/DTLS listeners, no telnet CLI, its database, pid file and log in its own temporary directory.

The server is ready when it answers a STUN Binding request on its port (``wait_until_answering``), so
no caller sleeps for a guessed start-up time.
"""

from __future__ import annotations

import ipaddress
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import trio

from open4wd_node.net.webrtc.turn_choice import PROBE_INTERVAL_S, probe_once
from open4wd_node.runtime.errors import UserError

TURNSERVER = "turnserver"
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0
DENIED_PEER_RANGES = (
    "10.0.0.0-10.255.255.255",
    "172.16.0.0-172.31.255.255",
    "192.168.0.0-192.168.255.255",
    "169.254.0.0-169.254.255.255",
    "100.64.0.0-100.127.255.255",
    "0.0.0.0-0.255.255.255",
    "fe80::-febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "fc00::-fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
)
"""The template's denied peer ranges but loopback, which ``CoturnSettings.config_text`` denies unless the
server itself is on loopback."""
LOOPBACK_RANGES = ("127.0.0.0-127.255.255.255", "::1")


@dataclass(frozen=True)
class CoturnSettings:
    """What a local coturn is started with: where it listens (UDP and TCP on one port), the REST
    credential secret it shares with the signaling service, its realm and its relay port range."""

    host: str = "127.0.0.1"
    port: int = 0  # 0: a free port is chosen at start
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    realm: str = "open4wd.local"
    min_port: int = 49152
    max_port: int = 65535

    @property
    def loopback(self) -> bool:
        """Whether the server listens on a loopback address (then loopback peers are allowed)."""
        return ipaddress.ip_address(self.host).is_loopback

    def config_text(self, state_dir: Path) -> str:
        """``turnserver.conf`` for these settings, with every file it writes inside ``state_dir``."""
        lines = [
            f"listening-ip={self.host}",
            f"relay-ip={self.host}",
            f"listening-port={self.port}",
            f"min-port={self.min_port}",
            f"max-port={self.max_port}",
            f"realm={self.realm}",
            "use-auth-secret",
            f"static-auth-secret={self.secret}",
            "fingerprint",
            "no-multicast-peers",
            "no-tls",
            "no-dtls",
            "no-cli",
            "no-software-attribute",
            f"userdb={state_dir / 'turndb'}",
            f"pidfile={state_dir / 'turnserver.pid'}",
            f"log-file={state_dir / 'turnserver.log'}",
            "simple-log",
        ]
        lines += [f"denied-peer-ip={r}" for r in DENIED_PEER_RANGES]
        lines += ["allow-loopback-peers"] if self.loopback else [f"denied-peer-ip={r}" for r in LOOPBACK_RANGES]
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class RunningCoturn:
    """A coturn that answers: its settings (with the real port) and the ICE server URLs to give peers."""

    settings: CoturnSettings
    log_path: Path

    @property
    def stun_url(self) -> str:
        """``stun:HOST:PORT``."""
        return f"stun:{_url_host(self.settings.host)}:{self.settings.port}"

    @property
    def turn_url(self) -> str:
        """``turn:HOST:PORT`` (UDP allocations, the REST credentials of ``settings.secret``)."""
        return f"turn:{_url_host(self.settings.host)}:{self.settings.port}"


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def turnserver_path() -> str | None:
    """The coturn binary on ``PATH`` (Debian package ``coturn``), or None."""
    return shutil.which(TURNSERVER)


def free_port(host: str) -> int:
    """A port that is free for both UDP and TCP on ``host`` now (coturn binds both)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    while True:
        with socket.socket(family, socket.SOCK_DGRAM) as udp:
            udp.bind((host, 0))
            port = int(udp.getsockname()[1])
            with socket.socket(family, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind((host, port))
                except OSError:
                    continue
                return port


async def wait_until_answering(host: str, port: int, process: trio.Process, timeout_s: float = START_TIMEOUT_S) -> None:
    """Return once a STUN Binding request to ``host:port`` is answered; ``UserError`` ``coturn-failed``
    when the process exits first or nothing answers within ``timeout_s``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with trio.socket.socket(family, socket.SOCK_DGRAM) as probe:
        await probe.connect((host, port))
        with trio.move_on_after(timeout_s):
            while process.returncode is None:
                answered = await probe_once(probe)
                if answered:
                    return
                if answered is None:  # nothing is bound yet
                    await trio.sleep(PROBE_INTERVAL_S)
            raise UserError("coturn-failed", f"coturn exited with status {process.returncode} before answering on "
                                             f"{host}:{port}")
    raise UserError("coturn-failed", f"coturn did not answer a STUN request on {host}:{port} within {timeout_s:g} s")


@asynccontextmanager
async def local_coturn(settings: CoturnSettings = CoturnSettings()) -> AsyncIterator[RunningCoturn]:
    """Start coturn with ``settings`` (a free port when ``port`` is 0), wait until it answers, and stop it
    (SIGTERM, then SIGKILL after ``STOP_TIMEOUT_S``) when the block ends; its files go with it.
    ``UserError`` ``coturn-missing`` when ``turnserver`` is not installed, ``coturn-failed`` when it does
    not start (its log's last lines are in the message)."""
    binary = turnserver_path()
    if binary is None:
        raise UserError("coturn-missing", "coturn is not installed (Debian: apt-get install coturn)")
    if settings.port == 0:
        settings = CoturnSettings(settings.host, free_port(settings.host), settings.secret, settings.realm,
                                  settings.min_port, settings.max_port)
    with tempfile.TemporaryDirectory(prefix="open4wd-coturn-") as tmp:
        state_dir = Path(tmp)
        config = state_dir / "turnserver.conf"
        config.write_text(settings.config_text(state_dir))
        config.chmod(0o600)  # it holds the shared secret
        log_path = state_dir / "turnserver.log"
        process = await trio.lowlevel.open_process([binary, "-c", str(config)], stdin=subprocess.DEVNULL,
                                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            try:
                await wait_until_answering(settings.host, settings.port, process)
            except UserError as exc:
                raise UserError(exc.code, f"{exc.message}; coturn's log ends: {_log_tail(log_path)}") from None
            yield RunningCoturn(settings, log_path)
        finally:
            await stop_process(process)


def _log_tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return " | ".join(text.strip().splitlines()[-lines:]) or "(empty log)"


async def stop_process(process: trio.Process) -> None:
    """SIGTERM, then SIGKILL if the process (coturn, a local service) has not exited within
    ``STOP_TIMEOUT_S``; always reaped."""
    with trio.CancelScope(shield=True):
        if process.returncode is None:
            process.terminate()
            with trio.move_on_after(STOP_TIMEOUT_S):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
