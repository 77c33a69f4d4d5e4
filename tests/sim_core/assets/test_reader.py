"""The GLB reader: every cap and structural defect ends in its own coded finding, before heavy work."""

from __future__ import annotations

import json
import struct

import DracoPy
import numpy as np
import pytest

from sim_core.assets import constants as C
from sim_core.assets.findings import AssetRejected
from sim_core.assets.glb_build import GlbBuilder, frame_matrix, translation_matrix
from sim_core.assets.reader import read_glb
from sim_core.assets.shapes import box
from tests.sim_core.assets.crafting import box_part, edit, json_glb, node, raw_glb, source


def code_of(data: bytes) -> str:
    with pytest.raises(AssetRejected) as exc:
        read_glb(data)
    return exc.value.code


MINIMAL = {"asset": {"version": "2.0"}, "nodes": [{"name": "A"}], "scenes": [{"nodes": [0]}]}


def test_valid_part_reads_nodes_frames_and_geometry() -> None:
    asset = read_glb(source("motor-01"))
    assert asset.root_extras_location == "scene"
    assert asset.root_extras["type"] == "motor"
    can = asset.node("Motor_Can")
    assert can is not None and can.mesh is not None
    assert (can.mesh.vertex_count, can.mesh.triangle_count) == (64, 128)  # a can: a ring with a bore
    mount = asset.node("Mount_Motor")
    assert mount is not None and mount.mesh is None
    assert mount.frame.position_um == (0, -12000, 0)
    assert mount.frame.axes_ppm == ((1_000_000, 0, 0), (0, 1_000_000, 0), (0, 0, 1_000_000))


def test_root_extras_fall_back_to_the_gltf_root() -> None:
    b = GlbBuilder()
    b.node("Block", mesh=b.mesh(*box((0.0, 0.0, 0.0), (0.01, 0.01, 0.01))))
    asset = read_glb(b.build({"type": "chip", "marker": "root"}, location="root"))
    assert asset.root_extras_location == "root"
    assert asset.root_extras["marker"] == "root"


def test_world_transforms_compose_through_parents() -> None:
    b = GlbBuilder()
    parent = b.node("Parent", matrix=translation_matrix(1.0, 0.0, 0.0))
    turned = frame_matrix((0.0, 0.5, 0.0), (0.0, 0.0, -1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0))  # 90° about Y
    mid = b.node("Turned", matrix=turned, parent=parent)
    b.node("Leaf", matrix=translation_matrix(0.0, 0.0, 0.25), parent=mid)
    asset = read_glb(b.build({}))
    leaf = asset.node("Leaf")
    assert leaf is not None and leaf.parent == mid
    assert leaf.frame.position_um == (1_250_000, 500_000, 0)  # local +Z of "Turned" is world +X
    assert leaf.frame.axes_ppm[2] == (1_000_000, 0, 0)


