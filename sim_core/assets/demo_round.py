"""The demo round from the shipped built-ins: track-02 (fixed loop, 8 players) and the three archetype
cars (speed, heavy, control) in slot order; used by ``World.demo``."""

from __future__ import annotations

from typing import Any

from sim_core.assets.builtins import admitted_builtin
from sim_core.assets.convert import track_spec, vehicle_from_loadout
from sim_core.assets.mounts import TIRE_SLOTS
from sim_core.specs.track import TrackSpec
from sim_core.specs.vehicle import VehicleSpec

DEMO_TRACK = "builtin:track-02"
ARCHETYPE_ROLLERS = {1: ("FL", "FR"), 2: ("FL", "FR", "CL", "CR", "RL", "RR"), 3: ("FL", "FR", "RL", "RR")}


def archetype_loadout(number: int) -> dict[str, Any]:
    """The all-``-NN`` loadout of archetype 1 (speed), 2 (heavy) or 3 (control)."""
    ref = f"-{number:02d}"
    return {
        "chassis": "builtin:chassis" + ref, "body": "builtin:body" + ref, "motor": "builtin:motor" + ref,
        "battery": "builtin:battery" + ref, "tires": {s: "builtin:tire" + ref for s in TIRE_SLOTS},
        "rollers": {s: "builtin:roller" + ref for s in ARCHETYPE_ROLLERS[number]},
        "chip": "builtin:chip" + ref, "weapon": "builtin:weapon" + ref,
    }


def archetype_vehicle(number: int) -> VehicleSpec:
    """The car of archetype ``number`` assembled from the built-ins; ``AssetRejected`` if the shipped parts
    do not make a legal car (a broken installation)."""
    return vehicle_from_loadout(archetype_loadout(number), admitted_builtin, f"builtin:archetype-{number:02d}")


def builtin_demo_track(ref: str = DEMO_TRACK) -> TrackSpec:
    """The race track of a built-in track ref (default track-02), through admission like any asset."""
    return track_spec(admitted_builtin(ref), track_id=ref)


def builtin_demo_vehicles(count: int) -> tuple[VehicleSpec, ...]:
    """Slot s gets archetype s mod 3 (speed, heavy, control)."""
    cars = [archetype_vehicle(n) for n in (1, 2, 3)]
    return tuple(cars[slot % 3] for slot in range(count))
