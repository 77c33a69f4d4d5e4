"""A match, round by round, over the race mesh: the shell around ``protocol.race.session.RaceSession``.

Per round: build the world from the verified start package, build the session, wait at the mesh
barrier until every present peer has built it, then pump frames at 60 Hz. The driver decides this
node's input for each frame; every session action is carried out here: messages to peers, events
for the user, and the race log (confirmed inputs, votes, saved states on a mismatch, results).

Everything the mesh's links deliver (a message, a link lost or back) reaches the runner as a
``MeshEvent`` on one channel, in order, and is handled in the runner's own task: by the frame pump, which
takes what arrived before each tick's steps; between frames by the waits, which take events as they come
and re-check what they wait for (every peer's ``MeshReady`` at the barrier, the round's anchor after the
last frame) after each. Nothing here polls. The session's own timers (the anchor's proposal slot and
timeout, reconnect windows) fire at the deadline the session names (``RaceSession.next_deadline_ms``),
not on a fixed period. The runner measures the CPU time of its calls into the session and of the links'
tasks (``CpuBudget``): the session reads no clock.

No wait here is without a deadline (docs/race.md, "Every wait has a bound"): the mesh waits at most
``MESH_TIMEOUT_S``, each barrier ``BARRIER_TIMEOUT_S``, the anchor ``ANCHOR_WAIT_S``, the last flush
``FLUSH_S``; the pump runs until the round is over or the session ended, which the session's own rules
(the watchdog, the reconnect window, catch-up timers) guarantee to happen.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, assert_never

import structlog
import trio

from open4wd_base.errors import LocalError
from open4wd_node.race.driver import Driver, FrameObserver
from open4wd_node.runtime.blocking import run_blocking
from open4wd_node.runtime.clock import NodeClock
from open4wd_node.runtime.errors import first_coded
from open4wd_node.events.sink import EventSink
from open4wd_node.net.containment import contain
from open4wd_node.net.listener import Doorway
from open4wd_node.net.transport import Dialler
from open4wd_node.race.budget import NO_SPLIT, CostPart, CostSplit, CpuBudget
from open4wd_node.race.coalesce import TickSends
from open4wd_node.race.pump import FramePump
from open4wd_node.events.round_watch import RoundWatch
from open4wd_node.race.log import EndReason, RaceLogWriter, end_record
from open4wd_node.race.mesh import Arrived, Back, Lost, Mesh, MeshEvent
from open4wd_node.race.world import WorldAdapter, build_round_world, chip_skills, round_standings
from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.runtime.signals import received
from open4wd_node.race.state_files import write_state_file
from open4wd_node.race.spectators import SpectatorHub
from protocol.spectate.messages import RosterEntry, SpectateEndReason
from protocol.spectate.source import SpectateSource
from protocol.transaction import MachineFault
from protocol.identity.keys import Identity, race_id
from protocol.room.locked_start import LockedStart
from protocol.race.mesh import MeshReady
from protocol.race.session import RaceSession
from protocol.race.actions import (
    AnchorDecided, AnchorReached, CaughtUp, ChecksumVoted, CloseLink, DesyncDetected, DesyncRecord, FrameConfirmed,
    InputsDropped, Misbehaviour, PeerLeft, PeerLost, PeerRejoined, RaceAction, RaceEvent, RoundEnded, Send, SessionEnded,
    SessionEndReason, VoteDecided, WriteState,
)
from protocol.race.keys import RaceKeyBook, announce
from protocol.race.messages import RaceKey
from protocol.race.peers import PeerStatus
from protocol.race.results import Quit, match_standings, round_result
from protocol.race.setup import RaceSetup, RaceWorld
from protocol.race.votes import VoteKind
from protocol.encoding.wire import Message
from protocol.identity.keys import PeerId
from sim_core.world import World
from open4wd_node.events.vocabulary import (
    CaughtUpFrom, InRound, Lagging, LogOpened, MatchEnd, Progress, RaceStarted, RoundEnd, SessionEnd, StateSaved,
)

log = structlog.get_logger("open4wd_node.race")

MESH_TIMEOUT_S = 10
BARRIER_TIMEOUT_S = 10
ANCHOR_WAIT_S = 13
FLUSH_S = 2
PROGRESS_FRAMES = 60  # a ``progress`` event every second of race: the soak's lag and rollback curves, and its hang watch


@dataclass(frozen=True)
class RaceOptions:
    """How this node races a match: the netcode mode, input delay and frames per tick."""

    mode: str = "rollback"  # or "lockstep"
    input_delay: int = 0
    frames_per_tick: int = 1  # frames the pump steps per wake-up (docs/node.md "Frames per tick")

    @property
    def session_input_delay(self) -> int:
        """The input delay the race session uses: ``input_delay``, and in lockstep at least
        ``frames_per_tick`` − 1. A lockstep peer steps a frame only with every input of it, and this node
        decides and sends its inputs N frames at a time: without that lead the whole room would wait for
        its ticks and fall further behind all race long (docs/node.md "Frames per tick")."""
        if self.mode == "lockstep":
            return max(self.input_delay, self.frames_per_tick - 1)
        return self.input_delay


def _same_world(world: WorldAdapter, round_index: int, slot: int) -> RaceWorld:
    return world


@dataclass(frozen=True)
class RaceWiring:
    """How a match runner meets the rest of the node: where its peers' race links (and spectators) arrive,
    how it dials a peer, and two seams through which a test or the soak wraps it from outside
    (``open4wd_node.faults``): the round's world, and the moments its pump must stand still."""

    doorway: Doorway
    """Where links arrive (the node's listener)."""
    dial: Dialler
    """How this node dials a peer's contact (``open4wd_node.net.reach.contact_dialler``)."""
    world: Callable[[WorldAdapter, int, int], RaceWorld] = _same_world
    """``world(adapter, round_index, slot)``: the world the session races in the round (the adapter itself)."""
    paused_until: Callable[[], float] | None = None
    """Until when (trio's clock) the frame pump must stand still after a tick; the links' events are still
    handled meanwhile. None: it never does."""


