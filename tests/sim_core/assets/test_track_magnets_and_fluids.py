"""A track's magnet sources and fluid zones from its GLB (spec/assets.md §5.5–5.6): node-level strengths on
magnet_floor mesh nodes, their area-weighted centre and pole, the coded refusals and warnings, the baked
``auto_magnet_sources`` and the way into ``TrackSpec``; fluid nodes as sensor boxes, not colliders;
conveyor entities as belts; and the built-in cars' steel and magnet."""

from __future__ import annotations

from decimal import Decimal as D
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim_core.assets.admission import admit
from sim_core.assets.bake import bake
from sim_core.assets.builtins import admitted_builtin
from sim_core.assets.convert import track_spec, vehicle_spec
from sim_core.assets.demo_round import archetype_loadout
from sim_core.assets.findings import AssetRejected, Findings
from sim_core.assets.glb_build import GlbBuilder, frame_matrix
from sim_core.assets.loadout import assemble
from sim_core.assets.manifest import build_manifest
from sim_core.assets.reader import read_glb
from sim_core.assets.shapes import box
from sim_core.assets.surface import vertical_gap
from sim_core.specs.route import route_for
from sim_core.specs.conveyors import ConveyorSpec
from sim_core.specs.fluids import FluidZone
from sim_core.specs.magnets import MagnetPole, MagnetSource, SteelPoint

IDENTITY = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
PLATE = (np.array([(2.0, 0.01, 0.0), (2.0, 0.01, 0.2), (2.4, 0.01, 0.2), (2.4, 0.01, 0.0)]),
         np.array([(0, 1, 2), (0, 2, 3)]))  # one-sided, facing +Y


