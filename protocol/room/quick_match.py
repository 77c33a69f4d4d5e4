"""Quick Match selection over room announcements (spec/rooms.md §4.7): filter, window, order.

Decisions where the spec is silent: ratings are compared as ``floor(ratingX1000 / 1000)``; the window
boundary is inclusive (|distance| ≤ window).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

WINDOW_INITIAL = 5
WINDOW_GROWTH_PER_10S = 5
WINDOW_MAX = 30


@dataclass(frozen=True)
class RoomAnnouncement:
    """What a public room advertises for Quick Match (spec/rooms.md §4.7)."""

    room_id: str
    visibility: str
    quick_match_enabled: bool
    participant_password_required: bool
    state: str
    player_count: int
    max_players: int
    client_version: str
    rating_anchor_x1000: int


def rating_window(elapsed_ms: int) -> int:
    """How far (in whole rating points) a room's anchor may be from ours after ``elapsed_ms`` of search."""
    return min(WINDOW_INITIAL + WINDOW_GROWTH_PER_10S * (elapsed_ms // 10_000), WINDOW_MAX)


def _major(version: str) -> str:
    return version.split(".", 1)[0]


def eligible(room: RoomAnnouncement, my_version: str, my_rating_x1000: int, elapsed_ms: int) -> bool:
    """Whether Quick Match may pick ``room``: public, waiting, open, not full, same major, within the window."""
    return (
        room.visibility == "public"
        and room.quick_match_enabled
        and not room.participant_password_required
        and room.state == "waiting"
        and room.player_count < room.max_players
        and _major(room.client_version) == _major(my_version)
        and abs(room.rating_anchor_x1000 // 1000 - my_rating_x1000 // 1000) <= rating_window(elapsed_ms)
    )


def select_room(
    rooms: Iterable[RoomAnnouncement], my_version: str, my_rating_x1000: int, elapsed_ms: int
) -> RoomAnnouncement | None:
    """Deterministic choice: nearest rating anchor, then more players, then the smaller room id."""
    candidates = [r for r in rooms if eligible(r, my_version, my_rating_x1000, elapsed_ms)]
    return min(
        candidates,
        key=lambda r: (abs(r.rating_anchor_x1000 // 1000 - my_rating_x1000 // 1000), -r.player_count, r.room_id),
        default=None,
    )
