"""Turning track entities (spec/assets.md §5.6 ``rotation_axis`` + ``rotation_amplitude_deg``; simcore §2's
integer kinematics): the pinned integer sine, a bar's footprint turned about its pivot in the world's
sense, a whole turn once a period, the push of a turning face, the step curve's open share, the bake's
fields and refusals, and a track GLB's turning gate into the TrackSpec. Hand-computed on the straight
test track, which runs along −Z (right = +X, up = +Y)."""

from __future__ import annotations

import math

import pytest

from sim_core import World
from sim_core.assets.admission import admit
from sim_core.assets.bake import bake
from sim_core.assets.convert import track_spec
from sim_core.assets.findings import AssetRejected
from sim_core.assets.glb_build import GlbBuilder, frame_matrix
from sim_core.assets.shapes import box as mesh_box
from sim_core.errors import SimError
from sim_core.intmath import div_round, sin_cos_ppm
from sim_core.specs.obstacles import MotionSpec, ObstacleSpec
from sim_core.state.layout import ARC, BROKEN_MASK, H, PENALTY_TIMER, VS, W_FRAME

from tests.sim_core.helpers import car, place, straight_track
from tests.sim_core.step.test_obstacles import open_track
from tests.coded import raises_coded

M = 1_000_000
UP = (0, M, 0)
BAR = ((-100_000, 0, -3_010_000), (100_000, 50_000, -2_990_000))
"""A steel bar 200 mm across the road, 20 mm along it, 50 mm high, its centre at arc 3 m."""


def turner(rotation_mdeg: int = 90_000, curve: str = "linear", box=BAR, pivot=(0, 0, -3_000_000), axis=UP,
           open_milli: int = 500) -> ObstacleSpec:
    return ObstacleSpec(box[0], box[1], "steel",
                        motion=MotionSpec(curve, 60, 0, (0, 0, 0), axis, rotation_mdeg, pivot, open_milli))


def entity(spec: ObstacleSpec, cars=None) -> tuple[World, object]:
    w = World.new(straight_track(obstacles=(spec,)), cars or [car()])
    return w, w.obstacles.obstacles[0]


def near(actual: tuple[int, ...], expected: tuple[int, ...], slack: int = 3) -> bool:
    return all(abs(a - e) <= slack for a, e in zip(actual, expected, strict=True))


def test_the_ppm_sine_is_within_1_ppm_everywhere_and_exact_at_the_quarters():
    for mdeg in range(-400_000, 400_001, 997):
        s, c = sin_cos_ppm(mdeg)
        rad = math.radians(mdeg / 1000)
        assert abs(s - M * math.sin(rad)) <= 1 and abs(c - M * math.cos(rad)) <= 1
    assert [sin_cos_ppm(q * 90_000) for q in range(5)] == [(0, M), (M, 0), (0, -M), (-M, 0), (0, M)]


def test_a_bar_turned_a_quarter_about_up_lies_along_the_road_and_at_45_degrees_spans_both_ways_alike():
    """Linear over 60 frames: 0° at frame 0, 45° at 15, 90° at 30. Its half-extents along and across the
    road at θ are 10 mm·cos θ + 100 mm·sin θ and 100 mm·cos θ + 10 mm·sin θ: 77.78 mm both at 45°."""
    _, bar = entity(turner())
    assert bar.box_at(0) == (-10_000, -100_000, 0, 10_000, 100_000, 50_000, 0)
    assert near(bar.box_at(15), (-77_782, -77_782, 0, 77_782, 77_782, 50_000, 0))
    assert near(bar.box_at(30), (-100_000, -10_000, 0, 100_000, 10_000, 50_000, 0))
    assert bar.box_at(60) == bar.box_at(0)


def test_a_turn_keeps_the_world_s_right_hand_sense():
    """A block right of the pivot (+X, 50–150 mm), turned +90° about +Y (right-handed: +X goes to −Z),
    ends ahead of it along the road (the road runs along −Z)."""
    block = ((50_000, 0, -3_005_000), (150_000, 50_000, -2_995_000))
    _, turned = entity(turner(box=block))
    assert near(turned.box_at(30)[:6], (50_000, -5_000, 0, 150_000, 5_000, 50_000))
    _, back = entity(turner(box=block, axis=(0, -M, 0)))  # about −Y: it ends behind
    assert near(back.box_at(30)[:6], (-150_000, -5_000, 0, -50_000, 5_000, 50_000))


def test_a_whole_turn_goes_round_steadily_once_a_period():
    """360°: 90° at frame 15, 180° at 30 (the rest box again), 270° at 45, the rest at 60."""
    _, bar = entity(turner(rotation_mdeg=360_000))
    along = (-100_000, -10_000, 0, 100_000, 10_000, 50_000, 0)
    assert near(bar.box_at(15), along) and near(bar.box_at(45), along)
    assert near(bar.box_at(30), bar.box_at(0)) and bar.box_at(60) == bar.box_at(0)


