"""A spectator's match, in the trio shell: links to its source, the 60 Hz view pump, the race log.

``MatchViewer`` runs ``protocol.spectate.viewer.SpectateViewer`` over real links: it dials the source
the machine names (``DialSource``: the host's assignment first, the next racer after a loss), feeds it
every message of the current link, and ticks it 60 times a second, stepping the frames its jitter
buffer releases on worlds built from the verified start package exactly as the racers build theirs.
The spectator sends nothing but the ``mode-select`` that opens each link.

It shows what a racer shows (the same live view, ``--json`` events ``spectate-start``, ``frame`` once a
second, ``checksum``, ``checkpoint``, ``round-end``, ``match-end``, ``session-end``) and writes its own race
log, which ``open4wd-node replay`` verifies: the log starts each round from the checkpoint it loaded (a
``caught-up`` record) and holds every frame it stepped with the racers' signatures, and at each vote frame
its own hash beside the players' agreed ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, assert_never

import structlog
import trio

from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.net.containment import contain
from open4wd_node.net.link import Link, LinkClosed
from open4wd_node.net.transport import Dialler
from open4wd_node.race.log import EndReason, RaceLogWriter, end_record
from open4wd_node.race.mesh import with_headroom
from open4wd_node.race.pump import FRAME_HZ, MAX_STEPS_PER_TICK
from open4wd_node.race.spectators import SOURCE_LIMITS, VIEWER_LIMITS
from open4wd_node.race.world import WorldAdapter, build_round_world, round_standings
from open4wd_node.runtime.blocking import run_blocking
from open4wd_node.runtime.clock import NodeClock
from open4wd_node.runtime.errors import UserError
from open4wd_node.events.sink import EventSink
from open4wd_node.events.round_watch import RoundWatch
from open4wd_node.events.vocabulary import (
    InRound, LogOpened, MatchEnd, RoundEnd, SessionEnd, SpectateStarted, ViewCheckpoint, ViewFrame,
)
from protocol.actions import Misbehaviour
from protocol.identity.keys import Identity
from protocol.race.actions import ChecksumVoted
from protocol.race.peers import PeerStatus
from protocol.race.recovery import RECONNECT_WINDOW_MS
from protocol.race.results import Quit, RoundResult, match_standings, round_result
from protocol.race.setup import loadout_digest
from protocol.room.actions import MatchStarted
from protocol.transaction import MachineFault
from protocol.spectate.actions import (
    CheckpointLoaded, DialSource, DropSource, FrameShown, HashChecked, KeyVerified, RoundBegan, RoundOver, ViewEnded,
    ViewerAction,
)
from protocol.spectate.messages import SPECTATE_LINK, ModeSelect, SpectateEndReason
from protocol.spectate.viewer import SpectateViewer, ViewerPhase, ViewRound
from protocol.identity.keys import PeerId
from sim_core.world import World

log = structlog.get_logger("open4wd_node.spectate")

REDIAL_S = 0.5
"""Pause before asking the next source after a link ended: a failing source is not hammered."""
FRAME_EVENT_EVERY = 60
"""The ``frame`` event is emitted once per this many frames (once a second)."""
SOURCE_INGRESS = with_headroom(SOURCE_LIMITS, RECONNECT_WINDOW_MS)
"""What a viewer accepts from its source: the source's pace with a reconnect window's headroom, so the
backlog of a new subscription or a burst after a stall is never throttled."""

FrameObserver = Callable[[int, int], None]
"""``on_frame(round, frame)``: told of every frame the viewer showed."""


@dataclass
class WatchReport:
    """What watching came to: the end reason, the rounds' standings, the checks made."""

    outcome: str = ""
    detail: str = ""
    rounds: list[dict[str, Any]] = field(default_factory=list)
    standings: list[dict[str, Any]] = field(default_factory=list)
    agreed: int = 0
    mismatches: int = 0
    sources: list[PeerId] = field(default_factory=list)
    frames: int = 0
    log: str = ""


