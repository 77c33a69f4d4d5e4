"""Whole nodes in one trio run over real loopback sockets: host + joiners, room then race."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

import trio

from open4wd_node.runtime.addresses import AUTOMATIC, Address, Advertise
from open4wd_node.assets.store import AssetStore
from open4wd_node.assets.cars import CarChoice
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.runtime.context import NodeContext
from open4wd_node.events.sink import EventSink
from tests.recorder import Recorder
from open4wd_node.faults.plan import FaultKind, NodeFault
from open4wd_node.net.impair import ImpairmentProxy
from open4wd_node.net.listener import NodeListener
from open4wd_node.net.transport import Dialler
from open4wd_node.node import Node, PlayOptions, TcpLinks
from open4wd_node.race.runner import RaceOptions
from open4wd_node.room.session import HostOptions, JoinOptions
from protocol.identity.keys import Identity
from protocol.room.invitation import Invitation
from sim_core.assets.bake import bake
from sim_core.assets.builtin_gen import _add_route, _solid
from sim_core.assets.glb_build import GlbBuilder
from sim_core.assets.shapes import box

CARS = ("speed", "control", "speed", "control", "speed", "control", "speed", "control")


@dataclass(frozen=True)
class ToldLinks:
    """A node's TCP links that tell ``told`` of its listener as soon as it is bound, before any peer can
    dial it (the proxies of ``race_behind_proxies`` are pointed at it then)."""

    inner: TcpLinks
    told: Callable[[NodeListener], None]

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[NodeListener]:
        async with self.inner.serving() as listener:
            self.told(listener)
            yield listener

    def dialler(self, listener: NodeListener) -> Dialler:
        return self.inner.dialler(listener)


def short_track(length_m: float) -> bytes:
    """An open asphalt straight of ``length_m``: a real baked track GLB, for rounds of a few seconds."""
    half = length_m / 2
    b = GlbBuilder()
    _solid(b, "Field", box((-6.0, -1.0, -half - 6.0), (6.0, 0.0, half + 6.0)))
    route = _add_route(b, [((0.0, 0.0, half), (0.0, 0.0, -1.0)), ((0.0, 0.0, -half), (0.0, 0.0, -1.0))], 4.0)
    return bake(b.build({
        "open4wd_version": 1, "type": "track", "material": "asphalt",
        "track": {"type": "open", "route": route},
        "weather": {"type": "normal", "temperature": 20},
        "physics": {"gravity_direction": [0, -1, 0], "gravity_strength_m_s2": 9.81},
    }))


async def race(tmp_path, n: int, *, track_bytes: bytes, laps: int = 1, rounds: int = 1, mode: str = "rollback",
               faults: dict[int, int] | None = None, cuts: dict[int, tuple[int, float]] | None = None,
               stalls: dict[int, tuple[int, float]] | None = None, stall_links: bool = True,
               drivers: dict[int, str] | None = None, recorders_out: dict | None = None, limit_s: float = 120,
               cars: dict[int, str] | None = None, advertise: dict[int, Advertise] | None = None,
               on_listening: Callable[[int, NodeListener], None] | None = None,
               views: Callable[[Identity], EventSink] | None = None,
               frames_per_tick: dict[int, int] | None = None) -> tuple[list[Recorder], dict[int, int]]:
    """Run n nodes; returns their recorders and exit codes (0 = the match ran to its end). ``cars``
    (a ``--car`` value per node), ``advertise`` and ``on_listening`` (told each node's bound listener)
    default to the usual: archetype cars, nodes on 127.0.0.1 that advertise where they listen. ``views``
    makes each node's readable sink (a ``LiveConsole``), fed alongside its recorder. ``cuts`` and ``stalls``
    map a node to (frame of round 1, seconds): it drops its mesh links, or stands still (pump and links, as
    if stopped by SIGSTOP; only the pump without ``stall_links``), after that frame. ``frames_per_tick`` gives a node
    the frames its pump steps per wake-up (default 1)."""
    codes: dict[int, int] = {}
    identities = [Identity(bytes([i + 1]) * 32) for i in range(n)]
    recorders = [Recorder(views(identity) if views else None) for identity in identities]
    if recorders_out is not None:
        recorders_out["recorders"] = recorders  # for a test that watches the nodes while they run
    track = None
    for i in range(n):
        track = AssetStore.in_data_dir(tmp_path / f"n{i}").put(track_bytes)

    def play(i: int) -> PlayOptions:
        node_faults = []
        if i in (faults or {}):
            node_faults.append(NodeFault(FaultKind.CORRUPT_STATE, faults[i]))
        if i in (cuts or {}):
            node_faults.append(NodeFault(FaultKind.DISCONNECT, *cuts[i]))
        if i in (stalls or {}):
            node_faults.append(NodeFault(FaultKind.STALL if stall_links else FaultKind.PUMP_STALL, *stalls[i]))
        race = RaceOptions(mode=mode, frames_per_tick=(frames_per_tick or {}).get(i, 1))
        return PlayOptions(driver=(drivers or {}).get(i, "bot"), seed=i, race=race, faults=tuple(node_faults))

    def ctx(i: int) -> NodeContext:
        config = replace(DEFAULTS, advertise=(advertise or {}).get(i, AUTOMATIC))
        return NodeContext(tmp_path / f"n{i}", config)

    def choose(i: int) -> CarChoice:
        return CarChoice.parse((cars or {}).get(i, CARS[i]))

    def node(i: int) -> Node:
        context = ctx(i)
        links = TcpLinks.from_config(identities[i], context.config)
        if on_listening is not None:
            return Node(context, identities[i], recorders[i], ToldLinks(links, lambda lis: on_listening(i, lis)))
        return Node(context, identities[i], recorders[i], links)

    def code(result) -> int:
        return 0 if result.finished else 1

    async def host() -> None:
        options = HostOptions(track=track, rounds=rounds, laps=laps, min_players=n, max_players=n, auto_ready=True,
                              nickname="node0")
        codes[0] = code(await node(0).host(options, choose(0), play(0)))

    async def member(i: int) -> None:
        await recorders[0].created.wait()
        invite = Invitation.parse(recorders[0].of("room-created")[0]["invite"])
        options = JoinOptions(auto_ready=True, nickname=f"node{i}")
        codes[i] = code(await node(i).join(invite, options, choose(i), play(i)))

    with trio.move_on_after(limit_s):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(host)
            for i in range(1, n):
                nursery.start_soon(member, i)
    return recorders, codes


async def race_behind_proxies(tmp_path, proxies: list[ImpairmentProxy], **options) -> tuple[list[Recorder], dict[int, int]]:
    """``race`` with every node behind its own proxy: the proxy's address is what node i advertises, so
    every link to node i (the room join to a host, the race-mesh dials) crosses ``proxies[i]``."""
    async with trio.open_nursery() as nursery:
        addresses = [await nursery.start(proxy.run) for proxy in proxies]
        result = await race(tmp_path, len(proxies), advertise={i: Advertise(a.host, a.port) for i, a in enumerate(addresses)},
                            on_listening=lambda i, lis: proxies[i].point_at(Address("127.0.0.1", lis.address.port)),
                            **options)
        nursery.cancel_scope.cancel()
    return result
