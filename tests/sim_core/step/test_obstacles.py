"""Solid track entities (spec/simcore.md §7.4 "Entities", sim_core.step.obstacles): a fixed entity keeps a
car out through its face of least penetration and bounces it by (1 + e)·v_close, a fast car does not pass
through a thin one, a mover's swing along its curves and the impulse it gives, impact fatigue on the car
and on a destructible entity until it breaks (then nothing stops the car), ghosts pass, the saved slots
and their refusals, the specs' refusals, a track GLB's entities into the TrackSpec, and a sync-test."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sim_core import World
from sim_core.assets.admission import admit
from sim_core.assets.bake import bake
from sim_core.assets.convert import track_spec
from sim_core.assets.glb_build import GlbBuilder, frame_matrix
from sim_core.assets.shapes import box as mesh_box
from sim_core.errors import SimError
from sim_core.harness.scripted import RandomInputs
from sim_core.harness.synctest import run_synctest
from sim_core.specs.materials import material
from sim_core.specs.obstacles import MotionSpec, ObstacleSpec
from sim_core.state.layout import (
    ARC, BROKEN_MASK, H, LAT, OB_BREAK, OB_FATIGUE, P_FATIGUE, PENALTY_KIND, PENALTY_TIMER, VLAT, VS, W_FRAME,
    part_field,
)
from sim_core.step.contact import impact_fatigue

from tests.sim_core.circuit import circuit_track
from tests.sim_core.helpers import car, place, straight_track

M = 1_000_000
WALL = ObstacleSpec((-500_000, 0, -3_020_000), (500_000, 100_000, -3_000_000), "concrete")
"""A concrete wall across the straight track (it runs along −Z, right = +X): arcs 3.00–3.02 m, 0.1 m high."""


def world_with(*obstacles: ObstacleSpec, cars=None) -> World:
    return World.new(straight_track(obstacles=obstacles), cars or [car()])


def collide(w: World, starts=None) -> dict[int, int]:
    """One pass of the entities on the world's state (what ``Frame.run`` calls after contact)."""
    boxes = [m.mechanics(c[BROKEN_MASK]).contact_box if not c[PENALTY_TIMER] else m.ghost_box
             for m, c in zip(w.models, w._cars, strict=True)]
    starts = starts or [c[ARC : H + 1] for c in w._cars]
    return w.obstacles.collide(w._world, w._cars, starts, boxes, w._frame.colliders)


def bounce(e_obstacle: str) -> int:
    return (material(e_obstacle).restitution_milli + material("pc").restitution_milli) // 2


def test_a_car_nosing_into_a_wall_is_put_back_at_its_face_and_bounces_by_e():
    """The car's nose 5 mm into the wall's near face at 1 m/s: out 5 mm along the route (the least
    penetration), and its speed along it becomes −e·1 m/s, e the Average of concrete's 0.15 and pc's 0.50."""
    w = world_with(WALL)
    place(w, 0, arc=3_000_000 - 80_000 + 5_000, lat=0, h=0, vs=M, vlat=0, vh=0)
    assert collide(w) == {}
    e = bounce("concrete")
    assert w._cars[0][ARC] == 3_000_000 - 80_000
    assert w._cars[0][VS] == M - (1000 + e) * M // 1000 == -e * 1000


def test_a_car_leaving_a_wall_is_put_out_but_not_bounced():
    w = world_with(WALL)
    place(w, 0, arc=3_000_000 - 80_000 + 5_000, lat=0, h=0, vs=-M, vlat=0, vh=0)
    collide(w)
    assert w._cars[0][ARC] == 2_920_000 and w._cars[0][VS] == -M


def test_beside_below_or_above_the_entity_nothing_happens():
    narrow = ObstacleSpec((-100_000, 0, -3_020_000), (100_000, 100_000, -3_000_000), "concrete")
    for lat, h, spec in ((150_000 + 1, 0, narrow), (-150_000 - 1, 0, narrow), (0, 100_000, WALL)):
        w = world_with(spec)
        place(w, 0, arc=3_000_000, lat=lat, h=h, vs=M, vlat=0, vh=0)
        collide(w)
        assert (w._cars[0][ARC], w._cars[0][VS]) == (3_000_000, M)


