"""From ``match-start`` to the results: the driver, the optional control API and the match runner for a
racer, the viewer for a spectator; both dial their peers the way the node's links say."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from open4wd_base.errors import LocalError
from open4wd_node.assets.store import AssetStore
from open4wd_node.runtime.context import NodeContext
from open4wd_node.drivers.control_api import ControlServer
from open4wd_node.drivers.bot import BotDriver
from open4wd_node.drivers.idle import IdleDriver
from open4wd_node.faults.plan import NodeFault, nondeterministic_frame
from open4wd_node.faults.race import RaceFaults
from open4wd_node.net.transport import Dialler
from open4wd_node.events.sink import EventSink
from open4wd_node.events.round_watch import RoundWatch
from open4wd_node.race.driver import Driver, FrameObserver
from open4wd_node.race.runner import MatchReport, MatchRunner, RaceOptions, RaceWiring
from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.room.driver import RoomOutcome
from open4wd_node.spectate.watcher import FrameObserver as FrameShownObserver, MatchViewer, WatchReport
from protocol.identity.keys import Identity
from open4wd_node.events.vocabulary import ControlApiListening, NodeEvent

FLUSH_S = 1.0


@dataclass(frozen=True)
class PlayOptions:
    """How this node plays once the match starts: who drives (``bot``, ``external``, ``idle``), the
    bot's seed, where the control API listens (``external``), the race options, and the faults the soak, the
    demo or a test asks this node to suffer (``--fault``)."""

    driver: str = "bot"
    seed: int = 0
    control_host: str = "127.0.0.1"
    control_port: int = 0
    race: RaceOptions = field(default_factory=RaceOptions)
    faults: tuple[NodeFault, ...] = ()


class ControlTee(EventSink):
    """Every node event also goes to the control API clients; the view hooks go on to the inner sink."""

    def __init__(self, inner: EventSink, server: ControlServer) -> None:
        super().__init__(as_json=inner.as_json, stream=inner.stream)
        self.inner, self.server = inner, server

    def emit(self, event: NodeEvent) -> None:
        """Show the event as the inner sink does, and publish its JSON form on the ``events`` topic."""
        self.inner.emit(event)
        self.server.publish_event(event.EVENT, event.data())

    def watch_round(self, watch: RoundWatch) -> None:
        """The inner sink's live view watches the round."""
        self.inner.watch_round(watch)


async def watch_match(
    ctx: NodeContext, identity: Identity, events: EventSink, outcome: RoomOutcome, dial: Dialler,
    on_frame: FrameShownObserver | None = None,
) -> WatchReport:
    """Watch, as a spectator, the match ``outcome`` started, to its end (``MatchViewer``), dialling its
    sources with ``dial``. ``LocalError`` when the room did not start a match; ``UserError`` from the race log."""
    started = outcome.started
    if started is None:
        raise LocalError("race-not-started", "watch_match needs the outcome of a room whose match started")
    assets = NodeRoomAssets(AssetStore.in_data_dir(ctx.data_dir), ctx.config)
    viewer = MatchViewer(identity, events, started, outcome.addresses, assets, ctx.data_dir / "races", on_frame=on_frame,
                         dial=dial)
    return await viewer.run()


async def play_match(
    ctx: NodeContext, identity: Identity, events: EventSink, outcome: RoomOutcome, wiring: RaceWiring,
    options: PlayOptions,
) -> MatchReport:
    """Race the match ``outcome`` started over ``wiring`` (where the peers' race links arrive, how they are
    dialled), with the driver ``options`` name (and, for ``external``, the control API serving meanwhile),
    and the faults it names (``open4wd_node.faults``, wrapped around the runner's wiring); returns this
    node's report. ``LocalError`` when the room did not start a match (the
    caller checks ``outcome.started`` first); ``UserError`` from the race log or the control port."""
    started = outcome.started
    if started is None:
        raise LocalError("race-not-started", "play_match needs the outcome of a room whose match started")
    assets = NodeRoomAssets(AssetStore.in_data_dir(ctx.data_dir), ctx.config)
    log_dir = ctx.data_dir / "races"
    server: ControlServer | None = None
    float_at = nondeterministic_frame()
    async with trio.open_nursery() as nursery:
        if options.faults or float_at is not None:
            faults = RaceFaults(options.faults, events, float_at)
            await nursery.start(faults.run)
            wiring = faults.wire(wiring)
        on_step: FrameObserver | None = None
        driver: Driver
        if options.driver == "external":
            server = ControlServer(peer=identity.peer_id, host=options.control_host, port=options.control_port)
            port = await nursery.start(server.serve)
            events = ControlTee(events, server)
            events.emit(ControlApiListening(host=server.host, port=port))
            driver = server.driver
            on_step = server.publish_frame
        elif options.driver == "bot":
            driver = BotDriver(options.seed)
        else:
            driver = IdleDriver()
        runner = MatchRunner(identity, events, started.locked, outcome.addresses, wiring, assets, driver,
                             options.race, log_dir, on_step=on_step, spectators=sorted(started.spectator_sources))
        report = await runner.run()
        if server is not None:
            await server.flush(FLUSH_S)
        nursery.cancel_scope.cancel()
    return report
