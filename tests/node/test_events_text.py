"""The readable form of the events a user sees (the JSON form is the stable interface)."""

import io
import json

from open4wd_node.events import EventSink

PEER = "z6MkAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAwxyz"


def lines(as_json, event, **data):
    out = io.StringIO()
    EventSink(as_json=as_json, stream=out).emit(event, **data)
    return out.getvalue()


def test_json_form_keeps_every_field():
    assert json.loads(lines(True, "checksum", round=0, frame=120, agreed=True)) == {
        "event": "checksum", "round": 0, "frame": 120, "agreed": True}


def test_readable_form_names_peers_by_their_last_four():
    assert lines(False, "leave", round=0, peer=PEER, reason="desync") == "…wxyz left the race (desync)\n"
    assert lines(False, "checksum", round=0, frame=120, agreed=True) == ""  # routine: not shown
    assert "did NOT agree" in lines(False, "checksum", round=0, frame=240, agreed=False)
    text = lines(False, "match-end", outcome="finished", results=[{"rank": 1, "peer": PEER, "points": 8}])
    assert text == "match over (finished):\n  1. …wxyz  8 pts\n"
    assert lines(False, "compatibility", peer=PEER, compatible=False, reasons=["protocol"],
                 differences=["your protocol_version 1.0.0, peer's 2.0.0"]) == \
        "version check …wxyz: INCOMPATIBLE (your protocol_version 1.0.0, peer's 2.0.0)\n"
