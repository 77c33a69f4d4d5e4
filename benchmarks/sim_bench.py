"""Benchmark of the simulation core: median µs of an 8-car step beside a flat reference loop of comparable
work, save, load, hash, 8-frame rollbacks (standalone and inside a live 8-car race session), and what a
driver reads and decides each frame (``World.cars``, the typed car views; one ``BotDriver`` decision).

Run: ``nice -n 0 .venv/bin/python benchmarks/sim_bench.py [--frames N] [--seed S] [--clock wall|cpu] [--track REF]
[--every-feature]`` (``--track builtin:track-03``: its rain; default the demo round, built-in track-02;
``--every-feature``: what the built-ins leave out as well: two of the heavy cars carry a rotor weapon in
place of their magnet, and a row of solid entities, fixed, moving and destructible, stands across the
track ahead of the grid; docs/sim.md, "Performance" leads with ``--track builtin:track-03 --every-feature``).
Targets (quiet machine, medians): step ≤ 60 µs and ≤ 1.3× the flat reference; save + load of an own snapshot
≤ 15 µs; hash ≤ 8 µs; 8-frame rollback ≤ 0.6 ms standalone, ≤ 1 ms inside a live session.

On a busy machine absolute figures swell with the load (printed first); the ratio step / reference is
measured in the same run, interleaved frame by frame, and holds much better. ``--clock cpu`` times with
this thread's CPU time (``time.thread_time_ns``) instead of the wall clock: the time the thread is
preempted by other processes is then left out (not what they do to its caches), which brings the
figures of a busy machine nearer those of a quiet one; each reading costs a system call (~0.3 µs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from dataclasses import replace

from open4wd_node.drivers.bot import BotDriver
from race_bench import rollback_in_session  # benchmarks/ is on the path of a script run from it
from sim_core import OwnState, World, step_is_compiled
from sim_core.assets.demo_round import builtin_demo_track, builtin_demo_vehicles
from sim_core.constants import (
    BATTERY_PASSIVE_TU_PER_MW, MIN_TIRE_WEAR_SPEED_UM_S, MOTOR_HEAT_TU_PER_MW, R_SCALE, ROLLING_DEN, THERMAL_C_TU,
    TORQUE_IMPULSE_DEN, TORQUE_IMPULSE_NUM, WEAR_NJ_DEN,
)
from sim_core.harness.scripted import RandomInputs
from sim_core.specs.obstacles import MotionSpec, ObstacleSpec
from sim_core.specs.route import route_for
from sim_core.specs.track import TrackSpec
from sim_core.specs.vehicle import RotorSpec, VehicleSpec
from sim_core.state.layout import ARC, H, LAT, P_TEMP, REMAINING_Q, VH, VLAT, VS, part_field

CURVE = 1_000_000_000_000
UNIT = 1_000_000


class FlatReference:
    """What an 8-car frame costs as one flat integer loop: per car energy, a route lookup, four-tire
    traction with wear, the velocity update, a wall clamp, heat of the six driven parts (motor, battery,
    four tires), tire fatigue, the centre of mass and the progress. No calls, no skills, no contact, no
    sweeps: the floor an interpreter step of these rules can approach, to compare ``World.step`` with."""

    def __init__(self, world: World) -> None:
        self.route = world.route
        self.air = world.track.air_temperature_mc
        self.cars: list[list[int]] = []
        self.constants: list[tuple[int, ...]] = []
        for slot, model in enumerate(world.models):
            c = world._cars[slot]
            mech = model.mechanics(0)
            driven = [model.motor, model.battery, *model.tire_parts[:4]]
            self.cars.append([c[ARC], c[LAT], c[H], c[VS], c[VLAT], c[VH], c[REMAINING_Q], 0]
                             + [c[part_field(p, P_TEMP)] for p in driven] + [0] * 8)
            self.constants.append((
                mech.mass_ug, model.configured_output_mw, model.initial_q, model.auto_input_mw,
                model.height_um // 2, model.width_um // 2,
                model.torque_ratio * TORQUE_IMPULSE_NUM // (TORQUE_IMPULSE_DEN * model.wheel_radius_um),
                *(model.tire_mu[t] for t in model.tire_parts[:4]), *(model.tire_rr[t] for t in model.tire_parts[:4]),
                *(THERMAL_C_TU * model.heat_capacity[p] for p in driven), *(model.conductance[p] for p in driven),
                *(model.wear_capacity[t] * R_SCALE * R_SCALE for t in model.tire_parts[:4]),
                *(model.thermal_limit[t] or 0 for t in model.tire_parts[:4]),
            ))

    def frame(self) -> int:
        """One frame of every car; returns a checksum so that nothing is optimised away."""
        route, air = self.route, self.air
        length, count, loop = route.length_um, route.count, route.loop
        checksum = 0
        for c, k in zip(self.cars, self.constants, strict=True):
            m, out_mw, q0, auto_mw, half_h, half_w, impulse_per_mw = k[0], k[1], k[2], k[3], k[4], k[5], k[6]
            arc, lat, h, vs, vlat, vh, q = c[0], c[1], c[2], c[3], c[4], c[5], c[6]
            # energy
            available = out_mw * q // q0
            drive = auto_mw if auto_mw < available else available
            q -= drive if drive < q else q
            # route lookup
            s = arc % length if loop else (0 if arc < 0 else length if arc > length else arc)
            i = s * count // length
            i = count - 1 if i >= count else 0 if i < 0 else i
            half = route.width[i] // 2
            load = vs * vs * route.k_vertical[i] // CURVE - route.g_up[i]
            acc_l = route.g_right[i] - vs * vs * route.k_lateral[i] // CURVE
            # four-tire traction with rolling wear
            normal = m * load // 60
            n_tire = normal // 4
            share = drive * impulse_per_mw // 4
            speed = vs if vs >= 0 else -vs
            js = rolling = cap = 0
            wears = [0, 0, 0, 0]
            for t in range(4):
                traction = n_tire * k[7 + t] // 1000
                used = share if share < traction else traction
                js += used
                cap += traction - used
                rr = n_tire * k[11 + t] // ROLLING_DEN
                rolling += rr
                if speed >= MIN_TIRE_WEAR_SPEED_UM_S:
                    wears[t] = rr * speed
            need = -(m * vlat + m * acc_l // 60)
            jl = need if -cap <= need <= cap else cap if need > 0 else -cap
            # velocity update
            p = m * vs * 60 + m * route.g_tangent[i] + 60 * js
            r = 60 * rolling
            p = p - r if p > r else p + r if p < -r else 0
            den = 120 * m
            vs = (2 * p + 60 * m) // den
            vlat = (2 * (m * vlat * 60 + m * acc_l + 60 * jl) + 60 * m) // den
            arc += (2 * vs + 60) // 120
            lat += (2 * vlat + 60) // 120
            # wall clamp
            inner = half - half_w
            if lat > inner or lat < -inner:
                lat = inner if lat > 0 else -inner
                vlat = 0
            # heat of the six driven parts, then tire fatigue
            heat = (MOTOR_HEAT_TU_PER_MW * drive, BATTERY_PASSIVE_TU_PER_MW * drive, 0, 0, 0, 0)
            for part in range(6):
                temp = c[8 + part]
                capacity, conductance = k[15 + part], k[21 + part]
                total = capacity + conductance
                c[8 + part] = (2 * (capacity * temp + heat[part] + conductance * air) + total) // (2 * total)
            for t in range(4):
                energy_nj = wears[t] // WEAR_NJ_DEN
                if energy_nj:
                    limit = k[31 + t]
                    rr_scaled = (c[10 + t] - air) * R_SCALE // (limit - air) if limit > air else 0
                    rr_scaled = 0 if rr_scaled < 0 else R_SCALE if rr_scaled > R_SCALE else rr_scaled
                    total = c[18 + t] + energy_nj * (R_SCALE * R_SCALE + 2 * rr_scaled * rr_scaled)
                    c[14 + t] += total // k[27 + t]
                    c[18 + t] = total % k[27 + t]
            # centre of mass and progress
            s = arc % length if loop else arc
            ds = s - route.arc[i]
            up = h + half_h
            x = route.px[i] + (route.tx[i] * ds + route.rx[i] * lat + route.ux[i] * up) // UNIT
            y = route.py[i] + (route.ty[i] * ds + route.ry[i] * lat + route.uy[i] * up) // UNIT
            z = route.pz[i] + (route.tz[i] * ds + route.rz[i] * lat + route.uz[i] * up) // UNIT
            if arc > c[7]:
                c[7] = arc
            c[0], c[1], c[2], c[3], c[4], c[5], c[6] = arc, lat, h, vs, vlat, vh, q
            checksum ^= x ^ y ^ z
        return checksum


ROTOR = RotorSpec(pivot_um=(0, 0, -90_000), axis_e6=(0, UNIT, 0), mass_ug=10_000_000, inertia=2_000_000_000_000_000,
                  reach_um=20_000, span_um=(-4_000, 4_000), material="steel")
"""A 10 g steel disc of 20 mm turning about the car's up, its pivot 90 mm ahead of the car's centre."""


ENTITY_ROW: tuple[tuple[str, bool, tuple[int, int, int] | None], ...] = (
    ("concrete", False, None), ("wood", True, None), ("steel", False, (UNIT, 0, 0)), ("silicone", True, None),
    ("steel", False, (0, 0, UNIT)))
"""The entities of ``--every-feature``: material, destructible, the world axis a mover swings 0.2 m along."""


def with_every_feature(track: TrackSpec, vehicles: tuple[VehicleSpec, ...]) -> tuple[TrackSpec, tuple[VehicleSpec, ...]]:
    """The round with rotors and entities too (``--every-feature``): the heavy cars of slots 4 and 7 swap
    their magnet for a rotor weapon (the same part, so the same masses); five entities stand across the
    route 1.5 m after its start in the lanes of slots 1 to 5: concrete, a wood post, a steel gate
    swinging across the route, a silicone post, a steel block swinging along it. The posts are
    destructible; at the cars' speeds they only take the blows, and the cars in those lanes stay
    against the entities for the rest of the race (each frame keeps them out)."""
    cars = list(vehicles)
    for slot in (4, 7):
        weapon = cars[slot].weapon
        assert weapon is not None
        cars[slot] = replace(cars[slot], weapon=replace(weapon, magnet=None, mechanism="rotor", axis_e6=(0, 0, -UNIT),
                                                        rotors=(ROTOR,)))
    ribbon = route_for(track)
    obstacles = []
    for n, (name, breaks, axis) in enumerate(ENTITY_ROW):
        x, y, z = ribbon.point(1_500_000, (n - 2) * 180_000 - 90_000, 0)  # in the lanes of slots 1 to 5
        motion = None if axis is None else MotionSpec("sin", 120, 20 * n, (axis[0] // 5, axis[1] // 5, axis[2] // 5))
        obstacles.append(ObstacleSpec((x - 20_000, y, z - 20_000), (x + 20_000, y + 60_000, z + 20_000), name, breaks,
                                      motion))
    return replace(track, obstacles=tuple(obstacles)), tuple(cars)


def median_us(samples: list[int]) -> float:
    return statistics.median(samples) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1800, help="frames of the measured race (default 1800)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--session-rollbacks", type=int, default=100,
                        help="8-frame rollbacks measured inside a live session (default 100; 0 = skip)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall: time.perf_counter_ns (default); cpu: this thread's CPU time, time.thread_time_ns")
    parser.add_argument("--track", default=None,
                        help="a built-in track ref (e.g. builtin:track-03, rain) raced by the demo's 8 cars; "
                             "default: the demo round (track-02)")
    parser.add_argument("--every-feature", action="store_true",
                        help="also rotor weapons on two cars and a row of fixed, moving and destructible entities")
    args = parser.parse_args()
    clock = time.perf_counter_ns if args.clock == "wall" else time.thread_time_ns
    load_before = os.getloadavg()

    def round_world() -> World:
        track, vehicles = builtin_demo_track(args.track or "builtin:track-02"), builtin_demo_vehicles(8)
        if args.every_feature:
            track, vehicles = with_every_feature(track, vehicles)
        return World.new(track, vehicles, seed=args.seed)

    world = round_world()
    reference = FlatReference(round_world())
    inputs = RandomInputs([m.chip_skills for m in world.models], args.seed)
    recorded = [inputs.next_frame() for _ in range(args.frames)]
    step, flat, save, restore, save_own, restore_own, load, digest, rollback = [], [], [], [], [], [], [], [], []
    views, decide = [], []
    bot = BotDriver(0)
    history: list[OwnState] = []
    for frame_inputs in recorded:
        if world.done:
            break
        t0 = clock()
        own = world.save_own()  # what a rollback ring saves each frame
        t1 = clock()
        world.restore_own(own)
        t2 = clock()
        data = world.save_state()  # the canonical bytes (a vote's hash, a peer's snapshot)
        t3 = clock()
        world.restore_own_state(data)
        t4 = clock()
        world.state_hash()
        t5 = clock()
        world.step(frame_inputs)
        t6 = clock()
        reference.frame()
        t7 = clock()
        world.load_state(data)  # the same bytes as a peer's snapshot: validated
        t8 = clock()
        world.restore_own(own)
        t9 = clock()
        world.cars()
        t10 = clock()
        bot.decide(world, 0, world.frame)
        t11 = clock()
        world.step(frame_inputs)
        views.append(t10 - t9)
        decide.append(t11 - t10)
        save_own.append(t1 - t0)
        restore_own.append(t2 - t1)
        save.append(t3 - t2)
        restore.append(t4 - t3)
        digest.append(t5 - t4)
        step.append(t6 - t5)
        flat.append(t7 - t6)
        load.append(t8 - t7)
        history.append(own)
        if len(history) > 8 and world.frame % 10 == 0:  # restore the state 8 frames back, re-simulate 8 frames
            start = world.frame - 8
            t12 = clock()
            world.restore_own(history[start])
            for f in range(start, start + 8):
                world.step(recorded[f])
            rollback.append(clock() - t12)
    session_clock = time.perf_counter if args.clock == "wall" else time.thread_time
    session = rollback_in_session(args.session_rollbacks, session_clock, round_world()) if args.session_rollbacks else []
    load_after = os.getloadavg()
    print(f"load average          {load_before[0]:.2f} before, {load_after[0]:.2f} after ({os.cpu_count()} cores)")
    print(f"frames measured       {len(step)} (8 cars, random inputs, seed {args.seed}, {args.clock} clock, "
          f"{args.track or 'demo round'}, weather {world.track.weather.weather_type}"
          f"{', rotors and entities' if args.every_feature else ''})")
    print(f"step code             {'compiled (mypyc)' if step_is_compiled() else 'interpreted'} (setup.py)")
    print(f"step median           {median_us(step):8.1f} µs  ({1e6 / 60 / median_us(step):.0f}× real time)")
    print(f"flat reference        {median_us(flat):8.1f} µs  (same run, interleaved)")
    print(f"step / reference      {median_us(step) / median_us(flat):8.2f}")
    print(f"save own median       {median_us(save_own):8.1f} µs  (save_own: copies of the lists, as a rollback ring saves)")
    print(f"restore own median    {median_us(restore_own):8.1f} µs  (restore_own: no range checks)")
    print(f"save + restore own    {median_us([a + b for a, b in zip(save_own, restore_own, strict=True)]):8.1f} µs")
    print(f"save bytes median     {median_us(save):8.1f} µs  (save_state: the canonical bytes)")
    print(f"restore bytes median  {median_us(restore):8.1f} µs  (restore_own_state of those bytes)")
    print(f"load peer median      {median_us(load):8.1f} µs  (load_state: validated)")
    print(f"hash median           {median_us(digest):8.1f} µs  (state_hash after the restore)")
    print(f"8-frame rollback      {median_us(rollback):8.1f} µs  (restore + 8 steps, {len(rollback)} samples)")
    print(f"car views median      {median_us(views):8.1f} µs  (World.cars: the 8 typed views a driver reads each frame;"
          f" {median_us(views) / median_us(step):.2f}× the step)")
    print(f"bot decision median   {median_us(decide):8.1f} µs  (BotDriver.decide for one car, views included;"
          f" {median_us(decide) / median_us(step):.2f}× the step)")
    if session:
        print(f"rollback in session   {statistics.median(session):8.1f} µs  (8 frames inside a live 8-car "
              f"RaceSession of the same round, race_bench, {len(session)} samples)")


if __name__ == "__main__":
    main()