def test_mirrored_empty_is_flagged() -> None:
    b = GlbBuilder()
    b.node("Mirror", matrix=frame_matrix((0.0, 0.0, 0.0), (-1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))
    asset = read_glb(b.build({}))
    assert asset.node("Mirror").frame.mirrored  # type: ignore[union-attr]


def test_draco_compressed_mesh_is_decoded() -> None:
    vertices, faces = box((0.0, 0.0, 0.0), (0.02, 0.01, 0.03))
    encoded = DracoPy.encode(vertices.astype(np.float32), faces.astype(np.uint32), quantization_bits=16)
    b = GlbBuilder()
    view = b._view(encoded, 34962)
    mesh = b.mesh(
        vertices, faces, extra_primitive={"KHR_draco_mesh_compression": {"bufferView": view, "attributes": {"POSITION": 0}}}
    )
    b.node("Block", mesh=mesh)
    asset = read_glb(b.build({}))
    block = asset.node("Block")
    assert block is not None and block.mesh is not None
    assert block.mesh.triangle_count == 12
    assert np.abs(block.mesh.vertices_um.max(axis=0) - np.array([20_000, 10_000, 30_000])).max() <= 5


@pytest.mark.parametrize(
    "data, code",
    [
        (b"", "not-a-glb"),
        (b"GLTF" + bytes(20), "not-a-glb"),
        (b"glTF" + struct.pack("<II", 1, 12), "not-a-glb"),
        (b"glTF" + struct.pack("<II", 2, 400) + bytes(20), "glb-truncated"),
        (b"glTF" + struct.pack("<II", 2, 16) + bytes(4), "glb-truncated"),
        (raw_glb(b"{}") + b"junk", "glb-invalid"),
        (b"glTF" + struct.pack("<II", 2, 20) + struct.pack("<II", 0, 0x004E4942), "glb-invalid"),
        (raw_glb(b"\xff\xfe"), "json-invalid"),
        (raw_glb(b"{nope"), "json-invalid"),
        (raw_glb(b"[1, 2]"), "json-invalid"),
        (raw_glb(b'{"asset": {"version": "2.0"}, "x": NaN}'), "non-finite-number"),
        (raw_glb(b'{"asset": {"version": "2.0"}, "x": -Infinity}'), "non-finite-number"),
        (raw_glb(b'{"asset": {"version": "2.0"}, "x": 1e999}'), "non-finite-number"),
        (json_glb({**MINIMAL, "buffers": [{"byteLength": 4, "uri": "http://example.com/a.bin"}]}), "external-uri"),
        (json_glb({**MINIMAL, "images": [{"uri": "data:image/png;base64,AAAA"}]}), "external-uri"),
        (json_glb({"asset": {"version": "2.0"}, "nodes": [{} for _ in range(C.MAX_NODES + 1)]}), "too-many-nodes"),
        (
            json_glb({"asset": {"version": "2.0"}, "meshes": [{"primitives": [{"attributes": {}}] * (C.MAX_PRIMITIVES + 1)}]}),
            "too-many-primitives",
        ),
        (json_glb({**MINIMAL, "nodes": [{"name": "A"}, {"name": "A"}]}), "duplicate-node-name"),
        (json_glb({**MINIMAL, "nodes": [{"name": "A", "children": [0]}]}), "gltf-invalid"),
        (json_glb({**MINIMAL, "nodes": [{"name": "A", "children": [7]}]}), "gltf-invalid"),
        (json_glb({**MINIMAL, "nodes": [{"name": "A", "mesh": 3}]}), "gltf-invalid"),
        (json_glb({**MINIMAL, "nodes": [{"name": "A", "rotation": [0, 0, 0, 0]}]}), "gltf-invalid"),
        (json_glb({**MINIMAL, "nodes": "oops"}), "gltf-invalid"),
    ],
)
def test_container_and_structure_defects(data: bytes, code: str) -> None:
    assert code_of(data) == code


def test_file_size_cap_is_checked_first() -> None:
    assert code_of(b"glTF" + bytes(C.MAX_GLB_BYTES)) == "glb-too-large"


def test_json_chunk_cap_is_checked_before_decoding() -> None:
    size = C.MAX_JSON_CHUNK_BYTES + 4
    data = b"glTF" + struct.pack("<II", 2, 20 + size) + struct.pack("<II", size, 0x4E4F534A) + b" " * size
    assert code_of(data) == "json-chunk-too-large"


def test_extras_depth_cap() -> None:
    deep: dict = {}
    cursor = deep
    for _ in range(C.MAX_EXTRAS_DEPTH):
        cursor["k"] = {}
        cursor = cursor["k"]
    assert code_of(json_glb({**MINIMAL, "extras": deep})) == "extras-too-deep"
    shallow: dict = {}
    cursor = shallow
    for _ in range(C.MAX_EXTRAS_DEPTH - 1):
        cursor["k"] = {}
        cursor = cursor["k"]
    assert read_glb(json_glb({**MINIMAL, "extras": shallow})).root_extras == shallow


def test_pathological_nesting_anywhere_is_refused() -> None:
    assert (
        code_of(raw_glb(b'{"asset": {"version": "2.0"}, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}")) == "json-too-deep"
    )  # not blamed on extras
    assert code_of(raw_glb(b'{"x": ' + b"[" * 100 + b"]" * 100 + b"}")) == "json-too-deep"


def _mesh_doc(accessor: dict, mode: int | None = None, indices: bool = False) -> dict:
    prim: dict = {"attributes": {"POSITION": 0}}
    if mode is not None:
        prim["mode"] = mode
    if indices:
        prim["indices"] = 1
    return {
        "asset": {"version": "2.0"},
        "scenes": [{"nodes": [0]}],
        "nodes": [{"name": "M", "mesh": 0}],
        "meshes": [{"primitives": [prim]}],
        "buffers": [{"byteLength": 48}],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 36}, {"buffer": 0, "byteOffset": 36, "byteLength": 12}],
        "accessors": [accessor, {"bufferView": 1, "componentType": 5125, "count": 3, "type": "SCALAR"}],
    }


TRIANGLE = struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0) + struct.pack("<3I", 0, 1, 2)
POSITION = {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"}


def test_crafted_triangle_reads() -> None:
    asset = read_glb(json_glb(_mesh_doc(POSITION, indices=True), TRIANGLE))
    mesh = asset.node("M").mesh  # type: ignore[union-attr]
    assert mesh is not None and mesh.vertices_um.tolist() == [[0, 0, 0], [1_000_000, 0, 0], [0, 1_000_000, 0]]


@pytest.mark.parametrize(
    "accessor, mode, indices, blob, code",
    [
        ({**POSITION, "count": 4}, None, False, TRIANGLE, "gltf-invalid"),  # reads past its bufferView
        ({**POSITION, "type": "VEC2"}, None, False, TRIANGLE, "gltf-invalid"),
        ({**POSITION, "componentType": 5123}, None, False, TRIANGLE, "gltf-invalid"),
        ({**POSITION, "sparse": {"count": 1}}, None, False, TRIANGLE, "gltf-unsupported"),
        (POSITION, 1, False, TRIANGLE, "gltf-unsupported"),
        (POSITION, None, True, TRIANGLE[:36] + struct.pack("<3I", 0, 1, 9), "gltf-invalid"),  # index out of range
        (POSITION, None, False, struct.pack("<9f", 0, 0, 0, float("nan"), 0, 0, 0, 1, 0) + bytes(12), "non-finite-number"),
        ({**POSITION, "count": 10**7}, None, False, TRIANGLE, "triangle-budget"),  # declared, refused before decoding
    ],
)
def test_accessor_defects(accessor: dict, mode: int | None, indices: bool, blob: bytes, code: str) -> None:
    assert code_of(json_glb(_mesh_doc(accessor, mode, indices), blob)) == code


def test_undecodable_draco_payload() -> None:
    doc = _mesh_doc(POSITION)
    doc["meshes"][0]["primitives"][0]["extensions"] = {
        "KHR_draco_mesh_compression": {"bufferView": 0, "attributes": {"POSITION": 0}}
    }
    assert code_of(json_glb(doc, TRIANGLE)) == "draco-decode-failed"


def test_non_finite_transform_is_refused() -> None:
    def huge(doc: dict) -> None:
        node(doc, "Mount_Chip")["translation"] = [1e300, 0, 0]

    assert code_of(edit(box_part("chip", "pc", (30, 6, 20), "Mount_Chip"), huge)) == "non-finite-number"


def test_nodes_outside_the_default_scene_are_ignored() -> None:
    data = json_glb({**MINIMAL, "nodes": [{"name": "A"}, {"name": "B"}], "extras": {"n": json.loads("1")}})
    assert [n.name for n in read_glb(data).nodes] == ["A"]  # B is not in the default scene


def test_instanced_triangles_count_against_the_budget_before_decoding() -> None:
    count = 3_001  # 3 001 nodes × 1 000 declared triangles > 3 000 000
    doc = {
        "asset": {"version": "2.0"},
        "scenes": [{"nodes": list(range(count))}],
        "nodes": [{"name": f"N{i}", "mesh": 0} for i in range(count)],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "buffers": [{"byteLength": 48}],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 48}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"},
            {"bufferView": 0, "componentType": 5125, "count": 3000, "type": "SCALAR"},
        ],
    }
    assert code_of(json_glb(doc, TRIANGLE)) == "triangle-budget"


