"""``World``: one race round of the route-frame simulation, the public face of ``sim_core``.

A step is exactly 1/60 s: validate every input (nothing changes if one is invalid), move each live car
(energy, drive, skills, gravity, walls), resolve car-to-car contact, solve heat and wear, apply the
track rules, commit the frame's breakage in one end-of-frame transaction (slot order, then partIndex
order; new mass applies from the next frame), count the frame and decide whether the round ended.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Final, TypedDict

from open4wd_base.errors import LocalError
from sim_core import ENGINE_ID
from sim_core.constants import START_GRID_CELL_UM, START_GRID_LIFT_UM
from sim_core.errors import SimError
from sim_core.specs.inputs import SkillEvent, validate_events
from sim_core.specs.materials import material
from sim_core.state.layout import (
    ARMED, BROKEN_MASK, CAR_FIELDS, DESTRUCTIONS, END_REASONS, FINISHED_FRAME, H, LAPS, LAT, LEGAL_LAT, P_BREAK_FRAME, P_TEMP,
    PART_FIELDS, PREV_X, PREV_Y, PREV_Z, PROGRESS, REMAINING_Q, RETIRED_FRAME, W_DONE, W_END_REASON, W_FRAME, W_SEED,
    WORLD_FIELDS, RoundEndReason, field_names, part_field, world_length,
)
from sim_core.step.aero import wind_vector_um_s
from sim_core.step.conveyors import Conveyors
from sim_core.step.fluids import Fluids
from sim_core.step.frame import Frame
from sim_core.step.launch import Launchers
from sim_core.step.obstacles import Obstacles
from sim_core.step.rotors import Rotors
from sim_core.step.magnets import Magnets
from sim_core.step.model import CarModel
from sim_core.step.physics import TrackContext
from sim_core.step.ranking import CarStatus, car_status, ranking
from sim_core.specs.route import route_for
from sim_core.step.rules import PENALTY_FRAMES, RuleContext
from sim_core.state.car_view import CarView
from sim_core.state.codec import StateCodec, StateLimits, digest_of
from sim_core.step.thermal import cold_parts_still
from sim_core.step.weather import Weather
from sim_core.specs.track import TrackSpec
from sim_core.specs.vehicle import VehicleSpec

SEED_MAX: Final = (1 << 63) - 1
NO_EVENTS: Final[tuple[int, ...]] = ()


class OwnState:
    """A state this world saved for its own later restore (a rollback ring's entry): copies of its
    integer lists, not the canonical bytes. Why: a rollback session saves every frame, restores a few and
    hashes only its vote frames, and packing 646 integers into bytes costs about four times a copy of the
    lists (docs/sim.md, "Own states"). The bytes are made when asked (``World.pack_own``), once.
    Only the world that saved it may restore it; it never leaves the node (a peer gets bytes)."""

    __slots__ = ("world", "cars", "packed")

    def __init__(self, world: list[int], cars: list[list[int]], packed: bytes | None) -> None:
        self.world = world
        self.cars = cars
        self.packed = packed  # the canonical bytes, once known


class DisableReason(StrEnum):
    """Why a car's skills are blocked (``World.disable_reason``): the first that applies, in the spec's order."""

    DISALLOW_CHIP = "disallow-chip"  # the car has no chip
    CHIP_BROKEN = "chip-broken"
    FUNCTIONAL_DISABLED = "functional-disabled"  # motor or battery broken
    PHYSICS_RETIRED = "physics-retired"  # chassis broken


class Standing(TypedDict):
    """One row of ``World.standings``: the car in ``slot`` at ``rank`` with its points (P − k + 1)."""

    rank: int
    slot: int
    status: CarStatus
    laps: int
    progress_um: int
    finished_frame: int | None  # the frame count after the step that finished it; None while not finished
    points: int
    destructions: int  # other cars' parts whose first break it is credited with (spec §6.5; not a rank key)


class World:
    """A race round: the state of every car and the frame pipeline that advances it, bit for bit alike on
    every machine. Build with ``World.new`` or ``World.demo``; drive with ``step``; roll back with
    ``save_own`` / ``restore_own`` (or the canonical bytes: ``save_state`` / ``restore_own_state``); take a
    peer's snapshot with ``load_state`` (validated);
    compare with peers through ``state_hash``.

    The constructor trusts its arguments (``new`` checks them); attributes other than the state are
    derived once from the specs and never change during the round."""

    def __init__(self, track: TrackSpec, vehicles: tuple[VehicleSpec, ...], seed: int) -> None:
        self.track = track
        self.vehicles = vehicles
        self.route = route_for(track)
        self.models = [CarModel(v, track) for v in vehicles]
        wind = wind_vector_um_s(track.weather.wind_speed_um_s, track.weather.wind_direction_mdeg)
        self.motion = TrackContext(self.route, track.track_type == "fixed", track.wall_height_um, track.apron_um, wind)
        self.rules = RuleContext(track, self.route)
        self.weather = Weather(track.weather.patch, self.route.loop, self.route.length_um,
                               [w // 2 for w in self.route.width], track.apron_um, digest_of(track))
        self.launchers = Launchers(self.models, self.weather.slots, material(track.surface_material).friction_milli)
        self.rotors = Rotors(self.models, world_length(self.weather.slots, self.launchers.slots))
        self.obstacles = Obstacles(self.route, track.obstacles,
                                   world_length(self.weather.slots, self.launchers.slots, self.rotors.slots))
        part_counts = [m.part_count for m in self.models]
        pools = (self.weather.slots, self.launchers.slots, self.rotors.slots, self.obstacles.slots)
        self.codec = StateCodec(digest_of(ENGINE_ID, track, vehicles), part_counts, *pools)
        self.limits = StateLimits(part_counts, len(track.checkpoints), track.laps_to_finish,
                                  [m.initial_q for m in self.models], PENALTY_FRAMES, self.weather.valid_pool,
                                  self.launchers.valid_pool, self.rotors.valid_pool, self.obstacles.valid_pool)
        self._frame = Frame(self.models, self.motion, self.rules, self.route.length_um if self.route.loop else 0,
                            track.time_limit_frames, self.weather, Magnets(self.route, track.magnets, self.models),
                            Fluids(self.route, track.fluids), Conveyors(self.route, track.conveyors, self.models),
                            self.launchers, self.rotors, self.obstacles)
        self._world = [0] * world_length(*pools)
        self._world[W_SEED] = seed
        self.rotors.start(self._world)
        self._cars = [self._start_state(slot, len(vehicles)) for slot in range(len(vehicles))]
        # The saved bytes of the current state when known (after save_state, load_state or
        # restore_own_state), else None: every change of the state (step, a fault) forgets them, and so
        # must any state surgery in tests that writes the lists directly (tests/sim_core/helpers.place).
        self._snapshot: bytes | None = None
        # Derived from the state, never saved: each car's mechanics with the broken mask it was derived
        # for (compared every frame, so a direct edit of the mask is seen), and whether its cold parts
        # are in their still bands (``thermal.cold_parts_still``: the thermal pass then skips them).
        self._mechanics = [model.mechanics(0) for model in self.models]
        self._masks = [0] * len(vehicles)
        self._cold_still: list[bool] = []
        # whether any state of this world, loaded or stepped, had a cold part out of its band
        self._cold_ever_moving = False
        self._check_cold_parts()

    # -- construction ----------------------------------------------------------------------------------

    @classmethod
    def new(cls, track: TrackSpec, vehicles: Sequence[VehicleSpec], *, seed: int = 0) -> "World":
        """A round on ``track`` with ``vehicles`` in slot order, on the spec's start grid.

        Raises ``LocalError`` when an argument has the wrong type (``world-invalid-track``,
        ``world-invalid-vehicles``, ``world-invalid-seed``: the caller's bug), and ``SimError`` when the
        values do not make a round: no car, more cars than the start grid holds (``world-too-many-cars``),
        a seed outside 0..2⁶³−1."""
        if not isinstance(track, TrackSpec):
            raise LocalError("world-invalid-track", "track must be a TrackSpec")
        vehicles = tuple(vehicles)
        cars_rule = "a round needs at least one car: give one VehicleSpec per car, in slot order"
        if not all(isinstance(v, VehicleSpec) for v in vehicles):
            raise LocalError("world-invalid-vehicles", cars_rule)
        if not vehicles:
            raise SimError("world-invalid-vehicles", cars_rule)
        if len(vehicles) > track.player_capacity:
            raise SimError("world-too-many-cars",
                           f"{len(vehicles)} cars do not fit the start grid of {track.player_capacity} slots "
                           f"(RP1 width {track.route[0].width_um} µm / 0.18 m per slot, at most 8)")
        seed_rule = f"seed must be an int in 0..{SEED_MAX}"
        if type(seed) is not int:
            raise LocalError("world-invalid-seed", seed_rule)
        if not 0 <= seed <= SEED_MAX:
            raise SimError("world-invalid-seed", seed_rule)
        return cls(track, vehicles, seed)

    @classmethod
    def demo(cls, cars: int = 8, seed: int = 0) -> "World":
        """The built-in demo round: built-in track-02 (8-player loop) and the built-in speed, heavy and
        control cars in turn, read from the shipped GLBs through admission and their manifests.

        Raises ``SimError`` for a car count outside 1..8 (``world-too-many-cars`` above 8, else
        ``world-invalid-vehicles``) and ``LocalError`` when ``cars`` is not an int; ``new`` judges the seed."""
        from sim_core.assets.demo_round import builtin_demo_track, builtin_demo_vehicles

        count_rule = f"the demo round takes 1..8 cars (built-in track-02 has 8 start slots), got {cars!r}"
        if type(cars) is not int:
            raise LocalError("world-invalid-vehicles", count_rule)
        if not 1 <= cars <= 8:
            raise SimError("world-too-many-cars" if cars > 8 else "world-invalid-vehicles", count_rule)
        return cls.new(builtin_demo_track(), builtin_demo_vehicles(cars), seed=seed)

    def _start_state(self, slot: int, count: int) -> list[int]:
        """Slot s of N: (s − (N−1)/2)·0.18 m along RP1's right, lifted 0.05 m, at rest, full battery."""
        model = self.models[slot]
        c = [0] * len(CAR_FIELDS) + [0] * (len(PART_FIELDS) * model.part_count)
        c[LAT] = (2 * slot - (count - 1)) * START_GRID_CELL_UM // 2
        c[H] = START_GRID_LIFT_UM
        c[LEGAL_LAT] = c[LAT]
        c[REMAINING_Q] = model.initial_q
        c[FINISHED_FRAME] = -1
        c[RETIRED_FRAME] = -1
        for part in range(model.part_count):
            c[part_field(part, P_TEMP)] = self.track.air_temperature_mc
            c[part_field(part, P_BREAK_FRAME)] = -1
        com = self.rules.com(c, model)
        c[PREV_X], c[PREV_Y], c[PREV_Z] = com
        c[ARMED] = 1 if self.rules.finish.arms(self.rules.finish.side(com)) else 0
        return c

    # -- the step --------------------------------------------------------------------------------------

    def step(self, inputs: Mapping[int, Sequence[SkillEvent]] | None = None) -> None:
        """Advance exactly one frame. ``inputs`` maps slot → skill events; a missing slot = no input.

        Every input is checked before anything changes: ``SimError`` (``input-*``) for an input the rules
        refuse, ``LocalError`` for a call the world cannot take (``sim-round-over``: the round has ended;
        ``input-invalid`` / ``input-unknown-slot``: inputs of the wrong type)."""
        self._snapshot = None  # even a refused step repacks on the next save: what it left is then measured
        if self._world[W_DONE]:
            raise LocalError("sim-round-over", "the round has ended; start a new World")
        self._frame.run(self._world, self._cars, self._mechanics, self._masks, self._cold_still,
                        self._validated(inputs))
        if not self._cold_ever_moving and not all(self._cold_still):  # a fluid's heat moved a cold part
            self._cold_ever_moving = True

    def _validated(self, inputs: Mapping[int, Sequence[SkillEvent]] | None) -> list[tuple[int, ...]]:
        """Every slot's events as canonical skill indices; raises before anything changes."""
        skills = [NO_EVENTS] * len(self._cars)
        if inputs is None:
            return skills
        if type(inputs) is not dict and not isinstance(inputs, Mapping):  # the ABC check is slow: dicts first
            raise LocalError("input-invalid", "inputs must map slot numbers to lists of SkillEvent")
        for slot in inputs:
            if type(slot) is not int or not 0 <= slot < len(self._cars):
                error = LocalError if type(slot) is not int else SimError
                raise error("input-unknown-slot", f"slot {slot!r} is not a slot of this race (0..{len(self._cars) - 1})")
        for slot in sorted(inputs):
            skills[slot] = validate_events(inputs[slot], self.models[slot].chip_skills, slot)
        return skills

    # -- observation -----------------------------------------------------------------------------------

    @property
    def frame(self) -> int:
        """Number of frames stepped."""
        return self._world[W_FRAME]

    @property
    def done(self) -> bool:
        """Whether the round has ended (``end_reason`` says why); ``step`` then raises ``LocalError``."""
        return bool(self._world[W_DONE])

    @property
    def end_reason(self) -> RoundEndReason:
        """Why the round ended (``NOT_ENDED``, "", while it runs): all-finished, time-limit or endgame-closed."""
        return END_REASONS[self._world[W_END_REASON]]

    def standings(self) -> list[Standing]:
        """Cars in round rank order with their points (P − k + 1)."""
        order = ranking(self._cars, self.models)
        total = len(order)
        result: list[Standing] = []
        for rank, slot in enumerate(order, start=1):
            c = self._cars[slot]
            result.append({
                "rank": rank,
                "slot": slot,
                "status": car_status(c, self.models[slot]),
                "laps": c[LAPS],
                "progress_um": c[PROGRESS],
                "finished_frame": c[FINISHED_FRAME] if c[FINISHED_FRAME] >= 0 else None,
                "points": total - rank + 1,
                "destructions": c[DESTRUCTIONS],
            })
        return result

    def disable_reason(self, slot: int) -> DisableReason | None:
        """The first reason (spec order) why this car's skills are blocked, or None."""
        c, model = self._cars[slot], self.models[slot]
        mask = c[BROKEN_MASK]
        if model.chip < 0:
            return DisableReason.DISALLOW_CHIP
        if mask >> model.chip & 1:
            return DisableReason.CHIP_BROKEN
        if not model.mechanics(mask).functional:
            return DisableReason.FUNCTIONAL_DISABLED
        if c[RETIRED_FRAME] >= 0:
            return DisableReason.PHYSICS_RETIRED
        return None

    def cars(self) -> tuple[CarView, ...]:
        """Every car in slot order, typed and read-only (``CarView``): what drivers and views observe every
        frame, without packing the state's bytes."""
        return tuple([CarView(slot, tuple(c)) for slot, c in enumerate(self._cars)])

    def car(self, slot: int) -> CarView:
        """The car in ``slot`` (``CarView``); ``LocalError`` ``world-unknown-slot`` for a slot of no car."""
        if type(slot) is not int or not 0 <= slot < len(self._cars):
            raise LocalError("world-unknown-slot", f"slot {slot!r} is not a slot of this race (0..{len(self._cars) - 1})")
        return CarView(slot, tuple(self._cars[slot]))

    def car_state(self, slot: int) -> dict[str, int]:
        """One car's state fields by name (diagnostics and tests; the step never reads this)."""
        c = self._cars[slot]
        names = field_names([self.models[slot].part_count])[len(WORLD_FIELDS):]
        return {name.split(".", 1)[1]: value for name, value in zip(names, c, strict=True)}

    # -- state -------------------------------------------------------------------------------------------

    def save_state(self) -> bytes:
        """The canonical versioned little-endian bytes of the whole state (see ``sim_core.state.codec``);
        ``SimError`` (``state-overflow``) if a value no longer fits its 64-bit field. Saving an unchanged
        state again returns the same bytes without packing them again."""
        if self._snapshot is None:
            self._snapshot = self.codec.pack(self._world, self._cars)
        return self._snapshot

    def load_state(self, data: bytes) -> None:
        """Replace the state with ``data`` atomically: everything is validated before anything changes.
        For bytes of any origin, above all a peer's snapshot; a rollback to this world's own saved bytes
        takes ``restore_own_state``.

        Raises ``SimError`` (``state-invalid``, ``state-version``, ``state-topology-mismatch``) for bytes
        that are not a valid state of this world (they may be a peer's snapshot), ``LocalError``
        (``state-invalid``) when ``data`` is not bytes at all."""
        world, cars = self.codec.unpack(data, self.limits)
        self._world, self._cars = world, cars
        self._snapshot = bytes(data)
        self._check_cold_parts()

    def restore_own_state(self, data: bytes) -> None:
        """Replace the state with bytes this world's own ``save_state`` returned (a rollback), without the
        range checks of ``load_state``: the values are ones this world computed, and checking them again
        is most of a load's cost. Only the header and size are compared, so that a wrong buffer is caught
        as the caller's bug (``LocalError`` ``state-not-own``); a peer's bytes must go to ``load_state``."""
        if type(data) is not bytes or len(data) != self.codec.size or not data.startswith(self.codec.header):
            raise LocalError("state-not-own", "restore_own_state takes only bytes this world's save_state "
                                              "returned; load a peer's or a file's state with load_state")
        world, cars = self.codec.unpack_trusted(data)
        self._restore(world, cars, data)

    def save_own(self) -> OwnState:
        """The state, for this world's own ``restore_own`` (a rollback): copies of its lists, with the
        canonical bytes if a save of this very state made them already."""
        return OwnState(self._world.copy(), [c.copy() for c in self._cars], self._snapshot)

    def restore_own(self, state: OwnState) -> None:
        """Replace the state by one this world's ``save_own`` returned, unchecked like
        ``restore_own_state``; ``state`` stays as it was (a ring may restore it again). ``LocalError``
        ``state-not-own`` for anything else: the caller's bug."""
        if type(state) is not OwnState or len(state.cars) != len(self._cars):
            raise LocalError("state-not-own", "restore_own takes only what this world's save_own returned")
        self._restore(state.world.copy(), [c.copy() for c in state.cars], state.packed)

    def _restore(self, world: list[int], cars: list[list[int]], snapshot: bytes | None) -> None:
        """Take an own state (``restore_own_state``, ``restore_own``): its cold parts need a check only
        once a state of this world ever had one out of its band (``_check_cold_parts``)."""
        self._world, self._cars, self._snapshot = world, cars, snapshot
        if self._cold_ever_moving:
            self._check_cold_parts()

    def pack_own(self, state: OwnState) -> bytes:
        """The canonical bytes of a state ``save_own`` returned (what ``save_state`` gave or would have
        given then): packed on the first call, then kept. ``SimError`` ``state-overflow`` as ``save_state``."""
        if type(state) is not OwnState:
            raise LocalError("state-not-own", "pack_own takes only what this world's save_own returned")
        if state.packed is None:
            state.packed = self.codec.pack(state.world, state.cars)
        return state.packed

    def _check_cold_parts(self) -> None:
        """Whether each car's cold parts are still (``thermal.cold_parts_still``), for a state that did
        not come from a step: the start, a load, a restore. A restore of an own state needs no check
        while no state of this world ever had a cold part out of its band: every state it saved then had
        them all still, this one included (the usual race: from the grid, where they sit at the air
        temperature, with no warm snapshot loaded and no fluid's heat: ``step`` marks a state whose cold
        part moved). State surgery on a part's temperature (tests) must call this too."""
        still = [cold_parts_still(c, model.mechanics(c[BROKEN_MASK])) for c, model in zip(self._cars, self.models, strict=True)]
        self._cold_still = still
        self._cold_ever_moving |= not all(still)

    def state_hash(self) -> bytes:
        """SHA-256 (32 bytes) of ``save_state()``: what peers compare in checksum votes (the bytes of the
        last save or load when the state has not changed since)."""
        return hashlib.sha256(self.save_state()).digest()

    def field_names(self) -> list[str]:
        """Names of the saved integers in saved order (for diffing two states)."""
        return field_names([m.part_count for m in self.models], self.weather.slots, self.launchers.slots,
                           self.rotors.slots, self.obstacles.slots)
