"""What the demo's nodes link over: ``tcp`` (TCP + Noise, each node listening on 127.0.0.1), ``webrtc``
(no node listens: a local ``open4wd-node signal`` process on 127.0.0.1 carries their offers and answers,
and, where coturn is installed, a local coturn relays every link: ``--reachability relay``, credentials
from the service's ``/turn-token``) or ``webrtc-direct`` (the same service, no relay: host candidates on
127.0.0.1, what the WebRTC race benchmark measures). The soak's ``webrtc`` and ``turn`` profiles choose
the coturn part themselves (``turn``: without coturn installed, ``coturn-missing``). The services live as
long as the demo's block."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import trio

from open4wd_node.runtime.errors import UserError

TRANSPORTS = ("tcp", "webrtc", "webrtc-direct")
SIGNAL_START_S = 30.0


@asynccontextmanager
async def demo_transport(transport: str, data_dir: Path, turn: bool | None = None) -> AsyncIterator[list[str]]:
    """The options every node of the demo gets for ``transport``, while its services run; for ``webrtc``,
    ``turn`` says whether a local coturn relays every link (None: where coturn is installed)."""
    if transport == "tcp":
        yield ["--listen", "127.0.0.1:0"]
        return
    from open4wd_node.demo.runner import cli_command
    from open4wd_node.signal.coturn import local_coturn, stop_process, turnserver_path

    async with AsyncExitStack() as stack:
        # no metrics endpoint: its default port is fixed, and two demos or soak races would contend for it
        signal_args = ["signal", "--listen", "127.0.0.1:0", "--metrics", "", "--json"]
        node_args = ["--ice-host", "127.0.0.1"]
        if transport == "webrtc" and (turn if turn is not None else turnserver_path() is not None):
            coturn = await stack.enter_async_context(local_coturn())
            secret = data_dir / "turn-secret"
            secret.write_text(coturn.settings.secret + "\n")
            secret.chmod(0o600)
            signal_args += ["--turn-secret-file", str(secret), "--turn-url", coturn.turn_url]
            node_args += ["--ice-server", coturn.turn_url, "--reachability", "relay"]
        process = await trio.lowlevel.open_process(cli_command(data_dir / "signal") + signal_args,
                                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                                   stdin=subprocess.DEVNULL)
        try:
            url = await _listening(process)
            yield ["--signal", url, *node_args]
        finally:
            await stop_process(process)


async def _listening(process: trio.Process) -> str:
    """The ``ws://`` URL the signaling process reports once it listens; ``UserError`` ``demo-failed``
    when it does not within ``SIGNAL_START_S``."""
    assert process.stdout is not None
    line = b""
    with trio.move_on_after(SIGNAL_START_S):
        while not line.endswith(b"\n"):
            chunk = await process.stdout.receive_some(4096)
            if not chunk:
                break
            line += chunk
    first = line.split(b"\n", 1)[0]
    try:
        started = json.loads(first)
        return f"ws://{started['address']}"
    except (ValueError, KeyError, TypeError):
        raise UserError("demo-failed", f"the local signaling service did not start: {first[:200]!r}") from None