def test_a_car_on_top_of_a_low_block_is_lifted_onto_it():
    """A 10 mm high slab 1 m long: a car 4 mm into it from above goes up 6 mm onto its top, not 0.5 m out."""
    slab = ObstacleSpec((-500_000, 0, -3_500_000), (500_000, 10_000, -2_500_000), "concrete")
    w = world_with(slab)
    place(w, 0, arc=3_000_000, lat=0, h=4_000, vs=M, vlat=0, vh=-200_000)
    collide(w)
    e = bounce("concrete")
    assert w._cars[0][H] == 10_000 and w._cars[0][1] == 3_000_000
    assert w._cars[0][6] == -200_000 + (1000 + e) * 200_000 // 1000


def test_a_fast_car_does_not_pass_through_a_thin_wall():
    """At 30 m/s (0.5 m a frame) the car went from before the 20 mm wall to beyond it in one frame: it is
    put back before it, bouncing."""
    w = world_with(WALL)
    place(w, 0, arc=3_300_000, lat=0, h=0, vs=30 * M, vlat=0, vh=0)
    collide(w, starts=[[2_800_000, 0, 0]])
    assert w._cars[0][ARC] == 2_920_000 and w._cars[0][VS] < 0


def offset(obstacle, frame: int, axis: int) -> int:
    """How far along route ``axis`` the entity stands from its rest pose at ``frame`` (µm)."""
    return obstacle.box_at(frame)[axis] - obstacle.lows[axis]


def mover(curve: str, amplitude=(200_000, 0, 0), period=60, phase=0, **fields) -> ObstacleSpec:
    return ObstacleSpec((-20_000, 0, -3_020_000), (20_000, 100_000, -3_000_000), "steel",
                        motion=MotionSpec(curve, period, phase, amplitude), **fields)


@pytest.mark.parametrize(("curve", "offsets"), [
    ("linear", {0: 0, 10: 66_666, 15: 100_000, 30: 200_000, 45: 100_000, 60: 0}),
    ("sin", {0: 0, 10: 51_851, 15: 100_000, 30: 200_000, 45: 100_000}),
    ("step", {0: 200_000, 29: 200_000, 30: 0, 59: 0, 60: 200_000}),
])
def test_a_mover_swings_out_and_back_once_a_period(curve, offsets):
    """0.2 m along +X (the route's right) over 60 frames: linear at a steady speed, sin as the smoothstep
    (3u² − 2u³ of the half period: 0.259 at a third of it), step there for the first half."""
    w = world_with(mover(curve))
    (obstacle,) = w.obstacles.obstacles
    assert {frame: offset(obstacle, frame, 1) for frame in offsets} == offsets
    assert offset(obstacle, 30, 0) == offset(obstacle, 30, 2) == 0
    ahead = world_with(mover(curve, phase=30))
    assert offset(ahead.obstacles.obstacles[0], 0, 1) == offsets[30]


def test_a_mover_sweeping_into_a_still_car_pushes_it_by_1_plus_e_times_its_speed():
    """A linear mover going right at 0.2 m / 30 frames = 0.4 m/s: at frame 10 it stands 66.666 mm right;
    a still car whose left face it overlaps by 3 mm is put out to the right and leaves at (1 + e)·0.4 m/s."""
    w = world_with(mover("linear"))
    w._world[W_FRAME] = 9  # the step makes frame 10
    left_face = 20_000 + 66_666  # the mover's right face, from the centreline
    place(w, 0, arc=3_010_000, lat=left_face + 50_000 - 3_000, h=0, vs=0, vlat=0, vh=0)
    collide(w)
    e = bounce("steel")
    speed = (66_666 - 60_000) * 60  # its offset's change over the frame, per second
    assert w._cars[0][LAT] == left_face + 50_000
    assert w._cars[0][VLAT] == (1000 + e) * speed // 1000 and w._cars[0][VS] == 0


