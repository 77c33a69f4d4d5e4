"""A relay and reserved nodes in one trio run, on real loopback sockets."""

from __future__ import annotations

import trio

from open4wd_node.net.transport import Door
from open4wd_node.relay.client import Reservations
from open4wd_node.relay.server import DEFAULT_LIMITS, RelayServer
from protocol.identity.keys import Identity
from protocol.relay.limits import RelayLimits
from protocol.versions.collection import VersionRequest

RELAY_ID = Identity(bytes([9]) * 32)


def ids(count: int, start: int = 1) -> list[Identity]:
    return [Identity(bytes([start + i]) * 32) for i in range(count)]


async def start_relay(nursery: trio.Nursery, limits: RelayLimits = DEFAULT_LIMITS, **options) -> tuple[RelayServer, str]:
    relay = RelayServer(RELAY_ID, limits, **options)
    address = await nursery.start(relay.run, "127.0.0.1", 0)
    return relay, str(address)


class Echo:
    """A reserved node's handler: answers every message with an echo; records the links it saw."""

    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self.links = []
        self.ended = []

    async def handler(self, link) -> None:
        self.links.append(link)
        try:
            async for msg in link:
                await link.send(VersionRequest(sender=f"echo:{msg.sender}"))
        except Exception as exc:  # recorded for the test, then the door logs and closes
            self.ended.append(getattr(exc, "code", repr(exc)))
            raise


async def reserve(nursery: trio.Nursery, identity: Identity, relays: list[str]) -> tuple[Echo, Reservations]:
    echo = Echo(identity)
    door = Door(echo.handler, identity)
    keeper = Reservations(identity, tuple(relays), door.admit)
    await nursery.start(keeper.run)
    await keeper.tried.wait()
    return echo, keeper


async def wait_for(predicate) -> None:
    while not predicate():
        await trio.sleep(0.01)


class FlipOnce(trio.abc.Stream):
    """A stream that flips one bit of the byte at ``offset`` of what is sent through it: a relay that
    alters a byte once."""

    def __init__(self, inner: trio.abc.Stream, offset: int) -> None:
        self.inner = inner
        self.offset = offset
        self.sent = 0
        self.flipped = False

    async def send_all(self, data) -> None:
        data = bytearray(data)
        if not self.flipped and self.sent <= self.offset < self.sent + len(data):
            data[self.offset - self.sent] ^= 0x01
            self.flipped = True
        self.sent += len(data)
        await self.inner.send_all(bytes(data))

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes=None) -> bytes:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


class TamperingRelay(RelayServer):
    """A relay that flips one byte, ``offset`` bytes into what it forwards to a reserved peer, on its
    circuit number ``which`` (counted from 0; every other circuit is carried faithfully)."""

    def __init__(self, identity: Identity, offset: int, which: int = 0) -> None:
        super().__init__(identity)
        self.offset = offset
        self.which = which
        self.carried = 0
        self.flips: list[FlipOnce] = []

    async def _carry(self, circuit, dialer, target) -> None:
        self.carried += 1
        if self.carried - 1 == self.which:
            target = FlipOnce(target, self.offset)
            self.flips.append(target)
        await super()._carry(circuit, dialer, target)
