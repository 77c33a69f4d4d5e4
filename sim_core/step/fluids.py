"""The track's fluid zones and the cars that touch them (spec/simcore.md §4.3, §7.4 "Fluids", 材質表 §3, §6).

A car touches a zone when the point under its centre (the ribbon point at its arc and lateral offset,
lifted by its height above the ribbon: its underside) lies inside the zone's box grown by 10 mm on every
side, so that a flat puddle is met by a car on the ground and not by one flying over it. The touch is
taken from where the car starts the frame (like the weather's patches). What a fluid does comes from the
material table (``deploy_behavior``, ``deploy_params``); several zones combine as the spec says:

- **grip** (``grip_loss``: water 0.5; ``sticky``: oil 0.3): the drive runs at ``grip`` of itself, its
  torque and its top speed alike (``vsurf = vtop·grip``; both are linear in the power, so the drive of
  ``grip·P`` is exactly that), the battery still paying the whole drive; the strongest (lowest) grip wins;
- **sticky** (oil, decay 0.7/s): ``v *= 1 − (1 − decay)·dt`` on every axis, the strongest (lowest decay) wins;
- **freeze / burn** (−20 / +30 °C/s): every live part takes the heat ``C·ΔT·dt`` into its one backward-
  Euler solve (so the air still pulls it back); zones stack;
- **corrosive** (acid): every live part with an ultimate strength gains ``2.5/ultimate[MPa]·dt`` of
  fatigue (floored to whole ppm per frame), once per zone; zones stack; a part breaks at 1 (the
  end-of-frame transaction), and a passive weapon's resistance scales its share as it scales heat.

A fluid bullet spread on the ribbon (``sim_core.step.launch``) is a zone too: a disc (``Disc``) of its fluid,
touched by a car whose underside is within the reach of the ribbon and whose arc and lateral offset are
within the disc's radius grown by the reach; it combines with the track's zones as they do.

The route-frame car has no part geometry, so a touching car's every live part is in the fluid. A zone sits
on the ribbon as it sits on the track's surface (its centre's ``surface_gap_um``, ``Route.seated``): the
ribbon stands for the surface and may lie centimetres off the mesh between route points.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from sim_core.constants import FATIGUE_BREAK_PPM
from sim_core.intmath import around_loop, isqrt, mul
from sim_core.specs.fluids import FluidZone
from sim_core.specs.materials import material
from sim_core.specs.route import Route
from sim_core.state.layout import ARC, BROKEN_MASK, H, LAT, P_FATIGUE, part_field
from sim_core.step.model import CarModel, Mechanics, TireHeatWear
from sim_core.step.placement import Ribbon, ribbon_point

REACH_UM: Final = 10_000
"""10 mm: how far outside a zone's box a car's underside still touches it."""
KEEP_DEN: Final = 60_000
"""The sticky factor of a frame, 1 − (1 − decay)·dt, over 60 000 (decay in ‰ per second, dt = 1/60 s)."""
HEAT_TU_PER_MJ_C_MC_S: Final = 1000
"""C [mJ/°C] · ΔT/s [m°C/s] → tu in a frame: THERMAL_C_TU (60 000) · ΔT/60."""
ACID_PPM_NUM: Final = 125_000_000
"""2.5/ultimate[MPa] per second in ppm per frame: 2.5e6·1000/(60·ultimate[kPa]) = 125e6/(3·kPa)."""
NO_GRIP_LOSS: Final = 1000
DISC_AREA_MIN_UM2: Final = 100_000_000
"""1e-4 m²: the least area a fluid bullet spreads over."""
DISC_AREA_MAX_UM2: Final = 250_000_000_000
"""0.25 m²: the most."""


class FluidTouch(NamedTuple):
    """What the zones a car touches do to it in one frame (the module docstring's combination); one zone's
    effect is one of these too (``fluid_effect``)."""

    grip_milli: int  # the drive's share, ‰ (1000: no grip loss)
    keep: int  # the sticky factor over KEEP_DEN (KEEP_DEN: not sticky)
    heat_rate_mc_s: int  # Σ temperature change per second of the freeze and burn zones (m°C/s)
    acid: int  # corrosive zones touched


class Disc(NamedTuple):
    """A fluid bullet spread on the ribbon (``sim_core.step.launch``): its centre along the route axes, the
    square of its radius grown by the reach, and its fluid's effect."""

    arc_um: int
    lat_um: int
    reach_sq: int
    effect: FluidTouch


class _Zone(NamedTuple):
    lo: tuple[int, int, int]
    hi: tuple[int, int, int]
    effect: FluidTouch


def fluid_effect(material_id: str) -> FluidTouch:
    """What one zone of the fluid ``material_id`` does to a car touching it (the material table's
    ``deploy_behavior`` and ``deploy_params``)."""
    mat = material(material_id)
    params = dict(mat.deploy_params_milli)
    decay = params.get("velocity_decay_per_sec", 1000)
    return FluidTouch(params.get("grip_modifier", NO_GRIP_LOSS), KEEP_DEN - (1000 - decay),
                      params.get("temperature_delta_per_sec", 0), 1 if mat.deploy_behavior == "corrosive" else 0)


def disc_reach_sq(mass_ug: int, material_id: str) -> int:
    """The square of the radius, grown by the reach, of the disc a fluid bullet spreads into: area
    ``clamp(V/0.002, 1e-4, 0.25)`` m² (V its volume in m³: a 2 mm film), radius ``√(area/π)`` with
    π = 355/113. In µm²: ``V/0.002 m`` = mass[µg]·1e9/ρ[kg/m³]/2000 µm = mass·500 000/ρ."""
    area = min(max(mass_ug * 500_000 // material(material_id).density_kg_m3, DISC_AREA_MIN_UM2), DISC_AREA_MAX_UM2)
    reach = isqrt(area * 113 // 355) + REACH_UM
    return reach * reach


def _zone(route: Route, zone: FluidZone) -> _Zone:
    """The zone's box moved to sit on the ribbon as it sits on the surface (``Route.seated``), grown by the
    reach, with its fluid's effect."""
    lo, hi = zone.min_um, zone.max_um
    centre = ((lo[0] + hi[0]) // 2, (lo[1] + hi[1]) // 2, (lo[2] + hi[2]) // 2)
    seat = route.seated(centre, zone.surface_gap_um)
    dx, dy, dz = seat[0] - centre[0] - REACH_UM, seat[1] - centre[1] - REACH_UM, seat[2] - centre[2] - REACH_UM
    ex, ey, ez = dx + 2 * REACH_UM, dy + 2 * REACH_UM, dz + 2 * REACH_UM
    return _Zone((lo[0] + dx, lo[1] + dy, lo[2] + dz), (hi[0] + ex, hi[1] + ey, hi[2] + ez),
                 fluid_effect(zone.material))


class Fluids:
    """The round's fluid zones (built once by ``World``; ``touch`` once per live car and frame)."""

    def __init__(self, route: Route, zones: tuple[FluidZone, ...]) -> None:
        self.ribbon = Ribbon(route) if zones else None
        self.loop_length = route.length_um if route.loop else 0
        self.zones = [_zone(route, z) for z in zones]
        # the box around every zone: a car whose underside is outside it touches none (most cars, most frames)
        self.hull_lo = tuple(min(z.lo[k] for z in self.zones) for k in range(3)) if self.zones else (0, 0, 0)
        self.hull_hi = tuple(max(z.hi[k] for z in self.zones) for k in range(3)) if self.zones else (0, 0, 0)

    def touch(self, c: list[int], discs: Sequence[Disc] = ()) -> FluidTouch | None:
        """The combined effect of the track's zones and the spread bullets' ``discs`` the car's underside is
        in, or None when it is in none. A disc lies on the ribbon: the car's underside is within the reach
        above it and its arc and lateral offset within the disc's radius, grown by the reach."""
        touched: list[FluidTouch] = []
        ribbon = self.ribbon
        if ribbon is not None:
            x, y, z = ribbon_point(ribbon, c[ARC], c[LAT], c[H])
            lo, hi = self.hull_lo, self.hull_hi
            if lo[0] <= x <= hi[0] and lo[1] <= y <= hi[1] and lo[2] <= z <= hi[2]:
                for lo, hi, effect in self.zones:
                    if lo[0] <= x <= hi[0] and lo[1] <= y <= hi[1] and lo[2] <= z <= hi[2]:
                        touched.append(effect)
        if discs and -REACH_UM <= c[H] <= REACH_UM:
            for arc, lat, reach_sq, effect in discs:
                ds, dl = around_loop(c[ARC] - arc, self.loop_length), c[LAT] - lat
                if mul(ds, ds) + mul(dl, dl) <= reach_sq:
                    touched.append(effect)
        if not touched:
            return None
        grip, keep, rate, acid = NO_GRIP_LOSS, KEEP_DEN, 0, 0
        for zone_grip, zone_keep, zone_rate, zone_acid in touched:
            grip = zone_grip if zone_grip < grip else grip
            keep = zone_keep if zone_keep < keep else keep
            rate += zone_rate
            acid += zone_acid
        return FluidTouch(grip, keep, rate, acid)


def fluid_heat(model: CarModel, mech: Mechanics, heat: list[int], loads: Sequence[tuple[int, int, int]],
               rate_mc_s: int) -> list[tuple[int, int, int]]:
    """Add a frame of ``rate_mc_s`` (m°C/s) to every live part's heat: ``heat`` in place for the parts
    other than tires, and the tire groups' loads returned (each tire of a group has the group's capacity)."""
    for plan in (mech.heated_plan, mech.cold_plan):
        for part_heat in plan:
            part = part_heat.part
            heat[part] += HEAT_TU_PER_MJ_C_MC_S * model.heat_capacity[part] * rate_mc_s
    return [(energy + _tire_heat(group, rate_mc_s), worn, normal)
            for group, (energy, worn, normal) in zip(mech.tire_plan, loads, strict=True)]


def _tire_heat(group: TireHeatWear, rate_mc_s: int) -> int:
    # double_capacity = 2·THERMAL_C_TU·C = 120 000·C, so C·1000·rate = double_capacity·rate/120
    return group.double_capacity * rate_mc_s // 120


def corrode(c: list[int], model: CarModel, zones: int) -> int:
    """A frame of ``zones`` acid zones on every live part of the car with an ultimate strength; the mask of
    the parts it breaks (fatigue reaching 1: the end-of-frame transaction commits them)."""
    broken_mask = c[BROKEN_MASK]
    newly = 0
    for part, ultimate_kpa in enumerate(model.ultimate_kpa):
        if ultimate_kpa is None or broken_mask >> part & 1:
            continue
        gain = zones * ACID_PPM_NUM // (3 * ultimate_kpa)
        if part == model.weapon:
            gain = gain * model.weapon_heat_scale // 10_000
        at = part_field(part, P_FATIGUE)
        fatigue = c[at] + gain
        if fatigue >= FATIGUE_BREAK_PPM:
            fatigue = FATIGUE_BREAK_PPM
            newly |= 1 << part
        c[at] = fatigue
    return newly