@dataclass
class MatchReport:
    """What a match came to for this node: the ``result`` event's figures, filled in while it runs."""

    outcome: str = "finished"
    detail: str = ""
    rounds: list[dict[str, Any]] = field(default_factory=list)
    standings: list[dict[str, Any]] = field(default_factory=list)
    agreed: int = 0
    disagreements: int = 0
    leaves: list[dict[str, str]] = field(default_factory=list)
    log: str = ""
    max_lag: int = 0
    ticks: int = 0  # the frame pump's wake-ups over the rounds: about the frames / ``frames_per_tick``
    rollbacks: int = 0
    max_rollback: int = 0
    drops: dict[str, int] = field(default_factory=dict)
    """Every refused or dropped input or message, by reason: the sessions' (``RaceStats.drops``) and the
    race links' rate limits (``link-bucket-…``), summed over the rounds."""
    liveness: dict[str, int] = field(default_factory=dict)
    """The sessions' other liveness counters summed over the rounds (redundant inputs, re-sends, probes,
    peers the watchdog treated as lost)."""
    cpu: CostSplit = NO_SPLIT
    """This node's CPU time while its frame pumps ran, by part, over the frames they stepped
    (``open4wd_node.race.budget``): the ``result`` event's ``cpu``."""


class MatchRunner:
    """Races one match for this node over the race mesh, round by round (see the module docstring).

    ``driver`` decides this node's input every frame; ``on_step(world, slot)``, if given, hears about
    every stepped frame (the control API publishes it); ``wiring`` is how it meets the rest of the node.
    Creating the runner creates its race log (``UserError`` ``race-log-exists`` / ``race-log-unwritable``
    when it cannot)."""

    def __init__(
        self,
        identity: Identity,
        events: EventSink,
        locked: LockedStart,
        addresses: dict[PeerId, str],
        wiring: RaceWiring,
        assets: NodeRoomAssets,
        driver: Driver,
        options: RaceOptions,
        log_dir: Path,
        on_step: FrameObserver | None = None,
        spectators: Sequence[str] = (),
    ) -> None:
        self.identity = identity
        self.me = identity.peer_id
        self.events = events
        self.locked = locked
        self.assets = assets
        self.driver = driver
        self.on_step = on_step
        self.options = options
        self.wiring = wiring
        self.clock = NodeClock()
        self.report = MatchReport()
        self.budget = CpuBudget()
        self._session: RaceSession | None = None  # the current round's (``session``)
        self._world: World | None = None  # the current round's (``world``)
        self.round_index = -1
        self.slot = -1  # this node's start slot in the current round
        self.ready: dict[int, set[str]] = {}  # round -> the peers whose MeshReady for it arrived (and this node)
        self.round_over = False
        self.anchor_done = trio.Event()
        self._last_signed: dict[str, int] = {}  # peer -> newest confirmed frame with its own signed input
        self._leave_reasons: dict[PeerId, str] = {}  # peer -> why it left this round (its leave, or a lost link)
        self._link_drops_seen: dict[str, int] = {}  # the mesh's drop counts already reported for a round
        self._lag: Callable[[], int] = lambda: 0  # the current round's pump lag
        self._deepest_rollback = 0  # since the last ``progress`` event
        self._pump_start = NO_SPLIT  # the budget when the current round's pump started
        self._pump_frames: Callable[[], int] | None = None  # frames the current round's pump stepped, while it runs
        self.log_path = log_dir / f"{locked.match_id[:16]}-{self.me[-8:]}.o4wlog"
        self.log = RaceLogWriter(self.log_path)
        self.report.log = str(self.log_path)
        others = {p: addresses[p] for p in locked.roster if p != self.me}
        self.mesh = Mesh(identity, locked.match_id, others, wiring.doorway, wiring.dial, self.budget)
        self._nursery: trio.Nursery | None = None  # ``run``'s, for closing a link whose message's handling failed
        self._tick_sends = TickSends(self.mesh.send)
        """The mesh as the session's actions reach it: a pump tick's ``race-inputs`` held to the tick's end."""
        self._state_dir = log_dir / f"{locked.match_id[:16]}-{self.me[-8:]}.states"
        self.spectate = SpectateSource(locked.match_id, spectators, max(1, len(spectators)))
        self.spectators = SpectatorHub(self.spectate, wiring.doorway) if spectators else None
        """Any spectator of the room may ask this racer to be its source (the host's pick, or after a loss)."""

    @property
    def session(self) -> RaceSession:
        """The current round's session; ``LocalError`` before the first round is built (a shell bug)."""
        if self._session is None:
            raise LocalError("race-no-round", "no round has started: there is no race session yet")
        return self._session

    @property
    def world(self) -> World:
        """The current round's simulation; ``LocalError`` before the first round is built (a shell bug)."""
        if self._world is None:
            raise LocalError("race-no-round", "no round has started: there is no world yet")
        return self._world

    # ---- the match ---------------------------------------------------------------------------------

    async def run(self) -> MatchReport:
        """Race every round of the match (or until this node's session ends) and close the race log,
        whatever ends the match; returns the report. Exceptions propagate after the log's end record."""
        self.log.append(self._header())
        self.events.emit(LogOpened(path=str(self.log_path)))
        trio.lowlevel.add_instrument(self.budget)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self.mesh.run)
                if self.spectators is not None:
                    await nursery.start(self.spectators.run)
                with trio.move_on_after(MESH_TIMEOUT_S):
                    await self.mesh.linked.wait()
                rounds = len(self.locked.config.rounds)
                for round_index in range(rounds):
                    await self._round(round_index)
                    if self.session.ended is not None:
                        break
                else:
                    await self._barrier(rounds)  # everyone is done with the last anchor before links close
                self._to_spectators(self.spectate.end(_spectators_told(self.report.outcome)))
                await self.mesh.flush(FLUSH_S)  # e.g. a leave {desync} must reach the others before links close
                if self.spectators is not None:
                    await self.spectators.flush(FLUSH_S)
                nursery.cancel_scope.cancel()
        except BaseException as exc:
            self._finish(_stopped_by(exc))
            raise
        finally:
            trio.lowlevel.remove_instrument(self.budget)
        self._finish(end_record(EndReason.ENDED, outcome=self.report.outcome, detail=self.report.detail))
        return self.report

    def _header(self) -> dict[str, Any]:
        return {
            "kind": "header", "version": 1, "node": self.me, "matchId": self.locked.match_id,
            "package": self.locked.package, "mode": self.options.mode,
            "inputDelay": self.options.session_input_delay,
        }

    async def _round(self, round_index: int) -> None:
        locked = self.locked
        slots = locked.slots(round_index)
        cars = {peer: locked.car(peer, round_index) for peer in locked.roster}
        world = await run_blocking(build_round_world, self.assets, locked.match_id, round_index,
                                   locked.config.rounds[round_index].to_wire(), slots, cars)
        self._take_events()  # what arrived meanwhile is the last round's, as its session is still current
        skills = {peer: chip_skills(world, slots[peer]) for peer in locked.roster}
        setup = RaceSetup.from_locked_start(
            locked, round_index, skills, input_delay=self.options.session_input_delay,
            max_prediction=0 if self.options.mode == "lockstep" else 8,
        )
        self._world, self.round_index, self.round_over = world, round_index, False
        self.spectate.round_started(round_index, locked.config.rounds[round_index].track_ref, [
            RosterEntry(peer, slot, setup.loadouts[peer]) for peer, slot in slots.items()])
        self._last_signed, self._leave_reasons = {}, {}
        self.anchor_done = trio.Event()
        self.slot = slots[self.me]
        self._log_key(self.me, announce(self.identity, race_id(locked.match_id, round_index)))
        adapter = self.wiring.world(WorldAdapter(world), round_index, self.slot)
        session = RaceSession(setup, self.identity, adapter, RaceKeyBook(setup.roster),
                              streams_inputs=self.spectators is not None)
        self._session = session
        self.log.append({"kind": "round-start", "round": round_index, "slots": slots, "cars": cars})
        await self._barrier(round_index)
        self.events.emit(RaceStarted(round=round_index, slot=self.slot, roster=list(setup.roster)))
        self._route(session.start(self.clock.now_ms()))
        pump = FramePump(self._step, lambda: session.current_frame,
                         lambda lag: self.events.emit(Lagging(round=round_index, frame=session.current_frame, frames=lag)),
                         None if self.wiring.paused_until is None else self._stand_still, self._tick_sends.flush,
                         self._before_tick, self.options.frames_per_tick)
        self._lag = lambda: pump.lag
        self.events.watch_round(RoundWatch(round_index, len(locked.config.rounds), slots, world, session, pump,
                                           self.report.rollbacks, self._cpu_so_far))
        first_frame = session.current_frame
        self._pump_start = self.budget.split(0)
        self._pump_frames = lambda: session.current_frame - first_frame
        self.mesh.pace(True)  # the links are read at the pump's ticks from now on
        try:
            await pump.run(lambda: self.round_over or session.ended is not None)
        finally:
            self.mesh.pace(False)
            self._tick_sends.flush()
        self.report.cpu = self._cpu_so_far()
        self._pump_frames = None
        self.log.flush()
        await run_blocking(self.log.fsync)  # the round-end record is durable before the anchor wait
        self.report.max_lag = max(self.report.max_lag, pump.max_lag)
        self.report.ticks += pump.ticks
        stats = session.stats
        self.report.rollbacks += stats.rollbacks
        self.report.max_rollback = max(self.report.max_rollback, stats.max_rollback)
        if self.round_over and session.ended is None:
            with trio.move_on_after(ANCHOR_WAIT_S):
                await self._await_anchor(session)
        self._liveness(session)
        self.log.flush()
        await run_blocking(self.log.fsync)

    def _cpu_so_far(self) -> CostSplit:
        """This match's CPU by part over the frames pumped so far: the earlier rounds' and the running
        pump's (the live view's budget line, and the ``result`` event's ``cpu`` once the match ends)."""
        if self._pump_frames is None:
            return self.report.cpu
        return self.report.cpu + CpuBudget.since(self.budget.split(self._pump_frames()), self._pump_start)

    def _liveness(self, session: RaceSession) -> None:
        """The round's drops and liveness counters: into the report (summed) and the race log."""
        stats = session.stats.liveness()
        link_drops, self._link_drops_seen = (
            {k: v - self._link_drops_seen.get(k, 0) for k, v in self.mesh.drops.items()}, dict(self.mesh.drops))
        drops = dict(stats.pop("drops"))
        for reason, count in link_drops.items():
            if count:
                drops[reason] = drops.get(reason, 0) + count
        for reason, count in drops.items():
            self.report.drops[reason] = self.report.drops.get(reason, 0) + count
        for name, count in stats.items():
            self.report.liveness[name] = self.report.liveness.get(name, 0) + count
        self.log.append({"kind": "liveness", "round": self.round_index, "drops": dict(sorted(drops.items())), **stats})

    async def _await_anchor(self, session: RaceSession) -> None:
        """Until the round's anchor is decided. Proposals and signatures arrive as the mesh's events
        (handled here: the session's answers, the decision among them); the session's timers (this
        node's proposal slot, the anchor's timeout, a lost peer's reconnect window) fire when ``tick``
        runs at or after the deadline the session names."""
        while not self.anchor_done.is_set():
            self._route(session.tick(self.clock.now_ms()))
            if self.anchor_done.is_set():
                return
            with trio.move_on_at(self._wake_time(session.next_deadline_ms())):
                self._handle(await self.mesh.events.receive())

    def _wake_time(self, deadline_ms: int | None) -> float:
        """The trio time at which the session's clock reaches ``deadline_ms`` (never: ``inf``). At least
        1 ms ahead: a deadline the last tick left in the past must not make the wait spin."""
        if deadline_ms is None:
            return math.inf
        return trio.current_time() + max(1, deadline_ms - self.clock.now_ms()) / 1000

    async def _barrier(self, round_index: int) -> None:
        """Every present peer has built this round's session before anyone steps frame 0 (after the
        last round: every peer is done with it). Waits (at most ``BARRIER_TIMEOUT_S``) until every
        linked peer's ``MeshReady`` for the round arrived; a peer whose link is lost meanwhile is not
        waited for. Woken by the mesh's events, never by a timer."""
        ready = self.ready.setdefault(round_index, set())
        ready.add(self.me)
        for peer in self.mesh.peers:
            self.mesh.send(peer, MeshReady(round_index))
        with trio.move_on_after(BARRIER_TIMEOUT_S):
            while not self.mesh.linked_peers | {self.me} <= ready:
                self._handle(await self.mesh.events.receive())

    async def _stand_still(self) -> None:
        """The pump's pause (``RaceWiring.paused_until``): until then no frame is stepped, and the links are
        read and their events handled as they come, as between frames, so that the links are answered."""
        assert self.wiring.paused_until is not None
        until = self.wiring.paused_until()
        if trio.current_time() >= until:
            return
        self.mesh.pace(False)
        try:
            with trio.move_on_at(until):
                while True:
                    self._handle(await self.mesh.events.receive())
        finally:
            self.mesh.pace(True)

    def _step(self) -> bool:
        """The frame pump's step: this node's input when the session needs it, then at most one frame;
        True when a frame was stepped. The session's work is charged to its parts of the CPU budget."""
        session = self.session
        now = self.clock.now_ms()
        self._tick_sends.hold()  # until the pump's tick ends (``on_tick``)
        if session.needs_local_input:
            events = self.driver.decide(self.world, self.slot, session.current_frame)
            with self.budget.part(CostPart.INPUT):
                actions = session.add_local_input(events, now)
            self._route(actions)
        with self.budget.part(CostPart.STEP):
            report = session.advance_frame(now)
        self._route(report.actions)
        if report.stepped and self.on_step is not None:
            self.on_step(self.world, self.slot)
        self._deepest_rollback = max(self._deepest_rollback, report.rollback_frames)
        if report.stepped and report.frame % PROGRESS_FRAMES == PROGRESS_FRAMES - 1:
            self.events.emit(Progress(round=self.round_index, frame=report.frame, lag=self._lag(),
                             cpu_us=round(self._cpu_so_far().per_frame_us(), 1),
                             rollback=self._deepest_rollback, rollbacks=session.stats.rollbacks))
            self._deepest_rollback = 0
        return report.stepped

    # ---- the mesh's events ----------------------------------------------------------------------------

    async def _before_tick(self) -> None:
        """The frame pump's ``before_tick``: the links are read, and what they delivered since the last
        tick is handled, there for the tick's steps."""
        await self.mesh.read_links()
        self._take_events()

    def _take_events(self) -> None:
        """Handle every event the mesh delivered and the runner has not taken yet, without waiting."""
        events = self.mesh.events
        while True:
            try:
                event = events.receive_nowait()
            except trio.WouldBlock:
                return
            self._handle(event)

    def _handle(self, event: MeshEvent) -> None:
        """One event of the mesh. What a message's handling raises closes that peer's link (``contain``:
        a peer's fault with its code, a bug of this node as ``internal-error``); a bug in the session
        broke it (``MachineFault``): this node's race ends there, its peers told, and theirs goes on."""
        match event:
            case Arrived(peer=peer, link=link, message=message):
                try:
                    self._on_message(peer, message)
                except MachineFault as fault:  # the session is broken: its end and leave go out first
                    self._route(fault.actions)
                    self._tasks.start_soon(contain, peer, message.TYPE, link.aclose, fault)
                except Exception as exc:
                    self._tasks.start_soon(contain, peer, message.TYPE, link.aclose, exc)
            case Lost(peer=peer):
                if self._session is not None:  # the mesh re-dials it: the session predicts it for a while
                    with self.budget.part(CostPart.MESSAGES):
                        actions = self._session.peer_lost(peer, self.clock.now_ms())
                    self._route(actions)
            case Back(peer=peer):
                if self._session is not None:  # the session resumes or catches it up
                    with self.budget.part(CostPart.MESSAGES):
                        actions = self._session.peer_reconnected(peer, self.clock.now_ms())
                    self._route(actions)
            case _:
                assert_never(event)

    @property
    def _tasks(self) -> trio.Nursery:
        """The nursery of ``run``; ``LocalError`` when the runner is not running (a shell bug)."""
        if self._nursery is None:
            raise LocalError("race-not-running", "the match runner is not running")
        return self._nursery

    def _log_key(self, peer: PeerId, key: RaceKey) -> None:
        """Race keys go into the log so that ``replay`` can check every input's signature (and to the
        spectators, once verified)."""
        self._to_spectators(self.spectate.key(peer, key))
        self.log.append({"kind": "race-key", "peer": peer, "raceId": key.raceId, "publicKey": key.publicKey,
                         "signature": key.signature})

    def _on_message(self, peer: PeerId, message: Message) -> None:
        """A message from ``peer`` on its mesh link: a barrier's ``MeshReady``, else the session's."""
        if isinstance(message, RaceKey):
            self._log_key(peer, message)
        if isinstance(message, MeshReady):
            self.ready.setdefault(message.round, set()).add(peer)
        elif self._session is not None:
            with self.budget.part(CostPart.MESSAGES):
                actions = self._session.receive(peer, message, self.clock.now_ms())
            self._route(actions)
            if self.spectators is not None:  # a room without spectators skips this, as ``_route`` does
                self._to_spectators(self.spectate.observe_message(peer, message))

    # ---- actions -----------------------------------------------------------------------------------

    def _route(self, actions: list[RaceAction]) -> None:
        """Carry out a session's actions in order (every kind has its handler: a new kind is a type error);
        what they mean to spectators goes to their queues first."""
        if self.spectators is not None and self._session is not None:  # a room without spectators skips this
            self._to_spectators(self.spectate.observe(self.me, actions, self._session.vote_state))
        for action in actions:
            match action:
                case FrameConfirmed():
                    self._confirmed(action)
                case Send():
                    self._send(action)
                case ChecksumVoted() | DesyncDetected() | PeerLeft() | PeerLost() | PeerRejoined() | AnchorReached():
                    self._event(action)
                case VoteDecided():
                    self._vote(action)
                case WriteState():
                    self._write_state(action)
                case DesyncRecord():
                    self._desync(action)
                case RoundEnded():
                    self._round_ended(action)
                case AnchorDecided():
                    self._anchor(action)
                case SessionEnded():
                    self._ended(action)
                case Misbehaviour():
                    self._misbehaviour(action)
                case InputsDropped():
                    self._inputs_dropped(action)
                case CaughtUp():
                    self._caught_up(action)
                case CloseLink():
                    self._close(action)
                case _:
                    assert_never(action)

    def _send(self, action: Send) -> None:
        self._tick_sends.send(action.peer, action.message)

    def _event(self, event: RaceEvent) -> None:
        """A user-visible race event: told with the round it happened in (``InRound``)."""
        if isinstance(event, PeerLeft):
            data = event.data()
            self.report.leaves.append({"node": self.me, **data})
            self._leave_reasons[event.peer] = data["reason"]
        self.events.emit(InRound(self.round_index, event))

    def _confirmed(self, action: FrameConfirmed) -> None:
        for confirmed in action.inputs:
            if confirmed.signed is not None:
                self._last_signed[confirmed.peer] = action.frame
        self.log.append({
            "kind": "frame", "round": self.round_index, "frame": action.frame,
            "inputs": [[i.slot, i.peer, [list(e) for e in i.events], *i.proof] for i in action.inputs],
        })
        if action.frame % 60 == 59:
            self.log.flush()

    def _vote(self, action: VoteDecided) -> None:
        if action.kind is VoteKind.AGREED:
            self.report.agreed += 1
        else:
            self.report.disagreements += 1
        self.log.append({
            "kind": "checksum", "round": self.round_index, "frame": action.frame, "result": action.kind.value,
            "hashes": {p: h.hex() for p, h in action.hashes.items()}, "dissenters": list(action.dissenters),
        })

    def _write_state(self, action: WriteState) -> None:
        path = self._state_dir / f"round{self.round_index}-frame{action.frame}.state"
        write_state_file(path, match_id=self.locked.match_id, round_index=self.round_index, frame=action.frame,
                         node=self.me, fields=self.world.field_names(), state=action.state)
        self.log.append({"kind": "state-file", "round": self.round_index, "frame": action.frame, "path": str(path),
                         "reason": action.reason})
        self.events.emit(StateSaved(round=self.round_index, frame=action.frame, path=str(path)))

    def _desync(self, action: DesyncRecord) -> None:
        self.log.append({"kind": "desync", "round": self.round_index, "event": action.event})

    def _round_ended(self, action: RoundEnded) -> None:
        self.round_over = True
        slots = self.locked.slots(self.round_index)
        quits = {p: Quit(self._last_signed.get(p, -1) + 1, self._leave_reasons[p])
                 for p in self.locked.roster if p != self.me and self.session.status(p) is PeerStatus.REMOVED}
        standings = round_standings(self.world, slots, quits)
        limit = self.locked.config.rounds[self.round_index].duration_limit_s * 60
        self.report.rounds.append({"round": self.round_index, "frame": action.frame, "standings": standings,
                                   "result": round_result(standings, slots, limit)})
        self.log.append({"kind": "round-end", "round": self.round_index, "frame": action.frame,
                         "stateHash": self.world.state_hash().hex(), "standings": standings})
        self.log.flush()  # fsynced off the loop when the pump stops (``_round``)
        self.events.emit(RoundEnd(round=self.round_index, frame=action.frame, standings=standings))
        self._to_spectators(self.spectate.round_ended(action.frame, {p: q.reason for p, q in quits.items()}))

    def _anchor(self, action: AnchorDecided) -> None:
        self.anchor_done.set()
        self.log.append({"kind": "anchor", "round": action.round_index, "event": action.event})

    def _ended(self, action: SessionEnded) -> None:
        reason = action.reason.value
        self.report.outcome, self.report.detail = reason, action.detail
        self.log.append({"kind": "session-end", "round": self.round_index, "reason": reason, "detail": action.detail})
        self.events.emit(SessionEnd(round=self.round_index, reason=reason, detail=action.detail))
        self._to_spectators(self.spectate.end(_spectators_told(reason)))

    def _inputs_dropped(self, action: InputsDropped) -> None:
        """Inputs set aside without blame: logged (the session counts them). While this node waits for a
        snapshot every input is set aside by design (the snapshot replaces those frames): debug level."""
        level = log.debug if action.reason == "race-input-catching-up" else log.info
        level("race-inputs-dropped", peer=action.peer, reason=action.reason, frames=list(action.frames))

    def _misbehaviour(self, action: Misbehaviour) -> None:
        log.warning("race-misbehaviour", peer=action.peer, code=action.code)

    def _caught_up(self, action: CaughtUp) -> None:
        """The world now holds a snapshot a quorum vouched for; replay restarts from the same bytes."""
        self.log.append({"kind": "caught-up", "round": self.round_index, "frame": action.frame,
                         "stateHash": action.state_hash.hex(), "state": self.world.save_state()})
        self.events.emit(CaughtUpFrom(round=self.round_index, frame=action.frame, resume_frame=action.resume_frame))

    def _close(self, action: CloseLink) -> None:
        """The session closes the link (a stalled peer, a rejoin refused): the mesh dials again, and the
        session's rejoin rules decide what the new link is worth."""
        log.info("race-close-link", peer=action.peer, code=action.code)
        self.mesh.close(action.peer, action.code, "the race session closed this link")

    def _to_spectators(self, sends: list[Send]) -> None:
        """Queue the source's messages for the spectators (never waits; a full queue drops a spectator)."""
        if self.spectators is not None and sends:
            self.spectators.deliver(sends)

    def _finish(self, end: dict[str, Any]) -> None:
        """Runs however the match ends: the log always closes with its end record."""
        results = [r.pop("result") for r in self.report.rounds if "result" in r]
        if results:
            self.report.standings = match_standings(results)
            self.log.append({"kind": "match-end", "outcome": self.report.outcome, "standings": self.report.standings})
            self.events.emit(MatchEnd(results=self.report.standings, outcome=self.report.outcome))
        self.log.append(end)
        self.log.close()


