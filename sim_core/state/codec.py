"""Canonical saved-state bytes (version 4) and their atomic, validating decoder.

Layout, all little-endian:

    magic   4 bytes  b"O4WS"
    version u16      STATE_VERSION
    cars    u16      number of cars
    digest  32 bytes SHA-256 of the world's topology (engine id, track and vehicle specs)
    values  i64 × n  WORLD_FIELDS, the weather's patch slots (PATCH_FIELDS each), the projectile slots
                     (PROJECTILE_FIELDS each), the rotor slots (ROTOR_FIELDS each) and the destructible
                     entities' slots (OBSTACLE_FIELDS each), then per car CAR_FIELDS followed by PART_FIELDS
                     per part (layout.py)

``state_hash`` is SHA-256 over exactly these bytes. A restore never trusts the snapshot's topology: the
digest, car count and length must match the world it is loaded into, and every value is range-checked
before anything is replaced.
"""

from __future__ import annotations

import hashlib
import struct
import sys
from collections.abc import Callable
from typing import Final

from open4wd_base.errors import LocalError
from sim_core.constants import MAX_TEMPERATURE_MC, MIN_TEMPERATURE_MC
from sim_core.errors import SimError
from sim_core.state.layout import (
    AIR_FRAMES, ARMED, BROKEN_MASK, CAR_HEADER, DESTRUCTIONS, FINISHED_FRAME, LAPS, NEXT_CP, OUTSIDE, P_FATIGUE, P_FATIGUE_REM,
    P_TEMP, PART_STRIDE, PENALTY_KIND, PENALTY_TIMER, PROGRESS, REMAINING_Q, STATUS, W_DONE, W_END_REASON,
    W_ENDGAME, W_FRAME, W_SETTLED, car_length, world_length,
)


MAGIC: Final = b"O4WS"
STATE_VERSION: Final = 5  # 2: the weather's fields and patch slots (engine sim_core/2); 3: projectile slots (sim_core/4);
# 4: rotor and destructible entity slots (sim_core/5); 5: each car's destruction count (sim_core/6)
HEADER: Final = struct.Struct("<4sHH32s")
INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1
NATIVE_LITTLE_ENDIAN: Final = sys.byteorder == "little"  # memoryview.cast reads the machine's byte order


class StateCodec:
    """Packs and unpacks one world's state; built once per world (its struct format is fixed)."""

    def __init__(self, digest: bytes, part_counts: list[int], patch_slots: int = 0, projectile_slots: int = 0,
                 rotor_slots: int = 0, obstacle_slots: int = 0) -> None:
        self.digest = digest
        self.part_counts = part_counts
        self.world_length = world_length(patch_slots, projectile_slots, rotor_slots, obstacle_slots)
        self.lengths = [car_length(n) for n in part_counts]
        ends = [self.world_length + sum(self.lengths[: slot + 1]) for slot in range(len(part_counts))]
        self.spans = list(zip([self.world_length, *ends[:-1]], ends, strict=True))  # each car's values: [start, end)
        total = self.world_length + sum(self.lengths)
        self.values = struct.Struct(f"<{total}q")
        self.header = HEADER.pack(MAGIC, STATE_VERSION, len(part_counts), digest)
        self.size = HEADER.size + self.values.size

    def pack(self, world: list[int], cars: list[list[int]]) -> bytes:
        """The canonical bytes of ``world`` and ``cars``; ``SimError`` (``state-overflow``) if a value does not
        fit a signed 64-bit field."""
        values = world.copy()
        for c in cars:  # list concatenation is a memory copy: faster than chaining the ints one by one
            values += c
        try:
            return self.header + self.values.pack(*values)
        except struct.error as exc:
            raise SimError("state-overflow", f"a state value does not fit in 64 bits: {exc}") from None

    def unpack(self, data: bytes, limits: "StateLimits") -> tuple[list[int], list[list[int]]]:
        """Decode and validate; raises ``SimError`` without side effects on any mismatch (the bytes may be a
        peer's), ``LocalError`` when ``data`` is not bytes at all (the caller's bug)."""
        size_rule = f"a saved state of this world is exactly {self.size} bytes"
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise LocalError("state-invalid", size_rule)
        if len(data) != self.size:
            raise SimError("state-invalid", size_rule)
        magic, version, count, digest = HEADER.unpack_from(data)
        if magic != MAGIC:
            raise SimError("state-invalid", "not a sim_core saved state (bad magic)")
        if version != STATE_VERSION:
            raise SimError("state-version", f"saved state version {version}; this engine reads {STATE_VERSION}")
        if count != len(self.part_counts) or digest != self.digest:
            raise SimError("state-topology-mismatch", "the saved state belongs to a different track or set of cars")
        world, cars = self.unpack_trusted(data)
        limits.check(world, cars)
        return world, cars

    def unpack_trusted(self, data: bytes) -> tuple[list[int], list[list[int]]]:
        """Decode bytes this codec packed, without validation: the caller vouches for their origin
        (``World.restore_own_state``) or validates next (``unpack``).

        On a little-endian machine (the saved order) the values are read through one memoryview of
        the bytes, each car's slice straight into its list, without ``struct``'s tuple of every value
        and the second copy per car (a rollback's restore is on the hot path)."""
        if NATIVE_LITTLE_ENDIAN:
            view = memoryview(data)[HEADER.size:].cast("q")
            return view[: self.world_length].tolist(), [view[start:end].tolist() for start, end in self.spans]
        values = self.values.unpack_from(data, HEADER.size)
        return list(values[: self.world_length]), [list(values[start:end]) for start, end in self.spans]


