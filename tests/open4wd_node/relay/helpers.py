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
