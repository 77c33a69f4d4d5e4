"""Bake and admission: round trip, idempotence, canonical encoding, tamper detection."""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal

import pytest

from sim_core.assets import constants as C
from sim_core.assets.admission import admit, check
from sim_core.assets.bake import bake
from sim_core.assets.container import read_container
from sim_core.assets.encoding import canonical_manifest_bytes, manifest_digest
from sim_core.assets.findings import AssetRejected
from sim_core.assets.glb_build import GlbBuilder, translation_matrix
from sim_core.assets.reader import read_glb
from sim_core.assets.shapes import box
from tests.sim_core.assets.crafting import box_part, edit, root, set_root, source
from tests.coded import raises_coded


def envelope(data: bytes) -> dict:
    return read_glb(data).root_extras[C.MANIFEST_EXTRAS_KEY]


def test_round_trip_embeds_the_manifest_that_admission_rebuilds() -> None:
    baked = bake(source("battery-01"))
    admitted = admit(baked)
    env = envelope(baked)
    assert env["version"] == 1 and env["digest"] == admitted.digest == manifest_digest(admitted.manifest)
    assert env["manifest"] == admitted.manifest
    assert admitted.content_id == hashlib.sha256(baked).hexdigest()
    battery = admitted.manifest["battery"]
    assert battery == {"configured_output_mw": 150_000, "energy_capacity_mj": 1_134_000_000}  # 7 cells, 12.6 cm³ × 9e13 mJ/m³
    extras = read_glb(baked).root_extras
    assert extras["open4wd_version"] == 1
    assert extras["auto_volume_m3"] == Decimal("0.0000126") and extras["auto_energy_capacity_mj"] == 1_134_000_000
    assert extras["auto_feature_deviations"] == []


def test_bake_keeps_geometry_bytes_and_is_idempotent() -> None:
    src = source("weapon-03")
    once = bake(src)
    assert read_container(once).bin_chunk == read_container(src).bin_chunk
    assert bake(once) == once


def test_canonical_encoding_is_sorted_compact_and_integer_only() -> None:
    assert canonical_manifest_bytes({"b": [1, {"d": None, "c": True}], "a": "x"}) == b'{"a":"x","b":[1,{"c":true,"d":null}]}'
    with pytest.raises(TypeError):
        canonical_manifest_bytes({"mass": 1.5})
    with pytest.raises(TypeError):
        canonical_manifest_bytes({"mass": Decimal("1.5")})
    manifest = admit(bake(source("chip-03"))).manifest
    assert json.loads(canonical_manifest_bytes(manifest)) == manifest


def test_altered_declaration_is_refused_by_digest() -> None:
    baked = bake(source("motor-01"))
    tampered = edit(baked, set_root(torque_ratio=90))
    findings, admitted = check(tampered)
    assert admitted is None and findings.codes() == ["manifest-digest-mismatch"]


def test_altered_geometry_is_refused_by_digest() -> None:
    baked = bake(source("chip-01"))
    container = read_container(baked)
    doc = container.doc
    blob = bytearray(container.bin_chunk)
    blob[0:4] = bytes.fromhex("0000803f")  # first vertex x = 1.0 m
    from sim_core.assets.encoding import write_glb

    findings, _ = check(write_glb(doc, bytes(blob)))
    assert "manifest-digest-mismatch" in findings.codes() or "part-aabb-out-of-range" in findings.codes() or findings.rejected


def test_forged_manifest_cannot_change_race_inputs() -> None:
    baked = bake(source("motor-01"))

    def forge(doc: dict) -> None:
        env = root(doc)[C.MANIFEST_EXTRAS_KEY]
        env["manifest"]["motor"]["input_mw"] = 800_000
        env["digest"] = manifest_digest(env["manifest"])

    findings, admitted = check(edit(baked, forge))
    assert admitted is None and findings.codes() == ["manifest-digest-mismatch"]


