"""Field layout of the simulated state: the single source for the step's indices and the saved bytes.

The state is a flat list of Python ints per car plus the world's ints: a few fields, then the weather's
pool of patch slots (none on a track without patches; ``sim_core.step.weather``), then the projectile
pool of the launch weapons (none in a round without one; ``sim_core.step.launch``), then the rotors' slots
(none in a round without a rotor weapon; ``sim_core.step.rotors``), then the destructible track
entities' slots (none on a track without one; ``sim_core.step.obstacles``). ``save_state`` packs them in
this order as signed 64-bit little-endian integers; the field names here are also what the sync-test
prints when two states differ.

Every index is a ``Final`` integer written out, not counted from the name tuples: the compiled step
(docs/sim.md "The compiled step") then reads a field as a C constant instead of looking the name up in
a module's globals at every use. ``tests/sim_core/state/test_layout_indices.py`` checks that each index is its
name's position.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

WORLD_FIELDS = ("frame", "done", "end_reason", "endgame_frames", "settled_frames", "seed", "weather_acc",
                "weather_ordinal")
W_FRAME: Final = 0
W_DONE: Final = 1
W_END_REASON: Final = 2
W_ENDGAME: Final = 3
W_SETTLED: Final = 4
W_SEED: Final = 5
W_WEATHER_ACC: Final = 6  # patch spawn accumulator: + spawn_rate_per_min_x1000 a frame, a spawn per PATCH_SPAWN_AT
W_WEATHER_ORDINAL: Final = 7  # candidates drawn so far (the weather RNG's position)
WORLD_HEADER: Final = 8  # len(WORLD_FIELDS): the patch slots follow

PATCH_FIELDS = ("born_frame", "expire_frame", "arc_um", "lat_um")
"""Per patch slot, after the world fields; a free slot is all zeros (an active patch expires after frame 0)."""
PA_BORN: Final = 0  # the frame whose step spawned it
PA_EXPIRE: Final = 1  # born + lifetime: the first frame it no longer acts in (0 = the slot is free)
PA_ARC: Final = 2  # centre: arc length along the route, 0 ≤ arc < length
PA_LAT: Final = 3  # centre: lateral offset from the centreline, + = right
PATCH_STRIDE: Final = 4  # len(PATCH_FIELDS)
PATCH_POOL: Final = 50  # WEATHER_PATCH_COUNT_MAX: the slots a track with patches pre-allocates

PROJECTILE_FIELDS = ("state", "released_frame", "arc_um", "lat_um", "h_um", "vs_um_s", "vlat_um_s", "vh_um_s",
                     "cleared")
"""Per projectile slot, after the patch slots: one slot per bullet of every launch weapon, car by car in
slot order and each launcher's bullets in firing order; a held bullet's slot is all zeros."""
PR_STATE: Final = 0  # PROJECTILE_*
PR_RELEASED: Final = 1  # the frame whose step released it (0 while held)
PR_ARC: Final = 2  # arc length along the route (within the lap on a loop)
PR_LAT: Final = 3  # lateral offset from the centreline, + = right
PR_H: Final = 4  # height above the ribbon surface
PR_VS: Final = 5  # velocity along the route tangent
PR_VLAT: Final = 6  # velocity along the route right vector
PR_VH: Final = 7  # velocity along the route up vector
PR_CLEARED: Final = 8  # 1 once it left its own car's box by more than 1 mm (``sourceCleared``): it may hit it then
PROJECTILE_STRIDE: Final = 9  # len(PROJECTILE_FIELDS)
PROJECTILE_HELD: Final = 0
PROJECTILE_FLYING: Final = 1  # moving (in the air or sliding on the ribbon)
PROJECTILE_RESTING: Final = 2  # lying still on the ribbon (a car that strikes it sets it moving again)
PROJECTILE_GONE: Final = 3  # fell 5 m below the ribbon off a fixed track's edge: nothing acts on it any more
PROJECTILE_DEPLOYED: Final = 4  # a fluid bullet spread on the ribbon where it first landed: a disc zone to the round's end

ROTOR_FIELDS = ("omega_urad_s", "phase_urad")
"""Per rotor slot, after the projectile slots: one slot per actuator of every rotor weapon, car by car in
slot order and each weapon's actuators in their declared order."""
RO_OMEGA: Final = 0  # angular speed about its axis (µrad/s; + = turning right-handed about the axis)
RO_PHASE: Final = 1  # a swinging arm's phase, 0 ≤ phase < ROTOR_TURN_URAD (a continuous rotor's stays 0)
ROTOR_STRIDE: Final = 2  # len(ROTOR_FIELDS)
ROTOR_TURN_URAD: Final = 6_283_185  # one turn, 2π rad, in whole µrad: a phase wraps here