def test_a_turning_face_pushes_a_still_car_by_1_plus_e_times_its_speed():
    """A whole turn, frame 10 (60°) after frame 9 (54°): the bar's front face moves from
    100·sin 54° + 10·cos 54° = 86.78 mm to 100·sin 60° + 10·cos 60° = 91.60 mm ahead of its centre, 4.82 mm
    in the frame, 0.289 m/s. A still car overlapping that face by 2 mm is put out ahead and leaves at
    (1 + e)·0.289 m/s (e the Average of steel's and the car's restitution)."""
    w, bar = entity(turner(rotation_mdeg=360_000))
    w._world[W_FRAME] = 9  # the step makes frame 10
    face = bar.box_at(10)[3]
    length = w.models[0].mechanics(0).contact_box.length
    place(w, 0, arc=bar.arc + face + length // 2 - 2_000, lat=0, h=0, vs=0, vlat=0, vh=0)
    boxes = [m.mechanics(c[BROKEN_MASK]).contact_box if not c[PENALTY_TIMER] else m.ghost_box
             for m, c in zip(w.models, w._cars, strict=True)]
    w.obstacles.collide(w._world, w._cars, [c[ARC : H + 1] for c in w._cars], boxes, w._frame.colliders)
    speed = (face - bar.box_at(9)[3]) * 60
    hand = (100_000 * (math.sin(math.radians(60)) - math.sin(math.radians(54)))
            + 10_000 * (math.cos(math.radians(60)) - math.cos(math.radians(54)))) * 60
    assert abs(speed - hand) <= 400  # µm/s: the integer sine's ppm
    restitution = (bar.restitution_milli + boxes[0].restitution) // 2
    assert w._cars[0][ARC] == bar.arc + face + length // 2
    assert w._cars[0][VS] == div_round((1000 + restitution) * speed, 1000) and speed > 280_000


def test_a_step_curve_is_out_for_its_open_share_of_the_period():
    """open_duration_ratio 0.25 of 60 frames: turned 90° for frames 0–14, back at rest from 15."""
    _, door = entity(turner(curve="step", open_milli=250))
    assert near(door.box_at(14), (-100_000, -10_000, 0, 100_000, 10_000, 50_000, 0))
    assert door.box_at(15) == door.box_at(59) == (-10_000, -100_000, 0, 10_000, 100_000, 50_000, 0)


@pytest.mark.parametrize("motion", [
    MotionSpec("sin", 60, 0, (0, 0, 0), UP, 500),  # under a degree
    MotionSpec("sin", 60, 0, (0, 0, 0), UP, 361_000),  # over a whole turn
    MotionSpec("sin", 60, 0, (0, 0, 0), (0, 0, 0), 90_000),  # no axis
    MotionSpec("sin", 60, 0, (0, 0, 0), (0, 2 * M, 0), 90_000),  # not a unit
    MotionSpec("sin", 60, 0, (0, 0, 0), UP, 90_000, open_milli=250),  # open share without the step curve
    MotionSpec("step", 60, 0, (0, 0, 0), UP, 90_000, open_milli=1001),
])
def test_the_spec_refuses_a_turn_out_of_range(motion):
    with pytest.raises(SimError) as refused:
        straight_track(obstacles=(ObstacleSpec(BAR[0], BAR[1], "steel", motion=motion),))
    assert refused.value.code == "track-invalid-obstacle"


def gate_track(**extras) -> bytes:
    """An open 3 m track along +X with a steel gate whose local +Y is the world's +Y and whose local +X is
    the world's −Z; its node's origin (the pivot) at (2, 0, 0.1)."""
    b = GlbBuilder()
    b.node("Road", mesh=b.mesh(*mesh_box((-0.5, -0.1, -0.5), (3.0, 0.0, 0.5))))
    b.node("Gate", mesh=b.mesh(*mesh_box((-0.1, 0.0, -0.02), (0.0, 0.1, 0.02))),
           matrix=frame_matrix((2.0, 0.0, 0.1), (0.0, 0.0, -1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)),
           extras={"entity_type": "kinematic_move", "material": "steel", "motion_curve": "linear", "period_ms": 2000,
                   **extras})
    return open_track(b)


def test_a_track_s_turning_gate_becomes_a_turning_obstacle_about_its_node_s_origin():
    """``rotation_axis`` [1, 0, 0] local is the world's −Z; 90° as 90 000 mdeg; the pivot the node's origin."""
    spec = track_spec(admit(bake(gate_track(rotation_axis=[1, 0, 0], rotation_amplitude_deg=90))))
    (gate,) = spec.obstacles
    assert gate.motion == MotionSpec("linear", 120, 0, (0, 0, 0), (0, 0, -M), 90_000, (2 * M, 0, 100_000))
    assert World.new(spec, [car()]).obstacles.obstacles[0].moves


@pytest.mark.parametrize("extras", [
    {"rotation_axis": [0, 1, 0]},  # without its amplitude
    {"rotation_amplitude_deg": 90},  # without its axis
    {"rotation_axis": [0, 0, 0], "rotation_amplitude_deg": 90},
    {"rotation_axis": [0, 1, 0], "rotation_amplitude_deg": 400},
    {"rotation_axis": [0, 1, 0], "rotation_amplitude_deg": 90, "open_duration_ratio": 0.5},  # linear, not step
])
def test_the_bake_refuses_a_turn_it_cannot_carry(extras):
    with raises_coded(AssetRejected, "entity-invalid") as refused:
        bake(gate_track(**extras))
    assert [finding.code for finding in refused.value.findings] == ["entity-invalid"]


def test_a_pose_is_the_same_whether_its_boxes_were_kept_or_not():
    """The last two frames' boxes are kept (a frame's "before" is the previous frame's "now"); going back
    (a rollback) or jumping ahead gives what a fresh entity gives."""
    _, kept = entity(turner(rotation_mdeg=360_000))
    for frame in (5, 6, 7, 3, 40, 41, 6):
        _, fresh = entity(turner(rotation_mdeg=360_000))
        assert _fields(kept.pose(frame)) == _fields(fresh.pose(frame))


def _fields(pose):
    return (pose.lows, pose.highs, pose.low_before, pose.high_before, pose.low_velocities, pose.high_velocities,
            pose.travel, pose.travel_before)
