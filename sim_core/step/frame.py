"""The frame itself: every stage of one step over every car, in the order the rules give.

``World.step`` checks its inputs and then hands the frame to ``Frame.run``. The split is where the
compiled code begins (docs/sim.md "The compiled step"): ``World`` is the public face, which judges
whatever a caller passes and answers with the project's errors, and everything from here down takes
only what ``World`` has already checked, so it is compiled and its declared types are true.
"""

from __future__ import annotations

from sim_core.state.layout import (
    ARC, BROKEN_MASK, DESTRUCTIONS, H, LAT, P_BREAK_FRAME, PENALTY_TIMER, RETIRED_FRAME, STATUS, STATUS_RACING,
    STATUS_RETIRED, W_FRAME, part_field,
)
from sim_core.specs.materials import material
from sim_core.step.contact import Collider, ContactBox, Credits, resolve
from sim_core.step.conveyors import Conveyors
from sim_core.step.fluids import Fluids, corrode, fluid_heat
from sim_core.step.launch import Launchers
from sim_core.step.magnets import Magnets
from sim_core.step.model import CarModel, Mechanics
from sim_core.step.obstacles import Obstacles
from sim_core.step.physics import WEAPON, TrackContext, advance
from sim_core.step.ranking import update_round_end
from sim_core.step.rotors import Rotors
from sim_core.step.rules import RuleContext, apply_rules
from sim_core.step.thermal import cold_parts_still, settle
from sim_core.step.weapons import push
from sim_core.step.weather import Weather


class Frame:
    """The round's constant parts a frame runs with (built once by ``World``)."""

    def __init__(self, models: list[CarModel], motion: TrackContext, rules: RuleContext, loop_length: int,
                 time_limit_frames: int, weather: Weather, magnets: Magnets, fluids: Fluids,
                 conveyors: Conveyors, launchers: Launchers, rotors: Rotors, obstacles: Obstacles) -> None:
        self.models = models
        self.colliders = [collider(model) for model in models]
        self.motion = motion
        self.rules = rules
        self.loop_length = loop_length  # the route's length on a loop, else 0 (contact wraps on a loop)
        self.time_limit_frames = time_limit_frames
        self.weather = weather
        self.magnets = magnets
        self.fluids = fluids
        self.conveyors = conveyors
        self.launchers = launchers
        self.rotors = rotors
        self.obstacles = obstacles

    def run(self, world: list[int], cars: list[list[int]], mechanics: list[Mechanics], masks: list[int],
            cold_still: list[bool], skills: list[tuple[int, ...]]) -> None:
        """Advance ``world`` and ``cars`` one frame. ``mechanics``, ``masks`` and ``cold_still`` are the
        world's state-derived caches (``World``), kept up to date here; ``skills`` are the checked inputs."""
        models, motion, weather, fluids, conveyors = self.models, self.motion, self.weather, self.fluids, self.conveyors
        launchers, rotors, obstacles = self.launchers, self.rotors, self.obstacles
        patches: list[tuple[int, int]] = []
        if weather.slots:  # weather spawn and expiry first (spec §4), then the cars drive on it
            weather.update(world)
            patches = weather.active(world)
        pulls = self.magnets.pulls(cars, skills)  # from where every car starts the frame
        # the bullets' hits and the cars' passes through thin entities sweep from there
        # (slices of the cars' lists: their int objects, where a tuple would box each int anew)
        starts = [c[ARC : H + 1] for c in cars] if launchers.slots or obstacles.obstacles else []
        discs = launchers.discs(world) if launchers.spreading else []  # spread fluid bullets: zones like the track's
        frame = world[W_FRAME] + 1
        # contact shapes: retired cars and cars under a penalty take no part (ghosts: mass 0)
        boxes: list[ContactBox] = []
        breaking: dict[int, int] = {}  # car -> parts broken this frame (bits), committed at its end
        credits: Credits = {}  # who damaged which part this frame (spec §6.5: the destruction counts)
        pushes: dict[int, int] = {}  # car -> its push weapon's effect this frame (µJ)
        for slot, c in enumerate(cars):
            model = models[slot]
            if c[RETIRED_FRAME] < 0:
                if c[BROKEN_MASK] != masks[slot]:
                    masks[slot] = c[BROKEN_MASK]
                    mechanics[slot] = model.mechanics(c[BROKEN_MASK])
                mech = mechanics[slot]
                if patches and c[H] == 0 and weather.covers(patches, c[ARC], c[LAT]):  # tires on a wet patch
                    mech = model.wet_mechanics(masks[slot])
                fluid = fluids.touch(c, discs) if fluids.zones or discs else None  # from where the car starts the frame
                belt = conveyors.belt(slot, c) if conveyors.footprints else None
                held = skills[slot]
                if model.launches and WEAPON in held and not launchers.can_release(world, slot, frame):
                    held = tuple(k for k in held if k != WEAPON)  # nothing to release: the Hold pays nothing
                heat, loads, weapon_uj, wall = advance(c, model, mech, motion, held,
                                                       None if pulls is None else pulls[slot], fluid, belt)
                if weapon_uj and model.pushes:
                    pushes[slot] = weapon_uj
                elif weapon_uj and model.launches:  # its own bullet slots only: the cars' order does not matter
                    launchers.release(world, c, model, slot, weapon_uj, frame, self.loop_length)
                if model.rotates:  # its own rotor slots only, held or not (an arm stops without its Hold)
                    rotors.spin(world, slot, weapon_uj)
                if fluid is not None and fluid.heat_rate_mc_s:  # freeze or burn: every live part, into its solve
                    loads = fluid_heat(model, mech, heat, loads, fluid.heat_rate_mc_s)
                    cold_still[slot] = False
                # heat and wear touch only part fields, which contact neither reads nor writes: solving
                # them here, before contact, is the same as after it, without keeping the ledgers
                newly = settle(c, model, mech, heat, loads, cold_still[slot], wall)
                if fluid is not None and fluid.acid:
                    newly |= corrode(c, model, fluid.acid)
                if not cold_still[slot]:  # solved this frame: are they still now?
                    cold_still[slot] = cold_parts_still(c, mech)
                if newly:
                    breaking[slot] = newly
                boxes.append(model.ghost_box if c[PENALTY_TIMER] > 0 else mech.contact_box)
            else:
                boxes.append(model.ghost_box)
        if pushes:  # after every car moved, before contact (sim_core.step.weapons)
            push(cars, boxes, models, pushes, self.loop_length)
        if launchers.slots:  # after the pushes, before contact (sim_core.step.launch)
            for slot, newly in launchers.fly(world, cars, starts, boxes, self.colliders, motion,
                                                      self.loop_length, credits).items():
                breaking[slot] = breaking.get(slot, 0) | newly
        if rotors.slots:  # after the bullets, before contact (sim_core.step.rotors)
            for slot, newly in rotors.strike(world, cars, boxes, models, self.colliders, self.loop_length,
                                             credits).items():
                breaking[slot] = breaking.get(slot, 0) | newly
        for slot, newly in resolve(cars, boxes, self.loop_length, self.colliders, credits).items():
            breaking[slot] = breaking.get(slot, 0) | newly
        if obstacles.obstacles:  # after contact: the entities do not move for the cars (sim_core.step.obstacles)
            for slot, newly in obstacles.collide(world, cars, starts, boxes, self.colliders).items():
                breaking[slot] = breaking.get(slot, 0) | newly
        for slot, c in enumerate(cars):
            if c[STATUS] == STATUS_RACING and c[RETIRED_FRAME] < 0:
                apply_rules(c, models[slot], self.rules, frame)
        for slot in sorted(breaking):  # slot order, then part order (commit_breakage)
            commit_breakage(cars[slot], models[slot], breaking[slot], frame)
            if credits:
                credit_destructions(cars, slot, breaking[slot], credits)
        world[W_FRAME] = frame
        update_round_end(world, cars, models, self.time_limit_frames)


