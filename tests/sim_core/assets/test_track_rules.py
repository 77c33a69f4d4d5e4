"""Track rules (spec/assets.md §5, §9.3): each rejection code triggered by a crafted GLB."""

from __future__ import annotations

from typing import Any

import pytest

from sim_core.assets.findings import Findings
from sim_core.assets.manifest import build_manifest
from sim_core.assets.reader import read_glb
from tests.sim_core.assets.crafting import drop_root, edit, move_node, node, root, set_root, source


def codes(data: bytes) -> list[str]:
    findings = Findings()
    build_manifest(read_glb(data), findings, deprecated=frozenset(), for_new_product=True)
    return sorted(set(f.code for f in findings.errors))


def manifest(data: bytes) -> dict[str, Any]:
    findings = Findings()
    result = build_manifest(read_glb(data), findings, deprecated=frozenset(), for_new_product=True)
    assert result is not None, findings.codes()
    return result


def track_edit(stem: str, change: Any) -> bytes:
    return edit(source(stem), change)


def in_track(**values: Any) -> Any:
    def change(doc: dict) -> None:
        root(doc)["track"].update(values)

    return change


def test_builtin_tracks_have_their_shapes() -> None:
    open_ = manifest(source("track-01"))
    assert (open_["track_type"], open_["lap_mode"], len(open_["route"]), open_["player_max"]) == ("open", "linear", 2, 8)
    loop = manifest(source("track-02"))
    assert (loop["track_type"], loop["lap_mode"], loop["player_max"]) == ("fixed", "loop", 8)
    assert len(loop["checkpoints"]) == 6 and len(loop["kill_zones"]) == 2 and len(loop["respawn_points"]) == 2
    linear = manifest(source("track-03"))
    assert (linear["track_type"], linear["lap_mode"]) == ("fixed", "linear")
    heights = [p["position_um"][1] for p in linear["route"]]
    assert max(heights) > 1_000_000 and heights[0] == heights[-1] == 0  # climbs, jumps, comes back down
    assert linear["weather"]["type"] == "rain" and linear["weather"]["patch"]["lifetime_frames"] == 2700
    assert linear["gravity"] == {"direction_ppm": [0, -1_000_000, 0], "strength_um_s2": 9_810_000}


def test_route_count() -> None:
    def third_point(doc: dict) -> None:
        doc["nodes"].append({"name": "RoutePoint_3", "translation": [0, 0, 0]})
        doc["scenes"][0]["nodes"].append(len(doc["nodes"]) - 1)
        root(doc)["track"]["route"].append({"name": "RoutePoint_3", "width_m": 4})

    assert codes(track_edit("track-01", third_point)) == ["route-count-invalid"]


def test_route_width_and_spacing() -> None:
    def zero_width(doc: dict) -> None:
        root(doc)["track"]["route"][0]["width_m"] = 0

    assert codes(track_edit("track-02", zero_width)) == ["route-width-invalid"]
    assert codes(track_edit("track-03", move_node("RoutePoint_2", 0.0, 0.0, -0.05))) == ["route-spacing-invalid"]


def test_route_arrays_match_empties_one_to_one() -> None:
    def unlisted(doc: dict) -> None:
        root(doc)["track"]["route"].pop(3)

    def missing(doc: dict) -> None:
        root(doc)["track"]["route"][2]["name"] = "RoutePoint_99"

    def orphan_checkpoint(doc: dict) -> None:
        root(doc)["track"]["checkpoints"].pop()

    assert codes(track_edit("track-03", unlisted)) == ["route-empty-mismatch"]
    assert codes(track_edit("track-03", missing)) == ["route-empty-mismatch"]
    assert codes(track_edit("track-03", orphan_checkpoint)) == ["route-empty-mismatch"]


def test_bad_empty_names() -> None:
    def rename(doc: dict) -> None:
        node(doc, "KillZone_1")["name"] = "KillZone_one"

    assert codes(track_edit("track-03", rename)) == ["empty-name-invalid"]