def test_an_impact_is_fatigue_on_the_car_and_on_a_destructible_entity_which_breaks_and_lets_cars_by():
    """A destructible wood post (yield 30, ultimate 50 MPa) 0.1 × 0.1 m struck at 60 m/s (a launch's
    speed): the energy ½·m·v² ≈ 308 J on its 0.01 m² face is a stress of ≈ 31 MPa, fatigue 31/50 ≈ 0.62,
    and ≈ 51 MPa on the car's 0.1 × 0.06 m pc face, under pc's yield of 60 (no fatigue there); a second
    strike breaks the post, at the frame the step makes; then a car passes where it stood."""
    post = ObstacleSpec((-50_000, 0, -3_020_000), (50_000, 100_000, -3_000_000), "wood", destructible=True)
    w = world_with(post)
    slot = w.obstacles.obstacles[0].at
    assert w.field_names()[slot:slot + 2] == ["world.obstacle[0].fatigue_ppm", "world.obstacle[0].break_frame"]
    mass = w.models[0].mechanics(0).mass_ug
    speed = 60 * M
    place(w, 0, arc=2_925_000, lat=0, h=0, vs=speed, vlat=0, vh=0)
    collide(w)
    energy = mass * speed * speed // 2
    face = 100_000 * 100_000
    added, at_once = impact_fatigue(energy, face, (material("wood").yield_strength_kpa, material("wood").ultimate_strength_kpa))
    assert 600_000 < added < 650_000 and not at_once
    assert w._world[slot + OB_FATIGUE] == added and w._world[slot + OB_BREAK] == 0
    pc = (material("pc").yield_strength_kpa, material("pc").ultimate_strength_kpa)
    assert impact_fatigue(energy, 100_000 * 60_000, pc)[0] == 0 == w._cars[0][part_field(w.models[0].body, P_FATIGUE)]
    place(w, 0, arc=2_925_000, vs=speed)
    collide(w)
    assert w._world[slot + OB_FATIGUE] == 1_000_000 and w._world[slot + OB_BREAK] == 1
    place(w, 0, arc=3_010_000, vs=speed)
    collide(w)
    assert (w._cars[0][ARC], w._cars[0][VS]) == (3_010_000, speed)


def test_a_strike_hard_enough_breaks_the_cars_body():
    """At 300 m/s into a steel wall the body's stress passes 1.5 × its ultimate: it breaks at once."""
    w = world_with(replace(WALL, material="steel"))
    place(w, 0, arc=2_925_000, lat=0, h=0, vs=300 * M, vlat=0, vh=0)
    assert collide(w) == {0: 1 << w.models[0].body}


def test_a_ghost_passes_through():
    w = world_with(WALL)
    place(w, 0, arc=3_000_000, lat=0, h=0, vs=M, vlat=0, vh=0)
    w._cars[0][PENALTY_KIND], w._cars[0][PENALTY_TIMER] = 1, 30
    collide(w)
    assert (w._cars[0][ARC], w._cars[0][VS]) == (3_000_000, M)


def test_in_the_frame_a_car_driving_at_a_wall_stops_before_it():
    w = world_with(WALL)
    place(w, 0, arc=2_500_000, lat=0, h=0, vs=2 * M, vlat=0, vh=0)
    for _ in range(120):
        w.step({})
        assert w._cars[0][ARC] <= 2_920_000
    assert w._cars[0][ARC] > 2_700_000  # it got there


