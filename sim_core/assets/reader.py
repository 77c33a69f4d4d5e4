"""Read a GLB into integer geometry: node world frames, per-node triangles, root extras.

This is the only module of the pipeline that touches floats: node transforms and vertex positions are
composed in float64 with a fixed operation order (elementwise numpy and explicit loops, never BLAS), then
quantised to integer µm (positions) and ppm (unit axes). Everything downstream is integer arithmetic, so
two nodes reading the same bytes get the same integers.

Any malformed input ends in ``AssetRejected`` with a coded finding; a third-party parser failure is
reported as ``gltf-invalid`` with the parser's message, never as another exception.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import DracoPy
import numpy as np
from pygltflib import GLTF2, Accessor, Attributes, BufferView, Primitive, Scene
from pygltflib import Mesh as GltfMesh
from pygltflib import Node as GltfNode

from sim_core.assets import constants as C
from sim_core.assets.container import GlbContainer, json_path, read_container
from sim_core.assets.findings import reject, shown

DRACO_EXTENSION = "KHR_draco_mesh_compression"
_COMPONENTS = {5120: ("<i1", 1), 5121: ("<u1", 1), 5122: ("<i2", 2), 5123: ("<u2", 2), 5125: ("<u4", 4), 5126: ("<f4", 4)}
_INDEX_COMPONENTS = (5121, 5123, 5125)
_WIDTHS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4}
_MAX_COORD_M = 1.0e6  # far beyond any legal asset; keeps µm integers well inside int64
Matrix = list[float]  # 4×4 row-major
_SECTIONS = {"nodes": GltfNode, "meshes": GltfMesh, "accessors": Accessor, "bufferViews": BufferView, "scenes": Scene}


@dataclass(frozen=True, slots=True)
class Frame:
    """A node's world frame in integers: origin (µm), unit axes (ppm), axis lengths (µm per metre of local)."""

    position_um: tuple[int, int, int]
    axes_ppm: tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int, int]]  # local +X, +Y, +Z
    scale_um: tuple[int, int, int]
    mirrored: bool


@dataclass(frozen=True, slots=True, eq=False)
class Mesh:
    """One node's triangles in the asset frame: vertices as integer µm, triangles as vertex indices."""

    vertices_um: np.ndarray  # (N, 3) int64, world frame of the asset
    triangles: np.ndarray  # (M, 3) int64 vertex indices

    @property
    def vertex_count(self) -> int:
        """Number of vertices."""
        return int(self.vertices_um.shape[0])

    @property
    def triangle_count(self) -> int:
        """Number of triangles."""
        return int(self.triangles.shape[0])


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """One node of the default scene: name, tree links, its raw extras, its world frame and, for a mesh
    node, its geometry."""

    index: int
    name: str
    parent: int | None
    children: tuple[int, ...]
    extras: dict[str, Any]
    frame: Frame
    mesh: Mesh | None


@dataclass(frozen=True, eq=False)
class GlbAsset:
    """A GLB read and checked: the bytes, the container, the root extras (and where they were found:
    ``scene`` or ``root``) and the nodes of the default scene in glTF index order."""

    data: bytes
    container: GlbContainer
    root_extras: dict[str, Any]
    root_extras_location: str  # "scene" or "root"
    nodes: tuple[Node, ...]  # nodes of the default scene, in glTF index order
    by_name: dict[str, Node] = field(default_factory=dict)  # names are unique (checked by the reader)

    def __post_init__(self) -> None:
        self.by_name.update((n.name, n) for n in self.nodes if n.name)

    def node(self, name: str) -> Node | None:
        """Constant-time lookup: extras may name nodes many times (chains, materials[])."""
        return self.by_name.get(name)

    @property
    def mesh_nodes(self) -> tuple[Node, ...]:
        """The nodes that carry a mesh, in index order."""
        return tuple(n for n in self.nodes if n.mesh is not None)

    @property
    def empties(self) -> tuple[Node, ...]:
        """The nodes without a mesh (mounts, route points, boxes), in index order."""
        return tuple(n for n in self.nodes if n.mesh is None)


def _int(value: Any, what: str, low: int = 0, high: int = 2**62) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise reject("gltf-invalid", f"{what} must be an integer in [{low}, {high}], got {shown(value)}")
    return value