def test_boxes_inside_track_and_checkpoint_scale() -> None:
    assert codes(track_edit("track-03", move_node("KillZone_1", 0.0, -20.0, -28.5))) == ["box-outside-track"]

    def thin(doc: dict) -> None:
        n = node(doc, "Checkpoint_1")
        n["matrix"][10] = 0.5  # travel depth 0.5 m < 1 m

    def huge(doc: dict) -> None:
        n = node(doc, "Checkpoint_1")
        n["matrix"][0] = -20.0  # 20 m wide on a 30 m track

    assert codes(track_edit("track-03", thin)) == ["checkpoint-scale-invalid"]
    assert "checkpoint-scale-invalid" in codes(track_edit("track-03", huge))


def test_player_capacity() -> None:
    def narrow(doc: dict) -> None:
        root(doc)["track"]["route"][0]["width_m"] = 0.35

    assert codes(track_edit("track-01", narrow)) == ["player-capacity-invalid"]


def test_lap_mode_override_rules() -> None:
    assert codes(track_edit("track-01", in_track(lap_mode="loop"))) == ["field-invalid"]
    assert manifest(track_edit("track-02", in_track(lap_mode="linear")))["lap_mode"] == "linear"  # fixed, ≥ 3 points


def test_gravity_and_weather_ranges() -> None:
    def physics(**values: Any) -> Any:
        def change(doc: dict) -> None:
            root(doc)["physics"].update(values)

        return change

    def weather(**values: Any) -> Any:
        def change(doc: dict) -> None:
            root(doc)["weather"].update(values)

        return change

    assert codes(track_edit("track-01", physics(gravity_direction=[0, 0, 0]))) == ["gravity-invalid"]
    assert codes(track_edit("track-01", physics(gravity_strength_m_s2=30))) == ["field-invalid"]
    assert codes(track_edit("track-01", weather(temperature=10))) == ["weather-invalid"]  # snow is −30…2 °C
    assert codes(track_edit("track-02", weather(patch={"radius_m": 0.5}))) == ["weather-invalid"]  # normal weather has no patches
    assert codes(track_edit("track-03", weather(patch={"lifetime_ms": 1000}))) == ["weather-invalid"]
    assert codes(track_edit("track-03", weather(type="hail"))) == ["field-invalid"]


def test_required_blocks() -> None:
    assert codes(track_edit("track-01", drop_root("weather"))) == ["missing-required-field"]
    assert codes(track_edit("track-01", drop_root("track"))) == ["missing-required-field"]


def test_track_aabb_limit() -> None:
    def stretch(doc: dict) -> None:
        node(doc, "Snowfield")["scale"] = [10, 1, 1]  # 600 m wide

    assert "track-aabb-out-of-range" in codes(track_edit("track-01", stretch))


def test_vehicle_only_materials_are_fine_but_unknown_ones_are_not() -> None:
    assert codes(track_edit("track-01", set_root(material="lava_rock"))) == ["material-not-allowed"]


def test_entities() -> None:
    def entity(**extras: Any) -> Any:
        def change(doc: dict) -> None:
            node(doc, "Marshal_Tower")["extras"] = extras
            root(doc)["materials"] = [m for m in root(doc)["materials"] if m["mesh_node"] != "Marshal_Tower"]

        return change

    ok = manifest(
        track_edit(
            "track-03",
            entity(entity_type="kinematic_move", material="wood", motion_curve="sin", period_ms=2000, amplitude_m=[0, 1, 0]),
        )
    )
    assert ok["entities"][0]["period_frames"] == 120 and ok["entities"][0]["amplitude_um"] == [0, 1_000_000, 0]
    assert codes(track_edit("track-03", entity(entity_type="trampoline", material="wood"))) == ["entity-invalid"]
    assert codes(
        track_edit("track-03", entity(entity_type="decoration", material="wood", physics="visual_only", destructible=True))
    ) == ["entity-invalid"]
    assert codes(
        track_edit("track-03", entity(entity_type="kinematic_move", material="wood", motion_curve="sin", period_ms=100))
    ) == ["entity-invalid"]
    assert codes(track_edit("track-03", entity(entity_type="kinematic_conveyor", material="wood", conveyor_velocity_m_s=12))) == [
        "entity-invalid"
    ]
    assert codes(track_edit("track-03", entity(entity_type="decoration"))) == ["entity-invalid"]  # no node-level material


@pytest.mark.parametrize("stem", ["track-01", "track-02", "track-03"])
def test_start_grid_fits_eight(stem: str) -> None:
    assert manifest(source(stem))["player_max"] == 8


