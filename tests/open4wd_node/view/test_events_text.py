"""The readable form of the events a user sees (the JSON form is the stable interface).

The readable line is a function of an event's JSON form (``event_text``): the demo reads its nodes' JSON
lines and shows them the same way.
"""

import io
import json

from open4wd_node.events.sink import EventSink
from open4wd_node.events.text import event_text
from open4wd_node.events.vocabulary import InRound, NodeEvent, RaceStarted
from protocol.race.actions import ChecksumVoted, LeaveReason, PeerLeft

PEER = "z6MkAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAwxyz"


def printed(as_json: bool, event: NodeEvent) -> str:
    out = io.StringIO()
    EventSink(as_json=as_json, stream=out).emit(event)
    return out.getvalue()


def lines(as_json, event, **data):
    """The readable line(s) of the event called ``event`` with the JSON data ``data``."""
    assert not as_json
    text = event_text(event, data)
    return "" if text is None else text + "\n"


def test_json_form_keeps_every_field():
    assert json.loads(printed(True, InRound(0, ChecksumVoted(120, True)))) == {
        "event": "checksum", "round": 0, "frame": 120, "agreed": True}


def test_the_sink_prints_an_events_readable_line_from_its_json_form():
    left = InRound(0, PeerLeft(PEER, LeaveReason.DESYNC))
    assert printed(False, left) == lines(False, "leave", round=0, peer=PEER, reason="desync") == \
        "…wxyz left the race (desync)\n"
    assert printed(False, InRound(0, ChecksumVoted(120, True))) == ""  # routine: not shown


def test_readable_form_names_peers_by_their_last_four():
    assert lines(False, "leave", round=0, peer=PEER, reason="desync") == "…wxyz left the race (desync)\n"
    assert lines(False, "checksum", round=0, frame=120, agreed=True) == ""  # routine: not shown
    assert "did NOT agree" in lines(False, "checksum", round=0, frame=240, agreed=False)
    text = lines(False, "match-end", outcome="finished",
                 results=[{"rank": 1, "peer": PEER, "points": 8, "finishFrames": 1840, "status": "finished",
                           "rounds": ["finished"]}])
    assert text == "match over (finished):\n  1. …wxyz  8 pts  finished (1840 frames)\n"
    assert lines(False, "compatibility", peer=PEER, compatible=False, reasons=["protocol"],
                 differences=["your protocol_version 1.0.0, peer's 2.0.0"]) == \
        "version check …wxyz: INCOMPATIBLE (your protocol_version 1.0.0, peer's 2.0.0)\n"


OTHER = "z6MkBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBabcd"


def test_a_refused_or_withdrawn_ready_reads_as_a_sentence():
    assert lines(False, "ready-refused", code="timestamp-out-of-range", message="the clock is 40 s off") == \
        "the host refused this node's Ready [timestamp-out-of-range]: the clock is 40 s off\n"
    assert lines(False, "ready-withdrawn", reason="host-lost", message="its successor starts with nobody Ready") == \
        "this node is no longer Ready (host-lost): its successor starts with nobody Ready\n"


def test_rounds_are_one_based_in_text_and_zero_based_in_json():
    assert lines(False, "race-start", round=0, slot=1, roster=[PEER, OTHER]) == "round 1: racing from start slot 2 of 2\n"
    assert lines(False, "checksum", round=1, frame=240, agreed=False).startswith("round 2, frame 240:")
    assert lines(False, "session-end", round=0, reason="persistent-desync", detail="d").endswith(
        "in round 1: persistent-desync (d)\n")
    assert lines(False, "anchor", round=2, frame=None) == "round 3: no anchor frame\n"
    assert lines(False, "caught-up", round=0, frame=240, resume_frame=248) == \
        "round 1: caught up from the snapshot of frame 240, racing again from frame 248\n"
    assert lines(False, "fetch-progress", round=0, bytes=3) == "fetch-progress: round=1, bytes=3\n"  # the generic form
    assert json.loads(printed(True, RaceStarted(round=0, slot=1, roster=[])))["round"] == 0


def test_round_end_rows_say_finished_dnf_left_or_desync():
    rows = [
        {"rank": 1, "peer": PEER, "points": 4, "status": "finished", "finished_frame": 1840},
        {"rank": 2, "peer": OTHER, "points": 3, "status": "dnf", "finished_frame": None},
        {"rank": 3, "peer": "z6MkCCCCleft", "points": 2, "status": "left", "reason": "voluntary", "finished_frame": None},
        {"rank": 4, "peer": "z6MkDDDDdsyn", "points": 1, "status": "desync", "reason": "desync", "finished_frame": None},
    ]
    assert lines(False, "round-end", round=0, frame=2068, standings=rows) == (
        "round 1 over at frame 2068:\n"
        "  1. …wxyz  4 pts  finished (1840 frames)\n"
        "  2. …abcd  3 pts  DNF\n"
        "  3. …left  2 pts  left (voluntary)\n"
        "  4. …dsyn  1 pts  desync (voted out)\n"
    )


def test_a_match_row_names_each_rounds_status():
    row = {"rank": 2, "peer": OTHER, "points": 5, "finishFrames": 37_800, "status": "dnf", "rounds": ["finished", "dnf"]}
    text = lines(False, "match-end", outcome="finished", results=[row])
    assert text == "match over (finished):\n  2. …abcd  5 pts  DNF · rounds: finished, DNF\n"
