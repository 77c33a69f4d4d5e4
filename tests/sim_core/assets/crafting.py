"""Helpers that craft real GLB files for the tests: built-in sources, JSON-level edits, raw containers."""

from __future__ import annotations

import copy
import functools
import json
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sim_core.assets.builtin_gen import _FORWARD_AXIS, _box_mm, _empty, _mm, _part, _solid, generate_sources
from sim_core.assets.container import read_container
from sim_core.assets.encoding import write_glb
from sim_core.assets.glb_build import GlbBuilder, frame_matrix, translation_matrix
from sim_core.assets.shapes import box

Doc = dict[str, Any]


@functools.cache
def _sources() -> dict[str, bytes]:
    return generate_sources()


def source(stem: str) -> bytes:
    """The unbaked generator output of a built-in (``chip-01``, ``track-02``, …)."""
    return _sources()[stem]


def spinner_source() -> bytes:
    """An unbaked active general weapon: one continuous rotor (steel) over an aluminium base, the shape
    of the built-in heavy weapon (which is a magnet): what the actuator rules are tried on."""
    b = GlbBuilder()
    _solid(b, "Spinner_Base", _box_mm((-10, 0, -20), (10, 16, 0)))
    _solid(b, "Spinner_Rotor", _box_mm((-20, 16, -30), (20, 20, -22)))
    b.node("Axis", matrix=frame_matrix(_mm(0, 8, -20), *_FORWARD_AXIS))
    _empty(b, "Pivot_Rotor", (0, 18, -26))
    _empty(b, "Mount_Weapon", (0, 0, 0))
    return b.build(_part(
        "weapon", "aluminum", passive=False, weapon_mechanism="general", weapon_main_mesh_node="Spinner_Base",
        materials=[{"mesh_node": "Spinner_Rotor", "material": "steel"}],
        weapon_actuators=[{"pivot_node": "Pivot_Rotor", "rotation_axis": [0, 1, 0], "weapon_max_angle_deg": 360,
                           "motion_curve": "linear", "mesh_node": "Spinner_Rotor"}],
    ))


def edit(data: bytes, change: Callable[[Doc], None]) -> bytes:
    """Apply ``change`` to a copy of the GLB's JSON document and re-pack it with the same BIN chunk."""
    container = read_container(data)
    doc = copy.deepcopy(container.doc)
    change(doc)
    return write_glb(doc, container.bin_chunk)


def root(doc: Doc) -> dict[str, Any]:
    """Root extras as the generator writes them (default scene's extras)."""
    return doc["scenes"][0]["extras"]


def node(doc: Doc, name: str) -> dict[str, Any]:
    return next(n for n in doc["nodes"] if n.get("name") == name)


def set_root(**values: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        root(doc).update(values)

    return change


def drop_root(*keys: str) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        for key in keys:
            root(doc).pop(key, None)

    return change


def move_node(name: str, x: float, y: float, z: float) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        n = node(doc, name)
        n.pop("matrix", None)
        n["translation"] = [Decimal(repr(x)), Decimal(repr(y)), Decimal(repr(z))]

    return change


def raw_glb(json_bytes: bytes, bin_chunk: bytes = b"") -> bytes:
    """A GLB container around arbitrary JSON chunk bytes (for container-level tests)."""
    json_bytes += b" " * (-len(json_bytes) % 4)
    body = struct.pack("<II", len(json_bytes), 0x4E4F534A) + json_bytes
    if bin_chunk:
        bin_chunk += b"\0" * (-len(bin_chunk) % 4)
        body += struct.pack("<II", len(bin_chunk), 0x004E4942) + bin_chunk
    return b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body


def json_glb(doc: Doc, bin_chunk: bytes = b"") -> bytes:
    return raw_glb(json.dumps(doc).encode(), bin_chunk)


def box_part(kind: str, material: str, size_mm: tuple[float, float, float], mount: str, **fields: Any) -> bytes:
    """A one-box part with its mount empty at the box's bottom centre (unbaked source)."""
    b = GlbBuilder()
    sx, sy, sz = (v / 1000 for v in size_mm)
    b.node("Block", mesh=b.mesh(*box((-sx / 2, 0.0, -sz / 2), (sx / 2, sy, sz / 2))))
    b.node(mount, matrix=translation_matrix(0.0, 0.0, 0.0))
    return b.build({"open4wd_version": 1, "type": kind, "material": material, **fields})