def _numbers(value: Any, count: int, what: str) -> list[float]:
    if (
        not isinstance(value, list)
        or len(value) != count
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        raise reject("gltf-invalid", f"{what} must be a list of {count} numbers")
    return [float(v) for v in value]


def _item(items: Any, index: Any, what: str) -> Any:
    if not isinstance(items, list):
        raise reject("gltf-invalid", f"{what}: the file has no such array")
    return items[_int(index, what, 0, len(items) - 1)] if items else _int(index, what, 0, -1)


# ---------------------------------------------------------------- transforms

def _matmul(a: Matrix, b: Matrix) -> Matrix:
    """4×4 row-major product with a fixed summation order (no BLAS)."""
    out = [0.0] * 16
    for r in range(4):
        for c in range(4):
            out[r * 4 + c] = ((a[r * 4] * b[c] + a[r * 4 + 1] * b[4 + c]) + a[r * 4 + 2] * b[8 + c]) + a[r * 4 + 3] * b[12 + c]
    return out


def _local_matrix(node: Any, what: str) -> Matrix:
    if node.matrix is not None:
        m = _numbers(node.matrix, 16, f"{what}.matrix")  # column-major
        return [m[c * 4 + r] for r in range(4) for c in range(4)]
    tx, ty, tz = _numbers(node.translation, 3, f"{what}.translation") if node.translation is not None else (0.0, 0.0, 0.0)
    qx, qy, qz, qw = _numbers(node.rotation, 4, f"{what}.rotation") if node.rotation is not None else (0.0, 0.0, 0.0, 1.0)
    sx, sy, sz = _numbers(node.scale, 3, f"{what}.scale") if node.scale is not None else (1.0, 1.0, 1.0)
    norm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    if norm == 0.0:
        raise reject("gltf-invalid", f"{what}.rotation is a zero quaternion")
    qx, qy, qz, qw = qx / norm, qy / norm, qz / norm, qw / norm
    r = [
        1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw),
        2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw),
        2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy),
    ]
    return [
        r[0] * sx, r[1] * sy, r[2] * sz, tx,
        r[3] * sx, r[4] * sy, r[5] * sz, ty,
        r[6] * sx, r[7] * sy, r[8] * sz, tz,
        0.0, 0.0, 0.0, 1.0,
    ]


def _quantise(value: float, scale: float, what: str) -> int:
    if not math.isfinite(value) or abs(value) > _MAX_COORD_M:
        raise reject("non-finite-number", f"{what} is not a finite coordinate within 10^6 m")
    return math.floor(value * scale + 0.5)


def _frame(m: Matrix, what: str) -> Frame:
    position = tuple(_quantise(m[r * 4 + 3], 1e6, f"{what} position") for r in range(3))
    axes = []
    lengths = []
    for c in range(3):
        col = (m[c], m[4 + c], m[8 + c])
        length = math.sqrt(col[0] * col[0] + col[1] * col[1] + col[2] * col[2])
        lengths.append(_quantise(length, 1e6, f"{what} scale"))
        axes.append(tuple(_quantise(v / length, 1e6, f"{what} axis") if length > 0.0 else 0 for v in col))
    det = (
        m[0] * (m[5] * m[10] - m[6] * m[9])
        - m[1] * (m[4] * m[10] - m[6] * m[8])
        + m[2] * (m[4] * m[9] - m[5] * m[8])
    )
    if not math.isfinite(det):
        raise reject("non-finite-number", f"{what} has a non-finite transform")
    return Frame(position, tuple(axes), tuple(lengths), det < 0.0)  # type: ignore[arg-type]


# ---------------------------------------------------------------- accessors and meshes