def _spectators_told(outcome: str) -> SpectateEndReason:
    """What a source's spectators are told when its match ends with ``outcome``: a race-wide end is
    theirs too; an end of this racer alone (it left, was voted out, could not catch up) is not, and
    sends them to another source."""
    race_wide = {"finished": SpectateEndReason.MATCH_END, SessionEndReason.CONSENSUS_INVALID: SpectateEndReason.CONSENSUS_INVALID,
                 SessionEndReason.PARTITION_VOID: SpectateEndReason.PARTITION_VOID}
    return race_wide.get(outcome, SpectateEndReason.SOURCE_UNAVAILABLE)


def _stopped_by(exc: BaseException) -> dict[str, Any]:
    """The end record of a match that an exception stopped: a stop signal (whatever exception it
    surfaced as, usually ``Cancelled``), a cancellation from within the program, or an error."""
    why = received()
    if why is not None:
        return end_record(EndReason(why))
    if isinstance(exc, BaseExceptionGroup):  # a nursery's: its first error, unless it holds only Cancelled
        exc = first_coded(exc, (Exception, KeyboardInterrupt)) or exc
    if isinstance(exc, KeyboardInterrupt):
        return end_record(EndReason.INTERRUPTED)
    if isinstance(exc, (trio.Cancelled, BaseExceptionGroup)):
        return end_record(EndReason.CANCELLED)
    return end_record(EndReason.ERROR, detail=f"{type(exc).__name__}: {exc}"[:500])
