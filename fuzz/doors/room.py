"""The room: the host machine fed one joiner's link (its join request, then anything), and a member
machine fed its host's link, over the node's real asset checks (built-ins admitted, a temporary store).

The scene is fixed (room id, secrets, identities, the link transcript), so a recorded room replays
exactly and the joiner's role proof in a seed stays valid while the fuzzer mutates what follows it.
``play`` runs the whole honest room once: the seeds are what each side sent there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from fuzz.harness import Target, coded, frames, scratch_dir
from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.assets.store import AssetStore
from open4wd_node.runtime.build_info import own_version_info
from open4wd_node.runtime.config import DEFAULTS
from protocol.actions import Send
from protocol.encoding.wire import Message, decode_message, encode_message
from protocol.identity.keys import Identity
from protocol.room.config import MatchConfig, RoomLimits
from protocol.room.host import HostRoom
from protocol.room.invitation import parse_secret
from protocol.room.member import MemberRoom
from protocol.room.messages import JoinRequest
from protocol.room.states import Role
from sim_core.assets.demo_round import archetype_loadout

HOST_ID, JOINER_ID = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)
ROOM_ID = "00000000-0000-4000-8000-000000000018"
SECRETS = {"participant": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "spectator": "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"}
TRANSCRIPT = bytes(range(32))
START_MS = 1_000_000
STEP_MS = 250  # between two fuzzed messages: the room's timers (countdown, grid phase) get to fire


@functools.cache
def room_assets() -> NodeRoomAssets:
    """The node's room checks over an empty store of its own (one per process; a fuzzed member may
    fetch nothing into it: fetching is the shell's, not the machine's)."""
    store = AssetStore(scratch_dir("room") / "assets")
    return NodeRoomAssets(store, DEFAULTS)


def new_host() -> HostRoom:
    """The scene's host: one round on the first built-in track, two to four players."""
    config = MatchConfig.uniform("builtin:track-01", 1)
    return HostRoom(HOST_ID, ROOM_ID, config, RoomLimits(2, 4, 2), {k: parse_secret(v) for k, v in SECRETS.items()},
                    room_assets().track_digests(config), START_MS, nickname="host")


def new_member(identity: Identity) -> MemberRoom:
    """A participant of the scene with the speed archetype's car, Ready as soon as it may be."""
    return MemberRoom(identity, ROOM_ID, HOST_ID.peer_id, Role.PARTICIPANT, own_version_info(DEFAULTS.economy_config_version),
                      room_assets(), choose_car=lambda rounds: [archetype_loadout(1)] * rounds, auto_ready=True,
                      nickname=identity.peer_id[-4:])


def _wire(message: Message) -> Message:
    return decode_message(encode_message(message))


def play(record: Callable[[str, Message], None], steps: int = 60) -> None:
    """An honest room to its start: the host, its own seat and the joiner; ``record(sender, message)``
    sees every message that crosses the joiner's link ("joiner" or "host")."""
    host, seat, joiner = new_host(), new_member(HOST_ID), new_member(JOINER_ID)
    queue: list[tuple[str, Any]] = []

    def route(origin: str, actions: list[Any]) -> None:
        queue.extend((origin, a) for a in actions)
        while queue:
            source, action = queue.pop(0)
            if not isinstance(action, Send):
                continue
            if source == "host":
                if action.peer == JOINER_ID.peer_id:
                    record("host", action.message)
                    queue.extend(("joiner", a) for a in joiner.receive(HOST_ID.peer_id, _wire(action.message), now))
                elif action.peer == HOST_ID.peer_id:
                    queue.extend(("seat", a) for a in seat.receive(HOST_ID.peer_id, _wire(action.message), now))
            else:
                if source == "joiner":
                    record("joiner", action.message)
                sender = JOINER_ID.peer_id if source == "joiner" else HOST_ID.peer_id
                queue.extend(("host", a) for a in host.receive(sender, _wire(action.message), now))

    now = START_MS
    route("seat", seat.receive(HOST_ID.peer_id, host.state_message(), now))
    request = joiner.join_request(TRANSCRIPT, parse_secret(SECRETS["participant"]))
    record("joiner", request)
    route("host", host.join(JOINER_ID.peer_id, TRANSCRIPT, request, now))
    for _ in range(steps):
        now += STEP_MS
        route("host", host.tick(now))
        route("seat", seat.tick(now))
        route("joiner", joiner.tick(now))