def test_unbaked_or_malformed_envelope() -> None:
    assert check(source("chip-01"))[0].codes() == ["manifest-missing"]
    baked = bake(source("chip-01"))
    assert check(edit(baked, set_root(**{C.MANIFEST_EXTRAS_KEY: {"version": 2, "digest": "0" * 64}})))[0].codes() == [
        "manifest-invalid"
    ]
    assert check(edit(baked, set_root(**{C.MANIFEST_EXTRAS_KEY: {"version": 1, "digest": "XYZ"}})))[0].codes() == [
        "manifest-invalid"
    ]


def test_bake_refuses_a_rule_breaker_with_all_findings() -> None:
    data = edit(source("chip-01"), set_root(material="asphalt", skill_slots=[{"skill": "boost", "allocation_pct": 101}]))
    with raises_coded(AssetRejected, "material-not-allowed") as exc:
        bake(data)
    assert sorted(f.code for f in exc.value.findings) == ["chip-allocation-invalid", "material-not-allowed"]


def test_deprecated_material_blocks_bake_but_not_admission() -> None:
    baked = bake(source("chip-01"))
    with pytest.raises(AssetRejected) as exc:
        bake(source("chip-01"), deprecated=frozenset({"glass_fiber"}))
    assert exc.value.code == "material-not-allowed"
    assert admit(baked, deprecated=frozenset({"glass_fiber"})).asset_type == "chip"


def test_bake_writes_to_the_root_extras_location_it_read() -> None:
    b = GlbBuilder()
    b.node("Block", mesh=b.mesh(*box((-0.015, 0.0, -0.01), (0.015, 0.006, 0.01))))
    b.node("Mount_Chip", matrix=translation_matrix(0.0, 0.0, 0.0))
    src = b.build({"type": "chip", "material": "pc", "skill_slots": [{"skill": "jump", "allocation_pct": 100}]}, location="root")
    baked = bake(src)  # an unmarked source: the bake writes the marker
    asset = read_glb(baked)
    assert asset.root_extras_location == "root" and asset.root_extras["open4wd_version"] == 1
    assert admit(baked).manifest["chip"]["slot_count"] == 3  # 3.6 cm³


def test_mass_volume_and_centroid_are_exact() -> None:
    admitted = admit(bake(box_part("chip",
                                   "pc", (30, 10, 20), "Mount_Chip", skill_slots=[{"skill": "boost", "allocation_pct": 5}])))
    g = admitted.manifest["geometry"]
    assert g["volume_um3"] == 6_000_000_000_000  # 6 cm³
    assert g["mass_ug"] == 7_200_000  # × 1.20 g/cm³
    assert g["centroid_um"] == [0, 5_000, 0]
    assert g["contact_area_um2"]["top"] == 600_000_000 and g["contact_area_um2"]["front"] == 300_000_000
    assert g["heat_capacity_nj_per_k"] == 7_200_000 * 1170
    assert g["thermal_limit_mc"] == 130_000
    assert admitted.manifest["chip"]["slot_count"] == 4


def test_draco_compressed_part_bakes_and_is_admitted() -> None:
    import DracoPy
    import numpy as np

    vertices, faces = box((-0.015, 0.0, -0.01), (0.015, 0.006, 0.01))
    encoded = DracoPy.encode(vertices.astype(np.float32), faces.astype(np.uint32), quantization_bits=14)
    b = GlbBuilder()
    view = b._view(encoded, 34962)
    mesh = b.mesh(
        vertices, faces, extra_primitive={"KHR_draco_mesh_compression": {"bufferView": view, "attributes": {"POSITION": 0}}}
    )
    b.node("Chip_Board", mesh=mesh)
    b.node("Mount_Chip", matrix=translation_matrix(0.0, 0.0, 0.0))
    baked = bake(b.build({"type": "chip", "material": "pc", "skill_slots": [{"skill": "boost", "allocation_pct": 40}]}))
    admitted = admit(baked)
    assert abs(admitted.manifest["geometry"]["volume_um3"] - 3_600_000_000_000) < 3_600_000_000  # within 0.1 % of 3.6 cm³
    assert admitted.manifest["chip"]["slot_count"] == 3
    assert bake(baked) == baked
