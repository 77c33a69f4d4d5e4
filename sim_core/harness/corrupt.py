"""A desync on purpose: one car moved 1 µm sideways, as a bug in the step would leave it. For fault injection
(the sync test's, the soak's ``corrupt-state``) and tests; never in a race.

The world is changed from outside, through its public state: its saved bytes with one value changed,
loaded back (``World.load_state`` validates them like any other state), so the world carries no hook for it.
"""

from __future__ import annotations

from sim_core.state.codec import HEADER
from sim_core.world import World


def nudged_state(world: World, slot: int = 0, by_um: int = 1) -> bytes:
    """``world``'s state bytes with car ``slot``'s lateral offset ``by_um`` larger (to the right): exactly one
    value differs, and the state is as valid as before (a lateral offset has no range of its own)."""
    data = bytearray(world.save_state())
    offset = HEADER.size + 8 * world.field_names().index(f"car[{slot}].lat_um")
    lat = int.from_bytes(data[offset:offset + 8], "little", signed=True)
    data[offset:offset + 8] = (lat + by_um).to_bytes(8, "little", signed=True)
    return bytes(data)


def nudge(world: World, slot: int = 0, by_um: int = 1) -> None:
    """Move car ``slot`` ``by_um`` to the right (``nudged_state``), as a desync would."""
    world.load_state(nudged_state(world, slot, by_um))