def test_draco_payload_larger_than_declared_is_refused() -> None:
    vertices, faces = box((0.0, 0.0, 0.0), (0.02, 0.01, 0.03))
    encoded = DracoPy.encode(vertices.astype(np.float32), faces.astype(np.uint32))
    b = GlbBuilder()
    view = b._view(encoded, 34962)
    one = (vertices[:3], np.array([[0, 1, 2]]))  # accessors declare a single triangle
    mesh = b.mesh(*one, extra_primitive={"KHR_draco_mesh_compression": {"bufferView": view, "attributes": {"POSITION": 0}}})
    b.node("Block", mesh=mesh)
    assert code_of(b.build({})) == "draco-decode-failed"


def test_shared_mesh_is_placed_per_node() -> None:
    b = GlbBuilder()
    mesh = b.mesh(*box((0.0, 0.0, 0.0), (0.01, 0.01, 0.01)))
    b.node("Left", mesh=mesh, matrix=translation_matrix(-0.1, 0.0, 0.0))
    b.node("Right", mesh=mesh, matrix=translation_matrix(0.1, 0.0, 0.0))
    asset = read_glb(b.build({}))
    assert asset.node("Left").mesh.vertices_um[:, 0].min() == -100_000  # type: ignore[union-attr]
    assert asset.node("Right").mesh.vertices_um[:, 0].min() == 100_000  # type: ignore[union-attr]