def track(tile: dict[str, Any] | None = None, plate: dict[str, Any] | None = None, root: dict[str, Any] | None = None,
          puddle: str | None = None, belt_speed: float | None = None) -> bytes:
    """An open 3 m track on a road slab, with a magnet_floor box tile (closed) and a one-sided plate
    carrying the given node extras, and a flat puddle of the fluid ``puddle``."""
    b = GlbBuilder()
    b.node("Road", mesh=b.mesh(*box((-0.5, -0.1, -0.5), (3.0, 0.0, 0.5))))
    if tile is not None:
        b.node("Magnet_Tile", mesh=b.mesh(*box((1.0, -0.02, 0.0), (1.2, 0.0, 0.2))), extras=tile)
    if plate is not None:
        b.node("Magnet_Plate", mesh=b.mesh(*PLATE), extras=plate)
    if puddle is not None:
        b.node("Puddle", mesh=b.mesh(PLATE[0] - (1.0, 0.0, 0.0), PLATE[1]), extras={"material": puddle})
    if belt_speed is not None:
        b.node("Belt", mesh=b.mesh(*box((0.5, -0.01, -0.3), (0.9, 0.0, 0.3))),
               extras={"entity_type": "kinematic_conveyor", "material": "pe", "conveyor_velocity_m_s": belt_speed})
    b.node("RoutePoint_1", matrix=frame_matrix((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (-1.0, 0.0, 0.0)))
    b.node("RoutePoint_2", matrix=frame_matrix((2.5, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (-1.0, 0.0, 0.0)))
    return b.build({
        "type": "track", "open4wd_version": 1, "material": "asphalt", "weather": {"type": "normal"},
        "physics": {"gravity_strength_m_s2": 9.81}, **(root or {}),
        "track": {"type": "open", "route": [{"name": "RoutePoint_1", "width_m": 2}, {"name": "RoutePoint_2", "width_m": 2}]},
    })


def analysed(data: bytes) -> tuple[dict[str, Any] | None, Findings]:
    findings = Findings()
    return build_manifest(read_glb(data), findings, deprecated=frozenset(), for_new_product=True), findings


def test_a_closed_tile_and_a_plate_become_sources_with_their_centres_and_poles():
    manifest, findings = analysed(track({"material": "magnet_floor", "magnet_source_strength_n": 2.5},
                                        {"material": "magnet_floor", "magnet_source_strength_n": 10}))
    assert manifest is not None, findings.codes()
    tile, plate = manifest["magnets"]
    # the box's faces cancel: the node's +Z is the pole (the spec's fallback)
    # the tile 1 cm under the road's top (its centre: −1 cm), the plate 1 cm over it
    assert tile == {"node": "Magnet_Tile", "source_node_index": 1, "position_um": [1_100_000, -10_000, 100_000],
                    "strength_mn": 2500, "n_pole_ppm": [0, 0, 1_000_000], "surface_gap_um": -10_000}
    assert plate == {"node": "Magnet_Plate", "source_node_index": 2, "position_um": [2_200_000, 10_000, 100_000],
                     "strength_mn": 10_000, "n_pole_ppm": [0, 1_000_000, 0], "surface_gap_um": 10_000}


def test_a_strength_of_zero_declares_nothing_and_none_is_needed():
    manifest, _ = analysed(track({"material": "magnet_floor", "magnet_source_strength_n": 0}, {"material": "magnet_floor"}))
    assert manifest is not None and manifest["magnets"] == []


def test_declarations_are_refused_or_reported_with_codes():
    _, findings = analysed(track({"material": "asphalt", "magnet_source_strength_n": 2}))
    assert findings.codes() == ["magnet-source-invalid"]
    _, findings = analysed(track({"material": "magnet_floor", "magnet_source_strength_n": 11}))
    assert findings.codes() == ["field-invalid"] and "magnet_source_strength_n" in findings.items[0].message
    manifest, findings = analysed(track({"material": "magnet_floor"}, root={"magnet_source_strength_n": 5}))
    assert manifest is not None and manifest["magnets"] == [] and findings.codes() == ["magnet-strength-ignored"]
    moving = {"material": "magnet_floor", "magnet_source_strength_n": 5, "entity_type": "kinematic_move",
              "motion_curve": "sin", "period_ms": 2000, "amplitude_m": [0, 0.1, 0]}
    manifest, findings = analysed(track(moving))
    assert manifest is not None and manifest["magnets"] == [] and findings.codes() == ["magnet-source-moving"]


def test_the_bake_writes_auto_magnet_sources_and_the_track_spec_carries_them():
    baked = bake(track(plate={"material": "magnet_floor", "magnet_source_strength_n": 1.25}))
    auto = read_glb(baked).root_extras["auto_magnet_sources"]
    assert auto == [{"node": "Magnet_Plate", "pos": [D("2.2"), D("0.01"), D("0.1")], "strength_n": D("1.25"),
                     "n_pole": [0, 1, 0]}]  # the reader's exact decimals
    spec = track_spec(admit(baked))
    assert spec.magnets == (MagnetSource((2_200_000, 10_000, 100_000), 1250, (0, 1_000_000, 0), 10_000),)


def test_a_fluid_node_is_a_sensor_box_that_reaches_the_track_spec():
    manifest, findings = analysed(track(puddle="oil"))
    assert manifest is not None, findings.codes()
    assert manifest["fluids"] == [{"node": "Puddle", "source_node_index": 1, "material": "oil",
                                   "min_um": [1_000_000, 10_000, 0], "max_um": [1_400_000, 10_000, 200_000],
                                   "surface_gap_um": 10_000}]
    assert [s["node"] for s in manifest["solids"]] == ["Road"]  # not a collider
    spec = track_spec(admit(bake(track(puddle="lava"))))
    assert spec.fluids == (FluidZone((1_000_000, 10_000, 0), (1_400_000, 10_000, 200_000), "lava", 10_000),)


def test_a_conveyor_entity_becomes_a_belt_of_the_track_spec():
    manifest, findings = analysed(track(belt_speed=-2.5))
    assert manifest is not None, findings.codes()
    entity, = manifest["entities"]
    assert (entity["min_um"], entity["max_um"]) == ([500_000, -10_000, -300_000], [900_000, 0, 300_000])
    spec = track_spec(admit(bake(track(belt_speed=-2.5))))
    assert spec.conveyors == (ConveyorSpec((500_000, -10_000, -300_000), (900_000, 0, 300_000), (0, 0, -1_000_000),
                                           -2_500_000, "pe"),)


def test_the_gap_is_exact_over_a_slope_and_none_over_nothing():
    """A triangle rising 1 m over 2 m in x: at x = 0.5 m its height is 0.25 m; a point 0.1 m above that is
    0.1 m over it; the nearest of two crossed surfaces counts; beside every triangle there is no gap."""
    slope = (np.array([(0, 0, 0), (2_000_000, 1_000_000, 0), (0, 0, 2_000_000)], dtype=np.int64), np.array([(0, 1, 2)]))
    roof = (np.array([(0, 900_000, 0), (2_000_000, 900_000, 0), (0, 900_000, 2_000_000)], dtype=np.int64),
            np.array([(0, 1, 2)]))
    assert vertical_gap([slope], (500_000, 350_000, 500_000)) == 100_000
    assert vertical_gap([slope, roof], (500_000, 800_000, 500_000)) == -100_000  # the roof is nearer
    assert vertical_gap([slope], (1_500_000, 0, 1_500_000)) is None  # outside the triangle's (x, z)


def test_a_feature_sits_on_the_ribbon_at_its_gap():
    """Track-03's ribbon sags below its mesh between route points: the oil slick (1 mm over the dirt) and the
    magnet plate (1 cm under it) are seated at those heights over the ribbon."""
    track = track_spec(admitted_builtin("builtin:track-03"))
    route = route_for(track)
    (slick,), (plate,) = track.fluids, track.magnets
    for position, gap in ((((0, 1000, -4_000_000)), slick.surface_gap_um), (plate.position_um, plate.surface_gap_um)):
        arc, lateral, height = route.project(route.seated(position, gap))
        assert abs(height - gap) <= 1 and route.project(position)[2] != gap  # the mesh and the ribbon differ here


def test_the_builtin_heavy_car_carries_a_magnet_and_steel_and_control_its_steel_darts():
    """Offsets from the assembled car's centre in the car's frame (x right, y up, z back)."""
    def spec(n):
        findings, car = assemble(archetype_loadout(n), admitted_builtin)
        assert car is not None, findings
        return vehicle_spec(car, f"archetype-{n}")

    speed, heavy, control = spec(1), spec(2), spec(3)
    assert all(not p.steel for p in speed.parts) and speed.weapon.magnet is None
    steel = {p.part_type: p.steel for p in heavy.parts if p.steel}
    assert steel == {"chassis": (SteelPoint((0, -8500, -40125), 1000),),  # the ballast
                     "weapon": (SteelPoint((0, 6500, -75125), 1000),)}  # the magnet's own core
    assert heavy.weapon.magnet == MagnetPole((0, 6500, -75125), (0, 0, -1_000_000))  # the core, pole to the front
    darts = next(p.steel for p in control.parts if p.part_type == "weapon")
    assert [d.offset_um[0] for d in darts] == [-6000, 0, 6000] and control.weapon.magnet is None


JSON_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=False, allow_infinity=False),
                       st.text(max_size=6), st.lists(st.integers(-5, 5), max_size=4))
MATERIALS = st.sampled_from(["magnet_floor", "asphalt", "oil", "lava", "acid", "steel", "nonsense", 3])


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["material", "magnet_source_strength_n", "entity_type", "conveyor_velocity_m_s",
                                        "motion_curve", "period_ms", "physics"]), JSON_VALUE | MATERIALS, max_size=5),
       st.one_of(st.none(), JSON_VALUE))
def test_any_declaration_on_a_track_node_ends_in_findings(extras, root_strength):
    """Whatever a tile's and the root's extras hold, the track's analysis answers with findings (refusals
    with codes) or a manifest, never anything else."""
    root = {} if root_strength is None else {"magnet_source_strength_n": root_strength}
    try:
        manifest, findings = analysed(track(extras, root=root))
    except AssetRejected as exc:  # the reader's own refusal (a number beyond any glTF field): coded too
        assert exc.findings
        return
    assert manifest is not None or findings.rejected
