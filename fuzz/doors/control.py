"""The control API: what a game UI writes on its local connection (JSON lines), read by the real
connection handler with a round attached, so presses and holds reach the external driver."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import trio
import trio.testing

from fuzz.harness import Target
from open4wd_node.drivers.control_api import ControlServer
from sim_core.assets.demo_round import builtin_demo_track, builtin_demo_vehicles
from sim_core.world import World
from protocol.identity.keys import PeerId

ME = PeerId("z6MkFuzzControlPeer")


@functools.cache
def _world() -> World:
    return World.new(builtin_demo_track(), builtin_demo_vehicles(2), seed=18)


def one_input(data: bytes) -> None:
    """The bytes arrive in one piece on a fresh connection, which then ends; the node answers each line."""
    server = ControlServer(peer=ME)
    server.publish_frame(_world(), 0)  # the round this node races: its slot and skills

    async def connection() -> None:
        ours, theirs = trio.testing.memory_stream_pair()
        async with trio.open_nursery() as nursery:
            handler: Callable[[trio.abc.Stream], Awaitable[None]] = server._connection  # type: ignore[assignment]
            nursery.start_soon(handler, ours)  # what serve() runs for each accepted client: any stream will do
            await theirs.send_all(data)
            await theirs.send_eof()
            while await theirs.receive_some(65536):
                pass

    trio.run(connection)


TARGETS = {"control-api": Target("control-api", one_input, "control API request lines from a game UI")}