def test_solid_region_budget() -> None:
    from sim_core.assets.glb_build import GlbBuilder
    from sim_core.assets.shapes import box

    b = GlbBuilder()
    mesh = b.mesh(*box((0.0, -1.0, 0.0), (0.5, 0.0, 0.5)))
    for i in range(257):
        b.node(f"Tile_{i}", mesh=mesh)
    from sim_core.assets.glb_build import frame_matrix

    b.node("RoutePoint_1", matrix=frame_matrix((0.1, 0.0, 0.4), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))
    b.node("RoutePoint_2", matrix=frame_matrix((0.1, 0.0, 0.1), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))
    data = b.build(
        {
            "type": "track",
            "open4wd_version": 1,
            "material": "asphalt",
            "weather": {"type": "normal"},
            "physics": {"gravity_strength_m_s2": 9.81},
            "track": {"type": "open", "route": [{"name": "RoutePoint_1", "width_m": 2}, {"name": "RoutePoint_2", "width_m": 2}]},
        }
    )
    assert codes(data) == ["track-budget"]


def test_warnings_do_not_refuse() -> None:
    def narrow(doc: dict) -> None:
        root(doc)["track"]["route"][0]["width_m"] = 1.0

    def no_respawn(doc: dict) -> None:
        node(doc, "RespawnPoint_1")["name"] = "Marshal_Flag"

    findings = Findings()
    assert build_manifest(read_glb(track_edit("track-03",
                                              narrow)), findings, deprecated=frozenset(), for_new_product=True) is not None
    assert findings.codes() == ["start-grid-narrow"]
    findings = Findings()
    assert build_manifest(read_glb(track_edit("track-03",
                                              no_respawn)), findings, deprecated=frozenset(), for_new_product=True) is not None
    assert findings.codes() == ["killzone-without-respawn"]


def test_route_and_respawn_frames_must_be_rigid() -> None:
    def shear(doc: dict) -> None:
        node(doc, "RoutePoint_3")["matrix"][4:7] = [0.0, 1.0, 0.5]  # +Y leans into −Z

    def flatten(doc: dict) -> None:
        node(doc, "RespawnPoint_1")["matrix"][4:7] = [0.0, 0.0, 0.0]  # zero-length up axis

    assert codes(track_edit("track-03", shear)) == ["route-frame-invalid"]
    assert codes(track_edit("track-03", flatten)) == ["route-frame-invalid"]


def test_kill_zone_needs_a_size() -> None:
    def flat(doc: dict) -> None:
        node(doc, "KillZone_1")["matrix"][4:7] = [0.0, 0.0, 0.0]

    assert codes(track_edit("track-03", flat)) == ["killzone-scale-invalid"]


def test_route_points_snap_to_the_surface_within_5_mm() -> None:
    assert codes(track_edit("track-03", move_node("RoutePoint_2", 0.0, 0.004, -8.0))) == []
    assert codes(track_edit("track-03", move_node("RoutePoint_2", 0.0, 0.006, -8.0))) == ["routepoint-off-surface"]
    assert codes(track_edit("track-03",
                            move_node("RoutePoint_2", 0.95, 0.0, -8.0))) == ["routepoint-off-surface"]  # past the road edge


def test_surface_distance_is_exact_near_edges_and_faces() -> None:
    import numpy as np

    from sim_core.assets.surface import SurfaceIndex

    vertices = np.array([[0, 0, 0], [1_000_000, 0, 0], [0, 0, 1_000_000]], dtype=np.int64)
    surface = SurfaceIndex(vertices, np.array([[0, 1, 2]]))
    assert surface.within((300_000, 5_000, 300_000), 5_000)  # above the face
    assert not surface.within((300_000, 5_001, 300_000), 5_000)
    assert surface.within((-3_000, 4_000, 500_000), 5_000)  # beside an edge: 3-4-5
    assert not surface.within((-3_000, 4_001, 500_000), 5_000)
    assert not SurfaceIndex(vertices, np.zeros((0, 3), dtype=np.int64)).within((0, 0, 0), 5_000)


def test_route_length_is_capped_before_any_per_point_work() -> None:
    def long_route(doc: dict) -> None:
        root(doc)["track"]["route"] = [{"name": "RoutePoint_1", "width_m": 2}] * 513

    assert "route-count-invalid" in codes(track_edit("track-02", long_route))
