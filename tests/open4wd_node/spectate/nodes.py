"""Whole racers and spectators in one trio run over real loopback sockets: host, joiners, watchers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

import trio

from open4wd_node.assets.cars import CarChoice
from open4wd_node.assets.store import AssetStore
from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.spectate.watcher import MatchViewer
from open4wd_node.events.sink import EventSink
from open4wd_node.events.vocabulary import FaultFired, InRound, MatchResult, NodeEvent
from open4wd_node.net.listener import NodeListener
from open4wd_node.faults.links import LinkFaults
from open4wd_node.node import Node as NodeApp, PlayOptions, TcpLinks
from open4wd_node.net.reach import contact_dialler, with_listener
from open4wd_node.race.runner import RaceOptions
from open4wd_node.room.session import HostOptions, JoinOptions, join_room
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.runtime.context import NodeContext
from protocol.identity.keys import Identity
from protocol.race.actions import ChecksumVoted
from protocol.room.events import Joined
from protocol.room.invitation import Invitation
from tests.open4wd_node.race.nodes import CARS, ToldLinks
from tests.recorder import Recorder


class Node(Recorder):
    """A recorder that also says when its node was admitted (``joined``) and, with ``kill_after``, stops
    the whole node (``scope``: listener, links, race) once its vote of that frame is decided, as when its
    process is killed."""

    def __init__(self, kill_after: int | None = None, inner: EventSink | None = None) -> None:
        super().__init__(inner)
        self.joined = trio.Event()
        self.scope = trio.CancelScope()
        self.kill_after = kill_after

    def emit(self, event: NodeEvent) -> None:
        super().emit(event)
        if isinstance(event, Joined):
            self.joined.set()
        if (isinstance(event, InRound) and isinstance(event.event, ChecksumVoted) and self.kill_after is not None
                and event.event.frame >= self.kill_after):
            self.scope.cancel()


@dataclass
class Room:
    """The racers' and spectators' recorders and exit codes (``n0``…, ``s0``…; none for a killed node)."""

    racers: list[Node]
    spectators: list[Node]
    codes: dict[str, int] = field(default_factory=dict)
    listeners: dict[str, NodeListener] = field(default_factory=dict)


def racer_identity(i: int) -> Identity:
    return Identity(bytes([i + 1]) * 32)


def spectator_identity(j: int) -> Identity:
    return Identity(bytes([100 + j]) * 32)


async def watch_room(tmp_path, n: int, m: int, *, track_bytes: bytes, laps: int = 1, rounds: int = 1,
                     limit_s: float = 120, watch_delay: dict[int, float] | None = None,
                     kill: dict[int, int] | None = None, stall: dict[int, tuple[int, float]] | None = None,
                     beside: Callable[[Room], Awaitable[None]] | None = None,
                     views: dict[int, EventSink] | None = None) -> Room:
    """n racers (bots, ready at once) and m spectators, admitted before the racers join. ``watch_delay``
    holds a spectator back this long after the start before it watches (it joins through a checkpoint);
    ``kill`` maps a racer to a vote frame after which its node stops; ``stall`` a spectator to (frame shown,
    seconds): it stands still then, as if stopped by SIGSTOP; ``beside`` runs alongside."""
    room = Room([Node((kill or {}).get(i)) for i in range(n)], [Node(inner=(views or {}).get(j)) for j in range(m)])

    def ctx(name: str, config=DEFAULTS) -> NodeContext:
        AssetStore.in_data_dir(tmp_path / name).put(track_bytes)
        return NodeContext(tmp_path / name, replace(config))

    track = AssetStore.in_data_dir(tmp_path / "n0").put(track_bytes)

    def racer(i: int) -> NodeApp:
        context = ctx(f"n{i}")
        links = ToldLinks(TcpLinks.from_config(racer_identity(i), context.config),
                          lambda lis: room.listeners.__setitem__(f"n{i}", lis))
        return NodeApp(context, racer_identity(i), room.racers[i], links)

    async def race(i: int, run: Callable[[NodeApp, PlayOptions], Awaitable]) -> None:
        with room.racers[i].scope:
            result = await run(racer(i), PlayOptions(driver="bot", seed=i, race=RaceOptions()))
            room.codes[f"n{i}"] = 0 if result.finished else 1

    async def host() -> None:
        options = HostOptions(track=track, rounds=rounds, laps=laps, min_players=n, max_players=n,
                              spectators=max(m, 1), auto_ready=True, nickname="node0")
        await race(0, lambda node, play: node.host(options, CarChoice.parse(CARS[0]), play))

    async def member(i: int) -> None:
        await room.racers[0].created.wait()
        for watcher in room.spectators:
            await watcher.joined.wait()
        invite = Invitation.parse(room.racers[0].of("room-created")[0]["invite"])
        options = JoinOptions(auto_ready=True, nickname=f"node{i}")
        await race(i, lambda node, play: node.join(invite, options, CarChoice.parse(CARS[i]), play))

    async def spectator(j: int) -> None:
        await room.racers[0].created.wait()
        invite = Invitation.parse(room.racers[0].of("room-created")[0]["invites"]["spectator"])
        identity, events, context = spectator_identity(j), room.spectators[j], ctx(f"s{j}")

        async def body(lis: NodeListener) -> int:
            async with events.showing():
                options = JoinOptions(spectate=True, auto_ready=True, nickname=f"watcher{j}")
                outcome = await join_room(context, identity, invite, options, CarChoice.parse("speed"), events, lis)
                if outcome.started is None:
                    return 1
                await trio.sleep((watch_delay or {}).get(j, 0))
                assets = NodeRoomAssets(AssetStore.in_data_dir(context.data_dir), context.config)
                frame, seconds = (stall or {}).get(j, (-1, 0.0))
                faults = LinkFaults()  # the in-process SIGSTOP: its pump and its source link stand still

                def on_frame(round_index: int, shown: int) -> None:
                    if round_index == 0 and shown == frame:
                        faults.freeze(seconds)
                        events.emit(FaultFired(kind="stall", frame=shown, seconds=seconds))

                viewer = MatchViewer(identity, events, outcome.started, outcome.addresses, assets,
                                     context.data_dir / "races", on_frame,
                                     dial=faults.dial(contact_dialler(lis)),
                                     paused_until=lambda: faults.frozen_until)
                report = await viewer.run()
                events.emit(MatchResult(peer=identity.peer_id, outcome=report.outcome, detail=report.detail,
                                        agreed_hashes=report.agreed, mismatches=report.mismatches,
                                        standings=report.standings, log=report.log, sources=report.sources,
                                        frames=report.frames))
                return 0 if report.outcome == "match-end" else 1

        room.codes[f"s{j}"] = await with_listener(identity, "127.0.0.1", 0, body)

    with trio.move_on_after(limit_s):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(host)
            for i in range(1, n):
                nursery.start_soon(member, i)
            for j in range(m):
                nursery.start_soon(spectator, j)
            if beside is not None:
                nursery.start_soon(beside, room)
    return room
