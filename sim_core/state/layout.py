"""Field layout of the simulated state: the single source for the step's indices and the saved bytes.

The state is a flat list of Python ints per car plus a few world ints. ``save_state`` packs them in
this order as signed 64-bit little-endian integers; the field names here are also what the sync-test
prints when two states differ.
"""

from __future__ import annotations

from enum import StrEnum

WORLD_FIELDS = ("frame", "done", "end_reason", "endgame_frames", "settled_frames", "seed")
W_FRAME, W_DONE, W_END_REASON, W_ENDGAME, W_SETTLED, W_SEED = range(len(WORLD_FIELDS))

CAR_FIELDS = (
    "status",  # STATUS_*
    "arc_um",  # arc position along the route in the current lap's frame (unwrapped)
    "lat_um",  # lateral offset of the COM from the centreline, + = right
    "h_um",  # height of the car's underside above the ribbon surface
    "vs_um_s",  # velocity along the route tangent
    "vlat_um_s",  # velocity along the route right vector
    "vh_um_s",  # velocity along the route up vector
    "air_frames",  # frames since the last ground contact (capped), for the 100 ms contact hysteresis
    "outside",  # 1 once the COM crossed a fixed track's corridor edge (course-out), else 0
    "remaining_q",  # battery energy in 1/60 mJ quanta
    "laps",  # completed laps
    "next_checkpoint",  # index of the next unlit checkpoint
    "finish_armed",  # 1 once the COM was behind the finish plane by more than 1 mm
    "progress_um",  # routeProgressUm of the current lap (monotone, capped at the next unlit checkpoint)
    "finished_frame",  # frame of the legal finish, -1 while not finished
    "prev_com_x_um",  # COM at the end of the previous frame (start of this frame's sweep segment)
    "prev_com_y_um",
    "prev_com_z_um",
    "legal_arc_um",  # last legal point (grounded inside the corridor), b-soft respawn target
    "legal_lat_um",
    "penalty_kind",  # PENALTY_*
    "penalty_timer",  # frames left: > FADE = deceleration, 1..FADE = fade, teleport when it reaches 0
    "broken_mask",  # bit i = part i broken (only ever set)
    "retired_frame",  # frame the chassis broke, -1 if not retired
)
(
    STATUS, ARC, LAT, H, VS, VLAT, VH, AIR_FRAMES, OUTSIDE, REMAINING_Q, LAPS, NEXT_CP, ARMED, PROGRESS,
    FINISHED_FRAME, PREV_X, PREV_Y, PREV_Z, LEGAL_ARC, LEGAL_LAT, PENALTY_KIND, PENALTY_TIMER, BROKEN_MASK,
    RETIRED_FRAME,
) = range(len(CAR_FIELDS))

PART_FIELDS = ("temp_mc", "fatigue_ppm", "fatigue_rem", "break_frame")
"""Per part, appended after the car fields in partIndex order."""
P_TEMP, P_FATIGUE, P_FATIGUE_REM, P_BREAK_FRAME = range(len(PART_FIELDS))
CAR_HEADER = len(CAR_FIELDS)
PART_STRIDE = len(PART_FIELDS)

STATUS_RACING, STATUS_FINISHED, STATUS_RETIRED = 0, 1, 2
PENALTY_NONE, PENALTY_BSOFT, PENALTY_FALLOUT = 0, 1, 2
END_NONE, END_ALL_FINISHED, END_TIME_LIMIT, END_ENDGAME = 0, 1, 2, 3


class RoundEndReason(StrEnum):
    """Why a round ended (``World.end_reason``); ``NOT_ENDED`` ("") while it runs.

    The state saves the reason as its position in this class (``END_*``), so the order is part of the
    saved layout: never reorder, only append."""

    NOT_ENDED = ""
    ALL_FINISHED = "all-finished"
    TIME_LIMIT = "time-limit"
    ENDGAME_CLOSED = "endgame-closed"


END_REASONS: tuple[RoundEndReason, ...] = tuple(RoundEndReason)
"""Saved ``end_reason`` value → reason (index ``END_*``)."""


def part_field(part: int, field: int) -> int:
    """Index of a part field inside a car's list."""
    return CAR_HEADER + part * PART_STRIDE + field


def car_length(part_count: int) -> int:
    """Number of saved integers of a car with ``part_count`` parts."""
    return CAR_HEADER + part_count * PART_STRIDE


def field_names(part_counts: list[int]) -> list[str]:
    """Names of every saved integer, in saved order (for sync-test diffs)."""
    names = [f"world.{name}" for name in WORLD_FIELDS]
    for slot, count in enumerate(part_counts):
        names.extend(f"car[{slot}].{name}" for name in CAR_FIELDS)
        for part in range(count):
            names.extend(f"car[{slot}].part[{part}].{name}" for name in PART_FIELDS)
    return names
