"""One listener per node for a whole match: the first message on a link says what the link is for.

A room join (``join-request``) goes to the room, a race-mesh greeting to the race; a link that says
nothing within 10 s, or opens with anything no phase is waiting for, is closed with a code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar
from functools import partial

import trio

from open4wd_node.link import Link, LinkClosed
from open4wd_node.context_errors import UserError
from open4wd_node.transport import ListenAddress, serve
from protocol.identity import Identity
from protocol.room_messages import EXPENSIVE_TYPES
from protocol.wire import Message

FIRST_MESSAGE_TIMEOUT_S = 10
Handler = Callable[[Link, Message], Awaitable[None]]
T = TypeVar("T")


def parse_address(text: str, code: str = "address-invalid") -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets) as given on the command line or announced by a peer."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UserError(code, f"an address is HOST:PORT (port 0..65535), got {text[:80]!r}")
    return host.strip("[]"), int(port)


class NodeListener:
    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self.handlers: dict[type[Message], Handler] = {}
        self.address: ListenAddress | None = None

    @property
    def listen(self) -> str:
        return f"{self.address.host}:{self.address.port}" if self.address else ""

    async def run(self, host: str, port: int, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; ``await nursery.start(listener.run, host, port)`` gives the address."""
        async with trio.open_nursery() as nursery:
            try:
                self.address = await nursery.start(
                    partial(serve, self._accept, self.identity, host, port, expensive=EXPENSIVE_TYPES)
                )
            except OSError as exc:
                raise UserError("listen-failed", f"cannot listen on {host}:{port}: {exc.strerror}") from None
            task_status.started(self.address)

    async def _accept(self, link: Link) -> None:
        first = None
        with trio.move_on_after(FIRST_MESSAGE_TIMEOUT_S):
            try:
                first = await link.receive()
            except LinkClosed:
                return
        if first is None:
            await link.aclose("join-timeout", f"no join request within {FIRST_MESSAGE_TIMEOUT_S} s")
            return
        handler = self.handlers.get(type(first))
        if handler is None:
            await link.aclose("join-expected", f"this node is not waiting for a {first.TYPE} link now")
            return
        await handler(link, first)


async def with_listener(identity: Identity, host: str, port: int, body: Callable[[NodeListener], Awaitable[T]]) -> T:
    """Run ``body`` while this node's listener serves on ``host:port``; stop listening afterwards."""
    async with trio.open_nursery() as nursery:
        listener = NodeListener(identity)
        await nursery.start(listener.run, host, port)
        result = await body(listener)
        nursery.cancel_scope.cancel()
    return result
