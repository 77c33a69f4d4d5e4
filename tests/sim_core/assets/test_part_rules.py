"""Part rules (spec/assets.md §9.2): each rejection code triggered by a crafted GLB."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from sim_core.assets import part as part_module
from sim_core.assets.findings import Findings
from sim_core.assets.glb_build import GlbBuilder, frame_matrix, translation_matrix
from sim_core.assets.manifest import build_manifest
from sim_core.assets.reader import read_glb
from sim_core.assets.shapes import box, combine
from tests.sim_core.assets.crafting import box_part, drop_root, edit, move_node, node, root, set_root, source, spinner_source


SLOTS = [{"skill": "boost", "allocation_pct": 10}]  # pygltflib drops empty lists from extras


def findings_for(data: bytes, deprecated: frozenset[str] = frozenset(), new: bool = True) -> Findings:
    findings = Findings()
    build_manifest(read_glb(data), findings, deprecated=deprecated, for_new_product=new, allow_missing_version=False)
    return findings


def codes(data: bytes, **kw: Any) -> list[str]:
    return sorted(set(findings_for(data, **kw).codes()))


@pytest.mark.parametrize(
    "stem", [f"{t}-0{n}" for t in ("chassis", "body", "tire", "motor", "battery", "roller", "chip", "weapon") for n in (1, 2, 3)]
)
def test_every_builtin_source_passes(stem: str) -> None:
    findings = findings_for(source(stem))
    assert not findings.rejected, findings.codes()


@pytest.mark.parametrize(
    "change, message",
    [
        (drop_root("open4wd_version"), "no open4wd_version"),
        (set_root(open4wd_version=2), "is 2"),
        (set_root(open4wd_version=True), "True"),
        (set_root(type="spoiler"), "not one of"),
    ],
)
def test_schema_marker(change: Any, message: str) -> None:
    findings = findings_for(edit(source("chip-01"), change))
    assert findings.codes() == ["schema-marker-invalid"]
    assert message in findings.items[0].message


def test_missing_and_invalid_fields() -> None:
    assert codes(edit(source("motor-01"), drop_root("torque_ratio"))) == ["missing-required-field"]
    assert codes(edit(source("motor-01"), set_root(torque_ratio=101))) == ["field-invalid"]
    assert codes(edit(source("motor-01"), set_root(torque_ratio="fast"))) == ["field-invalid"]
    assert codes(edit(source("chip-01"), drop_root("material"))) == ["missing-required-field"]
    assert codes(edit(source("weapon-01"), drop_root("passive"))) == ["missing-required-field"]


def test_part_aabb_range() -> None:
    assert codes(box_part("chip", "pc", (30, 0.5, 20), "Mount_Chip", skill_slots=SLOTS)) == ["part-aabb-out-of-range"]
    assert codes(box_part("chip", "pc", (1200, 10, 20), "Mount_Chip", skill_slots=SLOTS)) == ["part-aabb-out-of-range"]


def test_geometry_budget() -> None:
    b = GlbBuilder()
    for i in range(33):
        b.node(f"Block_{i}", mesh=b.mesh(*box((i * 0.002, 0.0, 0.0), (i * 0.002 + 0.001, 0.001, 0.001))))
    b.node("Mount_Chip", matrix=translation_matrix(0.0, 0.0, 0.0))
    assert "part-geometry-budget" in codes(
        b.build({"open4wd_version": 1, "type": "chip", "material": "pc", "skill_slots": SLOTS})
    )


def _part_from(shape: Any, kind: str = "chip", **fields: Any) -> bytes:
    b = GlbBuilder()
    b.node("Block", mesh=b.mesh(*shape))
    b.node("Mount_Chip", matrix=translation_matrix(0.0, 0.0, 0.0))
    return b.build({"open4wd_version": 1, "type": kind, "material": "pc", "skill_slots": SLOTS, **fields})


def test_degenerate_triangle() -> None:
    v, t = box((0.0, 0.0, 0.0), (0.02, 0.01, 0.02))
    sliver = combine((v, t), box((0.03, 0.0, 0.0), (0.035, 0.001, 0.000001)))  # 1 µm thick: side faces of 5e-9 m²
    assert "degenerate-triangle" in codes(_part_from(sliver))


def test_open_and_inverted_meshes() -> None:
    v, t = box((0.0, 0.0, 0.0), (0.02, 0.01, 0.02))
    assert codes(_part_from((v, t[:-1]))) == ["mesh-not-watertight"]
    assert codes(_part_from((v, t[:, ::-1]))) == ["mesh-volume-invalid"]


def test_density_ratio_exceeded() -> None:
    """No vehicle-legal pair of the shipped table exceeds 50:1, so one material is made lighter here."""
    b = GlbBuilder()
    b.node("Light", mesh=b.mesh(*box((0.0, 0.0, 0.0), (0.02, 0.01, 0.02))))
    b.node("Heavy", mesh=b.mesh(*box((0.03, 0.0, 0.0), (0.04, 0.01, 0.02))))
    b.node("Mount_Chip", matrix=translation_matrix(0.0, 0.0, 0.0))
    data = b.build(
        {
            "open4wd_version": 1,
            "type": "chip",
            "material": "copper",
            "skill_slots": SLOTS,
            "materials": [{"mesh_node": "Light", "material": "pe"}],
        }
    )
    findings = Findings()
    solids, _ = part_module._measure(read_glb(data), "chip", findings, frozenset(), True)
    part_module._check_densities(solids, findings)
    assert findings.codes() == []  # copper / pe = 8.4
    lighter = tuple(replace(s, material=replace(s.material, density_kg_m3=100)) if s.material.id == "pe" else s for s in solids)
    part_module._check_densities(lighter, findings)
    assert findings.codes() == ["density-ratio-exceeded"]


def test_material_scope_and_deprecation() -> None:
    assert codes(edit(source("chip-01"), set_root(material="unobtainium"))) == ["material-not-allowed"]
    assert codes(edit(source("chip-01"), set_root(material="asphalt"))) == ["material-not-allowed"]  # environment only
    assert codes(edit(source("chip-01"), set_root(material="oil"))) == ["material-not-allowed"]  # fluid off a weapon
    assert codes(edit(source("weapon-01"), set_root(material="oil"))) == []  # fluids are allowed on weapons
    deprecated = frozenset({"glass_fiber"})
    assert codes(source("chip-01"), deprecated=deprecated) == ["material-not-allowed"]  # new product
    assert codes(source("chip-01"), deprecated=deprecated, new=False) == []  # already published: stays playable


def test_material_double_declared() -> None:
    def listed_twice(doc: dict) -> None:
        root(doc)["materials"] = [{"mesh_node": "Chip_Board", "material": "pc"}, {"mesh_node": "Chip_Board", "material": "abs"}]

    def node_and_list(doc: dict) -> None:
        root(doc)["materials"] = [{"mesh_node": "Chip_Board", "material": "pc"}]
        node(doc, "Chip_Board")["extras"] = {"material": "abs"}

    assert codes(edit(source("chip-01"), listed_twice)) == ["material-double-declared"]
    assert codes(edit(source("chip-01"), node_and_list)) == ["material-double-declared"]


def test_mount_whitelist() -> None:
    def rename(old: str, new: str) -> Any:
        def change(doc: dict) -> None:
            node(doc, old)["name"] = new

        return change

    assert codes(edit(source("chip-01"), rename("Mount_Chip", "Mount_Motor"))) == ["mount-whitelist"]
    assert codes(edit(source("chassis-01"), rename("Mount_Weapon", "Spare"))) == ["mount-whitelist"]
    assert codes(edit(source("chassis-01"), rename("Mount_Roller_CL", "Mount_Roller_XX"))) == ["mount-whitelist"]

    def scaled(doc: dict) -> None:
        n = node(doc, "Mount_Chip")
        n.pop("matrix", None)
        n["scale"] = [2, 2, 2]

    assert codes(edit(source("chip-01"), scaled)) == ["mount-whitelist"]


def test_chassis_mount_checks() -> None:
    assert codes(edit(source("chassis-01"), move_node("Mount_Chip", 0.0, 0.05, 0.0))) == ["mount-aabb-reject"]
    assert codes(edit(source("chassis-01"), move_node("Mount_Chip", 0.0, 0.006, 0.009))) == [
        "mount-gap-reject"
    ]  # 1 mm from Mount_Battery

    def tilted(doc: dict) -> None:  # hinge axis +X turned 70° upwards
        n = node(doc, "Mount_Roller_CL")
        n["matrix"] = [0.342, 0.94, 0.0, 0.0, -0.94, 0.342, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, -0.044, 0.003, 0.0, 1.0]

    assert codes(edit(source("chassis-01"), tilted)) == ["hinge-axis-reject"]


def test_mirrored_empty() -> None:
    def mirror(doc: dict) -> None:
        n = node(doc, "Mount_Chip")
        n.pop("matrix", None)
        n["scale"] = [-1, 1, 1]

    assert "empty-mirrored" in codes(edit(source("chip-01"), mirror))


def test_interface_deviation_fields() -> None:
    assert codes(edit(source("chip-01"), set_root(auto_feature_deviations=[{"feature": "Mount_Chip"}]))) == [
        "interface-deviation-exceed"
    ]
    assert codes(edit(source("chip-01"), set_root(auto_feature_deviations="none"))) == ["interface-measurement-invalid"]


def test_battery_output_rule() -> None:
    assert codes(edit(source("battery-01"), set_root(configured_output_w=1009))) == [
        "battery-output-exceeds-volume"
    ]  # 12.6 cm³ → 1008 W
    assert codes(edit(source("battery-01"), set_root(configured_output_w=1008))) == []
    assert codes(edit(source("battery-01"), set_root(configured_output_w=0))) == ["battery-output-exceeds-volume"]
    assert codes(edit(source("battery-01"), set_root(configured_output_w=Decimal("1.0005")))) == [
        "field-invalid"
    ]  # finer than 1 mW
    rule = findings_for(edit(source("battery-01"), set_root(configured_output_w=5000))).items[0].rule
    assert rule == "PART-R-001"


@pytest.mark.parametrize(
    "slots",
    [
        [{"skill": "boost", "allocation_pct": 60}, {"skill": "brake", "allocation_pct": 50}],  # sum > 100
        [{"skill": "boost", "allocation_pct": 10}, {"skill": "boost", "allocation_pct": 10}],  # duplicate
        [{"skill": "boost", "allocation_pct": 0}],
        [{"skill": "boost", "allocation_pct": Decimal("10.5")}],
        [{"skill": "teleport", "allocation_pct": 10}],
        [{"skill": s, "allocation_pct": 10} for s in ("boost", "brake", "jump", "slam")],  # 4 slots on a 3-slot chip
        "boost",
    ],
)
def test_chip_allocation(slots: Any) -> None:
    findings = findings_for(edit(source("chip-01"), set_root(skill_slots=slots)))
    assert findings.codes() == ["chip-allocation-invalid"]
    assert findings.items[0].rule == "PHYS-R-001"


def test_chip_slot_count_follows_integer_volume() -> None:
    from sim_core.assets.part import chip_slot_count

    assert [chip_slot_count(v) for v in (0, 1_499_999_999_999, 1_500_000_000_000, 3_000_000_000_000, 6_000_000_000_000)] == [
        1,
        1,
        2,
        3,
        4,
    ]


def test_weapon_rules() -> None:
    assert not findings_for(spinner_source()).rejected
    assert codes(edit(source("weapon-02"), drop_root("weapon_mechanism"))) == ["weapon-active-incomplete"]
    assert codes(edit(source("weapon-02"), set_root(weapon_main_mesh_node="Nowhere"))) == ["weapon-active-incomplete"]

    def no_axis(doc: dict) -> None:
        node(doc, "Axis")["name"] = "Not_Axis"

    assert codes(edit(source("weapon-03"), no_axis)) == ["weapon-active-incomplete"]
    actuator = {
        "pivot_node": "Pivot_Rotor",
        "rotation_axis": [0, 1, 0],
        "weapon_max_angle_deg": 360,
        "mesh_node": "Spinner_Rotor",
    }
    assert codes(edit(spinner_source(), set_root(weapon_actuators=[{**actuator, "weapon_max_angle_deg": 0}]))) == [
        "weapon-actuator-invalid"
    ]
    assert codes(
        edit(spinner_source(), set_root(weapon_actuators=[{k: v for k, v in actuator.items() if k != "weapon_max_angle_deg"}]))
    ) == ["weapon-actuator-invalid"]
    assert codes(edit(spinner_source(), set_root(weapon_actuators=[actuator] * 9))) == ["weapon-actuator-invalid"]
    assert codes(edit(spinner_source(), set_root(weapon_actuators=[{**actuator, "chain": ["Chain_Segment_1"]}]))) == [
        "weapon-payload-invalid"
    ]
    assert codes(edit(spinner_source(), set_root(weapon_actuators=[{**actuator, "mesh_node": "Pivot_Rotor"}]))) == [
        "weapon-payload-invalid"
    ]
    long_chain = {k: v for k, v in actuator.items() if k != "mesh_node"} | {"chain": ["Spinner_Rotor"] * 17}
    assert codes(edit(spinner_source(), set_root(weapon_actuators=[long_chain]))) == ["weapon-payload-invalid"]

    def unarm(doc: dict) -> None:
        for i in (1, 2, 3):
            node(doc, f"Dart_{i}")["extras"] = {}
        root(doc)["materials"] = []

    assert codes(edit(source("weapon-03"), unarm)) == ["launch-ammo-invalid"]


def test_no_mesh() -> None:
    b = GlbBuilder()
    b.node("Mount_Chip", matrix=frame_matrix((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))
    assert codes(b.build({"open4wd_version": 1, "type": "chip", "material": "pc", "skill_slots": SLOTS})) == ["no-mesh"]


def test_mount_warnings_do_not_refuse() -> None:
    findings = findings_for(edit(source("chassis-01"), move_node("Mount_Chip", 0.0, 0.006, 0.002)))  # 8 mm from Mount_Battery
    assert findings.codes() == ["mount-gap-warn"] and not findings.rejected
    findings = findings_for(edit(source("chassis-01"), move_node("Mount_Chip", 0.0, 0.025, -0.022)))  # 19 mm above the plate
    assert findings.codes() == ["mount-aabb-warn"] and not findings.rejected

    def tilted(doc: dict) -> None:  # hinge axis +X turned 40° upwards
        node(doc, "Mount_Roller_CL")["matrix"] = [
            0.766,
            0.643,
            0.0,
            0.0,
            -0.643,
            0.766,
            0.0,
            0.0,
            0.0,
            0.0,
            1.0,
            0.0,
            -0.044,
            0.003,
            0.0,
            1.0,
        ]

    findings = findings_for(edit(source("chassis-01"), tilted))
    assert findings.codes() == ["hinge-axis-warn"] and not findings.rejected


def _flail() -> bytes:
    b = GlbBuilder()
    base = b.node("Flail_Base", mesh=b.mesh(*box((-0.01, 0.0, -0.02), (0.01, 0.016, 0.0))))
    for i, z in enumerate((-0.03, -0.04), start=1):
        b.node(f"Chain_Segment_{i}", mesh=b.mesh(*box((-0.002, 0.004, z), (0.002, 0.008, z + 0.008))), parent=base)
    b.node("Axis", matrix=frame_matrix((0.0, 0.008, -0.02), (-1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, -1.0)))
    b.node("Pivot_Flail", matrix=translation_matrix(0.0, 0.008, -0.02))
    b.node("Mount_Weapon", matrix=translation_matrix(0.0, 0.0, 0.0))
    return b.build(
        {
            "open4wd_version": 1,
            "type": "weapon",
            "material": "steel",
            "passive": False,
            "weapon_mechanism": "general",
            "weapon_main_mesh_node": "Flail_Base",
            "weapon_actuators": [
                {
                    "pivot_node": "Pivot_Flail",
                    "rotation_axis": [0, 1, 0],
                    "weapon_max_angle_deg": 90,
                    "motion_curve": "sin",
                    "chain": ["Chain_Segment_1", "Chain_Segment_2"],
                }
            ],
        }
    )


def test_chain_follows_the_gltf_children_order() -> None:
    findings = Findings()
    manifest = build_manifest(read_glb(_flail()), findings, deprecated=frozenset(), for_new_product=True)
    assert manifest is not None, findings.codes()
    assert manifest["weapon"]["actuators"][0]["chain"] == ["Chain_Segment_1", "Chain_Segment_2"]
    assert manifest["weapon"]["actuators"][0]["max_angle_mdeg"] == 90_000

    def reverse(doc: dict) -> None:
        node(doc, "Flail_Base")["children"].reverse()

    assert codes(edit(_flail(), reverse)) == ["weapon-payload-invalid"]


def test_darts_fire_in_children_order() -> None:
    def reverse(doc: dict) -> None:
        node(doc, "Dart_Launcher")["children"].reverse()

    findings = Findings()
    manifest = build_manifest(
        read_glb(edit(source("weapon-03"), reverse)), findings, deprecated=frozenset(), for_new_product=True
    )
    assert manifest is not None
    assert [a["node"] for a in manifest["weapon"]["ammo"]] == ["Dart_3", "Dart_2", "Dart_1"]
    assert all(a["exit_distance_um"] > 0 for a in manifest["weapon"]["ammo"])


def test_oversized_part_is_refused_without_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    v, t = box((0.0, 0.0, 0.0), (0.02, 0.01, 0.02))
    tiles = [(v + [0.0, 0.0, 0.03 * i], t) for i in range(8400)]  # 100 800 triangles in one node
    data = _part_from(combine(*tiles))

    def refuse(*_: Any) -> None:
        raise AssertionError("an oversized part must not be measured")

    monkeypatch.setattr(part_module, "measure", refuse)
    assert codes(data) == ["part-geometry-budget"]


def test_root_material_is_checked_even_when_every_node_overrides_it() -> None:
    data = edit(source("chip-01"), set_root(material="asphalt", materials=[{"mesh_node": "Chip_Board", "material": "pc"}]))
    assert codes(data) == ["material-not-allowed"]
