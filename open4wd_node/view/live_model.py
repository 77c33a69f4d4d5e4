"""What a node's live view shows: gathered from its events, and read from the round being raced.

The match runner hands over a ``RoundWatch`` at each round start and the view reads it at its own pace
(at most 4 times a second, ``live_console``), so the 60 Hz frame pump pays nothing per frame for the
view: no copy, no callback. Everything here is plain data; ``live_render`` draws it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from open4wd_node.events.text import short
from open4wd_node.view.race_picture import RacePicture, world_picture
from open4wd_node.view.room_view import RoomSummary, summarize
from open4wd_node.events.round_watch import CpuReading, RaceProgress, RoundWatch
from protocol.race.peers import PeerStatus
from protocol.race.results import Quit, RaceStatus, rank_with_quits
from protocol.identity.keys import PeerId

if TYPE_CHECKING:
    from protocol.room.member import MemberRoom

NOTICES_SHOWN = 4


class CarStatus(str, Enum):
    """A car in the live table: the round's final ``RaceStatus`` words, plus what a running round shows."""

    RACING = "racing"
    FINISHED = "finished"
    DNF = "DNF"
    DISABLED = "disabled"  # broken down: on the track, its skills blocked
    RETIRED = "retired"  # out of the physics
    RECONNECTING = "reconnecting"  # link lost; predicted until it is back or the window closes
    LEFT = "left"
    DESYNC = "desync"


FINAL = {RaceStatus.FINISHED: CarStatus.FINISHED, RaceStatus.DNF: CarStatus.DNF, RaceStatus.LEFT: CarStatus.LEFT,
         RaceStatus.DESYNC: CarStatus.DESYNC}
CAR_STATES = {"racing": CarStatus.RACING, "disabled": CarStatus.DISABLED, "retired": CarStatus.RETIRED,
              "finished": CarStatus.FINISHED}
OWN_END = {"persistent-desync": CarStatus.DESYNC, "left": CarStatus.LEFT}  # this node's session-end reasons


@dataclass(frozen=True)
class CarLine:
    """One car's row in the live race table."""

    position: int
    peer: str
    slot: int
    name: str
    lap: int  # the lap being driven (the last one once finished)
    laps: int
    progress_pct: int  # of the whole race distance
    status: CarStatus
    me: bool


@dataclass(frozen=True)
class VoteLine:
    """The newest checksum vote this node decided."""

    frame: int
    agreed: bool
    outvoted: tuple[str, ...]  # minority PeerIds (empty: agreed, or no strict majority)


@dataclass(frozen=True)
class RaceLine:
    """The race as the live view shows it now: the header's figures and one row per car."""

    round_index: int
    rounds: int
    frame: int
    lag: int
    rollbacks: int
    vote: VoteLine | None
    over: bool  # the round ended: statuses are the final ones
    cars: tuple[CarLine, ...]
    cpu: BudgetLine | None = None  # a racer's CPU budget (a spectator shows none)
    picture: RacePicture | None = None  # the track from above with every car, for a terminal and the live page


@dataclass(frozen=True)
class BudgetLine:
    """This node's CPU per frame so far and the parts that take most of it (the budget line)."""

    per_frame_us: float
    shares: tuple[tuple[str, float], ...]  # (part, percent), largest first, parts under 1 % left out
    frames_per_tick: int = 1  # the pump's: a node that wakes every N frames spends less per frame


def car_label(car: CarLine) -> str:
    """A car as the views name it: short PeerId, nickname, and ``(you)`` for this node's."""
    return " ".join(part for part in (short(car.peer), car.name, "(you)" if car.me else "") if part)


def budget_line(reading: CpuReading, frames_per_tick: int = 1) -> BudgetLine:
    """The budget line of a CPU reading: its parts by share, largest first, those under 1 % left out."""
    shares = sorted(((part, pct) for part, pct in reading.shares().items() if pct >= 1), key=lambda item: -item[1])
    return BudgetLine(reading.per_frame_us(), tuple(shares), frames_per_tick)


