"""Per-car constants the step reads, derived once from a ``VehicleSpec`` and the track's materials.

``CarModel`` holds what never changes during a round; ``Mechanics`` holds what depends on which parts
are broken (mass, live tires and rollers, the live parts' heat and wear plans). ``Mechanics`` is
derived state: it is recomputed from the ``broken_mask`` in the saved state (and cached per mask),
never saved itself. Combine rules follow the
spec: friction and body restitution ``Average``; tire and roller restitution ``Min``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple

from sim_core.constants import (
    CONTACT_FACTOR_DEN, CONTACT_NORMAL_UNIT, COST_FRAMES, EFFECT_FRAMES, LAUNCH_FIRE_INTERVAL_FRAMES, MAX_TEMPERATURE_MC,
    MIN_TEMPERATURE_MC, QUANTA_PER_MJ, R_SCALE, THERMAL_C_TU, TOP_SPEED_DEN, TOP_SPEED_NUM, TORQUE_IMPULSE_DEN,
    TORQUE_IMPULSE_NUM,
)
from sim_core.specs.inputs import SKILLS
from sim_core.specs.materials import Material, material
from sim_core.specs.track import TrackSpec
from sim_core.specs.vehicle import LEFT_ROLLER_SLOTS, RIGHT_ROLLER_SLOTS, VehicleSpec
from sim_core.state.layout import P_FATIGUE, P_FATIGUE_REM, P_TEMP, part_field
from sim_core.step.aero import AeroModel, aero_model, weight_cap
from sim_core.step.contact import ContactBox


def _average(a: int, b: int) -> int:
    return (a + b) // 2


def _no_temperatures(c: list[int]) -> tuple[int, ...]:
    """``Mechanics.cold_temps`` of a car without cold parts."""
    return ()


class PartHeat(NamedTuple):
    """One part's constants of the thermal pass (``sim_core.step.thermal``), with the track's air
    temperature folded in, so that the backward-Euler solve is one expression:
    T' = div_round(C·T + E + H·T_air, C + H) = (2C·T + 2E + (2H·T_air + C + H)) // (2(C + H)),
    C = THERMAL_C_TU · heat capacity (tu per m°C), H = ambient conductance. As 2C·T = 2(C + H)·T − 2H·T,
    that is T + (2E + (2H·T_air + C + H) − 2H·T) // (2(C + H)), the same integer, which the step computes:
    2C is beyond the compiled step's machine-word products (2³⁰), 2H is small.

    Without heat (E = 0) the rounding holds T still wherever −(C + H) < 2H·(T − T_air) ≤ C + H: a part
    cools to within ``(C + H) / 2H`` of the air (several °C for a tire) and stays there. ``still_low``..
    ``still_high`` is that band, cut to the clamp range and to the limit (a part above its limit must
    be solved: the solve is what breaks it), so a part in it with no heat has nothing to solve."""

    part: int
    temp_at: int  # index of the part's temp_mc in the car's list
    double_capacity: int  # 2C
    double_conductance: int  # 2H
    constant: int  # 2H·T_air + C + H
    divisor: int  # 2(C + H)
    limit: int | None  # thermal limit (m°C); None = cannot overheat
    still_low: int  # without heat, T' = T for still_low ≤ T ≤ still_high
    still_high: int


class TireGroup(NamedTuple):
    """Live tires of one car with the same μ pair and rolling resistance and the same thermal constants
    (usually all four): the motion computes a tire's traction, rolling resistance, slip heat and wear
    once per group and gives each tire of the group the same (``sim_core.step.physics``), the same
    integers as tire by tire; ``Mechanics.tire_plan`` holds the group's thermal side at the same index."""

    mu: int  # μ pair ‰ (tire and surface, Average)
    rr_milli: int  # rolling resistance (tire × surface, milli × milli)
    size: int  # how many tires


