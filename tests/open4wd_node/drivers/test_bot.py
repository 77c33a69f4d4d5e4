"""BotDriver: determinism, valid decisions everywhere, each heuristic in a staged situation, and race
outcomes against cars that press nothing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from open4wd_node.drivers import check_decision
from open4wd_node.drivers.bot import BotDriver
from sim_core import SKILLS, SkillEvent, World
from sim_core.constants import QUANTA_PER_MJ
from sim_core.harness.scripted import RandomInputs
from sim_core.specs.vehicle import ChipSlot, LaunchAmmo, WeaponSpec
from tests.open4wd_node.drivers.helpers import (
    BUILTIN_TRACKS, archetypes, builtin_world, part_index, race, set_fields,
)
from tests.sim_core.circuit import circuit_track
from tests.sim_core.helpers import FRONT_POLE, archetype, car, loop_track, magnet_car, steel_car, straight_track

SPEED, HEAVY, CONTROL = archetype(0), archetype(1), archetype(2)  # code-built stand-ins (stable values)
CALM = {"h_um": 0, "vh_um_s": 0, "vlat_um_s": 0}


def staged(cars, track=None, **fields) -> World:
    """A world with car 0 grounded and calm, then ``fields`` applied to it."""
    world = World.new(track or straight_track(20, width_um=1_000_000), cars)
    for slot in range(len(cars)):
        set_fields(world, slot, CALM)
    set_fields(world, 0, fields)
    return world


def skills_of(decision) -> set[str]:
    return {skill for skill, _ in decision}


# -- determinism and validity ------------------------------------------------------------------------------

def test_same_seed_and_same_world_give_the_same_decisions_over_a_whole_race():
    logs = []
    for _ in range(2):
        seen: list = []
        bots = {slot: BotDriver(40 + slot) for slot in range(3)}
        world = race(builtin_world("builtin:track-03", list(archetypes())), bots, seen)
        logs.append((seen, world.state_hash()))
    assert logs[0] == logs[1]
    assert any(decision for _, _, decision in logs[0][0])


def test_a_decision_depends_only_on_seed_world_and_frame():
    world = staged([SPEED])
    first, again = BotDriver(5), BotDriver(5)
    assert first.decide(world, 0, 1) == first.decide(world, 0, 1) == again.decide(world, 0, 1)
    assert world.save_state() == staged([SPEED]).save_state()  # deciding never changed the world


@pytest.mark.parametrize("track", BUILTIN_TRACKS)
def test_every_decision_is_valid_and_every_bot_finishes_on_every_builtin_track(track):
    cars = list(archetypes())
    seen: list = []
    world = race(builtin_world(track, cars), {slot: BotDriver(slot) for slot in range(len(cars))}, seen)
    assert [row["status"] for row in world.standings()] == ["finished"] * len(cars)
    used = {skill for _, _, decision in seen for skill, _ in decision}
    assert "boost" in used and used <= {"boost", "brake", "slam", "stabilize", "swerve_left", "swerve_right"}


chips = st.lists(st.sampled_from(SKILLS), unique=True, max_size=8).flatmap(
    lambda skills: st.tuples(*(st.integers(1, 100 // max(1, len(skills))) for _ in skills)).map(
        lambda pcts: tuple(ChipSlot(s, p) for s, p in zip(skills, pcts, strict=True))))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chip=chips, seed=st.integers(0, 2**64 - 1), noise=st.integers(0, 2**32), frames=st.integers(1, 400))
def test_any_chip_any_seed_gives_valid_decisions_on_the_code_circuit(chip, seed, noise, frames):
    cars = [car(chip), archetype(1), archetype(2)]
    world = World.new(circuit_track(), cars)
    bot = BotDriver(seed)
    others = RandomInputs([(), cars[1].chip_skills, cars[2].chip_skills], noise)
    for frame in range(1, frames + 1):
        decision = bot.decide(world, 0, frame)
        check_decision(world, 0, decision)
        assert skills_of(decision) <= {s.skill for s in chip} - {"jump", "weapon"}
        inputs = others.next_frame()
        if decision:
            inputs[0] = [SkillEvent(s, h) for s, h in decision]
        world.step(inputs)
        if world.done:
            break


# -- the heuristics, staged ---------------------------------------------------------------------------------

def test_boosts_on_a_straight_but_not_when_the_battery_is_hot_or_low():
    bot = BotDriver(1)
    assert ("boost", False) in bot.decide(staged([SPEED]), 0, 1)
    battery = part_index(SPEED, "battery")
    hot = SPEED.parts[battery].thermal_limit_mc - 1_000
    assert "boost" not in skills_of(bot.decide(staged([SPEED], **{f"part[{battery}].temp_mc": hot}), 0, 1))
    low = SPEED.battery.energy_capacity_mj * 60 * SPEED.motor.auto_input_mw // SPEED.battery.configured_output_mw
    assert "boost" not in skills_of(bot.decide(staged([SPEED], remaining_q=low), 0, 1))


def sharpest_curve_approach(track) -> tuple[int, int]:
    """(arc 0.3 m before the sharpest curve begins, on the straight, and that curve's curvature)."""
    route = World.new(track, [SPEED]).route
    sharpest = max(range(route.count), key=lambda i: abs(route.k_lateral[i]))
    i = sharpest
    while route.k_lateral[i]:
        i -= 1
    arc = route.arc[i] - 300_000
    assert route.k_lateral[route.index(arc)] == 0  # braking there can only come from looking ahead
    return arc, route.k_lateral[sharpest]


def test_brakes_before_a_sharp_curve_only_when_too_fast():
    track = loop_track()
    arc, curvature = sharpest_curve_approach(track)
    assert curvature != 0
    bot = BotDriver(2)
    fast = bot.decide(staged([SPEED], track, arc_um=arc, vs_um_s=4_000_000), 0, 1)
    assert ("brake", False) in fast and "boost" not in skills_of(fast)
    assert "brake" not in skills_of(bot.decide(staged([SPEED], track, arc_um=arc, vs_um_s=300_000), 0, 1))


def test_stabilizes_when_drifting_or_rising_and_not_when_calm():
    bot = BotDriver(3)
    assert ("stabilize", True) in bot.decide(staged([CONTROL], vlat_um_s=300_000), 0, 1)
    assert ("stabilize", True) in bot.decide(staged([CONTROL], h_um=30_000, vh_um_s=200_000), 0, 1)
    assert bot.decide(staged([CONTROL]), 0, 1) == []


def test_slams_only_when_high_above_the_ribbon_and_not_already_falling_fast():
    bot = BotDriver(4)
    assert ("slam", False) in bot.decide(staged([HEAVY], h_um=100_000), 0, 1)
    assert "slam" not in skills_of(bot.decide(staged([HEAVY], h_um=5_000), 0, 1))
    assert "slam" not in skills_of(bot.decide(staged([HEAVY], h_um=100_000, vh_um_s=-3_000_000), 0, 1))


def two_cars(me, other_lat: int, *, my_lat: int = 0, other_arc: int = 1_400_000, other_vs: int = 500_000) -> World:
    world = staged([me, HEAVY], arc_um=1_000_000, lat_um=my_lat, vs_um_s=1_500_000)
    set_fields(world, 1, {"arc_um": other_arc, "lat_um": other_lat, "vs_um_s": other_vs})
    return world


def test_swerves_away_from_a_slower_car_ahead_in_its_lane():
    bot = BotDriver(5)
    assert ("swerve_left", True) in bot.decide(two_cars(CONTROL, other_lat=30_000), 0, 1)
    assert ("swerve_right", True) in bot.decide(two_cars(CONTROL, other_lat=-30_000), 0, 1)
    near_left_wall = -(500_000 - CONTROL.width_um // 2 - 10_000)
    assert ("swerve_right", True) in bot.decide(two_cars(CONTROL, near_left_wall + 30_000, my_lat=near_left_wall), 0, 1)
    assert bot.decide(two_cars(CONTROL, other_lat=300_000), 0, 1) == []  # another lane
    assert bot.decide(two_cars(CONTROL, other_lat=0, other_vs=2_000_000), 0, 1) == []  # pulling away
    assert bot.decide(two_cars(CONTROL, other_lat=0, other_arc=600_000), 0, 1) == []  # behind


def test_on_a_loop_a_car_just_past_the_line_is_ahead():
    track = loop_track()
    length = World.new(track, [CONTROL]).route.length_um
    world = staged([CONTROL, HEAVY], track, arc_um=length - 200_000, lat_um=0, vs_um_s=1_500_000)
    set_fields(world, 1, {"arc_um": 100_000, "lat_um": 30_000, "vs_um_s": 300_000})
    assert ("swerve_left", True) in BotDriver(8).decide(world, 0, 1)


def test_does_not_boost_into_a_car_ahead():
    bot = BotDriver(6)
    assert "boost" not in skills_of(bot.decide(two_cars(SPEED, other_lat=0), 0, 1))
    assert "boost" in skills_of(bot.decide(two_cars(SPEED, other_lat=300_000), 0, 1))


def test_a_dead_even_swerve_is_settled_by_the_seed():
    world = two_cars(CONTROL, other_lat=0)
    swerves = {"swerve_left", "swerve_right"}
    sides = {seed: skills_of(BotDriver(seed).decide(world, 0, 1)) & swerves for seed in range(16)}
    assert {frozenset(s) for s in sides.values()} == {frozenset({"swerve_left"}), frozenset({"swerve_right"})}
    assert all(skills_of(BotDriver(seed).decide(world, 0, 1)) >= side for seed, side in sides.items())


LAUNCHER = car(weapon=WeaponSpec("active", mechanism="launch", axis_e6=FRONT_POLE,
                                 ammo=(LaunchAmmo(850_000, "steel", (0, 0, -60_000)),) * 3))
PUSHER = car(weapon=WeaponSpec("active", mechanism="push", axis_e6=FRONT_POLE))


def ahead_of(me, other, gap: int, *, other_lat: int = 0, **fields) -> World:
    """``me`` at 1 m on the ground and ``other`` ``gap`` µm ahead of it (box to box), both at 1 m/s."""
    world = staged([me, other], arc_um=1_000_000, lat_um=0, vs_um_s=1_000_000, **fields)
    arc = 1_000_000 + (me.length_um + other.length_um) // 2 + gap
    set_fields(world, 1, {"arc_um": arc, "lat_um": other_lat, "vs_um_s": 1_000_000})
    return world


def test_fires_a_launcher_at_a_car_ahead_in_its_lane_within_reach():
    bot = BotDriver(9)
    assert ("weapon", True) in bot.decide(ahead_of(LAUNCHER, HEAVY, 1_000_000), 0, 1)
    assert "weapon" not in skills_of(bot.decide(ahead_of(LAUNCHER, HEAVY, 1_600_000), 0, 1))  # beyond 1.5 m
    assert "weapon" not in skills_of(bot.decide(ahead_of(LAUNCHER, HEAVY, 1_000_000, other_lat=300_000), 0, 1))
    assert "weapon" not in skills_of(bot.decide(ahead_of(LAUNCHER, HEAVY, -200_000), 0, 1))  # beside, behind
    airborne = ahead_of(LAUNCHER, HEAVY, 1_000_000, h_um=5_000)
    assert "weapon" not in skills_of(bot.decide(airborne, 0, 1))
    battery, motor = LAUNCHER.battery, LAUNCHER.motor
    initial_q = battery.energy_capacity_mj * QUANTA_PER_MJ
    short = motor.auto_input_mw * initial_q // battery.configured_output_mw + 1  # just enough for the motor
    low = ahead_of(LAUNCHER, HEAVY, 1_000_000, remaining_q=short)
    assert "weapon" not in skills_of(bot.decide(low, 0, 1))  # a release would leave the motor short


def test_holds_a_magnet_only_near_a_car_that_carries_steel_and_a_push_only_when_touching():
    bot = BotDriver(10)
    assert ("weapon", True) in bot.decide(ahead_of(magnet_car(), steel_car(), 200_000), 0, 1)
    assert "weapon" not in skills_of(bot.decide(ahead_of(magnet_car(), steel_car(), 400_000), 0, 1))
    assert "weapon" not in skills_of(bot.decide(ahead_of(magnet_car(), car(), 200_000), 0, 1))  # no steel
    assert ("weapon", True) in bot.decide(ahead_of(PUSHER, HEAVY, 4_000), 0, 1)
    assert "weapon" not in skills_of(bot.decide(ahead_of(PUSHER, HEAVY, 6_000), 0, 1))


def test_never_holds_a_passive_weapon_or_one_without_a_mechanism():
    for me in (SPEED, CONTROL):  # a passive ram; a code-built active weapon that only pays its Hold
        assert "weapon" not in skills_of(BotDriver(11).decide(ahead_of(me, HEAVY, 0), 0, 1))


def test_a_launcher_bot_behind_a_car_in_its_lane_releases_its_darts_15_frames_apart():
    """Stepped by its bot with a slower car 0.5 m ahead in its lane: it holds the weapon, the world
    releases a dart every 15 frames until the three are gone, and the darts strike the car ahead: it runs
    faster than in a world where nothing was fired."""
    world, idle = ahead_of(LAUNCHER, HEAVY, 500_000), ahead_of(LAUNCHER, HEAVY, 500_000)
    bot = BotDriver(12)
    for _ in range(60):
        decision = bot.decide(world, 0, world.frame + 1)
        world.step({0: [SkillEvent(k, h) for k, h in decision]} if decision else {})
        idle.step({})
    state = world.save_own().world
    assert [state[b.at + 1] for b in world.launchers.bullets] == [1, 16, 31]  # released_frame
    assert world.car_state(1)["vs_um_s"] > idle.car_state(1)["vs_um_s"]


def test_sends_nothing_when_disabled_penalised_or_chipless():
    bot = BotDriver(7)
    chip = part_index(SPEED, "chip")
    broken = staged([SPEED], broken_mask=1 << chip)
    assert broken.disable_reason(0) == "chip-broken" and bot.decide(broken, 0, 1) == []
    assert bot.decide(staged([SPEED], penalty_kind=1, penalty_timer=50), 0, 1) == []
    chipless = staged([car(())])
    assert chipless.disable_reason(0) == "disallow-chip" and bot.decide(chipless, 0, 1) == []


# -- outcomes ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("track", BUILTIN_TRACKS)
def test_a_bot_beats_its_twin_that_presses_nothing(track):
    """Two speed cars per race, the bot on either grid side; over three seeds it takes more points."""
    speed = archetypes()[0]
    points = {"bot": 0, "idle": 0}
    for seed in (1, 2, 3):
        bot_slot = seed % 2
        world = race(builtin_world(track, [speed, speed]), {bot_slot: BotDriver(seed)})
        for row in world.standings():
            points["bot" if row["slot"] == bot_slot else "idle"] += row["points"]
    assert points["bot"] > points["idle"]


def test_bots_finish_no_later_than_idle_cars_and_sooner_overall():
    cars = list(archetypes())
    idle = {r["slot"]: r["finished_frame"] for r in race(builtin_world("builtin:track-03", cars), {}).standings()}
    for seed in (1, 2, 3):
        world = race(builtin_world("builtin:track-03", cars), {s: BotDriver(seed * 10 + s) for s in range(3)})
        bots = {r["slot"]: r["finished_frame"] for r in world.standings()}
        assert None not in bots.values()
        assert all(bots[s] <= idle[s] for s in idle) and sum(bots.values()) < sum(idle.values())
