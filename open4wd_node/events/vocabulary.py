"""Everything a node tells its user, typed: the shell's events beside the room's and the race's.

One frozen dataclass per event, as the cores' own (``protocol.room.events``, the race's in
``protocol.race.actions``): ``EVENT`` is the stable ``--json`` event name and ``data()`` the event's JSON
keys, in the order the stream prints them. Where two views of one event differ (a racer's ``result`` and
a spectator's, a racer's ``session-end`` with its round and a spectator's without), the key the other
view never had is ``None`` and left out, as the room's ``member-left`` does. A race session's events
reach the user with the round they happened in (``InRound``). docs/node.md, "Events", lists every event
with its keys, and a test holds that list to these classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias, get_args

from protocol.actions import UserEvent
from protocol.identity.keys import PeerId
from protocol.race.actions import RaceEvent
from protocol.room.events import RoomEvent

Row: TypeAlias = dict[str, Any]
"""One standings row, one leave, one car: JSON objects the node builds (docs/node.md, "Standings")."""


def _without_none(event: UserEvent, *optional: str) -> dict[str, Any]:
    """``event``'s data without each key of ``optional`` whose value is None (a view that never has it)."""
    return {key: value for key, value in UserEvent.data(event).items() if not (key in optional and value is None)}


# ---- the node's listener and its room -------------------------------------------------------------

@dataclass(frozen=True)
class AdvertiseGuessed(UserEvent):
    """The node listens on a wildcard (``listen``) and tells peers ``address``, a guess from ``source``."""

    EVENT = "advertise"
    address: str
    listen: str
    source: str


@dataclass(frozen=True)
class AdvertiseUnreachable(UserEvent):
    """A joiner announces the loopback ``address`` to a host on another machine (``room_host``)."""

    EVENT = "advertise-unreachable"
    address: str
    room_host: str


@dataclass(frozen=True)
class RoomCreated(UserEvent):
    """The room ``room_id`` is open: its participant invitation ``invite``, every role's in ``invites``,
    the ``host``'s PeerId, where it listens and the contact it announces (``advertise``)."""

    EVENT = "room-created"
    room_id: str
    invite: str
    invites: dict[str, str]
    host: PeerId
    listen: str
    advertise: str


@dataclass(frozen=True)
class RoomHosted(UserEvent):
    """This node took over the room ``room_id`` as its new host, listening at ``listen``."""

    EVENT = "room-hosted"
    room_id: str
    listen: str


@dataclass(frozen=True)
class NoticeShown(UserEvent):
    """A pre-race notice of ``kind`` (computed locally, never sent), in words."""

    EVENT = "notice"
    kind: str
    text: str


@dataclass(frozen=True)
class AssetFetched(UserEvent):
    """The asset ``content_id`` (``bytes`` long) arrived from ``peer`` and was admitted."""

    EVENT = "asset-fetched"
    content_id: str
    peer: PeerId
    bytes: int


# ---- the race ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LogOpened(UserEvent):
    """This node's race log for the match is at ``path``."""

    EVENT = "log"
    path: str


@dataclass(frozen=True)
class RaceStarted(UserEvent):
    """Round ``round`` starts; this node drives from start slot ``slot`` among ``roster``."""

    EVENT = "race-start"
    round: int
    slot: int
    roster: list[PeerId]


@dataclass(frozen=True)
class Lagging(UserEvent):
    """At ``frame`` of ``round`` this node is ``frames`` behind the clock."""

    EVENT = "lag"
    round: int
    frame: int
    frames: int


@dataclass(frozen=True)
class Progress(UserEvent):
    """Once a second of race: the frame, the pump's lag, CPU per frame so far, the deepest rollback since
    the last one and this round's rollbacks so far (the soak's curves and hang watch)."""

    EVENT = "progress"
    round: int
    frame: int
    lag: int
    cpu_us: float
    rollback: int
    rollbacks: int