def test_destructible_slots_are_saved_and_a_state_out_of_their_range_is_refused():
    spec = replace(WALL, material="wood", destructible=True)
    w = world_with(WALL, spec, spec)
    assert w.obstacles.slots == 2 and [o.at for o in w.obstacles.obstacles][0] == -1
    assert [n for n in w.field_names() if n.startswith("world.obstacle")] == [
        "world.obstacle[0].fatigue_ppm", "world.obstacle[0].break_frame",
        "world.obstacle[1].fatigue_ppm", "world.obstacle[1].break_frame"]
    w.step({})
    again = world_with(WALL, spec, spec)
    again.load_state(w.save_state())
    assert again.state_hash() == w.state_hash()
    at = w.obstacles.obstacles[1].at
    for field, value in ((OB_FATIGUE, -1), (OB_FATIGUE, 1_000_001), (OB_FATIGUE, 1_000_000), (OB_BREAK, 2),
                         (OB_BREAK, -1)):
        bad = world_with(WALL, spec, spec)
        bad.step({})
        bad._world[at + field] = value
        with pytest.raises(SimError) as refused:
            again.load_state(bad.save_state())
        assert refused.value.code == "state-invalid" and "entity" in str(refused.value)


def test_no_destructible_no_pool():
    w = world_with(WALL)
    assert w.obstacles.slots == 0 and not any(n.startswith("world.obstacle") for n in w.field_names())


@pytest.mark.parametrize("change", [
    {"min_um": (0, 0, 1), "max_um": (0, 0, 0)}, {"material": "water"}, {"material": "dirt", "destructible": True},
    {"destructible": 1}, {"motion": MotionSpec("sin", 29, 0, (0, 0, 0))},
    {"motion": MotionSpec("jump", 60, 0, (0, 0, 0))}, {"motion": MotionSpec("sin", 60, -1, (0, 0, 0))},
    {"motion": MotionSpec("sin", 60, 0, (20_000_001, 0, 0))}, {"motion": MotionSpec("sin", 60, 0, (15_000_000, 15_000_000, 0))},
])
def test_an_entity_out_of_range_is_refused(change):
    with pytest.raises(SimError) as refused:
        straight_track(obstacles=(replace(WALL, **change),))
    assert refused.value.code == "track-invalid-obstacle"


def test_at_most_50_destructible_entities():
    breakable = replace(WALL, material="wood", destructible=True)
    straight_track(obstacles=(breakable,) * 50)
    with pytest.raises(SimError) as refused:
        straight_track(obstacles=(breakable,) * 51)
    assert refused.value.code == "track-invalid-obstacle"


def entity_track() -> bytes:
    """An open 3 m track along +X with a fixed decoration, a visual-only one, a destructible wood post and a
    mover whose local +X (its amplitude's axis) is the world's −Z, and a belt."""
    b = GlbBuilder()
    b.node("Road", mesh=b.mesh(*mesh_box((-0.5, -0.1, -0.5), (3.0, 0.0, 0.5))))
    b.node("Rock", mesh=b.mesh(*mesh_box((1.0, 0.0, 0.2), (1.1, 0.05, 0.3))),
           extras={"entity_type": "decoration", "material": "concrete"})
    b.node("Flag", mesh=b.mesh(*mesh_box((1.0, 0.0, -0.3), (1.1, 0.05, -0.2))),
           extras={"entity_type": "decoration", "material": "pe", "physics": "visual_only"})
    b.node("Post", mesh=b.mesh(*mesh_box((1.5, 0.0, -0.05), (1.55, 0.1, 0.05))),
           extras={"entity_type": "decoration", "material": "wood", "destructible": True})
    b.node("Gate", mesh=b.mesh(*mesh_box((2.0, 0.0, -0.1), (2.05, 0.1, 0.1))),
           matrix=frame_matrix((0.0, 0.0, 0.0), (0.0, 0.0, -1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)),
           extras={"entity_type": "kinematic_move", "material": "steel", "motion_curve": "linear", "period_ms": 2000,
                   "phase_offset_ms": 500, "amplitude_m": [0.25, 0, 0]})
    b.node("Belt", mesh=b.mesh(*mesh_box((0.5, -0.01, -0.3), (0.9, 0.0, 0.3))),
           extras={"entity_type": "kinematic_conveyor", "material": "pe", "conveyor_velocity_m_s": 1})
    return open_track(b)


