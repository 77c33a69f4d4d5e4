"""The race's typed vocabulary: the user events keep the ``--json`` names and data keys they had as
``Notify(event, data)``, the enums keep the strings that reach the wire, the JSON and the race log, and
``RaceAction`` names every action a session returns."""

import json
import typing

import pytest

from protocol.actions import UserEvent
from protocol.race import actions
from protocol.race.actions import (
    AnchorReached, ChecksumVoted, DesyncDetected, PeerLeft, PeerLost, PeerRejoined, RaceAction, RaceEvent,
    SessionEndReason, WaitReason,
)
from protocol.race.messages import LeaveReason
from protocol.race.peers import PeerStatus
from protocol.race.votes import VoteKind

EVENTS = [
    (ChecksumVoted(120, True), "checksum", {"frame": 120, "agreed": True}),
    (DesyncDetected(240, ["zB"], {"zA": "00", "zB": "01"}), "desync",
     {"frame": 240, "peers": ["zB"], "hashes": {"zA": "00", "zB": "01"}}),
    (PeerLeft("zB", LeaveReason.DESYNC), "leave", {"peer": "zB", "reason": "desync"}),
    (PeerLost("zB"), "peer-lost", {"peer": "zB"}),
    (PeerRejoined("zB", 300), "rejoin", {"peer": "zB", "frame": 300}),
    (AnchorReached(1, None), "anchor", {"round": 1, "frame": None}),
]


@pytest.mark.parametrize(("event", "name", "data"), EVENTS)
def test_each_event_keeps_its_json_name_and_data(event, name, data):
    assert event.EVENT == name and event.data() == data
    assert json.dumps(event.data()) == json.dumps(data)  # what --json prints
    assert repr(event.data()) == repr(data)  # what the text view prints, also nested (a result's leaves)


def test_every_race_event_is_covered_and_every_action_class_is_in_the_union():
    assert set(typing.get_args(RaceEvent)) == {type(e) for e, _, _ in EVENTS}
    assert all(issubclass(cls, UserEvent) for cls in typing.get_args(RaceEvent))
    members = set(typing.get_args(RaceAction))
    not_actions = {"ConfirmedInput", "FrameReport", "RaceAction", "RaceEvent", "SessionEndReason", "WaitReason"}
    assert {getattr(actions, name) for name in actions.__all__ if name not in not_actions} == members


def test_enum_values_are_the_strings_of_the_wire_json_and_log():
    assert [r.value for r in LeaveReason] == ["voluntary", "disconnect", "desync"]
    assert [k.value for k in VoteKind] == ["agreed", "majority", "minority", "tie"]
    assert [s.value for s in PeerStatus] == ["active", "lost", "rejoining", "removed"]
    assert [w.value for w in WaitReason] == ["inputs", "keys", "catch-up", "round-over", "ended"]
    assert [e.value for e in SessionEndReason] == [
        "equivocation", "consensus-invalid", "persistent-desync", "partition-void", "catch-up-impossible",
        "catch-up-failed", "rollback-too-deep", "left", "internal-error",
    ]
    assert LeaveReason.parse("desync") is LeaveReason.DESYNC and LeaveReason.parse("sideways") is None