class Contact(NamedTuple):
    """A tire's contact conductance with the track surface, or a roller's with the wall (spec §7.1),
    H = 2e-5·harmonicMean(√kρc)·area·N_imp, in nW/°C, of a frame's normal impulse N (1e-15 N·s, per tire or
    roller), in machine words: H = ⌊⌊N / 10⁹⌋·factor / 10⁹⌋ (N in µN·s, floored), with
    factor = ⌊4·e_part·e_surface·A / ((e_part + e_surface)·10⁸)⌋ (``contact_factor``), the exchange factors e
    (``Material.exchange_factor_milli``) of the part's material and the surface's (wall's) and the part's
    contact area A (µm²): the spec's 2e-5·(2·e_p·e_s/(e_p + e_s))/1000·A·1e-12·N·1e-15·1e9 regrouped.

    H is 0 exactly for N < ``from_normal`` (the least N with ⌊N / 10⁹⌋·factor ≥ 10⁹; −1 with factor = 0:
    no contact), and nothing is computed then. ``capacity``, ``conductance`` are 1000·(C + H_air) and
    1000·H_air of the part's ``PartHeat`` solve: its terms in nW/°C, to which H adds."""

    factor: int
    from_normal: int
    capacity: int
    conductance: int


def contact_factor(part: int, surface: int, area_um2: int) -> tuple[int, int]:
    """``Contact``'s (factor, from_normal) of a part of exchange factor ``part`` and contact area ``area_um2``
    on a surface of exchange factor ``surface`` (thousandths of √kρc, SI)."""
    factor = 4 * part * surface * area_um2 // ((part + surface) * CONTACT_FACTOR_DEN) if part + surface else 0
    if not factor:
        return 0, -1
    return factor, -(-CONTACT_NORMAL_UNIT // factor) * CONTACT_NORMAL_UNIT


class WallRollers(NamedTuple):
    """The live rollers of one side of a car and their contact with the wall (``Mechanics.wall_rollers``):
    a wall's normal impulse on that side is split evenly over its ``live`` rollers; ``touching`` holds
    those with a contact conductance (``PartHeat`` and ``Contact``), solved with it in a frame that hits
    the wall (``sim_core.step.thermal``), and ``cold_plan`` the car's cold plan without them."""

    live: int
    touching: tuple[tuple[PartHeat, Contact], ...]
    cold_plan: tuple[PartHeat, ...]


class TireHeatWear(NamedTuple):
    """The thermal pass's constants of the tires of one ``TireGroup`` (``Mechanics.tire_plan[k]`` belongs
    to ``Mechanics.tire_groups[k]``): each tire's ``PartHeat`` solve and its wear, in one iteration, so
    that the tire's temperature and its fatigue (which reads the new temperature) are solved together.

    The tires of a group take the same heat and wear (the motion computes them once per group), so
    tires of a group in the same state end the frame in the same state; they usually are (the physics
    treats the tires of a car alike), and a tire whose state equals the previous tire's copies its
    results instead of solving again (``sim_core.step.thermal``)."""

    double_capacity: int  # as in PartHeat
    double_conductance: int
    constant: int
    divisor: int
    limit: int | None
    still_low: int
    still_high: int
    wear_den: int  # wear capacity (mJ) · R_SCALE²: the fatigue denominator
    contact: Contact  # the contact conductance with the track (sim_core.step.thermal)
    tires: tuple[tuple[int, int, int, int], ...]  # per tire: (part, indices of temp_mc, fatigue_ppm, fatigue_rem)


@dataclass(frozen=True, slots=True)
class Mechanics:
    """What the current broken parts leave: mass, live tires, the wall response of each side, and the
    live parts the thermal pass visits."""

    mass_ug: int
    mass_x60: int  # 60·mass: the velocity update's momentum scale
    live_tires: int  # how many tires carry the load
    tire_groups: tuple[TireGroup, ...]  # the live tires, those with equal μ, rolling resistance and thermal constants together
    functional: bool  # motor and battery both alive
    skills_enabled: bool  # chip alive (and functional)
    weapon_alive: bool
    left_wall: tuple[int, int, int]  # (restitution ‰, friction ‰, rolling µ-units) of the left side
    right_wall: tuple[int, int, int]
    heated_plan: tuple[PartHeat, ...]  # the live parts other than tires the physics may heat (CarModel.heated_parts)
    cold_plan: tuple[PartHeat, ...]  # the other live parts other than the tires: the physics never heats them
    cold_temps: Callable[[list[int]], tuple[int, ...]]  # a car's list → the cold parts' temperatures, twice over
    cold_at_air: tuple[int, ...]  # what cold_temps reads when every cold part sits at the air temperature
    # (and that is in their still bands)
    tire_plan: tuple[TireHeatWear, ...]  # the thermal side of tire_groups[k]: heated and the only parts that wear
    wall_rollers: tuple[WallRollers, WallRollers]  # (left, right): the rollers a wall hit on that side touches
    idle_loads: tuple[tuple[int, int, int], ...]  # (heat, wear, normal) of each tire group in a frame without tire work: zeros
    contact_box: ContactBox  # what contact reads: length, width, height, mass, restitution
    aero: AeroModel | None  # the live body's aero (None: no body aero, or the body is broken)
    aero_cap: int  # the aero impulse cap of a frame at this mass (sim_core.step.aero.weight_cap)
    steel: tuple[tuple[int, int, int, int], ...]  # the live parts' passive sub-meshes: (x, y, z µm, χ ‰), car frame


class CarModel:
    """Static constants of one car on one track (materials combined, skills indexed, thermal baked)."""

    def __init__(self, spec: VehicleSpec, track: TrackSpec) -> None:
        self.spec = spec
        parts = spec.parts
        self.part_count = len(parts)
        kinds = [p.part_type for p in parts]
        self.chassis, self.body = kinds.index("chassis"), kinds.index("body")
        self.motor, self.battery = kinds.index("motor"), kinds.index("battery")
        self.chip = kinds.index("chip") if "chip" in kinds else -1
        self.weapon = kinds.index("weapon") if "weapon" in kinds else -1
        self.tire_parts = tuple(i for i, k in enumerate(kinds) if k == "tire")
        self.driven_count = len(self.tire_parts)  # every tire is driven; broken ones keep their share
        self.wheel_radius_um = sum(parts[i].radius_um for i in self.tire_parts) // self.driven_count
        self.masses = spec.effective_masses_ug
        self.length_um, self.width_um, self.height_um = spec.length_um, spec.width_um, spec.height_um
        self.half_width_um = spec.width_um // 2
        self.torque_ratio = spec.motor.torque_ratio_pct
        self.auto_input_mw = spec.motor.auto_input_mw
        self.configured_output_mw = spec.battery.configured_output_mw
        self.full_drive = self.drive(self.auto_input_mw)  # the drive of every frame with enough battery
        self.initial_q = spec.battery.energy_capacity_mj * QUANTA_PER_MJ
        self.allocation = tuple(spec.allocation_pct(skill) for skill in SKILLS)
        self.chip_skills = spec.chip_skills
        self.active_weapon = spec.weapon is not None and spec.weapon.mode == "active"
        self.weapon_heat_scale = 10_000 - spec.passive_resist_x100
        surface = material(track.surface_material)
        wall = material(track.wall_material or track.surface_material)
        self.wall = wall
        tire_mats = [material(parts[i].material) for i in self.tire_parts]
        self.tire_mu, self.tire_rr = self._tire_grip(tire_mats, surface.friction_milli, surface.rolling_resistance_milli)
        # Inside a rain or snow patch (sim_core.step.weather) the surface's friction and rolling resistance
        # are scaled by the patch's modifiers (‰, floored) before the combine: the tires' wet grip.
        patch = track.weather.patch
        wet_mu, wet_rr = surface.friction_milli, surface.rolling_resistance_milli
        if patch is not None:
            wet_mu, wet_rr = wet_mu * patch.friction_modifier_milli // 1000, wet_rr * patch.rolling_modifier_milli // 1000
        self.wet_tire_mu, self.wet_tire_rr = self._tire_grip(tire_mats, wet_mu, wet_rr)
        self.landing_restitution = min([m.restitution_milli for m in tire_mats] + [surface.restitution_milli])
        self.body_restitution = material(parts[self.body].material).restitution_milli
        self.chassis_mu = _average(material(parts[self.chassis].material).friction_milli, surface.friction_milli)
        self.heat_capacity = tuple(p.heat_capacity_mj_per_c for p in parts)
        self.conductance = tuple(p.ambient_conductance_uw_per_c for p in parts)
        self.thermal_limit = tuple(p.thermal_limit_mc for p in parts)
        self.exchange_factor = tuple(material(p.material).exchange_factor_milli for p in parts)
        self.contact_area = tuple(p.contact_area_um2 for p in parts)
        self.surface_exchange_factor = surface.exchange_factor_milli
        self.wall_exchange_factor = wall.exchange_factor_milli
        self.wear_capacity = tuple(p.wear_capacity_mj for p in parts)
        self.ultimate_kpa = tuple(material(p.material).ultimate_strength_kpa for p in parts)  # acid (step/fluids)
        self._rollers = {p.slot: i for i, p in enumerate(parts) if p.part_type == "roller"}
        self._cache: dict[int, Mechanics] = {}
        self._wet_cache: dict[int, Mechanics] = {}
        # a car out of contact (retired or under a penalty): mass 0 (sim_core.step.contact)
        self.ghost_box = ContactBox(self.length_um, self.width_um, self.height_um, 0, self.body_restitution)
        self.air_mc = track.air_temperature_mc
        body_aero = parts[self.body].aero
        self.aero = None if body_aero is None else aero_model(body_aero)
        self.gravity_um_s2 = track.gravity_um_s2
        # magnets (sim_core.step.magnets): each part's steel, and an active magnet weapon's pole
        self.steel: tuple[tuple[tuple[int, int, int, int], ...], ...] = tuple(
            tuple((*p.offset_um, p.susceptibility_milli) for p in part.steel) for part in parts)
        weapon = spec.weapon
        pole = weapon.magnet if weapon is not None else None
        # a general or launch weapon's (push, rotor, launch) Axis +Z along the route axes (s = −z, l = x,
        # h = y): its recoil, a push's direction (sim_core.step.weapons), a release's (sim_core.step.launch)
        axis = weapon.axis_e6 if weapon is not None and weapon.mechanism in ("push", "rotor", "launch") else None
        self.recoil_axis: tuple[int, int, int] | None = None if axis is None else (-axis[2], axis[0], axis[1])
        self.pushes = weapon is not None and weapon.mechanism == "push"
        self.launches = weapon is not None and weapon.mechanism == "launch"
        self.rotates = weapon is not None and bool(weapon.rotors)  # a rotor weapon with its bodies (step/rotors)
        # what a skill pays and does, in frames of its budget: a launcher's Hold is 15 frames of each, and
        # only on a frame it releases a bullet (spec §5.2)
        weapon_frames = LAUNCH_FIRE_INTERVAL_FRAMES if self.launches else COST_FRAMES["weapon"]
        self.cost_frames = tuple(weapon_frames if s == "weapon" else COST_FRAMES[s] for s in SKILLS)
        self.effect_frames = tuple(weapon_frames if s == "weapon" else EFFECT_FRAMES[s] for s in SKILLS)
        self.magnet_pole: tuple[int, int, int, int, int, int] | None = (
            None if pole is None else (*pole.offset_um, *pole.n_pole_e6))
        # The thermal pass solves only the parts whose temperature can change. The physics pass heats
        # these parts and no others, and wears only the tires (tests/sim_core/step/test_thermal_wear.py
        # checks both); every other part ("cold", ``Mechanics.cold_plan``) only moves while a loaded or
        # edited state holds it outside its still band (``sim_core.step.thermal.cold_parts_still``).
        self.heated_parts = tuple(sorted({self.motor, self.battery, *self.tire_parts} | ({self.chip} - {-1})))

    def _tire_grip(self, tire_mats: list[Material], surface_mu: int, surface_rr: int) -> tuple[dict[int, int], dict[int, int]]:
        """Each tire's μ (the Average with the surface's) and rolling-resistance product on a surface of this
        friction and rolling resistance (‰): the dry surface, or the wet one inside a patch."""
        pairs = list(zip(self.tire_parts, tire_mats, strict=True))
        return ({i: _average(m.friction_milli, surface_mu) for i, m in pairs},
                {i: m.rolling_resistance_milli * surface_rr for i, m in pairs})

    def drive(self, drive_mw: int) -> tuple[int, int]:
        """The drive's torque impulse per frame and the top speed it reaches (spec §4.3)."""
        ratio = self.torque_ratio
        return (drive_mw * ratio * TORQUE_IMPULSE_NUM // (TORQUE_IMPULSE_DEN * self.wheel_radius_um),
                drive_mw * (100 - ratio) * TOP_SPEED_NUM // TOP_SPEED_DEN)

    def _part_heat(self, part: int) -> PartHeat:
        capacity = THERMAL_C_TU * self.heat_capacity[part]
        conductance = self.conductance[part]
        limit = self.thermal_limit[part]
        if conductance:  # the band of PartHeat: −(C + H) < 2H·d ≤ C + H, d = T − T_air
            low = self.air_mc + (-(capacity + conductance)) // (2 * conductance) + 1
            high = self.air_mc + (capacity + conductance) // (2 * conductance)
        else:  # no exchange with the air: without heat nothing changes
            low, high = MIN_TEMPERATURE_MC, MAX_TEMPERATURE_MC
        high = min(high, MAX_TEMPERATURE_MC, MAX_TEMPERATURE_MC if limit is None else limit)
        return PartHeat(part, part_field(part, P_TEMP), 2 * capacity, 2 * conductance,
                        2 * conductance * self.air_mc + capacity + conductance, 2 * (capacity + conductance), limit,
                        max(low, MIN_TEMPERATURE_MC), high)

    def _tire_groups(self, tires: list[int], wet: bool) -> tuple[tuple[TireGroup, ...], tuple[TireHeatWear, ...]]:
        """The live tires grouped by their constants (their grip on the dry or the ``wet`` surface), in
        order of first appearance: the groups of the motion and, at the same index, their thermal side."""
        mu, rr = (self.wet_tire_mu, self.wet_tire_rr) if wet else (self.tire_mu, self.tire_rr)
        groups: dict[tuple[tuple[int, int], tuple[int, int, int, int, int | None, int, int, int, Contact]],
                     list[tuple[int, int, int, int]]] = {}
        for part in tires:
            heat = self._part_heat(part)
            constants = ((mu[part], rr[part]),
                         (heat.double_capacity, heat.double_conductance, heat.constant, heat.divisor, heat.limit,
                          heat.still_low, heat.still_high, self.wear_capacity[part] * R_SCALE * R_SCALE,
                          self._contact(part, heat, self.surface_exchange_factor)))
            groups.setdefault(constants, []).append(
                (part, heat.temp_at, part_field(part, P_FATIGUE), part_field(part, P_FATIGUE_REM)))
        return (tuple(TireGroup(*grip, len(group)) for (grip, _), group in groups.items()),
                tuple(TireHeatWear(*thermal, tuple(group)) for (_, thermal), group in groups.items()))

    def _contact(self, part: int, heat: PartHeat, surface_factor: int) -> Contact:
        """``Contact`` of this tire or roller on a surface (the track's, the wall's) of this exchange factor."""
        factor, from_normal = contact_factor(self.exchange_factor[part], surface_factor, self.contact_area[part])
        return Contact(factor, from_normal, 500 * heat.divisor, 500 * heat.double_conductance)

    def _wall_rollers(self, slots: tuple[str, ...], alive: Callable[[int], bool],
                      cold_plan: tuple[PartHeat, ...]) -> WallRollers:
        """``WallRollers`` of the live rollers in these slots, against the wall's material."""
        rollers = [self._rollers[s] for s in slots if s in self._rollers and alive(self._rollers[s])]
        touching = []
        for heat in cold_plan:  # rollers are cold parts: no physics heats them
            if heat.part in rollers:
                contact = self._contact(heat.part, heat, self.wall_exchange_factor)
                if contact.factor:
                    touching.append((heat, contact))
        touched = {heat.part for heat, _ in touching}
        return WallRollers(len(rollers), tuple(touching), tuple(heat for heat in cold_plan if heat.part not in touched))

    def mechanics(self, broken_mask: int) -> Mechanics:
        """Mechanics for this set of broken parts (the mask only ever gains bits, so the cache stays small)."""
        return self._cached(self._cache, broken_mask, False)

    def wet_mechanics(self, broken_mask: int) -> Mechanics:
        """``mechanics`` for a frame driven inside a rain or snow patch: the tires' grip on the wet surface
        (their groups regrouped by it, each with its thermal side); everything else alike."""
        return self._cached(self._wet_cache, broken_mask, True)

    def _cached(self, cache: dict[int, Mechanics], mask: int, wet: bool) -> Mechanics:
        found = cache.get(mask)
        if found is None:
            found = cache[mask] = self._derive(mask, wet)
        return found

    def _derive(self, mask: int, wet: bool) -> Mechanics:
        def alive(i: int) -> bool:
            return i >= 0 and not mask >> i & 1

        mass = sum(m for i, m in enumerate(self.masses) if alive(i))
        functional = alive(self.motor) and alive(self.battery)
        body = self.body if alive(self.body) else self.chassis
        tire_groups, tire_plan = self._tire_groups([i for i in self.tire_parts if alive(i)], wet)
        others = [i for i in range(self.part_count) if alive(i) and i not in self.tire_parts]
        cold_plan = tuple(self._part_heat(i) for i in others if i not in self.heated_parts)
        cold_at = [plan.temp_at for plan in cold_plan] * 2  # twice: itemgetter of ≥ 2 indices returns a tuple
        return Mechanics(
            mass_ug=mass,
            mass_x60=60 * mass,
            live_tires=sum(1 for i in self.tire_parts if alive(i)),
            tire_groups=tire_groups,
            functional=functional,
            skills_enabled=functional and alive(self.chip),
            weapon_alive=alive(self.weapon),
            left_wall=self._wall_response(LEFT_ROLLER_SLOTS, alive, body),
            right_wall=self._wall_response(RIGHT_ROLLER_SLOTS, alive, body),
            heated_plan=tuple(self._part_heat(i) for i in others if i in self.heated_parts),
            cold_plan=cold_plan,
            cold_temps=itemgetter(*cold_at) if cold_at else _no_temperatures,
            # () when the air temperature is outside a cold part's still band (above its limit): never
            # matched, so such a part is always looked at, and breaks on its first solve
            cold_at_air=(self.air_mc,) * len(cold_at) if all(
                plan.still_low <= self.air_mc <= plan.still_high for plan in cold_plan) else (),
            tire_plan=tire_plan,
            wall_rollers=(self._wall_rollers(LEFT_ROLLER_SLOTS, alive, cold_plan),
                          self._wall_rollers(RIGHT_ROLLER_SLOTS, alive, cold_plan)),
            idle_loads=((0, 0, 0),) * len(tire_groups),
            contact_box=ContactBox(self.length_um, self.width_um, self.height_um, mass, self.body_restitution),
            aero=self.aero if alive(self.body) else None,
            aero_cap=weight_cap(mass, self.gravity_um_s2),
            steel=tuple(point for i, points in enumerate(self.steel) if alive(i) for point in points),
        )

    def _wall_response(self, slots: tuple[str, ...], alive: Callable[[int], bool], body: int) -> tuple[int, int, int]:
        """Rollers on this side run along the wall (Min restitution, rolling loss); without one the body
        slides on it (Average restitution and friction)."""
        wall = self.wall
        rollers = [material(self.spec.parts[self._rollers[s]].material) for s in slots if s in self._rollers
                   and alive(self._rollers[s])]
        if rollers:
            restitution = min([m.restitution_milli for m in rollers] + [wall.restitution_milli])
            rolling = min(m.rolling_resistance_milli for m in rollers) * wall.rolling_resistance_milli
            return restitution, 0, rolling
        body_mat = material(self.spec.parts[body].material)
        return (_average(body_mat.restitution_milli, wall.restitution_milli),
                _average(body_mat.friction_milli, wall.friction_milli), 0)
