"""A signaling service on loopback for the tests, and raw HTTP and WebSocket access to it (as a foreign
client would reach it: bytes and frames, not this project's client)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import trio

from open4wd_node.runtime.addresses import Address
from open4wd_node.signal.config import SignalSettings
from open4wd_node.signal.service import SignalingService
from protocol.signaling.limits import HubLimits

SECRET = "open4wd-test-secret"


@dataclass
class Running:
    """A service and where it listens."""

    service: SignalingService
    address: Address
    metrics: Address

    @property
    def url(self) -> str:
        return f"ws://{self.address}"


@asynccontextmanager
async def running_service(secret: str | None = None, turn_urls: tuple[str, ...] = ("turn:127.0.0.1:3478",),
                          limits: dict[str, Any] | None = None, **settings: Any) -> AsyncIterator[Running]:
    """A service on 127.0.0.1 (free ports), with TURN when ``secret`` is given; stopped when the block ends."""
    base = SignalSettings(listen=Address("127.0.0.1", 0), metrics=Address("127.0.0.1", 0),
                          turn_urls=turn_urls if secret else (), limits=HubLimits(**(limits or {})))
    chosen = replace(base, **settings)
    async with trio.open_nursery() as nursery:
        service = SignalingService(chosen, secret)
        address = await nursery.start(service.serve, "127.0.0.1", chosen.listen.port)
        metrics = await nursery.start(service.serve_metrics, "127.0.0.1", 0)
        yield Running(service, address, metrics)
        nursery.cancel_scope.cancel()


async def http(address: Address, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``raw`` (a whole HTTP request) and read the answer until the server closes: (status, lower-case
    headers, body); status 0 when the server closed without a word."""
    stream = await trio.open_tcp_stream(address.host, address.port)
    async with stream:
        await stream.send_all(raw)
        data = b""
        with trio.fail_after(30):
            while chunk := await stream.receive_some(65536):
                data += chunk
    if not data:
        return 0, {}, b""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def post(path: str, body: bytes, **headers: str) -> bytes:
    extra = "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"{extra}\r\n").encode() + body


def get(path: str, method: str = "GET", **headers: str) -> bytes:
    extra = "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
    return f"{method} {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode()
