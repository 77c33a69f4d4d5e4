"""``CarView``: one car of a world as its state holds it, typed and read-only, for drivers and views.

Why a view instead of state rows: a driver or a display that indexed a car's saved integers by the
layout's constants (``ARC``, ``VS``, ``part_field(part, P_TEMP)``) depended on the saved layout, and a
wrong index read another field without a word. ``CarView`` names each value once, here beside the layout,
in the state's own integer units (µm, µm/s, 1/60 mJ quanta, milli-°C, frames); nothing in it is derived
by floats or feeds back into a step.

Cheap to make, because a driver asks for every car every frame: a view is the car's values copied into a
tuple (what ``save_state`` would pack for it), and each property reads one of them. A view is a snapshot:
the next step changes the world, not a view taken before it.
"""

from __future__ import annotations

from dataclasses import dataclass

from open4wd_base.errors import LocalError
from sim_core.state.layout import (
    ARC, BROKEN_MASK, CAR_HEADER, DESTRUCTIONS, FINISHED_FRAME, H, LAPS, LAT, NEXT_CP, P_BREAK_FRAME, P_TEMP, PART_STRIDE,
    PENALTY_TIMER, PROGRESS, REMAINING_Q, RETIRED_FRAME, STATUS, STATUS_FINISHED, STATUS_RACING, STATUS_RETIRED, VH, VLAT,
    VS, part_field,
)


@dataclass(frozen=True, slots=True)
class CarView:
    """The car in ``slot`` after the world's last step (``World.car``, ``World.cars``).

    ``values`` are the car's saved integers in layout order; read them through the properties."""

    slot: int
    values: tuple[int, ...]

    # ---- where it is and how it moves (the route frame) ------------------------------------------

    @property
    def arc_um(self) -> int:
        """Position along the route in the current lap's frame (µm, unwrapped)."""
        return self.values[ARC]

    @property
    def lat_um(self) -> int:
        """Lateral offset of the centre of mass from the centreline (µm, + = right)."""
        return self.values[LAT]

    @property
    def h_um(self) -> int:
        """Height of the car's underside above the ribbon surface (µm; 0 on the ground)."""
        return self.values[H]

    @property
    def vs_um_s(self) -> int:
        """Speed along the route tangent (µm/s)."""
        return self.values[VS]

    @property
    def vlat_um_s(self) -> int:
        """Velocity along the route's right vector (µm/s)."""
        return self.values[VLAT]

    @property
    def vh_um_s(self) -> int:
        """Velocity along the route's up vector (µm/s, + = rising)."""
        return self.values[VH]

    # ---- the race ---------------------------------------------------------------------------------

    @property
    def laps(self) -> int:
        """Completed laps."""
        return self.values[LAPS]

    @property
    def next_checkpoint(self) -> int:
        """Index of the next checkpoint not yet passed in this lap."""
        return self.values[NEXT_CP]

    @property
    def progress_um(self) -> int:
        """Progress along the current lap (µm; monotone, held at the next checkpoint not yet passed)."""
        return self.values[PROGRESS]

    @property
    def racing(self) -> bool:
        """Neither finished nor retired. A car whose motor or battery broke still races (it rolls on;
        ``World.disable_reason`` says whether its skills act)."""
        return self.values[STATUS] == STATUS_RACING

    @property
    def finished(self) -> bool:
        """Whether it finished legally (never undone, even if its chassis breaks later)."""
        return self.values[STATUS] == STATUS_FINISHED

    @property
    def retired(self) -> bool:
        """Whether its chassis broke while it raced: out of the race for good."""
        return self.values[STATUS] == STATUS_RETIRED

    @property
    def finished_frame(self) -> int | None:
        """The frame count after the step that finished it, None while it has not finished."""
        frame = self.values[FINISHED_FRAME]
        return None if frame < 0 else frame

    @property
    def retired_frame(self) -> int | None:
        """The frame its chassis broke in (also after a finish), None while the chassis is whole."""
        frame = self.values[RETIRED_FRAME]
        return None if frame < 0 else frame

    @property
    def penalty_frames(self) -> int:
        """Frames left of a b-soft or fall-out penalty (0: none): its skills take no effect meanwhile."""
        return self.values[PENALTY_TIMER]

    @property
    def destructions(self) -> int:
        """Other cars' parts whose first break it is credited with."""
        return self.values[DESTRUCTIONS]

    # ---- energy and parts ----------------------------------------------------------------------------

    @property
    def energy_q(self) -> int:
        """Battery energy left, in quanta of 1/60 mJ."""
        return self.values[REMAINING_Q]

    @property
    def broken_mask(self) -> int:
        """Bit ``i`` set: part ``i`` (its partIndex) is broken."""
        return self.values[BROKEN_MASK]

    @property
    def part_count(self) -> int:
        """How many parts the car has (``part_temp_mc`` and ``part_break_frame`` take 0 .. this − 1)."""
        return (len(self.values) - CAR_HEADER) // PART_STRIDE

    def part_temp_mc(self, part: int) -> int:
        """Temperature of part ``part`` (by partIndex), milli-°C. ``LocalError`` ``car-view-no-such-part``
        for an index the car has no part at."""
        return self.values[self._part(part, P_TEMP)]

    def part_break_frame(self, part: int) -> int | None:
        """The frame part ``part`` broke in, None while it is whole (``LocalError`` as ``part_temp_mc``)."""
        frame = self.values[self._part(part, P_BREAK_FRAME)]
        return None if frame < 0 else frame

    def _part(self, part: int, field: int) -> int:
        """The index of a part's field, refusing a part the car does not have (it would read another value)."""
        index = part_field(part, field)
        if part < 0 or index >= len(self.values):
            raise LocalError("car-view-no-such-part", f"car {self.slot} has parts 0..{self.part_count - 1}, not {part}")
        return index
