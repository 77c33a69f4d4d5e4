"""The spec's room vector families, with the scenario each vector's name describes (spec/rooms.md §7)."""

import json

import pytest

from protocol.room.capacity import CapacityReservations
from protocol.errors import LocalError
from protocol.room.invitation import parse_secret
from protocol.room.quick_match import RoomAnnouncement, eligible, rating_window, select_room
from tests.layout import CONFORMANCE

VECTORS = CONFORMANCE / "room"


def load(family):
    return {v["name"]: v for v in json.loads((VECTORS / f"{family}.vectors.json").read_text())["vectors"]}


def test_capacity_reservations():
    vectors = load("capacity-reservations")

    v = vectors["pending-last-slot-blocks-concurrent-peer"]
    seats = CapacityReservations(v["input"]["capacity"])
    first = seats.try_reserve("A")
    second = seats.try_reserve("B")
    assert {"firstReserved": first, "occupiedCount": seats.occupied, "secondReserved": second} == v["expected"]

    v = vectors["failed-open-releases-slot"]
    seats = CapacityReservations(v["input"]["capacity"])
    seats.try_reserve("A")
    seats.release("A")
    second = seats.try_reserve("B")
    assert {"occupiedCount": seats.occupied, "secondReserved": second} == v["expected"]

    v = vectors["active-peer-may-reconnect-at-full-capacity"]
    seats = CapacityReservations(v["input"]["capacity"])
    seats.try_reserve("A")
    seats.commit("A")
    reconnect = seats.try_reserve("A")
    newcomer = seats.try_reserve("C")
    assert {
        "activeCount": len(seats.active), "occupiedCount": seats.occupied,
        "reconnectReserved": reconnect, "newcomerReserved": newcomer,
    } == v["expected"]


def test_no_double_pending_reservation():
    seats = CapacityReservations(3)
    assert seats.try_reserve("A") and not seats.try_reserve("A")


def canonical(text):
    try:
        return len(parse_secret(text))
    except LocalError:
        return None


def test_role_admission():
    vectors = load("role-admission")
    v = vectors["role-invitations-are-distinct-192-bit-values"]
    p, s = v["input"]["participant"], v["input"]["spectator"]
    assert {
        "participantCanonical": canonical(p) is not None,
        "spectatorCanonical": canonical(s) is not None,
        "distinct": p != s,
        "decodedBytes": canonical(p),
    } == v["expected"]
    v = vectors["weak-and-malformed-invitations-fail-closed"]
    assert {
        "weakAccepted": canonical(v["input"]["weak"]) is not None,
        "paddedAccepted": canonical(v["input"]["padded"]) is not None,
    } == v["expected"]


@pytest.mark.parametrize("bad", ["A" * 31, "A" * 33, "A" * 31 + "+", "A" * 31 + "/", "A" * 30 + "==", None, 5])
def test_other_non_canonical_secrets(bad):
    assert canonical(bad) is None


def room(room_id, **changes):
    base = dict(room_id=room_id, visibility="public", quick_match_enabled=True, participant_password_required=False,
                state="waiting", player_count=3, max_players=8, client_version="0.1.0", rating_anchor_x1000=25_000)
    return RoomAnnouncement(**(base | changes))


def test_quick_match_selection():
    vectors = load("quick-match-selection")
    v = vectors["only-eligible-existing-public-room-is-selected"]
    candidates = [
        room("private", visibility="private"),
        room("qm-off", quick_match_enabled=False),
        room("password", participant_password_required=True),
        room("racing", state="racing"),
        room("full", player_count=8),
        room("old-major", client_version="1.0.0"),
        room("far", rating_anchor_x1000=31_000),
        room("eligible-room"),
    ]
    chosen = select_room(candidates, "0.1.7", 25_999, v["input"]["elapsedMs"])
    assert {"selectedRoomId": chosen.room_id} == v["expected"]

    v = vectors["rating-window-expands-at-exact-ten-seconds"]
    probe = room("r", rating_anchor_x1000=32_000)  # distance 7 from 25
    assert {
        "before": eligible(probe, "0.1.0", 25_000, v["input"]["beforeMs"]),
        "at": eligible(probe, "0.1.0", 25_000, v["input"]["atMs"]),
    } == v["expected"]


def test_quick_match_tie_breaks_and_window_cap():
    rooms = [
        room("b", player_count=3), room("a", player_count=3), room("c", player_count=5), room("near", rating_anchor_x1000=25_000)
    ]
    assert select_room(rooms, "0.1.0", 25_000, 0).room_id == "c"
    assert select_room(rooms[:2], "0.1.0", 25_000, 0).room_id == "a"
    assert rating_window(10**9) == 30 and select_room([], "0.1.0", 0, 0) is None