def progress_pct(laps_done: int, progress_um: int, laps: int, lap_um: int) -> int:
    """Share of the race distance driven, 0..100 (integer: the view never needs more)."""
    return min(100, (laps_done * lap_um + progress_um) * 100 // max(1, laps * lap_um))


class LiveBoard:
    """Collects what the view shows. Every update is O(1) (or O(members) on a room change); the rows are
    computed only when the view draws."""

    def __init__(self, me: PeerId) -> None:
        self.me = me
        self.member: MemberRoom | None = None
        self.notices: list[str] = []
        self.countdown_deadline_ms: int | None = None
        self.watch: RoundWatch | None = None
        self.vote: VoteLine | None = None
        self.quits: dict[PeerId, Quit] = {}  # this round's leavers, at the frame this node heard of it
        self.final_rows: list[dict[str, Any]] | None = None  # the watched round's round-end standings
        self.own_end: str | None = None  # this node's session-end reason
        self._names: dict[str, str] = {}

    # ---- updates ---------------------------------------------------------------------------------

    def room_changed(self, member: MemberRoom) -> None:
        """The room to show is this member machine's."""
        self.member = member

    def watch_round(self, watch: RoundWatch) -> None:
        """From now on show this round (cars named by their room nicknames)."""
        if self.member is not None and self.member.state is not None:
            self._names = {m.peerId: m.nickname for m in self.member.state.members}
        self.watch, self.final_rows, self.quits = watch, None, {}

    def on_event(self, event: str, data: Mapping[str, Any]) -> None:
        """Keep what the view shows from one event (notices, the countdown, votes, leaves, results)."""
        if event == "notice":
            self.notices = (self.notices + [f"[{data['kind']}] {data['text']}"])[-NOTICES_SHOWN:]
        elif event == "countdown":
            self.countdown_deadline_ms = data["deadline_ms"]
        elif event == "checksum":
            self.vote = VoteLine(data["frame"], data["agreed"], ())
        elif event == "desync":
            self.vote = VoteLine(data["frame"], False, tuple(data["peers"]))
        elif event == "leave" and self.watch is not None:
            # the runner ranks by the leaver's last signed input; its finish after this frame is not shown
            self.quits[data["peer"]] = Quit(self.watch.session.current_frame, data["reason"])
        elif event == "round-end" and self.watch is not None and data["round"] == self.watch.round_index:
            self.final_rows = data["standings"]
        elif event == "session-end":
            self.own_end = data["reason"]

    # ---- what the view draws ---------------------------------------------------------------------

    def room(self) -> RoomSummary | None:
        """The room's rows, or None before the room's first state."""
        return None if self.member is None else summarize(self.member)

    def countdown_s(self, now_ms: int) -> int | None:
        """Whole seconds until the locked start's countdown ends (None before the start is locked)."""
        if self.countdown_deadline_ms is None:
            return None
        return max(0, -(-(self.countdown_deadline_ms - now_ms) // 1000))

    def race(self) -> RaceLine | None:
        """The watched round now (its final standings once it ended), or None before the first round."""
        watch = self.watch
        if watch is None:
            return None
        session, world = watch.session, watch.world
        if self.final_rows is not None:
            rows = self.final_rows
        else:
            quits = {peer: quit for peer, quit in self.quits.items() if session.status(peer) is PeerStatus.REMOVED}
            peer_of = {slot: peer for peer, slot in watch.slots.items()}
            rows = [dict(row, peer=peer_of[row["slot"]]) for row in rank_with_quits(world.standings(), watch.slots, quits)]
        laps, lap_um = world.track.laps_to_finish, world.route.length_um
        cars = tuple(
            CarLine(row["rank"], row["peer"], row["slot"], self._names.get(row["peer"], ""),
                    min(row["laps"] + 1, laps), laps, progress_pct(row["laps"], row["progress_um"], laps, lap_um),
                    self._status(row, session), row["peer"] == self.me)
            for row in rows
        )
        picture = world_picture(world, watch.round_index, {car.slot: car_label(car) for car in cars},
                                {car.slot: car.position for car in cars}, watch.slots.get(self.me))
        return RaceLine(watch.round_index, watch.rounds, session.current_frame, watch.pump.lag,
                        watch.earlier_rollbacks + session.stats.rollbacks, self.vote, self.final_rows is not None, cars,
                        None if watch.cpu is None else budget_line(watch.cpu(), watch.pump.frames_per_tick), picture)

    def _status(self, row: Mapping[str, Any], session: RaceProgress) -> CarStatus:
        status = RaceStatus(row["status"])
        if row["peer"] == self.me and self.own_end in OWN_END:
            return OWN_END[self.own_end]
        if self.final_rows is not None or status is not RaceStatus.DNF:
            return FINAL[status]
        if session.status(row["peer"]) in (PeerStatus.LOST, PeerStatus.REJOINING):
            return CarStatus.RECONNECTING
        return CAR_STATES[row["car"]]