def digest_of(*parts: object) -> bytes:
    """SHA-256 over the ``repr`` of frozen spec dataclasses (ints, strings and tuples only: stable)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode("utf-8"))
        h.update(b"\x00")
    return h.digest()


class StateLimits:
    """Range checks of a decoded state against the world's topology."""

    def __init__(self, part_counts: list[int], checkpoint_count: int, laps_to_finish: int,
                 initial_q: list[int], penalty_frames: int, valid_weather: Callable[[list[int]], bool],
                 valid_projectiles: Callable[[list[int]], bool], valid_rotors: Callable[[list[int]], bool],
                 valid_obstacles: Callable[[list[int]], bool]) -> None:
        self.part_counts = part_counts
        self.valid_weather = valid_weather  # the world's fields → whether its weather part is reachable
        self.valid_projectiles = valid_projectiles  # the same for its projectile slots
        self.valid_rotors = valid_rotors  # and for its rotor slots
        self.valid_obstacles = valid_obstacles  # and for its destructible entities' slots
        self.checkpoint_count = checkpoint_count
        self.laps_to_finish = laps_to_finish
        self.initial_q = initial_q
        self.penalty_frames = penalty_frames

    def check(self, world: list[int], cars: list[list[int]]) -> None:
        """``SimError`` (``state-invalid``, naming the world or the car) if any value is outside the range
        this world's topology allows; nothing is changed either way."""
        _require(world[W_FRAME] >= 0 and world[W_DONE] in (0, 1) and 0 <= world[W_END_REASON] <= 3
                 and world[W_ENDGAME] >= 0 and world[W_SETTLED] >= 0, "world")
        _require(self.valid_weather(world), "the weather (accumulator, ordinal or a patch slot)")
        _require(self.valid_projectiles(world), "a projectile slot")
        _require(self.valid_rotors(world), "a rotor slot")
        _require(self.valid_obstacles(world), "a destructible entity's slot")
        broken = [c[BROKEN_MASK].bit_count() if c[BROKEN_MASK] >= 0 else 0 for c in cars]
        for slot, c in enumerate(cars):
            temps = c[CAR_HEADER + P_TEMP :: PART_STRIDE]
            fatigue = c[CAR_HEADER + P_FATIGUE :: PART_STRIDE]
            ok = (
                c[STATUS] in (0, 1, 2) and c[OUTSIDE] in (0, 1) and c[ARMED] in (0, 1)
                and 0 <= c[AIR_FRAMES] <= 255
                and 0 <= c[REMAINING_Q] <= self.initial_q[slot]
                and 0 <= c[LAPS] <= self.laps_to_finish
                and 0 <= c[NEXT_CP] <= self.checkpoint_count
                and c[PROGRESS] >= 0 and c[FINISHED_FRAME] >= -1
                and c[PENALTY_KIND] in (0, 1, 2) and 0 <= c[PENALTY_TIMER] <= self.penalty_frames
                and (c[PENALTY_KIND] == 0) == (c[PENALTY_TIMER] == 0)
                and 0 <= c[BROKEN_MASK] < 1 << self.part_counts[slot]
                and 0 <= c[DESTRUCTIONS] <= sum(broken) - broken[slot]  # one credit per other car's broken part at most
                and MIN_TEMPERATURE_MC <= min(temps) and max(temps) <= MAX_TEMPERATURE_MC
                and min(fatigue) >= 0 and max(fatigue) <= 1_000_000
                and min(c[CAR_HEADER + P_FATIGUE_REM :: PART_STRIDE]) >= 0
            )
            if not ok:
                raise SimError("state-invalid", f"saved state has a value out of range in car[{slot}]")


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise SimError("state-invalid", f"saved state has a value out of range in {what}")