def collider(model: CarModel) -> Collider:
    """A car's body as contact sees it: its friction and the strengths of the body, the chassis and the
    weapon."""
    parts = model.spec.parts

    def strength(part: int) -> tuple[int, int] | None:
        m = material(parts[part].material)
        if m.yield_strength_kpa is None or m.ultimate_strength_kpa is None:
            return None
        return m.yield_strength_kpa, m.ultimate_strength_kpa

    return Collider(material(parts[model.body].material).friction_milli, model.body, strength(model.body),
                    model.chassis, strength(model.chassis), None if model.weapon < 0 else strength(model.weapon))


def credit_destructions(cars: list[list[int]], slot: int, newly: int, credits: Credits) -> None:
    """Spec §6.5: each part of car ``slot`` that first broke this frame (``newly``) credits one destruction
    to the other car whose contribution to its damage this frame (``credits``) was the largest, the lower
    slot on a tie; a break no other car contributed to this frame (heat, wear, fluids, a track entity, the
    fatigue of earlier frames alone) credits nobody."""
    part = 0
    while newly:
        if newly & 1:
            ledger = credits.get((slot, part))
            if ledger:
                best, most = -1, 0
                for attacker in sorted(ledger):
                    if ledger[attacker] > most:
                        best, most = attacker, ledger[attacker]
                cars[best][DESTRUCTIONS] += 1
        newly >>= 1
        part += 1


def commit_breakage(c: list[int], model: CarModel, newly: int, frame: int) -> None:
    """End-of-frame damage transaction: first-time breaks in partIndex order; chassis → retired."""
    for part in range(model.part_count):
        if newly >> part & 1:
            c[BROKEN_MASK] |= 1 << part
            c[part_field(part, P_BREAK_FRAME)] = frame
            if part == model.chassis:
                c[RETIRED_FRAME] = frame
                if c[STATUS] == STATUS_RACING:  # a legal finish is never demoted
                    c[STATUS] = STATUS_RETIRED
