"""Signaling between processes in different network namespaces, until the real signaling service is wired:
a relay on a UNIX socket (a path in the file system, which every namespace of the machine shares) that
forwards JSON lines between registered PeerIds. The relay knows which socket registered which PeerId,
so a signal's sender is verified as the ``Signaling`` interface promises (a test's tool)."""

from __future__ import annotations

import json
import socket
from dataclasses import asdict
from typing import Any

import trio

from protocol.signaling.client import Signal
from protocol.signaling.envelope import IceCandidate, Sdp, SdpKind, SignalMessage

MAX_LINE = 256 * 1024


def encode(signal: SignalMessage) -> dict[str, Any]:
    """A signal as JSON data."""
    if isinstance(signal, Sdp):
        return {"sdp": signal.sdp, "kind": signal.kind.value}
    return {"candidate": asdict(signal)}


def decode(data: dict[str, Any]) -> SignalMessage:
    """The inverse of ``encode``."""
    if "sdp" in data:
        return Sdp(SdpKind(data["kind"]), data["sdp"])
    return IceCandidate(**data["candidate"])


class Lines:
    """JSON lines over a stream."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.buffer = b""

    async def read(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            chunk = await self.stream.receive_some(65536)
            if not chunk or len(self.buffer) > MAX_LINE:
                raise EOFError
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        value: dict[str, Any] = json.loads(line)
        return value

    async def write(self, value: dict[str, Any]) -> None:
        await self.stream.send_all(json.dumps(value).encode() + b"\n")


async def serve_relay(path: str, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Relay signals between the clients of the UNIX socket at ``path`` until cancelled."""
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await sock.bind(path)
    sock.listen()
    clients: dict[str, Lines] = {}
    waiting: dict[str, list[dict[str, Any]]] = {}  # for a PeerId not registered yet (at most 256 each)

    async def client(stream: trio.SocketStream) -> None:
        lines = Lines(stream)
        try:
            peer = (await lines.read())["register"]
            clients[peer] = lines
            for early in waiting.pop(peer, []):
                await lines.write(early)
            while True:
                message = await lines.read()
                forwarded = {"from": peer, "signal": message["signal"]}
                target = clients.get(message["to"])
                if target is not None:
                    await target.write(forwarded)
                elif len(queue := waiting.setdefault(message["to"], [])) < 256:
                    queue.append(forwarded)
        except (EOFError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async with trio.open_nursery() as nursery:
        task_status.started()
        await trio.serve_listeners(client, [trio.SocketListener(sock)], handler_nursery=nursery)


class UnixSignaling:
    """A ``Signaling`` through the relay at a UNIX socket path (``connect``)."""

    def __init__(self, lines: Lines, peer_id: str, scope: str) -> None:
        self._lines, self._peer_id, self._scope = lines, peer_id, scope
        self._lock = trio.Lock()

    @classmethod
    async def connect(cls, path: str, peer_id: str, scope: str) -> "UnixSignaling":
        """Register ``peer_id`` at the relay."""
        lines = Lines(await trio.open_unix_socket(path))
        await lines.write({"register": peer_id})
        return cls(lines, peer_id, scope)

    @property
    def peer_id(self) -> str:
        return self._peer_id

    @property
    def scope(self) -> str:
        return self._scope

    async def send(self, target: str, signal: SignalMessage) -> None:
        async with self._lock:
            await self._lines.write({"to": target, "signal": encode(signal)})

    async def receive(self) -> Signal:
        message = await self._lines.read()
        return Signal(message["from"], decode(message["signal"]))