OBSTACLE_FIELDS = ("fatigue_ppm", "break_frame")
"""Per destructible entity, after the rotor slots, in the track's order of its solid entities."""
OB_FATIGUE: Final = 0  # impact fatigue, ppm (frozen once broken)
OB_BREAK: Final = 1  # the frame whose step broke it, 0 while intact
OBSTACLE_STRIDE: Final = 2  # len(OBSTACLE_FIELDS)

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
    "destructions",  # the spec's destruction count: other cars' parts whose first break this car is credited with
)
STATUS: Final = 0
ARC: Final = 1
LAT: Final = 2
H: Final = 3
VS: Final = 4
VLAT: Final = 5
VH: Final = 6
AIR_FRAMES: Final = 7
OUTSIDE: Final = 8
REMAINING_Q: Final = 9
LAPS: Final = 10
NEXT_CP: Final = 11
ARMED: Final = 12
PROGRESS: Final = 13
FINISHED_FRAME: Final = 14
PREV_X: Final = 15
PREV_Y: Final = 16
PREV_Z: Final = 17
LEGAL_ARC: Final = 18
LEGAL_LAT: Final = 19
PENALTY_KIND: Final = 20
PENALTY_TIMER: Final = 21
BROKEN_MASK: Final = 22
RETIRED_FRAME: Final = 23
DESTRUCTIONS: Final = 24

POSITION_FIELDS: Final = (ARC, LAT, H)  # a car's position field along each route axis (s, l, h)
VELOCITY_FIELDS: Final = (VS, VLAT, VH)  # a car's velocity field along each route axis (s, l, h)

PART_FIELDS = ("temp_mc", "fatigue_ppm", "fatigue_rem", "break_frame")
"""Per part, appended after the car fields in partIndex order."""
P_TEMP: Final = 0
P_FATIGUE: Final = 1
P_FATIGUE_REM: Final = 2
P_BREAK_FRAME: Final = 3
CAR_HEADER: Final = 25  # len(CAR_FIELDS)
PART_STRIDE: Final = 4  # len(PART_FIELDS)

STATUS_RACING: Final = 0
STATUS_FINISHED: Final = 1
STATUS_RETIRED: Final = 2
PENALTY_NONE: Final = 0
PENALTY_BSOFT: Final = 1
PENALTY_FALLOUT: Final = 2
END_NONE: Final = 0
END_ALL_FINISHED: Final = 1
END_TIME_LIMIT: Final = 2
END_ENDGAME: Final = 3


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


def patch_field(slot: int, field: int) -> int:
    """Index of a patch slot's field inside the world's list."""
    return WORLD_HEADER + slot * PATCH_STRIDE + field


def world_length(patch_slots: int, projectile_slots: int = 0, rotor_slots: int = 0, obstacle_slots: int = 0) -> int:
    """Number of saved world integers with ``patch_slots`` patch slots (0 or ``PATCH_POOL``),
    ``projectile_slots`` projectile slots, ``rotor_slots`` rotor slots and ``obstacle_slots`` slots of
    destructible entities."""
    return (WORLD_HEADER + patch_slots * PATCH_STRIDE + projectile_slots * PROJECTILE_STRIDE + rotor_slots * ROTOR_STRIDE
            + obstacle_slots * OBSTACLE_STRIDE)


def field_names(part_counts: list[int], patch_slots: int = 0, projectile_slots: int = 0,
                rotor_slots: int = 0, obstacle_slots: int = 0) -> list[str]:
    """Names of every saved integer, in saved order (for sync-test diffs)."""
    names = [f"world.{name}" for name in WORLD_FIELDS]
    for slot in range(patch_slots):
        names.extend(f"world.patch[{slot}].{name}" for name in PATCH_FIELDS)
    for slot in range(projectile_slots):
        names.extend(f"world.projectile[{slot}].{name}" for name in PROJECTILE_FIELDS)
    for slot in range(rotor_slots):
        names.extend(f"world.rotor[{slot}].{name}" for name in ROTOR_FIELDS)
    for slot in range(obstacle_slots):
        names.extend(f"world.obstacle[{slot}].{name}" for name in OBSTACLE_FIELDS)
    for slot, count in enumerate(part_counts):
        names.extend(f"car[{slot}].{name}" for name in CAR_FIELDS)
        for part in range(count):
            names.extend(f"car[{slot}].part[{part}].{name}" for name in PART_FIELDS)
    return names
