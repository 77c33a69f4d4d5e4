"""An in-memory star network for the sans-IO room machines: routes actions, keeps a clock."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from protocol.actions import UserEvent
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.room.invitation import new_room_id, new_secret, parse_secret
from protocol.room.actions import CloseLink, FetchAssets, HostSuccession, MatchStarted, Misbehaviour, RelayedIn, Send
from protocol.room.config import MatchConfig, RoomLimits
from protocol.room.host import HostRoom
from protocol.room.member import MemberRoom
from protocol.versions.record import node_version_info
from protocol.encoding.wire import decode_message, encode_message

LOADOUT = {"chassis": "builtin:chassis-01", "body": "builtin:body-01", "motor": "builtin:motor-01",
           "battery": "builtin:battery-01", "tires": {k: "builtin:tire-01" for k in ("FL", "FR", "RL", "RR")},
           "rollers": {}}


class FakeAssets:
    """Loadouts are dicts whose values are refs; a ref containing 'unusable' is blocked."""

    def __init__(self, have: set[str] | None = None) -> None:
        self.have = have

    def track_digests(self, config: MatchConfig) -> list[str]:
        return [hashlib.sha256(r.track_ref.encode()).hexdigest() for r in config.rounds]

    def rotation_refs(self, rotation: list[Any]) -> list[str]:
        refs = []
        for car in rotation:
            if not isinstance(car, dict) or set(car) != set(LOADOUT):
                raise ProtocolError("loadout-structure", "malformed loadout")
            refs += [v for v in car.values() if isinstance(v, str)] + list(car["tires"].values())
        return refs

    def check_rotation(self, peer: str, rotation: list[Any]) -> None:
        for ref in self.rotation_refs(rotation):
            if "unusable" in ref:
                raise ProtocolError("asset-version-unusable", f"asset-version-unusable:{ref}")
        if self.missing_assets(self.rotation_refs(rotation)):
            raise ProtocolError("asset-missing", "a car uses an asset this node does not hold")

    def missing_assets(self, refs: list[str]) -> list[str]:
        """As the node's: a built-in ref is never missing."""
        return [] if self.have is None else [r for r in refs if r not in self.have and not r.startswith("builtin:")]


