"""Properties: exact geometry, module purity, and loadout assembly that never crashes."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim_core.assets.builtins import BUILTIN_REFS, admitted_builtin
from sim_core.assets.geometry import measure
from sim_core.assets.loadout import assemble
from sim_core.assets.reader import Mesh
from sim_core.assets.shapes import box
from tests.layout import REPO_ROOT

ASSETS = REPO_ROOT / "sim_core" / "assets"
# bake-time floats (reading and authoring geometry, the surface-snap distance, writing float repr)
# and path joins (builtin_write)
EXEMPT = {"reader.py", "surface.py", "shapes.py", "glb_build.py", "builtin_gen.py", "encoding.py", "builtin_write.py"}
FORBIDDEN = {"trio", "protocol", "open4wd_node"}

coords = st.integers(-200_000, 200_000)
sizes = st.integers(1_000, 100_000)


@settings(max_examples=60, deadline=None)
@given(coords, coords, coords, sizes, sizes, sizes)
def test_box_measures_are_exact(x: int, y: int, z: int, sx: int, sy: int, sz: int) -> None:
    v, t = box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    vertices = (v.astype(np.int64) * np.array([sx, sy, sz]) + np.array([x, y, z])).astype(np.int64)
    m = measure(Mesh(vertices, t))
    assert m.watertight and m.volume_um3 == sx * sy * sz
    assert m.aabb_min_um == (x, y, z) and m.aabb_max_um == (x + sx, y + sy, z + sz)
    assert all(abs(2 * c - (2 * lo + s)) <= 1 for c, lo, s in zip(m.centroid_um(), (x, y, z), (sx, sy, sz), strict=True))
    assert m.contact_um2["top"] == m.contact_um2["bottom"] == sx * sz
    inverted = measure(Mesh(vertices, t[:, ::-1]))
    assert inverted.six_volume_um3 == -m.six_volume_um3


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_asset_pipeline_stays_pure_and_float_free_after_reading() -> None:
    for path in sorted(ASSETS.glob("*.py")):
        assert not _imports(path) & FORBIDDEN, f"{path.name} imports {_imports(path) & FORBIDDEN}"
        if path.name in EXEMPT:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            assert not (isinstance(node, ast.Constant) and isinstance(node.value, float)), f"{path.name}: float literal"
            assert not isinstance(node, ast.Div), f"{path.name}: true division"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("float", "round"), f"{path.name}: {node.func.id}()"


REFS = (
    st.sampled_from(BUILTIN_REFS + ("builtin:chassis-99", "local:x", "0" * 64, ""))
    | st.text(max_size=5)
    | st.none()
    | st.integers()
)
SLOT_MAP = st.dictionaries(st.sampled_from(["FL", "FR", "RL", "RR", "CL", "CR", "XX"]), REFS, max_size=6) | REFS
LOADOUTS = st.fixed_dictionaries(
    {},
    optional={k: REFS for k in ("chassis", "body", "motor", "battery", "chip", "weapon")}
    | {
        "tires": SLOT_MAP,
        "rollers": SLOT_MAP,
        "passiveWeightSplitPct": st.integers(-5, 105) | st.booleans() | st.none(),
        "junk": REFS,
    },
)


def _resolver(ref: str) -> Any:
    return admitted_builtin(ref)  # unknown refs raise SimError, which assembly turns into findings


@settings(max_examples=150, deadline=None)
@given(LOADOUTS)
def test_any_loadout_gives_findings_or_a_car(loadout: dict[str, Any]) -> None:
    findings, car = assemble(loadout, _resolver)
    assert (car is None) == findings.rejected