class _Progress:
    """The live view's ``RaceProgress`` for a spectator: the frame shown; nobody is lost, nothing rolls back."""

    @dataclass
    class _Stats:
        rollbacks: int = 0

    def __init__(self, world: World) -> None:
        self.world = world
        self.stats = self._Stats()

    @property
    def current_frame(self) -> int:
        """The frame the next step computes."""
        return self.world.frame

    def status(self, peer: PeerId) -> PeerStatus:
        """Every racer is shown as racing: a spectator does not see the mesh."""
        return PeerStatus.ACTIVE


class _NoLag:
    """A spectator has no pump: it shows frames as they come."""

    lag = 0
    frames_per_tick = 1


class MatchViewer:
    """Watches the match ``started`` began (module docstring); ``addresses`` are the racers' contacts (a
    listen address and the signaling services each racer answers at). Creating it creates its race log
    (``UserError`` ``race-log-exists`` / ``-unwritable``). ``on_frame(round, frame)`` hears about every
    frame shown (the benchmark measures the delay); ``dial`` is how this node dials a source (directly, or
    over WebRTC); ``paused_until()``, when given, says until when (trio's clock) the view
    must stand still after a tick (a test's stall: ``open4wd_node.faults``)."""

    def __init__(self, identity: Identity, events: EventSink, started: MatchStarted, addresses: dict[PeerId, str],
                 assets: NodeRoomAssets, log_dir: Path, on_frame: FrameObserver | None = None,
                 *, dial: Dialler, paused_until: Callable[[], float] | None = None) -> None:
        self.identity = identity
        self.dial = dial
        self.paused_until = paused_until
        self.me = identity.peer_id
        self.events = events
        self.started = started
        self.locked = started.locked
        self.addresses = addresses
        self.assets = assets
        self.on_frame = on_frame
        self.clock = NodeClock()
        self.report = WatchReport()
        self.worlds: dict[int, World] = {}
        self.log_path = log_dir / f"{self.locked.match_id[:16]}-{self.me[-8:]}.o4wlog"
        self.log = RaceLogWriter(self.log_path)
        self.report.log = str(self.log_path)
        self.viewer: SpectateViewer | None = None
        self._link: tuple[str, int, trio.CancelScope] | None = None  # the source's link task: peer, epoch, scope
        self._nursery: trio.Nursery | None = None
        self._done = trio.Event()
        self._last_signed: dict[str, int] = {}
        self._results: list[RoundResult] = []

    async def run(self) -> WatchReport:
        """Watch until the session ends; the race log always closes with its end record."""
        locked = self.locked
        self.log.append({"kind": "header", "version": 1, "node": self.me, "matchId": locked.match_id,
                         "package": locked.package, "mode": "spectate", "inputDelay": 0, "role": "spectator"})
        self.events.emit(LogOpened(path=str(self.log_path)))
        try:
            rounds = []
            for index, config in enumerate(locked.config.rounds):
                slots = locked.slots(index)
                cars = {peer: locked.car(peer, index) for peer in locked.roster}
                self.worlds[index] = await run_blocking(build_round_world, self.assets, locked.match_id, index,
                                                        config.to_wire(), slots, cars)
                rounds.append(ViewRound(config.track_ref, slots, {p: loadout_digest(c) for p, c in cars.items()}))
            racers = [p for p in locked.roster if p not in self.started.pre_start_disconnects]
            first = self.started.spectator_sources.get(self.me)
            if first is None:
                raise UserError("spectate-no-source", "the host assigned this spectator no source racer")
            order = [first] + [p for p in racers if p != first]
            self.viewer = SpectateViewer(locked.match_id, rounds, lambda index: WorldAdapter(self.worlds[index]), order)
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._route(self.viewer.start(self.clock.now_ms()))
                nursery.start_soon(self._pump)
                await self._done.wait()
                nursery.cancel_scope.cancel()
        except BaseException as exc:
            self._close(end_record(EndReason.ERROR if isinstance(exc, Exception) else EndReason.CANCELLED,
                                   detail=f"{type(exc).__name__}: {exc}"[:500]))
            raise
        self._close(end_record(EndReason.ENDED, outcome=self.report.outcome, detail=self.report.detail))
        return self.report

    def _close(self, end: dict[str, Any]) -> None:
        self.log.append(end)
        self.log.close()

    # ---- the pump and the links ----------------------------------------------------------------------

    async def _pump(self) -> None:
        """60 ticks a second (exact multiples of 1/60 s from the start: no drift); each releases the
        frames the jitter buffer allows, at most 4."""
        viewer = self._viewer()
        start, tick = trio.current_time(), 0
        while viewer.phase is not ViewerPhase.ENDED:
            for _ in range(MAX_STEPS_PER_TICK):
                stepped, actions = viewer.advance(self.clock.now_ms())
                self._route(actions)
                if not stepped:
                    break
            if self.paused_until is not None and trio.current_time() < self.paused_until():
                await trio.sleep_until(self.paused_until())
            tick = max(tick + 1, math.floor((trio.current_time() - start) * FRAME_HZ))
            await trio.sleep_until(start + tick / FRAME_HZ)

    async def _source_link(self, peer: PeerId, select: ModeSelect, scope: trio.CancelScope) -> None:
        """One link to the source ``peer``: open it with ``select``, feed what arrives to the viewer. When
        it ends (and is still the current one), the viewer asks the next source."""
        viewer = self._viewer()
        with scope:
            link: Link | None = None
            try:
                link = await self.dial(self.addresses.get(peer, ""), peer, limits=VIEWER_LIMITS)
                link.repurpose(SPECTATE_LINK, VIEWER_LIMITS, frozenset(), SOURCE_INGRESS)
                await link.send(select)
                reason = "the source closed the link"
                async for message in link:
                    try:
                        actions = viewer.receive(peer, message, self.clock.now_ms())
                    except MachineFault as fault:  # the view is broken and over: its end first, then the link
                        self._route(fault.actions)
                        await contain(peer, message.TYPE, link.aclose, fault)
                        reason = str(fault)
                        break
                    self._route(actions)
            except (LinkClosed, OSError, UserError, trio.TooSlowError) as exc:
                reason = str(exc)
            finally:
                if link is not None:
                    with trio.CancelScope(shield=True):
                        await link.aclose("spectate-closed", "the spectator closed this link")
            log.info("spectate-source-ended", peer=peer, epoch=select.sourceEpoch, reason=reason)
            await trio.sleep(REDIAL_S)
            if self._link is not None and self._link[:2] == (peer, select.sourceEpoch):
                self._route(viewer.source_lost(self.clock.now_ms()))

    def _viewer(self) -> SpectateViewer:
        if self.viewer is None:
            raise UserError("spectate-not-started", "the spectator view has not started")
        return self.viewer

    # ---- actions -------------------------------------------------------------------------------------

    def _route(self, actions: list[ViewerAction]) -> None:
        """Carry out the viewer's actions in order (every kind has its handler)."""
        for action in actions:
            match action:
                case FrameShown():
                    self._frame(action)
                case DialSource():
                    self._dial(action)
                case DropSource():
                    self._drop(action)
                case RoundBegan():
                    self._round_began(action)
                case KeyVerified():
                    key = action.key
                    self.log.append({"kind": "race-key", "peer": key.peer, "raceId": key.raceId,
                                     "publicKey": key.publicKey, "signature": key.signature})
                case CheckpointLoaded():
                    self._checkpoint(action)
                case HashChecked():
                    self._checked(action)
                case RoundOver():
                    self._round_over(action)
                case ViewEnded():
                    self._ended(action)
                case Misbehaviour():
                    log.warning("spectate-refused", peer=action.peer, code=action.code)
                case _:
                    assert_never(action)

    def _dial(self, action: DialSource) -> None:
        if self._link is not None:
            self._link[2].cancel()
        scope = trio.CancelScope()
        self._link = (action.peer, action.select.sourceEpoch, scope)
        self.report.sources.append(action.peer)
        self.events.emit(SpectateStarted(match_id=self.locked.match_id, source=action.peer,
                                         source_epoch=action.select.sourceEpoch))
        if self._nursery is not None:
            self._nursery.start_soon(self._source_link, action.peer, action.select, scope)

    def _drop(self, action: DropSource) -> None:
        log.info("spectate-source-dropped", peer=action.peer, code=action.code)
        if self._link is not None and self._link[0] == action.peer:
            self._link[2].cancel()

    def _round_began(self, action: RoundBegan) -> None:
        index = action.round
        cars = {peer: self.locked.car(peer, index) for peer in self.locked.roster}
        self.log.append({"kind": "round-start", "round": index, "slots": dict(action.slots), "cars": cars})
        self._last_signed = {}
        world = self.worlds[index]
        self.events.watch_round(RoundWatch(index, len(self.locked.config.rounds), action.slots, world, _Progress(world),
                                           _NoLag(), 0))

    def _checkpoint(self, action: CheckpointLoaded) -> None:
        self.log.append({"kind": "caught-up", "round": action.round, "frame": action.frame,
                         "stateHash": action.state_hash.hex(), "state": action.state})
        self.events.emit(ViewCheckpoint(round=action.round, frame=action.frame, reason=action.reason))

    def _frame(self, action: FrameShown) -> None:
        slots = self.locked.slots(action.round)
        for entry in action.inputs:
            if entry.signature is not None:
                self._last_signed[entry.peer] = action.frame
        self.log.append({"kind": "frame", "round": action.round, "frame": action.frame, "inputs": [
            [slots[i.peer], i.peer, i.events, i.prev, i.signature] for i in sorted(action.inputs, key=lambda i: slots[i.peer])]})
        self.report.frames += 1
        if action.frame % 60 == 59:
            self.log.flush()
        if self.on_frame is not None:
            self.on_frame(action.round, action.frame)
        if action.frame % FRAME_EVENT_EVERY == 0:
            self.events.emit(ViewFrame(round=action.round, frame=action.frame, buffered=action.buffered,
                                       target=action.target))

    def _checked(self, action: HashChecked) -> None:
        if action.agreed:
            self.report.agreed += 1
        else:
            self.report.mismatches += 1
        self.log.append({"kind": "checksum", "round": action.round, "frame": action.frame,
                         "result": "agreed" if action.agreed else "mismatch",
                         "hashes": {self.me: action.own.hex(), **{p: h.hex() for p, h in action.votes.items()}},
                         "dissenters": []})
        self.events.emit(InRound(action.round, ChecksumVoted(action.frame, action.agreed)))

    def _round_over(self, action: RoundOver) -> None:
        index = action.round
        slots = self.locked.slots(index)
        quits = {p: Quit(self._last_signed.get(p, -1) + 1, reason) for p, reason in action.left.items() if p in slots}
        world = self.worlds[index]
        standings = round_standings(world, slots, quits)
        limit = self.locked.config.rounds[index].duration_limit_s * 60
        self._results.append(round_result(standings, slots, limit))
        self.report.rounds.append({"round": index, "frame": action.frame, "standings": standings})
        self.log.append({"kind": "round-end", "round": index, "frame": action.frame,
                         "stateHash": world.state_hash().hex(), "standings": standings})
        self.log.flush()
        self.events.emit(RoundEnd(round=index, frame=action.frame, standings=standings))

    def _ended(self, action: ViewEnded) -> None:
        reason = action.reason.value
        self.report.outcome, self.report.detail = reason, action.detail
        if action.reason is SpectateEndReason.MATCH_END and self._results:
            self.report.standings = match_standings(self._results)
            self.log.append({"kind": "match-end", "outcome": "finished", "standings": self.report.standings})
            self.events.emit(MatchEnd(results=self.report.standings, outcome="finished"))
        self.log.append({"kind": "session-end", "round": self._viewer().round_index, "reason": reason,
                         "detail": action.detail})
        self.events.emit(SessionEnd(round=None, reason=reason, detail=action.detail))
        if self._link is not None:
            self._link[2].cancel()
        self._done.set()