def open_track(b: GlbBuilder) -> bytes:
    """The GLB of ``b``'s nodes on an open 2 m wide route from the origin to 2.5 m along +X."""
    b.node("RoutePoint_1", matrix=frame_matrix((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (-1.0, 0.0, 0.0)))
    b.node("RoutePoint_2", matrix=frame_matrix((2.5, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (-1.0, 0.0, 0.0)))
    return b.build({
        "type": "track", "open4wd_version": 1, "material": "asphalt", "weather": {"type": "normal"},
        "physics": {"gravity_strength_m_s2": 9.81},
        "track": {"type": "open", "route": [{"name": "RoutePoint_1", "width_m": 2}, {"name": "RoutePoint_2", "width_m": 2}]},
    })


def test_a_tracks_solid_entities_become_obstacles_and_a_mover_its_world_travel():
    """The rock, the post and the gate have physics (the flag is visual only, the belt is a belt); the
    gate's 0.25 m along its local +X is 0.25 m along the world's −Z, 2 s = 120 frames, 0.5 s = 30."""
    spec = track_spec(admit(bake(entity_track())))
    rock, post, gate = spec.obstacles
    assert (rock.material, rock.destructible, rock.motion) == ("concrete", False, None)
    assert (post.material, post.destructible) == ("wood", True)
    assert gate.motion == MotionSpec("linear", 120, 30, (0, 0, -250_000)) and len(spec.conveyors) == 1
    w = World.new(spec, [car()])
    assert w.obstacles.slots == 1 and w.obstacles.obstacles[1].at >= 0


def test_synctest_passes_with_cars_striking_fixed_moving_and_breaking_entities():
    """The circuit with a row of entities across its first straight in the cars' lanes: rollbacks of 7
    frames every frame agree; the cars do not end where the same race without the entities leaves them.
    A car drives at about 1 m/s, far too slowly to stress even silicone past its yield, so the two cars in
    the strips' lanes are launched at them at 25 m/s (0.42 m a frame: through a strip in one frame unless
    the pass is caught): both strips break, and the rollbacks cross their breaks."""
    cars = [car()] * 6
    w = World.new(replace(circuit_track(), obstacles=entity_row()), cars, seed=2)
    for slot in (1, 4):
        place(w, slot, arc=500_000, vs=25 * M)
    result = run_synctest(w, 300, 7, RandomInputs([m.chip_skills for m in w.models], 2).next_frame)
    assert result.ok and result.frames == 300
    assert all(w._world[o.at + OB_BREAK] for o in w.obstacles.obstacles if o.at >= 0)
    free = World.new(circuit_track(), cars, seed=2)
    for slot in (1, 4):
        place(free, slot, arc=500_000, vs=25 * M)
    inputs = RandomInputs([m.chip_skills for m in free.models], 2)
    for _ in range(300):
        free.step(inputs.next_frame())
    assert [c[ARC] for c in free._cars] != [c[ARC] for c in w._cars]


def entity_row() -> tuple[ObstacleSpec, ...]:
    """Entities across the circuit 1.2 m after its start line (it starts at z = −1 m along −Z, its right
    +X), in the lanes of the grid's slots 0, 1, 3 and 4 of 6 (x = −0.45, −0.27, 0.09, 0.27 m): a concrete
    block, a 1 mm silicone strip, a steel gate swinging along the route, another strip."""
    z0, z1 = -2_250_000, -2_200_000
    return (ObstacleSpec((-500_000, 0, z0), (-400_000, 80_000, z1), "concrete"),
            ObstacleSpec((-270_500, 0, z0), (-269_500, 80_000, z1), "silicone", destructible=True),
            ObstacleSpec((40_000, 0, z0), (140_000, 80_000, z1), "steel",
                         motion=MotionSpec("sin", 90, 0, (0, 0, -300_000))),
            ObstacleSpec((269_500, 0, z0), (270_500, 80_000, z1), "silicone", destructible=True))
