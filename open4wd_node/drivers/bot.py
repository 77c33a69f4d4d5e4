"""``BotDriver``: a small built-in driver that uses whatever skills its chip has, sensibly.

Heuristics, each frame, for a racing car whose skills are not disabled and that is not under a penalty:

- **boost** on straights: when the speed the route allows from here on (``speed_plan``: curvature ahead,
  braking distance included) leaves room for one more boost (speed + one boost ≤ margin · allowed), no
  car blocks the lane ahead, and the battery can pay without its output dropping below what the motor
  draws (so boosting never slows the drive) and without the waste heat taking battery or chip into the
  last quarter of their headroom below the thermal limit (a broken battery ends the drive for good);
- **brake** before sharp curves and crests: when the car is faster than the route allows here;
- **stabilize** (hold) when airborne and rising (after a landing bounce or a crest) or drifting sideways
  (after a hit or a slide): it damps lateral and vertical velocity;
- **swerve** (hold) left or right around a car ahead in its lane that it is catching up with, to the
  side away from that car, unless the wall is too near there (a dead-even case is settled by the seed);
- **slam** only when high above the surface and not already falling fast (the drive needs the tires on
  the ground); **jump** never: the route-frame model has no gaps to clear;
- **weapon** (hold), on the ground, at the nearest racing car ahead in its lane when it is within the
  weapon's reach and the battery can pay as for boost: a launcher within 1.5 m (its darts fly and slide
  on along the lane; the world releases one every 15 frames at most and a held
  frame between costs nothing), a magnet within 0.3 m of a car that carries steel (it pulls the two
  together: the chaser gains, the leader loses), a push weapon while touching (5 mm, its reach). A
  passive weapon never triggers, and a rotor only recoils in this model, so neither is held.

Deterministic: a pure function of its seed, the world state and the frame. The seed sets a small
"temperament" (boost margin, how far ahead it watches for cars) and breaks dead-even swerve choices,
drawn from SplitMix64 so no global random state or clock is involved.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sim_core import SKILLS
from sim_core.step.weapons import PUSH_REACH_UM
from sim_core.world import World
from sim_core.constants import (
    BATTERY_SKILL_TU_PER_Q, CHIP_SKILL_TU_PER_Q, EFFECT_FRAMES, EFFECT_UJ_DEN, EFFECT_UJ_NUM,
    K_EVENT_IMPULSE_PER_UJ, QUANTA_PER_MJ, THERMAL_C_TU,
)
from sim_core.state.car_view import CarView
from sim_core.harness.scripted import SplitMix64
from sim_core.specs.route import Route
from sim_core.specs.track import TrackSpec
from sim_core.specs.vehicle import VehicleSpec

from open4wd_node.race.driver import Decision
from open4wd_node.drivers.speed_plan import speed_profile
from open4wd_node.race.world import chip_skills

DRIFT_UM_S = 100_000  # lateral speed treated as drift worth damping (0.1 m/s)
SLAM_HEIGHT_UM = 20_000  # slam only when the underside is more than 2 cm above the ribbon
LANE_MARGIN_UM = 20_000  # extra lateral clearance counted as "in my lane"
WALL_MARGIN_UM = 30_000  # do not swerve towards a wall nearer than this
HEAT_RESERVE_PCT = 25  # keep this share of a part's headroom (limit − air) unused by skills
LAUNCH_REACH_UM = 1_500_000  # fire a launcher at a car at most this far ahead (module docstring)
MAGNET_REACH_UM = 300_000  # hold a magnet on a car at most this far ahead: the pull falls as 1/r²


@dataclass(frozen=True, slots=True)
class _Car:
    """What the bot needs to know about its own car, derived once per vehicle."""

    skills: frozenset[str]
    mass_ug: int
    width_um: int
    length_um: int
    configured_mw: int
    initial_q: int
    auto_input_mw: int
    pct: dict[str, int]
    heated: tuple[tuple[int, int, int, int], ...]  # (partIndex, tu per quantum, heat capacity, highest temp)
    cost_frames: dict[str, int]  # what a press pays, in frames of its budget (a launcher's release: 15)
    weapon_reach: int | None  # how far ahead its active weapon acts (µm), None if it is never held
    magnet: bool  # whether that weapon is a magnet (it acts only on cars that carry steel)


def _car(world: World, slot: int) -> _Car:
    v: VehicleSpec = world.vehicles[slot]
    heated = []
    for kind, tu_per_q in (("battery", BATTERY_SKILL_TU_PER_Q), ("chip", CHIP_SKILL_TU_PER_Q)):
        index = next((i for i, p in enumerate(v.parts) if p.part_type == kind), None)
        if index is None:
            continue
        limit = v.parts[index].thermal_limit_mc
        if limit is not None:
            air = world.track.air_temperature_mc
            highest = limit - max(0, limit - air) * HEAT_RESERVE_PCT // 100
            heated.append((index, tu_per_q, v.parts[index].heat_capacity_mj_per_c, highest))
    model = world.models[slot]
    mechanism = v.weapon.mechanism if v.weapon is not None and v.weapon.mode == "active" else None
    reach = {"launch": LAUNCH_REACH_UM, "magnet": MAGNET_REACH_UM, "push": PUSH_REACH_UM}.get(mechanism or "")
    return _Car(chip_skills(world, slot), v.total_mass_ug, v.width_um, v.length_um,
                v.battery.configured_output_mw, v.battery.energy_capacity_mj * QUANTA_PER_MJ,
                v.motor.auto_input_mw, {s.skill: s.allocation_pct for s in v.chip_slots}, tuple(heated),
                dict(zip(SKILLS, model.cost_frames, strict=True)), reach, mechanism == "magnet")


class BotDriver:
    """Built-in driver, deterministic per ``seed`` (see the module docstring for the heuristics)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        rng = SplitMix64(seed)
        self.boost_margin_pct = 85 + rng.next() % 11  # boost up to 85..95 % of the allowed speed
        self.watch_frames = 45 + rng.next() % 46  # look 0.75..1.5 s of closing speed ahead for cars
        self._route: Route | None = None  # the route ``_profile`` was computed for
        self._profile: list[int] = []  # its allowed speed per sample (``speed_plan``)
        self._car_key: tuple[VehicleSpec, TrackSpec] | None = None  # what ``_car`` was derived from
        self._car: _Car | None = None

    def decide(self, world: World, slot: int, frame: int) -> Decision:
        """This frame's presses by the heuristics of the module docstring (nothing while the car's
        skills are disabled, under a penalty, or once it no longer races)."""
        if world.done or world.disable_reason(slot) is not None:
            return []
        cars = world.cars()
        me = cars[slot]
        if not me.racing or me.penalty_frames > 0:
            return []  # finished, or a penalty: skills would take no effect
        car = self._car_of(world, slot)
        route = world.route
        if route is not self._route:
            self._route, self._profile = route, speed_profile(route)
        allowed = self._profile[route.index(route.wrap(me.arc_um))]
        v = me.vs_um_s
        blocker = self._blocker(world, cars, slot, car)
        decision: Decision = []
        if "brake" in car.skills and v > allowed:
            decision.append(("brake", False))
        elif ("boost" in car.skills and blocker is None
              and (v + self._impulse_dv(car, me, "boost")) * 100 <= allowed * self.boost_margin_pct
              and self._affordable(car, me, "boost")):
            decision.append(("boost", False))
        airborne = me.h_um > 0 or me.vh_um_s != 0
        if ("slam" in car.skills and me.h_um > SLAM_HEIGHT_UM and me.vh_um_s > -self._impulse_dv(car, me, "slam")
                and self._affordable(car, me, "slam")):
            decision.append(("slam", False))
        if "stabilize" in car.skills and ((airborne and me.vh_um_s > 0) or abs(me.vlat_um_s) > DRIFT_UM_S):
            decision.append(("stabilize", True))
        if blocker is not None:
            side = self._swerve_side(world, me, blocker, car, frame, slot)
            if side in car.skills:
                decision.append((side, True))
        if ("weapon" in car.skills and car.weapon_reach is not None and me.h_um == 0
                and self._target(world, cars, slot, car, car.weapon_reach) and self._affordable(car, me, "weapon")):
            decision.append(("weapon", True))
        return decision  # at most 4 by construction: boost or brake, stabilize, one swerve, slam or weapon

    def _car_of(self, world: World, slot: int) -> _Car:
        """The car's derived figures, recomputed only for another vehicle or track (a new round)."""
        key, car = self._car_key, self._car
        if car is None or key is None or key[0] is not world.vehicles[slot] or key[1] is not world.track:
            car = _car(world, slot)
            self._car_key, self._car = (world.vehicles[slot], world.track), car
        return car

    @staticmethod
    def _budget(car: _Car, me: CarView, skill: str) -> int:
        """The skill's power budget now: battery output at this charge times its chip share (spec §5.2)."""
        return car.configured_mw * me.energy_q // car.initial_q * car.pct[skill] // 100

    def _impulse_dv(self, car: _Car, me: CarView, skill: str) -> int:
        """Speed change (µm/s) one press of an Event skill gives this car at this charge."""
        effect_uj = self._budget(car, me, skill) * EFFECT_FRAMES[skill] * EFFECT_UJ_NUM // EFFECT_UJ_DEN
        return effect_uj * K_EVENT_IMPULSE_PER_UJ // car.mass_ug

    def _affordable(self, car: _Car, me: CarView, skill: str) -> bool:
        """After paying, the battery still delivers at least what the motor draws, and the waste heat
        leaves battery and chip a reserve below their thermal limits (a broken battery stops the drive)."""
        cost = self._budget(car, me, skill) * car.cost_frames[skill]
        left = me.energy_q - cost
        if left <= 0 or car.configured_mw * left // car.initial_q < car.auto_input_mw:
            return False
        return all(me.part_temp_mc(part) + tu_per_q * cost // (THERMAL_C_TU * capacity) <= highest
                   for part, tu_per_q, capacity, highest in car.heated)

    def _blocker(self, world: World, cars: tuple[CarView, ...], slot: int, car: _Car) -> CarView | None:
        """The nearest racing car ahead in this car's lane that it is catching up with, if any."""
        me = cars[slot]
        best = best_gap = None
        for other, gap in _ahead_in_lane(world, cars, slot, car):
            closing = me.vs_um_s - other.vs_um_s
            if closing > 0 and gap <= closing * self.watch_frames // 60 + car.length_um and (best_gap is None or gap < best_gap):
                best, best_gap = other, gap
        return best

    @staticmethod
    def _target(world: World, cars: tuple[CarView, ...], slot: int, car: _Car, reach: int) -> bool:
        """Whether a racing car ahead in this car's lane is within ``reach`` of its weapon (for a magnet:
        one that carries steel)."""
        return any(gap <= reach and (not car.magnet or any(world.models[other.slot].steel))
                   for other, gap in _ahead_in_lane(world, cars, slot, car))

    def _swerve_side(self, world: World, me: CarView, blocker: CarView, car: _Car, frame: int, slot: int) -> str:
        """Away from the car ahead, unless the wall on that side is too near; dead even → the seed decides."""
        route = world.route
        half = route.width[route.index(route.wrap(me.arc_um))] // 2 - car.width_um // 2 - WALL_MARGIN_UM
        room_left, room_right = me.lat_um + half, half - me.lat_um
        offset = blocker.lat_um - me.lat_um
        if offset == 0:
            coin = SplitMix64(self.seed ^ (frame // 60) << 8 ^ slot).next() & 1
            offset = room_left - room_right or (1 if coin else -1)
        if offset > 0:
            return "swerve_left" if room_left > 0 else "swerve_right"
        return "swerve_right" if room_right > 0 else "swerve_left"


def _ahead_in_lane(world: World, cars: tuple[CarView, ...], slot: int, car: _Car) -> Iterator[tuple[CarView, int]]:
    """Each racing car ahead of ``slot`` in its lane (overlapping it across the route, with a margin), with
    the gap between the two boxes along the route. Finished, retired and penalised cars are out of the way
    (or ghosts); on a loop a car just past the line is still ahead, whatever the laps."""
    me = cars[slot]
    lat, arc = me.lat_um, me.arc_um
    route = world.route
    for other in cars:
        if other.slot == slot or not other.racing or other.penalty_frames or other.retired_frame is not None:
            continue
        spec = world.vehicles[other.slot]
        if abs(other.lat_um - lat) >= (car.width_um + spec.width_um) // 2 + LANE_MARGIN_UM:
            continue
        ahead = other.arc_um - arc
        if route.loop:
            ahead %= route.length_um
        gap = ahead - (car.length_um + spec.length_um) // 2
        if gap >= 0:
            yield other, gap
