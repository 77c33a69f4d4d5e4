"""Balance of the built-in archetype cars: how each one races on each built-in track.

Run: ``.venv/bin/python benchmarks/builtin_balance.py [--tracks 01,02,03] [--laps 1,3] [--drivers idle,bot]
[--grid] [--generated] [--json]``.

For every built-in track, lap count (loop tracks only: on the linear and open tracks a race is one run,
whatever the lap count), driver and archetype (speed, heavy, control: the all-``-NN`` loadouts of
``sim_core.assets.demo_round``), one car races alone on the track (seed 0, time limit 1800 s) and the
script prints its finish frame (and seconds), its top and mean speed, the hottest temperature each
heat-limited part reached against its thermal limit, and any part that broke (with the frame).
``--grid`` adds a race of the three archetypes together per track and lap count (contacts, swerves).

Drivers: ``idle`` = no inputs (the car drives itself); ``bot`` = ``open4wd_node.drivers.bot.BotDriver``
(seed = slot), asked once per frame as the race runner does; ``spam`` = abuse, every chip skill but brake
on every frame (not in the default set; it shows that overheating is still possible). ``--generated``
races a fresh in-memory generation of ``sim_core.assets.builtin_gen`` instead of the shipped files (for
tuning before writing them).

A benchmark: it prints figures and asserts nothing. The targets it is read against (issue: built-in
balance) are: on track-02, 1 lap with the bot, every archetype within 2400 frames (40 s) and speed the
fastest; no broken part in 3 laps with either driver on any built-in track; every car finishes.
"""

from __future__ import annotations

import argparse
import functools
import json
import time

from sim_core import SkillEvent, World
from sim_core.assets.admission import admit
from sim_core.assets.builtins import admitted_builtin
from sim_core.assets.convert import track_spec, vehicle_from_loadout
from sim_core.assets.demo_round import archetype_loadout
from sim_core.specs.inputs import HOLD_SKILLS

ARCHETYPES = {1: "speed", 2: "heavy", 3: "control"}
TIME_LIMIT_S = 1800
FPS = 60


@functools.cache
def _generated() -> dict[str, bytes]:
    from sim_core.assets.builtin_gen import generate

    return generate()


def resolver(generated: bool):
    if not generated:
        return admitted_builtin

    @functools.cache
    def resolve(ref: str):
        return admit(_generated()[ref.removeprefix("builtin:")])

    return resolve


class SpamDriver:
    """Abuse, not driving: every frame, every skill of the chip except brake (boost or slam each frame)."""

    def decide(self, world: World, slot: int, frame: int) -> list[tuple[str, bool]]:
        if world.disable_reason(slot) is not None or not world.car(slot).racing:
            return []
        skills = [s.skill for s in world.vehicles[slot].chip_slots if s.skill != "brake"]
        return [(s, s in HOLD_SKILLS) for s in skills][:4]


def _driver(kind: str, slot: int):
    if kind == "idle":
        return None
    if kind == "spam":
        return SpamDriver()
    from open4wd_node.drivers.bot import BotDriver

    return BotDriver(slot)


def _part_names(vehicle) -> list[str]:
    return [p.part_type + (f" {p.slot}" if p.slot else "") for p in vehicle.parts]


