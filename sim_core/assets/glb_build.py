"""Build GLB files from procedural meshes with pygltflib (built-ins and test fixtures).

Output is deterministic: the same meshes, nodes and extras give the same bytes (float32 vertex data,
fixed JSON field order, no timestamps).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pygltflib import (
    ARRAY_BUFFER,
    ELEMENT_ARRAY_BUFFER,
    FLOAT,
    GLTF2,
    UNSIGNED_INT,
    Accessor,
    Asset,
    Attributes,
    Buffer,
    BufferView,
)
from pygltflib import Mesh as GltfMesh
from pygltflib import Node as GltfNode
from pygltflib import Primitive, Scene

GENERATOR = "open4wd-node builtin generator"


def translation_matrix(x: float, y: float, z: float) -> list[list[float]]:
    """A row-major 4×4 translation (metres)."""
    return [[1.0, 0.0, 0.0, x], [0.0, 1.0, 0.0, y], [0.0, 0.0, 1.0, z], [0.0, 0.0, 0.0, 1.0]]


def frame_matrix(
    origin: tuple[float, float, float],
    x_axis: tuple[float, ...],
    y_axis: tuple[float, ...],
    z_axis: tuple[float, ...],
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0),
) -> list[list[float]]:
    """Row-major 4×4 from an origin and three axis columns (each scaled)."""
    cols = [[a * scale[i] for a in axis] for i, axis in enumerate((x_axis, y_axis, z_axis))]
    return [[cols[0][r], cols[1][r], cols[2][r], origin[r]] for r in range(3)] + [[0.0, 0.0, 0.0, 1.0]]


class GlbBuilder:
    """Builds one GLB from meshes and named nodes, deterministically (the built-ins and test fixtures)."""

    def __init__(self) -> None:
        self.gltf = GLTF2(asset=Asset(generator=GENERATOR, version="2.0"), scene=0)
        self.blob = bytearray()
        self.roots: list[int] = []

    def _view(self, data: bytes, target: int) -> int:
        self.blob += b"\0" * (-len(self.blob) % 4)
        self.gltf.bufferViews.append(BufferView(buffer=0, byteOffset=len(self.blob), byteLength=len(data), target=target))
        self.blob += data
        return len(self.gltf.bufferViews) - 1

    def mesh(self, vertices: np.ndarray, triangles: np.ndarray, extra_primitive: dict[str, Any] | None = None) -> int:
        """A one-primitive triangle mesh from (N, 3) positions in metres and (M, 3) indices."""
        pos = np.ascontiguousarray(vertices, dtype="<f4")
        idx = np.ascontiguousarray(triangles, dtype="<u4").reshape(-1)
        pos_view = self._view(pos.tobytes(), ARRAY_BUFFER)
        self.gltf.accessors.append(
            Accessor(
                bufferView=pos_view,
                componentType=FLOAT,
                count=len(pos),
                type="VEC3",
                min=[float(v) for v in pos.min(axis=0)],
                max=[float(v) for v in pos.max(axis=0)],
            )
        )
        idx_view = self._view(idx.tobytes(), ELEMENT_ARRAY_BUFFER)
        self.gltf.accessors.append(Accessor(bufferView=idx_view, componentType=UNSIGNED_INT, count=len(idx), type="SCALAR"))
        prim = Primitive(attributes=Attributes(POSITION=len(self.gltf.accessors) - 2), indices=len(self.gltf.accessors) - 1)
        if extra_primitive:
            prim.extensions = extra_primitive
        self.gltf.meshes.append(GltfMesh(primitives=[prim]))
        return len(self.gltf.meshes) - 1

    def node(
        self,
        name: str,
        *,
        mesh: int | None = None,
        matrix: list[list[float]] | None = None,
        extras: dict[str, Any] | None = None,
        parent: int | None = None,
    ) -> int:
        """Add a named node (a mesh node when ``mesh`` is given, else an empty) under ``parent`` or at the
        scene root; its index. An identity ``matrix`` is left out."""
        node = GltfNode(name=name, mesh=mesh, extras=extras or {})
        if matrix is not None and matrix != translation_matrix(0.0, 0.0, 0.0):
            node.matrix = [float(matrix[r][c]) for c in range(4) for r in range(4)]
        self.gltf.nodes.append(node)
        index = len(self.gltf.nodes) - 1
        if parent is None:
            self.roots.append(index)
        else:
            self.gltf.nodes[parent].children.append(index)
        return index

    def build(self, root_extras: dict[str, Any], location: str = "scene") -> bytes:
        """The GLB bytes; root extras go on the default scene (or the glTF root)."""
        self.gltf.scenes = [Scene(nodes=list(self.roots), extras=root_extras if location == "scene" else {})]
        if location == "root":
            self.gltf.extras = root_extras
        self.gltf.buffers = [Buffer(byteLength=len(self.blob))]
        self.gltf.set_binary_blob(bytes(self.blob))
        return b"".join(self.gltf.save_to_bytes())
