"""Every car's state fields at once, decoded from ``World.save_state()`` (cheap enough for every frame).

``World.car_state`` builds a name → value dict including every part field (~18 µs per car); a driver
that looks at up to 8 cars each frame cannot afford that. ``save_state()`` is the documented canonical
layout (docs/sim.md, "Saved state"): a 40-byte header, the world fields, patch and projectile slots, then per car its car fields
and its part fields, all i64 little-endian, in the order of ``sim_core.state.layout``. One save (~7 µs for
8 cars) and one ``unpack_from`` per car give the same values; index a row with ``sim_core.state.layout``'s
car-field constants (``ARC``, ``LAT``, ``VS``, …) and ``part_field(part, P_TEMP)`` for part fields.
"""

from __future__ import annotations

import struct

from sim_core.state.codec import MAGIC, STATE_VERSION, StateCodec
from sim_core.world import World

HEADER = MAGIC + STATE_VERSION.to_bytes(2, "little")  # magic and the version this decoder reads (its rows: the codec's)
HEADER_BYTES = 40  # magic 4, version 2, car count 2, topology digest 32


class StateLayoutError(RuntimeError):
    """The saved state is not the layout version this decoder knows (sim_core changed its format)."""


def _rows(codec: StateCodec) -> tuple[tuple[struct.Struct, int], ...]:
    """(row struct, byte offset) per slot: each car's span of values in the world's codec (after the
    world fields, the weather's patch slots and the projectile slots, whose numbers depend on the round)."""
    return tuple((struct.Struct(f"<{end - start}q"), HEADER_BYTES + 8 * start) for start, end in codec.spans)


class CarRows:
    """Reads every slot's saved fields from a world; the row layout is cached per world's codec."""

    def __init__(self) -> None:
        self._codec: StateCodec | None = None  # the codec ``_rows`` was computed for
        self._rows: tuple[tuple[struct.Struct, int], ...] = ()

    def read(self, world: World) -> list[tuple[int, ...]]:
        """Per slot, in slot order: its car fields, then its part fields in partIndex order."""
        data = world.save_state()
        if not data.startswith(HEADER):
            raise StateLayoutError(f"saved state starts with {data[:6]!r}, this reader knows {HEADER!r}")
        if world.codec is not self._codec:
            self._codec, self._rows = world.codec, _rows(world.codec)
        return [row.unpack_from(data, offset) for row, offset in self._rows]