@dataclass(frozen=True)
class StateSaved(UserEvent):
    """After a vote mismatch, the state of ``frame`` was saved to ``path``."""

    EVENT = "state-saved"
    round: int
    frame: int
    path: str


@dataclass(frozen=True)
class CaughtUpFrom(UserEvent):
    """This node loaded a peer's snapshot of ``frame`` and races again from ``resume_frame``."""

    EVENT = "caught-up"
    round: int
    frame: int
    resume_frame: int


@dataclass(frozen=True)
class RoundEnd(UserEvent):
    """Round ``round`` ended at ``frame`` with ``standings``."""

    EVENT = "round-end"
    round: int
    frame: int
    standings: list[Row]


@dataclass(frozen=True)
class MatchEnd(UserEvent):
    """The match ended (``outcome``) with the match standings ``results``."""

    EVENT = "match-end"
    results: list[Row]
    outcome: str


@dataclass(frozen=True)
class SessionEnd(UserEvent):
    """The race (a racer's, in ``round``) or the watching (a spectator's: no ``round``) ended for this
    node: ``reason`` and ``detail``."""

    EVENT = "session-end"
    round: int | None
    reason: str
    detail: str

    def data(self) -> dict[str, Any]:
        """``round`` (a racer's), ``reason``, ``detail``."""
        return _without_none(self, "round")


@dataclass(frozen=True)
class FaultFired(UserEvent):
    """A fault this node was asked to suffer fired after ``frame`` (``seconds``: for one that lasts)."""

    EVENT = "fault"
    kind: str
    frame: int
    seconds: float | None = None

    def data(self) -> dict[str, Any]:
        """``kind``, ``frame``, and ``seconds`` for a fault that lasts."""
        return _without_none(self, "seconds")


@dataclass(frozen=True)
class ControlApiListening(UserEvent):
    """With ``--driver external``: the control API serves at ``host:port``."""

    EVENT = "control-api"
    host: str
    port: int


@dataclass(frozen=True)
class MatchResult(UserEvent):
    """This node's summary once its match ended. A racer's has ``disagreements``, ``leaves`` and its
    figures from ``max_lag`` to ``cpu``; a spectator's has ``mismatches``, ``sources`` and ``frames``."""

    EVENT = "result"
    peer: PeerId
    outcome: str
    detail: str
    agreed_hashes: int
    disagreements: int | None = None
    leaves: list[Row] | None = None
    mismatches: int | None = None
    standings: list[Row] | None = None
    log: str | None = None
    max_lag: int | None = None
    ticks: int | None = None
    rollbacks: int | None = None
    max_rollback: int | None = None
    drops: dict[str, int] | None = None
    liveness: dict[str, int] | None = None
    cpu: dict[str, Any] | None = None
    sources: list[PeerId] | None = None
    frames: int | None = None

    VIEW_KEYS = ("disagreements", "leaves", "mismatches", "max_lag", "ticks", "rollbacks", "max_rollback", "drops",
                 "liveness", "cpu", "sources", "frames")

    def data(self) -> dict[str, Any]:
        """The keys of this view (a racer's or a spectator's), in order."""
        return _without_none(self, *self.VIEW_KEYS)


# ---- a spectator ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SpectateStarted(UserEvent):
    """Watching match ``match_id`` through the source racer ``source`` (its ``source_epoch``)."""

    EVENT = "spectate-start"
    match_id: str
    source: PeerId
    source_epoch: int


@dataclass(frozen=True)
class ViewCheckpoint(UserEvent):
    """The viewer loaded the checkpoint of ``frame``: from the source, or again after a hash mismatch."""

    EVENT = "checkpoint"
    round: int
    frame: int
    reason: str


@dataclass(frozen=True)
class ViewFrame(UserEvent):
    """Once a second: the frame shown, the frames buffered and the buffer's target."""

    EVENT = "frame"
    round: int
    frame: int
    buffered: int
    target: int