@dataclass
class Net:
    host_id: Identity
    rounds: int = 1
    now: int = 1_000_000
    min_players: int = 2
    max_players: int = 8
    max_spectators: int = 4
    events: dict[str, list[UserEvent]] = field(default_factory=dict)
    faults: dict[str, list[Misbehaviour]] = field(default_factory=dict)  # by the node that blamed a peer
    started: dict[str, MatchStarted] = field(default_factory=dict)
    closed: list[tuple[str, str]] = field(default_factory=list)
    fetches: list[FetchAssets] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)
    deaf: dict[str, tuple[type, ...]] = field(default_factory=dict)  # member -> message types it ignores
    rewrite: dict[str, Callable[[Any], Any]] = field(default_factory=dict)  # member -> what it sends instead (None: nothing)

    def __post_init__(self) -> None:
        self.room_id = new_room_id()
        self.secrets = {"participant": new_secret(), "spectator": new_secret()}
        config = MatchConfig.uniform("builtin:track-01", self.rounds)
        self.host = HostRoom(
            self.host_id, self.room_id, config, RoomLimits(self.min_players, self.max_players, self.max_spectators),
            {k: parse_secret(v) for k, v in self.secrets.items()}, FakeAssets().track_digests(config), self.now,
        )
        self.members: dict[str, MemberRoom] = {}
        self.host_member = self.add_member(self.host_id, link=False)
        self.route(self.host_member.receive(self.host_id.peer_id, self.host.state_message(), self.now), self.host_id.peer_id)

    def add_member(self, identity: Identity, *, role="participant", info=None, assets=None, auto_ready=True,
                   secret: str | None = None, link=True, rotation=None) -> MemberRoom:
        member = MemberRoom(
            identity, self.room_id, self.host_id.peer_id, role, info or node_version_info("sim_core/1", 1, 0, "t"),
            assets or FakeAssets(), choose_car=lambda rounds: [LOADOUT] * rounds if rotation is None else rotation,
            auto_ready=auto_ready, nickname=identity.peer_id[-4:],
        )
        self.members[identity.peer_id] = member
        if link:
            transcript = hashlib.sha256(b"link" + identity.public_key).digest()
            request = member.join_request(transcript, parse_secret(secret or self.secrets[role]))
            self.route(self.host.join(identity.peer_id, transcript, self._wire(request), self.now), None)
        return member

    @staticmethod
    def _wire(message):
        return decode_message(encode_message(message))  # everything crosses a real msgpack encoding

    def route(self, actions: list[Any], source: str | None) -> None:
        """Deliver actions until quiet; ``source`` is the member whose actions these are (None = host)."""
        queue = [(source, a) for a in actions]
        while queue:
            origin, action = queue.pop(0)
            if isinstance(action, Send):
                if origin is None:  # host -> member
                    member = self.members.get(action.peer)
                    ignored = isinstance(action.message, self.deaf.get(action.peer, ()))
                    if member is not None and action.peer not in self.gone and not ignored:
                        replies = member.receive(self.host_id.peer_id, self._wire(action.message), self.now)
                        queue += [(action.peer, a) for a in replies]
                else:  # member -> host
                    message = self.rewrite[origin](action.message) if origin in self.rewrite else action.message
                    if origin not in self.gone and message is not None:
                        queue += [(None, a) for a in self.host.receive(origin, self._wire(message), self.now)]
            elif isinstance(action, UserEvent):
                self.events.setdefault(origin or "host", []).append(action)
            elif isinstance(action, Misbehaviour):
                self.faults.setdefault(origin or "host", []).append(action)
            elif isinstance(action, MatchStarted):
                self.started[origin] = action
            elif isinstance(action, CloseLink):
                self.closed.append((action.peer, action.code))
            elif isinstance(action, FetchAssets):
                self.fetches.append(action)
            elif isinstance(action, (RelayedIn, HostSuccession)):
                pass
            else:
                raise AssertionError(f"a room machine returned an unknown action {action!r}")

    def advance(self, ms: int) -> None:
        self.now += ms
        self.route(self.host.tick(self.now), None)
        for peer, member in self.members.items():
            self.route(member.tick(self.now), peer)

    def drop(self, peer: str) -> None:
        self.gone = self.gone | {peer}
        self.route(self.host.link_closed(peer, self.now), None)

    def of(self, peer: str | None, event: str) -> list[dict]:
        """The JSON data of every ``event`` that ``peer`` (None: the host machine) reported."""
        return [e.data() for e in self.events.get(peer or "host", []) if e.EVENT == event]

    def blamed(self, peer: str | None) -> list[tuple[str, str]]:
        """(blamed peer, code) of every ``Misbehaviour`` that ``peer`` (None: the host machine) reported."""
        return [(m.peer, m.code) for m in self.faults.get(peer or "host", [])]


def succeed(net: Net, successor: Identity, others: list[Identity], *, auto_ready: bool = True) -> Net:
    """After the host is lost: the successor hosts from the last room state; the others re-join it."""
    old = net.members[successor.peer_id]
    (succession,) = [a for a in old.host_lost(net.now) if isinstance(a, HostSuccession)]
    assert succession.successor == successor.peer_id
    new = Net.__new__(Net)
    new.__dict__.update(net.__dict__)
    new.events, new.faults, new.started, new.closed, new.fetches, new.gone, new.deaf, new.rewrite = (
        {}, {}, {}, [], [], set(), {}, {})
    new.host_id = successor
    new.host = HostRoom.succeed(
        successor, succession.state, net.host_id.peer_id, parse_secret(net.secrets["participant"]),
        FakeAssets().track_digests(MatchConfig.from_wire(succession.state.matchConfig)), net.now,
    )
    new.members = {}
    new.host_member = new.add_member(successor, link=False, auto_ready=auto_ready)
    new.route(new.host_member.receive(successor.peer_id, new.host.state_message(), new.now), successor.peer_id)
    for other in others:
        new.add_member(other, auto_ready=auto_ready)
    return new


def fetching_room(a: Identity, b: Identity, c: Identity, body: str) -> Net:
    """``a`` hosts and ``b`` joins, both holding only the built-in assets and Ready before a third player
    arrives; ``c`` joins with a custom car whose ``body`` they must fetch: the room is in ``verifying``."""
    have = set(FakeAssets().rotation_refs([LOADOUT]))
    net = Net(a, min_players=3)
    net.host_member.assets = FakeAssets(set(have))
    net.add_member(b, assets=FakeAssets(set(have)))
    for peer in (a.peer_id, b.peer_id):
        net.route(net.members[peer].declare_ready(net.now), peer)
    assert all(m.declaration for m in net.host.members.values())
    net.add_member(c, rotation=[dict(LOADOUT, body=body)])
    assert net.host.phase == "verifying"
    return net