def _accessor(gltf: GLTF2, blob: bytes, index: Any, what: str, want: str, components: tuple[int, ...]) -> np.ndarray:
    acc = _item(gltf.accessors, index, f"{what} accessor")
    if acc.sparse is not None:
        raise reject("gltf-unsupported", f"{what}: sparse accessors are not supported")
    if acc.type != want or acc.componentType not in components:
        raise reject("gltf-invalid", f"{what}: accessor must be {want} of component type {components}")
    dtype, size = _COMPONENTS[acc.componentType]
    width = _WIDTHS[want]
    count = _int(acc.count, f"{what}.count", 0, len(blob))
    view = _item(gltf.bufferViews, acc.bufferView, f"{what} bufferView")
    if _int(view.buffer, f"{what} bufferView.buffer", 0, 0) != 0 or not blob:
        raise reject("gltf-invalid", f"{what}: data must live in the GLB's BIN chunk")
    view_offset = _int(view.byteOffset or 0, f"{what} bufferView.byteOffset", 0, len(blob))
    view_length = _int(view.byteLength, f"{what} bufferView.byteLength", 0, len(blob) - view_offset)
    element = size * width
    stride = element if view.byteStride is None else _int(view.byteStride, f"{what} byteStride", element, 252)
    start = _int(acc.byteOffset or 0, f"{what} accessor.byteOffset", 0, view_length)
    if count and start + stride * (count - 1) + element > view_length:
        raise reject("gltf-invalid", f"{what}: accessor reads past the end of its bufferView")
    if count == 0:
        return np.zeros((0, width), dtype=dtype)
    return np.ndarray((count, width), dtype=dtype, buffer=blob, offset=view_offset + start, strides=(stride, size)).copy()


