"""The typed events print exactly the JSON lines the stream has always had: same keys, same order."""

from __future__ import annotations

import json

from open4wd_node.events.sink import event_json
from open4wd_node.events.vocabulary import FaultFired, InRound, MatchResult, RoomCreated, SessionEnd
from protocol.race.actions import AnchorReached, ChecksumVoted, LeaveReason, PeerLeft
from protocol.room.events import ErrorReported

PEER = "z6MkAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAwxyz"
ROWS = [{"rank": 1, "peer": PEER, "points": 2, "finishFrames": 900, "status": "finished", "rounds": ["finished"]}]


def line(name: str, **data) -> str:
    """A line as the shell printed it from keyword arguments: ``{"event": name, **data}``."""
    return json.dumps({"event": name, **data}, default=str)


def test_a_racers_and_a_spectators_result_keep_their_own_keys_in_order():
    racer = MatchResult(peer=PEER, outcome="finished", detail="", agreed_hashes=8, disagreements=0, leaves=[],
                        standings=ROWS, log="/tmp/a.o4wlog", max_lag=2, ticks=900, rollbacks=3, max_rollback=1,
                        drops={}, liveness={"resends": 0}, cpu={"per_frame_us": 100.0})
    assert event_json(racer) == line(
        "result", peer=PEER, outcome="finished", detail="", agreed_hashes=8, disagreements=0, leaves=[], standings=ROWS,
        log="/tmp/a.o4wlog", max_lag=2, ticks=900, rollbacks=3, max_rollback=1, drops={}, liveness={"resends": 0},
        cpu={"per_frame_us": 100.0})
    watcher = MatchResult(peer=PEER, outcome="match-end", detail="", agreed_hashes=8, mismatches=0, standings=ROWS,
                          log="/tmp/s.o4wlog", sources=[PEER], frames=900)
    assert event_json(watcher) == line(
        "result", peer=PEER, outcome="match-end", detail="", agreed_hashes=8, mismatches=0, standings=ROWS,
        log="/tmp/s.o4wlog", sources=[PEER], frames=900)


def test_a_key_one_view_never_has_is_left_out_and_a_null_one_is_kept():
    assert event_json(SessionEnd(round=1, reason="left", detail="d")) == line("session-end", round=1, reason="left", detail="d")
    assert event_json(SessionEnd(round=None, reason="match-end", detail="")) == line("session-end", reason="match-end", detail="")
    assert event_json(FaultFired("corrupt-state", 300)) == line("fault", kind="corrupt-state", frame=300)
    assert event_json(FaultFired("stall", 300, 2.5)) == line("fault", kind="stall", frame=300, seconds=2.5)
    assert event_json(InRound(2, AnchorReached(2, None))) == line("anchor", round=2, frame=None)


def test_race_events_are_told_with_their_round_first():
    assert event_json(InRound(0, ChecksumVoted(120, True))) == line("checksum", round=0, frame=120, agreed=True)
    assert event_json(InRound(1, PeerLeft(PEER, LeaveReason.DESYNC))) == line("leave", round=1, peer=PEER, reason="desync")


def test_room_and_error_events_print_their_fields_in_order():
    invites = {"participant": "open4wd://a", "spectator": "open4wd://b"}
    created = RoomCreated(room_id="r", invite="open4wd://a", invites=invites, host=PEER, listen="127.0.0.1:1",
                          advertise="127.0.0.1:1")
    assert event_json(created) == line("room-created", room_id="r", invite="open4wd://a", invites=invites, host=PEER,
                                       listen="127.0.0.1:1", advertise="127.0.0.1:1")
    assert event_json(ErrorReported("left", "you left the room")) == \
        '{"event": "error", "code": "left", "message": "you left the room"}'