def race(track_ref: str, laps: int, archetypes: list[int], driver: str, resolve) -> dict:
    """One round; per car: finish frame, top/mean speed, hottest temperature per heat-limited part, breaks."""
    track = track_spec(resolve(track_ref), track_id=track_ref, lap_count=laps, time_limit_s=TIME_LIMIT_S)
    vehicles = [vehicle_from_loadout(archetype_loadout(n), resolve, f"builtin:archetype-{n:02d}") for n in archetypes]
    world = World.new(track, vehicles, seed=0)
    drivers = [_driver(driver, slot) for slot in range(len(vehicles))]
    hottest = [[world.track.air_temperature_mc] * len(v.parts) for v in vehicles]
    top = [0] * len(vehicles)
    started = time.perf_counter()
    while not world.done:
        inputs = {}
        for slot, d in enumerate(drivers):
            if d is not None:
                decision = d.decide(world, slot, world.frame)
                if decision:
                    inputs[slot] = [SkillEvent(skill, hold) for skill, hold in decision]
        world.step(inputs)
        for c in world.cars():
            if c.finished_frame is None and c.vs_um_s > top[c.slot]:
                top[c.slot] = c.vs_um_s
            h = hottest[c.slot]
            for part in range(len(h)):
                t = c.part_temp_mc(part)
                if t > h[part]:
                    h[part] = t
    cars = []
    for slot, (n, vehicle) in enumerate(zip(archetypes, vehicles, strict=True)):
        c = world.car(slot)
        names = _part_names(vehicle)
        finished = c.finished_frame
        if finished is not None:
            distance = world.route.length_um * track.laps_to_finish
        else:
            distance = (c.laps * world.route.length_um + c.progress_um) if world.route.loop else c.progress_um
        frames = finished or world.frame
        heat = {}
        for part, vp in enumerate(vehicle.parts):
            if vp.thermal_limit_mc is not None and hottest[slot][part] >= world.track.air_temperature_mc + 1000:
                name = names[part]
                if name not in heat or hottest[slot][part] > heat[name][0]:
                    heat[name] = (hottest[slot][part], vp.thermal_limit_mc)
        broken = [(names[p], c.part_break_frame(p)) for p in range(len(vehicle.parts)) if c.broken_mask >> p & 1]
        cars.append({
            "archetype": ARCHETYPES[n],
            "mass_g": vehicle.total_mass_ug / 1e6,
            "finished_frame": finished,
            "laps": c.laps,
            "top_speed_mps": top[slot] / 1e6,
            "mean_speed_mps": distance / 1e6 / (frames / FPS) if frames else 0.0,
            "hottest_c": {k: [t / 1000, lim / 1000] for k, (t, lim) in heat.items()},
            "broken": [{"part": p, "frame": f} for p, f in broken],
        })
    return {"track": track_ref, "laps": track.laps_to_finish, "driver": driver, "frames": world.frame,
            "end_reason": world.end_reason, "route_m": world.route.length_um / 1e6, "loop": world.route.loop,
            "seconds": round(time.perf_counter() - started, 2), "cars": cars}


def _row(result: dict, car: dict) -> str:
    fin = car["finished_frame"]
    finish = f"{fin:>6} ({fin / FPS:5.1f} s)" if fin is not None else f"{'DNF':>6} {'':8}"
    heat = ", ".join(
        f"{k} {t:.0f}/{lim:.0f}" for k, (t, lim) in sorted(car["hottest_c"].items(), key=lambda kv: -kv[1][0] / kv[1][1])
    )
    broken = ", ".join(f"{b['part']}@{b['frame']}" for b in car["broken"]) or "-"
    laps = str(result["laps"]) if result["loop"] else "-"
    return (f"{result['track'][8:]:<9} {laps:>4} {result['driver']:<5} {car['archetype']:<8} {car['mass_g']:7.2f} {finish} "
            f"{car['top_speed_mps']:6.2f} {car['mean_speed_mps']:6.2f}  {broken:<22} {heat}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracks", default="01,02,03", help="built-in track numbers (default 01,02,03)")
    parser.add_argument("--laps", default="1,3", help="lap counts for loop tracks (default 1,3)")
    parser.add_argument("--drivers", default="idle,bot", help="idle, bot and/or spam (default idle,bot)")
    parser.add_argument("--archetypes", default="1,2,3", help="1 speed, 2 heavy, 3 control (default all)")
    parser.add_argument("--grid", action="store_true", help="also race the three archetypes together")
    parser.add_argument("--generated", action="store_true", help="race a fresh in-memory generation, not the shipped files")
    parser.add_argument("--json", action="store_true", help="print one JSON object per race instead of the table")
    args = parser.parse_args()
    resolve = resolver(args.generated)
    archetypes = [int(a) for a in args.archetypes.split(",")]
    if not args.json:
        print("track     laps drv   car       mass_g finish          top_m/s mean_m/s broken              "
              "hottest °C / limit (heat-limited parts that warmed)")
    for number in args.tracks.split(","):
        ref = f"builtin:track-{int(number):02d}"
        loop = resolve(ref).manifest["lap_mode"] == "loop"
        for laps in ([int(x) for x in args.laps.split(",")] if loop else [1]):
            for driver in args.drivers.split(","):
                runs = [race(ref, laps, [n], driver, resolve) for n in archetypes]
                if args.grid:
                    runs.append(race(ref, laps, archetypes, driver, resolve))
                for result in runs:
                    if args.json:
                        print(json.dumps(result))
                        continue
                    grid = len(result["cars"]) > 1
                    for car in result["cars"]:
                        print(_row(result, car) + ("   [grid]" if grid else ""))


if __name__ == "__main__":
    main()