def _exchange(host: HostRoom, seat: MemberRoom, source: str, actions: list[Any], now: int) -> None:
    """Deliver ``actions`` between the host machine and its own seat (``source``: "host" or "seat") until
    quiet; what the host sends anyone else is dropped (the fuzzed joiner's answers are not its input)."""
    queue = [(source, a) for a in actions]
    while queue:
        origin, action = queue.pop(0)
        if not isinstance(action, Send):
            continue
        if origin == "seat":
            queue.extend(("host", a) for a in host.receive(HOST_ID.peer_id, _wire(action.message), now))
        elif action.peer == HOST_ID.peer_id:
            queue.extend(("seat", a) for a in seat.receive(HOST_ID.peer_id, _wire(action.message), now))


@functools.cache
def _own_car_passed() -> frozenset[str]:
    """The rotations the host's seat passed when it first saw the room: its own car."""
    host, seat = new_host(), new_member(HOST_ID)
    _exchange(host, seat, "seat", seat.receive(HOST_ID.peer_id, host.state_message(), START_MS), START_MS)
    return frozenset(seat.passed_rotations)


def with_own_car_passed(member: MemberRoom) -> MemberRoom:
    """``member`` remembering that its own car passed the asset checks, as a member does after its first
    check (``MemberRoom.passed_rotations``: a pass stays valid, the store only grows): assembling the
    same car again is the same work for every input, and tells nothing about the input."""
    member.passed_rotations.update(_own_car_passed())
    return member


def host_and_seat() -> tuple[HostRoom, MemberRoom]:
    """The scene's host and its own seat, which has seen the room (and answered it) as every input meets it."""
    host, seat = new_host(), with_own_car_passed(new_member(HOST_ID))
    _exchange(host, seat, "seat", seat.receive(HOST_ID.peer_id, host.state_message(), START_MS), START_MS)
    return host, seat


def host_once(data: bytes) -> None:
    """The host's side of the joiner's link: its first frame is the link's first message (a join
    request, or anything else), then every frame a message from that member, with time passing; the
    host's own seat answers the host as it would."""
    host, seat = host_and_seat()
    now = START_MS
    joined = False
    for body in frames(data):
        now += STEP_MS
        message = coded(decode_message, body)
        if isinstance(message, Message):
            if not joined and isinstance(message, JoinRequest):
                _exchange(host, seat, "host", host.join(JOINER_ID.peer_id, TRANSCRIPT, message, now), now)
                joined = True
            else:
                _exchange(host, seat, "host", host.receive(JOINER_ID.peer_id, message, now), now)
        _exchange(host, seat, "host", host.tick(now), now)
        _exchange(host, seat, "seat", seat.tick(now), now)


def member_once(data: bytes) -> None:
    """A member's side of its link to the host: every frame a message from the host, with time passing."""
    member = with_own_car_passed(new_member(JOINER_ID))
    member.join_request(TRANSCRIPT, parse_secret(SECRETS["participant"]))
    now = START_MS
    for body in frames(data):
        now += STEP_MS
        message = coded(decode_message, body)
        if isinstance(message, Message):
            member.receive(HOST_ID.peer_id, message, now)
        member.tick(now)


TARGETS = {
    "room-host": Target("room-host", host_once, "a joiner's link at the host: join request and room messages"),
    "room-member": Target("room-member", member_once, "the host's link at a member: room state, ready sets, start"),
}
