"""Rain and snow patches (``sim_core.step.weather``): the scheduler against hand-computed cadences and our
RNG's own pinned draws, the saved pool, and the wet grip of track-03's rain against the material table."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from sim_core import World
from sim_core.assets.demo_round import builtin_demo_track, builtin_demo_vehicles
from sim_core.constants import ROLLING_DEN
from sim_core.errors import SimError
from sim_core.harness.scripted import RandomInputs
from sim_core.harness.synctest import run_synctest
from sim_core.intmath import splitmix64_at
from sim_core.specs.weather import PatchSpec, WeatherSpec
from sim_core.state.codec import HEADER
from sim_core.state.layout import (
    PA_ARC, PA_BORN, PA_EXPIRE, PA_LAT, PATCH_POOL, PATCH_STRIDE, VLAT, VS, W_FRAME, W_SEED, W_WEATHER_ACC,
    W_WEATHER_ORDINAL, patch_field, world_length,
)
from sim_core.state.codec import digest_of
from sim_core.step.weather import Weather, weather_seed

from tests.sim_core.helpers import car, edited, place, straight_track
from tests.coded import raises_coded

# the §9.1 scheduler case's patch rules: 30 a minute (one per 120 frames), 60 s, radius 0.75 m, rain 0.65 / 1.5
SCHEDULE = PatchSpec(spawn_rate_per_min_x1000=30_000, lifetime_frames=3_600, radius_um=750_000,
                     friction_modifier_milli=650, rolling_modifier_milli=1_500)
LENGTH, HALF = 40_000_000, 1_000_000  # a 40 m ribbon 2 m wide (flat, every sample as wide)


def scheduler(patch: PatchSpec = SCHEDULE, length: int = LENGTH, half: int = HALF, apron: int = 0,
              loop: bool = False) -> Weather:
    return Weather(patch, loop, length, [half] * 101, apron, b"track digest")


def run(weather: Weather, world: list[int], frames: int) -> None:
    """Step the weather alone through ``frames`` frames, as ``Frame.run`` does (update, then count)."""
    for _ in range(frames):
        weather.update(world)
        world[W_FRAME] += 1


def slots(world: list[int]) -> list[tuple[int, int, int, int]]:
    return [tuple(world[patch_field(s, 0) : patch_field(s, 0) + PATCH_STRIDE]) for s in range(PATCH_POOL)]  # type: ignore[misc]


def candidate(seed: int, ordinal: int, length: int = LENGTH, edge: int = HALF) -> tuple[int, int]:
    """Candidate ``ordinal`` as docs/sim.md "Weather" writes it: outputs 2n and 2n + 1 of SplitMix64."""
    arc = splitmix64_at(seed, 2 * ordinal) * length >> 64
    return arc, (splitmix64_at(seed, 2 * ordinal + 1) * (2 * edge + 1) >> 64) - edge


def test_splitmix64_is_the_published_generator() -> None:
    """Known answers of SplitMix64 seeded with 0 (the reference implementation's first outputs)."""
    assert [splitmix64_at(0, n) for n in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_the_weather_seed_is_sha256_of_the_round_seed_and_the_track() -> None:
    digest = hashlib.sha256((7).to_bytes(8, "little") + b"\x00\x00" + b"track").digest()
    assert weather_seed(7, b"track") == int.from_bytes(digest[:4], "little") < 1 << 32
    assert weather_seed(7, b"track") != weather_seed(8, b"track") != weather_seed(8, b"other")


def test_cadence_frame_zero_first_then_every_120_frames_at_30_a_minute() -> None:
    """§9.1's scheduler checks: the frame-0 spawn, the exact integer cadence (120 frames at 30 /min),
    lifetime → frames, the ordinal; here the state is captured after the third spawn (frame 240)."""
    weather = scheduler()
    world = [0] * world_length(PATCH_POOL)
    world[W_SEED] = 416_588_127
    seed = weather.seed(world[W_SEED])
    run(weather, world, 1)
    assert (world[W_WEATHER_ACC], world[W_WEATHER_ORDINAL]) == (0, 1)
    run(weather, world, 119)  # frames 1..119: 30 000 each
    assert (world[W_WEATHER_ACC], world[W_WEATHER_ORDINAL]) == (119 * 30_000, 1)
    run(weather, world, 121)  # frames 120..240
    assert (world[W_WEATHER_ACC], world[W_WEATHER_ORDINAL]) == (0, 3)
    active = slots(world)[:3]
    assert [(born, expire) for born, expire, _, _ in active] == [(0, 3_600), (120, 3_720), (240, 3_840)]
    assert [(arc, lat) for _, _, arc, lat in active] == [candidate(seed, n) for n in range(3)]
    assert [(arc, lat) for _, _, arc, lat in active] == [  # our RNG's own draws, pinned
        (2_843_986, -732_471), (37_591_666, 526_508), (35_939_806, -614_187)]
    assert seed == 2_902_807_765  # the weather seed of world seed 416 588 127 on this digest
    assert slots(world)[3:] == [(0, 0, 0, 0)] * (PATCH_POOL - 3)


def test_five_a_minute_spawns_every_720_frames_and_patches_expire_after_their_lifetime() -> None:
    weather = scheduler(replace(SCHEDULE, spawn_rate_per_min_x1000=5_000, lifetime_frames=2_700))
    world = [0] * world_length(PATCH_POOL)
    run(weather, world, 2_700)  # frames 0..2699: spawns at 0, 720, 1440, 2160
    assert [s[PA_BORN] for s in slots(world)[:4]] == [0, 720, 1_440, 2_160]
    assert slots(world)[0][PA_EXPIRE] == 2_700  # still saved: it acts no more from frame 2700
    run(weather, world, 1)  # frame 2700 frees it before anything spawns
    assert slots(world)[0] == (0, 0, 0, 0) and len(weather.active(world)) == 3
    run(weather, world, 180)  # frame 2880 spawns into the lowest free slot
    assert slots(world)[0][:2] == (2_880, 5_580) and world[W_WEATHER_ORDINAL] == 5


def test_at_most_30_live_at_once_and_a_full_pool_skips_the_spawn_without_drawing() -> None:
    weather = scheduler(replace(SCHEDULE, radius_um=200_000))
    world = [0] * world_length(PATCH_POOL)
    run(weather, world, 7_200)
    assert len(weather.active(world)) == 30  # 30 /min living 60 s: the 50 slots are never reached by the rules
    full = [0] * world_length(PATCH_POOL)
    full[W_FRAME], full[W_WEATHER_ACC], full[W_WEATHER_ORDINAL] = 500, 3_600_000 - 30_000, 77
    for s in range(PATCH_POOL):  # state surgery: every slot taken
        full[patch_field(s, PA_BORN)], full[patch_field(s, PA_EXPIRE)] = 499, 499 + 3_600
        full[patch_field(s, PA_ARC)], full[patch_field(s, PA_LAT)] = s * 700_000, 0
    before = full.copy()
    run(weather, full, 1)  # frame 500 would spawn
    assert full[W_WEATHER_ACC] == 0 and full[W_WEATHER_ORDINAL] == 77 and full[8:] == before[8:]


def test_a_candidate_inside_an_active_patch_fails_and_consumes_its_ordinal() -> None:
    weather = scheduler()
    world = [0] * world_length(PATCH_POOL)
    seed = weather.seed(0)
    arc0, lat0 = candidate(seed, 0)
    at = patch_field(1, 0)  # a patch someone left over the first candidate (slot 1; slot 0 is free)
    world[at : at + PATCH_STRIDE] = [0, 3_600, arc0, lat0]
    world[W_FRAME] = 1
    world[W_WEATHER_ACC] = 3_600_000 - 30_000
    run(weather, world, 1)
    assert world[W_WEATHER_ORDINAL] == 2
    assert slots(world)[0] == (1, 3_601, *candidate(seed, 1))


def test_eight_failed_candidates_spawn_nothing() -> None:
    """A ribbon 1 m long and 0.4 m wide under one patch of radius 1 m: every candidate falls inside it."""
    weather = scheduler(replace(SCHEDULE, radius_um=1_000_000), length=1_000_000, half=200_000)
    world = [0] * world_length(PATCH_POOL)
    run(weather, world, 121)
    assert world[W_WEATHER_ORDINAL] == 1 + 8 and len(weather.active(world)) == 1


def test_candidates_cover_the_ribbon_and_its_apron_uniformly() -> None:
    weather = scheduler(replace(SCHEDULE, radius_um=200_000), apron=300_000)
    world = [0] * world_length(PATCH_POOL)
    run(weather, world, 3_600)
    centres = weather.active(world)
    assert len(centres) == 30
    assert all(0 <= arc < LENGTH and -1_300_000 <= lat <= 1_300_000 for arc, lat in centres)
    assert any(abs(lat) > HALF for _, lat in centres)  # some on the apron
    assert max(arc for arc, _ in centres) - min(arc for arc, _ in centres) > LENGTH // 2


def test_cover_is_a_disc_in_arc_and_lat_that_wraps_on_a_loop() -> None:
    loop = scheduler(replace(SCHEDULE, radius_um=500_000), loop=True)
    patch = [(100_000, 0)]
    assert loop.covers(patch, LENGTH - 300_000, 300_000)  # 0.4 m back across the seam, 0.3 m aside: 0.5 m
    assert not loop.covers(patch, LENGTH - 300_001, 300_000)
    assert loop.covers(patch, 2 * LENGTH + 100_000, -500_000)  # the car's unwrapped arc on its third lap
    linear = scheduler(replace(SCHEDULE, radius_um=500_000))
    assert not linear.covers(patch, LENGTH - 300_000, 0)


def rain_track(aero: bool = True) -> World:
    """The built-in track-03 in its rain with one built-in car; without ``aero`` the car's body carries no
    aero data, so that a hand computation of its grip need not include the air's drag."""
    vehicles = builtin_demo_vehicles(1)
    if not aero:
        vehicles = [replace(v, parts=tuple(replace(part, aero=None) for part in v.parts)) for v in vehicles]
    return World.new(builtin_demo_track("builtin:track-03"), vehicles, seed=1)


def test_track03_rain_spawns_in_the_world_and_is_saved() -> None:
    world = rain_track()
    calm = World.new(replace(world.track, weather=WeatherSpec()), world.vehicles, seed=1)
    assert world.weather.slots == PATCH_POOL and calm.weather.slots == 0
    assert len(world.save_state()) - len(calm.save_state()) == 8 * PATCH_POOL * PATCH_STRIDE
    world.step()
    assert len(world.weather.active(world._world)) == 1 and world._world[W_WEATHER_ORDINAL] == 1
    names = world.field_names()
    assert names[8:12] == ["world.patch[0].born_frame", "world.patch[0].expire_frame", "world.patch[0].arc_um",
                           "world.patch[0].lat_um"]
    for _ in range(720):
        world.step()
    assert [s[PA_BORN] for s in slots(world._world)[:2]] == [0, 720]  # 5 a minute, living 2700 frames
    copy = rain_track()
    copy.load_state(world.save_state())
    world.step()
    copy.step()
    assert copy.state_hash() == world.state_hash()


def test_the_wet_grip_is_the_surface_scaled_before_the_combine() -> None:
    """track-03 is dirt (μ 0.700, rolling 1.300) in rain (0.65 / 1.5): wet dirt μ 0.700·0.65 = 0.455 and
    rolling 1.300·1.5 = 1.950; a 1.200 rubber tire grips Average(1.200, 0.455) = 0.827 instead of 0.950,
    and rolls 1.200·1.950 instead of 1.200·1.300; a 0.950 tire: 0.702 instead of 0.825."""
    world = World.new(builtin_demo_track("builtin:track-03"), builtin_demo_vehicles(3), seed=1)
    grips = [(m.mechanics(0).tire_groups, m.wet_mechanics(0).tire_groups) for m in world.models]
    assert [(g.mu, g.rr_milli, g.size) for dry, _ in grips for g in dry] == [
        (950, 1_560_000, 4), (950, 1_560_000, 4), (825, 1_430_000, 4)]
    assert [(g.mu, g.rr_milli, g.size) for _, wet in grips for g in wet] == [
        (827, 2_340_000, 4), (827, 2_340_000, 4), (702, 2_145_000, 4)]


def expected_slide(world: World, mu: int, rr_milli: int, vlat: int) -> tuple[int, int]:
    """One frame of a car at rest along the route but sliding sideways at ``vlat`` on a flat sample, by
    hand from docs/sim.md's motion: full drive, traction N_i·μ, the lateral grip left at its limit."""
    model, mech = world.models[0], world.models[0].mechanics(0)
    c = world._cars[0]
    sample = world.motion.samples[c[1] * world.motion.count // world.motion.length_um]
    g_up, g_right, acc_s = sample.g_up, sample.g_right, sample.g_tangent
    m, m60 = mech.mass_ug, 60 * mech.mass_ug
    n_tire = m * -g_up // 60 // 4
    traction = n_tire * mu // 1000
    torque, vtop = model.full_drive
    share = min(torque, m * vtop) // 4
    used = min(share, traction)
    cap = 4 * (traction - used)
    need = -(m * vlat + m * g_right // 60)
    assert need < -cap  # sliding: the tires give all they have left
    p = m * acc_s + 60 * 4 * used
    r = 60 * 4 * (n_tire * rr_milli // ROLLING_DEN)
    p = p - r if p > r else p + r if p < -r else 0
    return (2 * p + m60) // (2 * m60), (2 * (m60 * vlat + m * g_right - 60 * cap) + m60) // (2 * m60)


def test_a_car_inside_a_track03_rain_patch_loses_grip_as_hand_computed() -> None:
    """The same car (without aero) in the same state, once on the frame-0 patch's centre and once with that patch gone:
    the drive is below traction either way (the tangential speed differs by the rolling resistance only),
    the sideways slide is stopped by the traction the drive leaves, 4·N_i·(μ − share): less when wet."""
    world = rain_track(aero=False)
    world.step()
    (arc, lat), = world.weather.active(world._world)
    place(world, 0, arc=arc, lat=lat, h=0, vs=0, vlat=1_000_000, vh=0)
    state = world.save_state()
    dry = rain_track(aero=False)
    dry.load_state(state)
    at = patch_field(0, 0)
    dry._world[at : at + PATCH_STRIDE] = [0, 0, 0, 0]
    edited(dry)
    wet_group, dry_group = world.models[0].wet_mechanics(0).tire_groups[0], world.models[0].mechanics(0).tire_groups[0]
    # from the sample the frame starts on (the car may cross into the next one during the frame)
    wet = expected_slide(world, wet_group.mu, wet_group.rr_milli, 1_000_000)
    expected_dry = expected_slide(dry, dry_group.mu, dry_group.rr_milli, 1_000_000)
    world.step()
    dry.step()
    assert (world._cars[0][VS], world._cars[0][VLAT]) == wet
    assert (dry._cars[0][VS], dry._cars[0][VLAT]) == expected_dry
    assert world._cars[0][VLAT] > dry._cars[0][VLAT] > 0  # wet: slides on faster
    assert world._cars[0][VS] < dry._cars[0][VS]  # wet: rolls heavier


def test_a_car_in_the_air_over_a_patch_is_untouched() -> None:
    """Only a pressed tire meets the surface: an airborne car's frame is the same with or without the patch."""
    world = rain_track()
    world.step()
    (arc, lat), = world.weather.active(world._world)
    place(world, 0, arc=arc, lat=lat, h=20_000, vs=500_000, vlat=0, vh=0)
    dry = rain_track()
    dry.load_state(world.save_state())
    at = patch_field(0, 0)
    dry._world[at : at + PATCH_STRIDE] = [0, 0, 0, 0]
    edited(dry)
    world.step()
    dry.step()
    assert world._cars == dry._cars


@pytest.mark.parametrize(("field", "value"), [
    ("weather_acc", 3_600_000), ("weather_acc", -1), ("weather_ordinal", -1),
    ("patch[0].expire_frame", 0),  # a freed slot that still holds a patch
    ("patch[0].born_frame", 1),  # born in the frame the state has not stepped yet
    ("patch[0].expire_frame", 2_701),  # not born + lifetime
    ("patch[0].arc_um", 60_116_610),  # past the ribbon's end
    ("patch[0].lat_um", 800_001),  # beyond the corridor (track-03 has no apron)
    ("patch[1].arc_um", 5),  # a free slot must be all zeros
])
def test_a_snapshot_with_a_bad_weather_field_is_refused(field: str, value: int) -> None:
    world = rain_track()
    world.step()
    data = bytearray(world.save_state())
    index = world.field_names().index(f"world.{field}")
    data[HEADER.size + 8 * index : HEADER.size + 8 * index + 8] = value.to_bytes(8, "little", signed=True)
    other = rain_track()
    before = other.save_state()
    with pytest.raises(SimError) as caught:
        other.load_state(bytes(data))
    assert caught.value.code == "state-invalid" and "weather" in str(caught.value)
    assert other.save_state() == before


def test_a_track_without_patches_saves_no_pool() -> None:
    """Normal weather, and rain that never spawns, keep no slots: only the two weather world fields."""
    calm = World.new(straight_track(), [car()])
    never = World.new(straight_track(weather=WeatherSpec("rain", 0, 0, replace(SCHEDULE, spawn_rate_per_min_x1000=0))),
                      [car()])
    for world in (calm, never):
        assert world.weather.slots == 0 and len(world._world) == world_length(0)
        world.step()
        assert world._world[6:8] == [0, 0]


def test_synctest_passes_with_rain_spawning_inside_the_window() -> None:
    """8 cars on track-03 from GO: the frame-0 patch and the frame-720 spawn both fall inside rolled-back
    windows (every frame is re-simulated from up to 7 frames back)."""
    world = World.new(builtin_demo_track("builtin:track-03"), builtin_demo_vehicles(8), seed=5)
    inputs = RandomInputs([m.chip_skills for m in world.models], 5)
    result = run_synctest(world, 760, 7, inputs.next_frame)
    assert result.ok and result.frames == 760
    assert [s[PA_BORN] for s in slots(world._world)[:2]] == [0, 720] and slots(world._world)[1][PA_ARC] >= 0


def test_the_pool_fields_are_named_for_diffs() -> None:
    world = rain_track()
    names = world.field_names()
    assert names[world_length(PATCH_POOL) - 1] == f"world.patch[{PATCH_POOL - 1}].lat_um"
    assert names[patch_field(3, PA_ARC)] == "world.patch[3].arc_um" and names[patch_field(3, PA_LAT)] == "world.patch[3].lat_um"
    assert digest_of(world.track) != digest_of(replace(world.track, weather=WeatherSpec()))


@pytest.mark.parametrize(("rate", "lifetime"), [(30_000, 3_600), (5_000, 2_700), (7_777, 1_800), (29_999, 3_599),
                                                 (1, 3_600), (13_000, 2_001)])
def test_the_slots_the_rules_can_fill_are_the_ones_scanned(rate: int, lifetime: int) -> None:
    """No more than lifetime·rate // 3 600 000 + 2 patches are ever alive, so lowest-free allocation
    never needs a slot beyond them: every spawn the cadence calls for lands there."""
    weather = scheduler(replace(SCHEDULE, spawn_rate_per_min_x1000=rate, lifetime_frames=lifetime, radius_um=200_000))
    live = (weather.live_end - 8) // PATCH_STRIDE
    assert live == min(PATCH_POOL, lifetime * rate // 3_600_000 + 2)
    world = [0] * world_length(PATCH_POOL)
    births = set()
    frames = 3 * lifetime + 1_000
    for _ in range(frames):
        run(weather, world, 1)
        births.update(s[PA_BORN] for s in slots(world) if s[PA_EXPIRE])
        assert all(s == (0, 0, 0, 0) for s in slots(world)[live:])
    assert len(births) == 1 + (frames - 1) * rate // 3_600_000  # every spawn of the cadence happened


def test_a_snapshot_with_a_patch_beyond_the_reachable_slots_is_refused() -> None:
    """track-03 (5 /min, 2700 frames) can keep at most 2700·5000 // 3 600 000 + 2 = 5 patches: slots 0…4."""
    world = rain_track()
    for _ in range(10):
        world.step()
    names = world.field_names()
    for slot, accepted in ((4, True), (5, False)):
        data = bytearray(world.save_state())
        for field, value in (("born_frame", 3), ("expire_frame", 2_703), ("arc_um", 1_000_000), ("lat_um", 0)):
            index = HEADER.size + 8 * names.index(f"world.patch[{slot}].{field}")
            data[index : index + 8] = value.to_bytes(8, "little", signed=True)
        other = rain_track()
        if accepted:
            other.load_state(bytes(data))
            assert other.weather.active(other._world)[-1] == (1_000_000, 0)
        else:
            with raises_coded(SimError, "state-invalid", match="weather"):
                other.load_state(bytes(data))