def _draco_primitive(gltf: GLTF2, blob: bytes, ext: Any, declared: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(ext, dict):
        raise reject("gltf-invalid", f"{what}: {DRACO_EXTENSION} must be an object")
    view = _item(gltf.bufferViews, ext.get("bufferView"), f"{what} draco bufferView")
    offset = _int(view.byteOffset or 0, f"{what} draco byteOffset", 0, len(blob))
    length = _int(view.byteLength, f"{what} draco byteLength", 0, len(blob) - offset)
    try:
        decoded = DracoPy.decode(blob[offset : offset + length])
        points = np.asarray(decoded.points, dtype=np.float64).reshape(-1, 3)
        faces = np.asarray(decoded.faces, dtype=np.int64).reshape(-1, 3)
    except Exception as exc:  # the decoder's own errors are many; every one means "undecodable"
        raise reject("draco-decode-failed", f"{what}: Draco data does not decode ({type(exc).__name__}: {exc})") from None
    if faces.shape[0] > declared:
        raise reject("draco-decode-failed",
                     f"{what}: Draco data decodes to {faces.shape[0]} triangles but its accessors declare {declared}")
    return points, faces


def _primitive(gltf: GLTF2, blob: bytes, prim: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
    if prim.mode not in (None, 4):
        raise reject("gltf-unsupported", f"{what}: only triangle primitives (mode 4) are supported, got mode {shown(prim.mode)}")
    extensions = prim.extensions if isinstance(prim.extensions, dict) else {}
    if DRACO_EXTENSION in extensions:
        points, faces = _draco_primitive(gltf, blob, extensions[DRACO_EXTENSION], _declared_triangles(gltf, prim), what)
    else:
        position = getattr(prim.attributes, "POSITION", None)
        if position is None:
            raise reject("gltf-invalid", f"{what} has no POSITION attribute")
        points = _accessor(gltf, blob, position, f"{what}.POSITION", "VEC3", (5126,)).astype(np.float64)
        if prim.indices is None:
            if points.shape[0] % 3:
                raise reject("gltf-invalid", f"{what}: non-indexed vertex count is not a multiple of 3")
            faces = np.arange(points.shape[0], dtype=np.int64).reshape(-1, 3)
        else:
            flat = (
                _accessor(gltf, blob, prim.indices, f"{what}.indices", "SCALAR", _INDEX_COMPONENTS).astype(np.int64).reshape(-1)
            )
            if flat.shape[0] % 3:
                raise reject("gltf-invalid", f"{what}: index count is not a multiple of 3")
            faces = flat.reshape(-1, 3)
    if faces.size and (faces.min() < 0 or faces.max() >= points.shape[0]):
        raise reject("gltf-invalid", f"{what}: an index points past the vertex array")
    if not np.isfinite(points).all():
        raise reject("non-finite-number", f"{what}: a vertex position is NaN or infinite")
    return points, faces


def _declared_triangles(gltf: GLTF2, prim: Any) -> int:
    """A primitive's triangle count from its accessor counts alone (no geometry decoded)."""
    ref = prim.indices if prim.indices is not None else getattr(prim.attributes, "POSITION", None)
    if ref is None:
        return 0
    return _int(_item(gltf.accessors, ref, "primitive accessor").count, "accessor.count") // 3


def _mesh_triangles(gltf: GLTF2) -> list[int]:
    """Declared triangles per mesh, to enforce the budget before decoding any geometry."""
    return [sum(_declared_triangles(gltf, p) for p in mesh.primitives) for mesh in gltf.meshes or []]


def _local_geometry(gltf: GLTF2, blob: bytes, mesh_index: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """A mesh's positions (float64, mesh-local) and triangles, all primitives concatenated."""
    prims = gltf.meshes[mesh_index].primitives
    if not prims:
        raise reject("gltf-invalid", f"{what}: mesh has no primitives")
    all_points, all_faces, base = [], [], 0
    for p, prim in enumerate(prims):
        points, faces = _primitive(gltf, blob, prim, f"{what} primitive {p}")
        all_points.append(points)
        all_faces.append(faces + base)
        base += points.shape[0]
    return np.concatenate(all_points), np.concatenate(all_faces).astype(np.int64)


def _placed(points: np.ndarray, faces: np.ndarray, world: Matrix, what: str) -> Mesh:
    """Mesh-local geometry moved into the asset frame and quantised to integer µm."""
    x, y, z = points[:, 0], points[:, 1], points[:, 2]
    world_pts = np.stack(
        [((world[r * 4] * x + world[r * 4 + 1] * y) + world[r * 4 + 2] * z) + world[r * 4 + 3] for r in range(3)], axis=1
    )
    if not np.isfinite(world_pts).all() or (np.abs(world_pts) > _MAX_COORD_M).any():
        raise reject("non-finite-number", f"{what}: a transformed vertex is not finite within 10^6 m")
    return Mesh(np.floor(world_pts * 1e6 + 0.5).astype(np.int64), faces)


# ---------------------------------------------------------------- nodes and extras

def _scene_roots(gltf: GLTF2, parents: dict[int, int]) -> list[int]:
    scenes = gltf.scenes or []
    if not scenes:
        return [i for i in range(len(gltf.nodes or [])) if i not in parents]
    scene = _item(scenes, gltf.scene if gltf.scene is not None else 0, "scene")
    roots = scene.nodes or []
    if not isinstance(roots, list):
        raise reject("gltf-invalid", "scene.nodes must be a list")
    for r in roots:
        _int(r, "scene node", 0, len(gltf.nodes or []) - 1)
        if r in parents:
            raise reject("gltf-invalid", f"scene root {r} is also a child of node {parents[r]}")
    return list(roots)


def _root_extras(doc: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Default scene's extras first, then the glTF root extras (open-4wd-pinning security/glb.ts)."""
    scenes = doc.get("scenes")
    index = doc.get("scene", 0)
    if isinstance(scenes, list) and isinstance(index, int) and 0 <= index < len(scenes) and isinstance(scenes[index], dict):
        extras = scenes[index].get("extras")
        if isinstance(extras, dict) and extras:
            return extras, "scene"
    extras = doc.get("extras")
    return (extras if isinstance(extras, dict) else {}), "root"


def _raw_node_extras(doc: dict[str, Any], index: int) -> dict[str, Any]:
    extras = doc["nodes"][index].get("extras") if isinstance(doc["nodes"][index], dict) else None
    return extras if isinstance(extras, dict) else {}


def _model_view(value: Any, path: str) -> Any:
    """The document as pygltflib should see it: without any ``extras`` and with numbers as floats.

    glTF lets ``extras`` be any JSON value (a string, a list, …), but pygltflib decodes every one as an
    object and fails on anything else; the reader takes extras from the raw document anyway (an
    object's Open4WD keys are checked, any other value carries no Open4WD data). ``extensions`` must
    be an object by the glTF schema, and is refused here with its place when it is not."""
    if isinstance(value, Decimal):
        return float(value)  # the container admitted only numbers within a double
    if isinstance(value, list):
        return [_model_view(item, json_path(path, i)) for i, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    if "extensions" in value and not isinstance(value["extensions"], dict):
        raise reject("gltf-invalid",
                     f"{path}.extensions is {shown(value['extensions'])}; glTF requires extensions to be an object")
    return {
        key: item if key == "extensions" else _model_view(item, json_path(path, key))
        for key, item in value.items()
        if key != "extras"
    }


def _load_model(container: GlbContainer) -> GLTF2:
    model_json = json.dumps(_model_view(container.doc, "$"))
    try:
        gltf = GLTF2.from_json(model_json)
    except Exception as exc:  # pygltflib raises whatever its dataclass decoder hits
        raise reject("gltf-invalid", f"the glTF JSON does not match the glTF 2.0 schema ({type(exc).__name__}: {exc})") from None
    for section, kind in _SECTIONS.items():
        items = getattr(gltf, section) or []
        if not isinstance(items, list) or not all(isinstance(item, kind) for item in items):
            raise reject("gltf-invalid", f"{section} must be an array of glTF {kind.__name__} objects")
    for m, mesh in enumerate(gltf.meshes or []):
        prims = mesh.primitives
        if not isinstance(prims, list) or not all(
            isinstance(p, Primitive) and isinstance(p.attributes, Attributes) for p in prims
        ):
            raise reject("gltf-invalid", f"meshes[{m}].primitives must be an array of primitives with attributes")
    return gltf


def read_glb(data: bytes) -> GlbAsset:
    """Read and check a GLB; raises ``AssetRejected`` (a ``SimError``) with a coded finding on any defect."""
    container = read_container(data)
    gltf = _load_model(container)
    per_mesh = _mesh_triangles(gltf)
    if sum(per_mesh) > C.MAX_SOURCE_TRIANGLES:
        raise reject("triangle-budget", f"the file declares more than {C.MAX_SOURCE_TRIANGLES} triangles")
    raw_nodes = gltf.nodes or []
    duplicates = duplicate_names(container.doc.get("nodes") or [])
    if duplicates:
        raise reject("duplicate-node-name", f"node names must be unique in the file; repeated: {', '.join(duplicates[:5])}")
    parents: dict[int, int] = {}
    for i, node in enumerate(raw_nodes):
        children = node.children or []
        if not isinstance(children, list):
            raise reject("gltf-invalid", f"nodes[{i}].children must be a list")
        for c in children:
            _int(c, f"nodes[{i}].children", 0, len(raw_nodes) - 1)
            if c in parents or c == i:
                raise reject("gltf-invalid", f"node {c} has more than one parent or is its own child")
            parents[c] = i
    roots = _scene_roots(gltf, parents)
    worlds: dict[int, Matrix] = {}
    order: list[int] = []
    stack: list[tuple[int, int | None]] = [(r, None) for r in reversed(roots)]
    while stack:
        index, parent = stack.pop()
        if index in worlds:
            raise reject("gltf-invalid", f"node {index} is reached twice from the scene (a cycle or a shared child)")
        local = _local_matrix(raw_nodes[index], f"nodes[{index}]")
        worlds[index] = local if parent is None else _matmul(worlds[parent], local)
        order.append(index)
        stack.extend((c, index) for c in reversed(raw_nodes[index].children or []))
    for index in order:
        if raw_nodes[index].mesh is not None:
            _int(raw_nodes[index].mesh, f"nodes[{index}].mesh", 0, len(per_mesh) - 1)
    if sum(per_mesh[raw_nodes[i].mesh] for i in order if raw_nodes[i].mesh is not None) > C.MAX_SOURCE_TRIANGLES:
        raise reject("triangle-budget",
                     f"the scene instances more than {C.MAX_SOURCE_TRIANGLES} triangles (counting every node that uses a mesh)")
    decoded: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    nodes = []
    for index in sorted(order):
        raw = raw_nodes[index]
        name = raw.name if isinstance(raw.name, str) else ""
        mesh = None
        if raw.mesh is not None:
            if raw.mesh not in decoded:  # decode each mesh once, however many nodes instance it
                decoded[raw.mesh] = _local_geometry(gltf, container.bin_chunk, raw.mesh, f"node {name or index}")
            mesh = _placed(*decoded[raw.mesh], worlds[index], f"node {name or index}")
        nodes.append(
            Node(
                index=index,
                name=name,
                parent=parents.get(index),
                children=tuple(raw.children or []),
                extras=_raw_node_extras(container.doc, index),
                frame=_frame(worlds[index], f"node {name or index}"),
                mesh=mesh,
            )
        )
    extras, location = _root_extras(container.doc)
    return GlbAsset(data=data, container=container, root_extras=extras, root_extras_location=location, nodes=tuple(nodes))


def duplicate_names(data_nodes: Any) -> list[str]:
    """Names used by more than one node anywhere in the file (Stage 1 rule: unique GLB-wide)."""
    seen: dict[str, int] = {}
    for node in data_nodes:
        name = node.get("name") if isinstance(node, dict) else None
        if isinstance(name, str) and name:
            seen[name] = seen.get(name, 0) + 1
    return sorted(n for n, k in seen.items() if k > 1)

