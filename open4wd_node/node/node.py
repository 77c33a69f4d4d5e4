"""``Node``: one Open4WD node as an application object: host a room, join one, or watch one, and race or
watch its match to the outcome.

A node composes what the packages below it provide: its links (``Links``: the listener its peers reach and
the dialler that reaches them; TCP + Noise and WebRTC unless it is given others), the room
(``open4wd_node.room``), the race (``open4wd_node.node.match``: the match runner with its driver, the control
API and the faults a test or the soak asks for), the spectator's viewer (``open4wd_node.spectate``), the race
logs in its data directory, and the one event sink that hears everything it does. It runs in its caller's
trio run, so one program can run several nodes (the tests run whole rooms so). The command line
(``open4wd_node.cli``) only turns its arguments into a ``Node`` and its options, runs it and prints.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from open4wd_node.assets.cars import CarChoice
from open4wd_node.net.link import Link
from open4wd_node.net.listener import NodeListener
from open4wd_node.node.links import Links, TcpLinks
from open4wd_node.node.match import PlayOptions, play_match, watch_match
from open4wd_node.race.runner import MatchReport, RaceWiring
from open4wd_node.room.driver import RoomOutcome
from open4wd_node.room.session import HostOptions, JoinOptions, host_room, join_room
from open4wd_node.runtime.context import NodeContext
from open4wd_node.runtime.errors import UserError
from open4wd_node.spectate.watcher import WatchReport
from open4wd_node.events.sink import EventSink
from protocol.identity.keys import Identity
from protocol.room.invitation import Invitation
from protocol.spectate.messages import SpectateEndReason
from open4wd_node.events.vocabulary import LinkPathFound, MatchResult

NO_CAR = CarChoice.parse("speed")
"""What a spectator's seat is given for a car: the room never looks at it (a spectator brings none)."""

Room = Callable[[NodeListener], Awaitable[RoomOutcome]]
BOT = PlayOptions()
"""The default play: a bot with seed 0 drives, the race in rollback mode."""
WATCHER = JoinOptions(spectate=True)


def require_spectator(invite: Invitation) -> None:
    """``UserError`` ``invitation-role`` unless ``invite`` is a room's spectator invitation (what ``watch`` needs)."""
    if invite.role != "spectator":
        raise UserError("invitation-role", f"this invitation is for a {invite.role}: watch needs the room's spectator "
                                           "invitation (join races with a participant's)")


@dataclass(frozen=True)
class NodeResult:
    """How this node's room ended (``room``) and what the match it raced (``MatchReport``) or watched
    (``WatchReport``) came to; ``report`` is None when the room started no match."""

    room: RoomOutcome
    report: MatchReport | WatchReport | None = None

    @property
    def finished(self) -> bool:
        """Whether the match ran to its end for this node: it finished racing it, or watched it to ``match-end``."""
        if isinstance(self.report, MatchReport):
            return self.report.outcome == "finished"
        if isinstance(self.report, WatchReport):
            return self.report.outcome == SpectateEndReason.MATCH_END
        return False


class Node:
    """One node (module docstring): ``identity`` and the data directory and configuration of ``ctx``, its
    events told to ``events``, reached and reaching out over ``links`` (default: ``TcpLinks`` as the
    configuration says). Each of ``host``, ``join`` and ``watch`` runs one room and its match, listening
    from start to end; ``listener`` is the listener while one serves."""

    def __init__(self, ctx: NodeContext, identity: Identity, events: EventSink, links: Links | None = None) -> None:
        self.ctx = ctx
        self.identity = identity
        self.events = events
        self.links: Links = links if links is not None else TcpLinks.from_config(identity, ctx.config)
        self.listener: NodeListener | None = None

    async def host(self, options: HostOptions, car: CarChoice, play: PlayOptions = BOT) -> NodeResult:
        """Open a room as ``options`` say, take a seat in it with ``car``, and race its match as ``play``
        says. ``UserError`` for a bad track, car, fault or listen address."""
        return await self._run(lambda listener: host_room(self.ctx, self.identity, options, car, self.events, listener),
                               play)

    async def join(self, invite: Invitation, options: JoinOptions, car: CarChoice,
                   play: PlayOptions = BOT) -> NodeResult:
        """Join the room of ``invite`` with ``car`` and race its match as ``play`` says; with
        ``options.spectate``, watch it instead (as ``watch`` does). ``UserError`` for a bad invitation or car."""
        return await self._run(lambda listener: join_room(self.ctx, self.identity, invite, options, car, self.events,
                                                          listener), None if options.spectate else play)

    async def watch(self, invite: Invitation, options: JoinOptions = WATCHER) -> NodeResult:
        """Join the room of the spectator invitation ``invite`` and watch its match, verified and read-only.
        ``UserError`` ``invitation-role`` for a participant's invitation."""
        require_spectator(invite)
        return await self.join(invite, replace(options, spectate=True), NO_CAR)

    def _report_link(self, link: Link) -> None:
        """Every link this node opens or admits: how it is connected (``link-path``)."""
        report = link.path_report()
        self.events.emit(LinkPathFound(report.peer, report.path.value, report.rtt_ms))

    async def _run(self, room: Room, play: PlayOptions | None) -> NodeResult:
        """Listen, run the room, then race its match (``play``) or watch it (None), and tell the ``result``."""
        async with self.links.serving() as listener:
            self.listener = listener
            listener.on_link = self._report_link
            try:
                async with self.events.showing():
                    outcome = await room(listener)
                    if outcome.started is None:
                        return NodeResult(outcome)
                    dial = self.links.dialler(listener)
                    if play is None:
                        watched = await watch_match(self.ctx, self.identity, self.events, outcome, dial)
                        self._tell_watched(watched)
                        return NodeResult(outcome, watched)
                    report = await play_match(self.ctx, self.identity, self.events, outcome, RaceWiring(listener, dial),
                                              play)
                    self._tell_raced(report)
                    return NodeResult(outcome, report)
            finally:
                self.listener = None

    def _tell_watched(self, watched: WatchReport) -> None:
        self.events.emit(MatchResult(peer=self.identity.peer_id, outcome=watched.outcome, detail=watched.detail,
                         agreed_hashes=watched.agreed, mismatches=watched.mismatches, standings=watched.standings,
                         log=watched.log, sources=watched.sources, frames=watched.frames))

    def _tell_raced(self, report: MatchReport) -> None:
        self.events.emit(MatchResult(peer=self.identity.peer_id, outcome=report.outcome, detail=report.detail,
                         agreed_hashes=report.agreed, disagreements=report.disagreements, leaves=report.leaves,
                         standings=report.standings, log=report.log, max_lag=report.max_lag, ticks=report.ticks,
                         rollbacks=report.rollbacks, max_rollback=report.max_rollback, drops=report.drops,
                         liveness=report.liveness, cpu=report.cpu.to_json()))