# ---- views ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CarPlaces(UserEvent):
    """``--cars-events``: every car's place on the route at ``frame`` of ``round``."""

    EVENT = "cars"
    round: int
    frame: int
    cars: list[Row]


@dataclass(frozen=True)
class LivePage(UserEvent):
    """``--web``: the live page is served at ``url``."""

    EVENT = "live-page"
    url: str


# ---- the signaling daemon -------------------------------------------------------------------------

@dataclass(frozen=True)
class SignalListening(UserEvent):
    """The signaling service serves at ``address`` (metrics at ``metrics``), with its TURN URLs and CORS origins."""

    EVENT = "signal-listening"
    address: str
    metrics: str | None
    turn: list[str]
    cors: list[str]


@dataclass(frozen=True)
class SignalDraining(UserEvent):
    """A stop ``signal``: the service refuses anything new and drains for up to ``grace_s``."""

    EVENT = "signal-draining"
    signal: str
    sockets: int
    peers: int
    grace_s: float


@dataclass(frozen=True)
class SignalDrained(UserEvent):
    """The service drained; it closed ``closed`` sockets."""

    EVENT = "signal-drained"
    closed: int


@dataclass(frozen=True)
class HostileDeclared(UserEvent):
    """The soak's hostile room member declared Ready with its refused car, the ``count``-th time."""

    EVENT = "hostile-declared"
    count: int


@dataclass(frozen=True)
class HostileRejoin(UserEvent):
    """The hostile member's stay in the room ended (removed, or the room went on): ``joined`` whether it got
    in, with the ``reason`` it was turned away or the Readys it ``declared`` in the stay."""

    EVENT = "hostile-rejoin"
    joined: bool
    reason: str | None = None
    declared: int | None = None

    def data(self) -> dict[str, Any]:
        """``joined``, then ``reason`` (turned away) or ``declared`` (a stay that ended)."""
        return _without_none(self, "reason", "declared")


@dataclass(frozen=True)
class LinkPathFound(UserEvent):
    """A link to ``peer`` opened: how it is connected (``path``: ``host``, ``srflx``, ``prflx`` or ``relay``;
    a TCP link is ``host``; ``relay`` is a WebRTC link through TURN) and its opening round trip (``rtt_ms``)."""

    EVENT = "link-path"
    peer: PeerId
    path: str
    rtt_ms: float | None


ShellEvent: TypeAlias = (
    AdvertiseGuessed | AdvertiseUnreachable | RoomCreated | RoomHosted | NoticeShown | AssetFetched | LogOpened
    | RaceStarted | Lagging | Progress | StateSaved | CaughtUpFrom | RoundEnd | MatchEnd | SessionEnd | FaultFired
    | ControlApiListening | MatchResult | SpectateStarted | ViewCheckpoint | ViewFrame | CarPlaces | LivePage
    | SignalListening | SignalDraining | SignalDrained
    | HostileDeclared | HostileRejoin | LinkPathFound
)
"""Every event the shell itself reports."""


@dataclass(frozen=True)
class InRound:
    """A race session's event as the node tells it: ``round`` first, then the event's own keys (a racer's
    and a spectator's ``checksum``, and every other race event)."""

    round: int
    event: RaceEvent

    @property
    def EVENT(self) -> str:  # noqa: N802 - the name every event's JSON name has
        """The race event's name."""
        return self.event.EVENT

    def data(self) -> dict[str, Any]:
        """``round``, then the race event's keys (``anchor`` names its own round, the same)."""
        return {"round": self.round, **self.event.data()}


NodeEvent: TypeAlias = RoomEvent | ShellEvent | InRound
"""Everything an ``EventSink`` is told."""

EVENT_CLASSES: tuple[type[UserEvent], ...] = (*get_args(RoomEvent), *get_args(RaceEvent), *get_args(ShellEvent))
"""Every event class a node's user may see: the room's, the race's and the shell's."""
