"""The typed room events print exactly the ``--json`` lines the untyped ``Notify`` did (docs/rooms.md)."""

import json

from protocol.room.events import (
    CompatibilityChecked,
    CountdownCancelled,
    CountdownStarted,
    ErrorReported,
    GridCancelled,
    Joined,
    MatchBegan,
    MemberJoined,
    MemberLeft,
    ReadyChanged,
    ReadyRefused,
    ReadySetFormed,
    ReadySetRefused,
    ReadyWithdrawn,
    RoomDecided,
    SuccessorChosen,
)
from protocol.room.messages import RoomDecision
from protocol.room.states import Role


def line(event):
    """What ``EventSink`` prints for ``event`` with ``--json``."""
    return json.dumps({"event": event.EVENT, **event.data()}, default=str)


def test_each_event_keeps_its_name_keys_and_key_order():
    expected = [
        (Joined("r", Role.PARTICIPANT), '{"event": "joined", "room_id": "r", "role": "participant"}'),
        (MemberJoined("p", Role.SPECTATOR, "n"), '{"event": "member-joined", "peer": "p", "role": "spectator", "nickname": "n"}'),
        (MemberLeft("p", "left"), '{"event": "member-left", "peer": "p", "reason": "left"}'),
        (MemberLeft("p"), '{"event": "member-left", "peer": "p"}'),  # a member's view has no reason
        (CompatibilityChecked("p", False, ["rapier"], ["d"]),
         '{"event": "compatibility", "peer": "p", "compatible": false, "reasons": ["rapier"], "differences": ["d"]}'),
        (ReadyChanged("p", True), '{"event": "ready", "peer": "p", "ready": true}'),
        (ReadyRefused("c", "m"), '{"event": "ready-refused", "code": "c", "message": "m"}'),
        (ReadyWithdrawn("unexplained", "m"), '{"event": "ready-withdrawn", "reason": "unexplained", "message": "m"}'),
        (RoomDecided(RoomDecision("p", "declaration-refused", "c", "d", ["q"], 1, False)),
         '{"event": "room-decision", "participant": "p", "decision": "declaration-refused", "code": "c", "detail": "d", '
         '"by": ["q"], "strikes": 1, "removed": false}'),
        (ReadySetFormed("ab", ["p"]), '{"event": "ready-set", "digest": "ab", "roster": ["p"]}'),
        (ReadySetRefused("p", "c", "d"), '{"event": "ready-set-refused", "peer": "p", "code": "c", "detail": "d"}'),
        (GridCancelled(["p"]), '{"event": "grid-cancelled", "missing": ["p"]}'),  # the host's view
        (GridCancelled(["p"], "timeout"), '{"event": "grid-cancelled", "reason": "timeout", "missing": ["p"]}'),
        (CountdownStarted("m", 5), '{"event": "countdown", "match_id": "m", "deadline_ms": 5}'),
        (CountdownCancelled(["p"]), '{"event": "countdown-cancelled", "leavers": ["p"]}'),
        (SuccessorChosen("h", "s"), '{"event": "host-succession", "lost": "h", "successor": "s"}'),
        (MatchBegan("m", ["p"], []), '{"event": "match-start", "match_id": "m", "roster": ["p"], "pre_start_disconnects": []}'),
        (ErrorReported("c", "m"), '{"event": "error", "code": "c", "message": "m"}'),
    ]
    for event, printed in expected:
        assert line(event) == printed


def test_enum_values_print_as_their_strings_in_the_readable_view_too():
    assert f"{Role.PARTICIPANT}" == "participant" and Role.SPECTATOR == "spectator"
