"""A body's baked aero: drag areas and centres of pressure from the real mesh, the authored lift factor,
its coded refusals, the ``auto_aero`` cache and the conversion into ``PartSpec.aero``."""

from __future__ import annotations

from decimal import Decimal

import pytest

from sim_core.assets.admission import admit
from sim_core.assets.bake import bake
from sim_core.assets.builtins import admitted_builtin
from sim_core.assets.demo_round import archetype_vehicle
from sim_core.assets.glb_build import GlbBuilder, translation_matrix
from sim_core.assets.reader import read_glb
from sim_core.assets.shapes import box
from sim_core.specs.vehicle import AeroSpec
from tests.sim_core.assets.crafting import edit, set_root, source
from tests.sim_core.assets.test_part_rules import codes

MM2 = 1_000_000  # µm² per mm²


def test_a_hollow_body_counts_its_outer_skin_only():
    """body-01 is a 76 × 30 × 124 mm box shell (x −38..38, y 6..36, z −62..62 mm) with a sealed cavity: each
    axis' area is the outer face (the cavity's inverted walls never meet the air), the COP its centre."""
    m = admitted_builtin("builtin:body-01").manifest
    axes = m["body"]["aero"]["axes"]
    assert {k: v["drag_area_um2"] for k, v in axes.items()} == {
        "positiveX": 30 * 124 * MM2, "negativeX": 30 * 124 * MM2,
        "positiveY": 76 * 124 * MM2, "negativeY": 76 * 124 * MM2,
        "positiveZ": 76 * 30 * MM2, "negativeZ": 76 * 30 * MM2,
    }
    assert axes["negativeZ"]["center_of_pressure_um"] == [0, 21_000, -62_000]
    assert axes["positiveY"]["center_of_pressure_um"] == [0, 36_000, 0]
    assert axes["negativeX"]["center_of_pressure_um"] == [-38_000, 21_000, 0]
    # the contact area counts the cavity's faces too: the aero area is strictly the outer face
    assert m["geometry"]["contact_area_um2"]["front"] > axes["negativeZ"]["drag_area_um2"]
    assert m["body"]["aero"]["lift_factor_milli"] == 0
    assert admitted_builtin("builtin:body-03").manifest["body"]["aero"]["lift_factor_milli"] == 200


def _two_block_body(**fields: object) -> bytes:
    """A body of two solid blocks: a 40 × 10 × 100 mm base and a 20 × 10 × 20 mm cabin on it (one mesh
    each). The blocks only touch, so each block's faces count whole (the base's top under the cabin too:
    the rule sums faces, it does not cast shadows)."""
    b = GlbBuilder()
    b.node("Base", mesh=b.mesh(*box((-0.02, 0.0, -0.05), (0.02, 0.01, 0.05))))
    b.node("Cabin", mesh=b.mesh(*box((-0.01, 0.01, -0.01), (0.01, 0.02, 0.01))))
    for name, x, z in (("Mount_Body_F", 0.0, -0.04), ("Mount_Body_RL", -0.015, 0.04), ("Mount_Body_RC", 0.0, 0.04),
                       ("Mount_Body_RR", 0.015, 0.04)):
        b.node(name, matrix=translation_matrix(x, 0.0, z))
    return b.build({"open4wd_version": 1, "type": "body", "material": "abs", **fields})


def test_areas_and_centres_of_pressure_add_over_sub_meshes_hand_computed():
    aero = admit(bake(_two_block_body(lift_factor=-0.25))).manifest["body"]["aero"]
    front = aero["axes"]["negativeZ"]  # base 40×10 at z=−50, cabin 20×10 at z=−10 (mm)
    assert front["drag_area_um2"] == (400 + 200) * MM2
    # COP z = (400·−50 + 200·−10)/600 = −36.667 mm; y = (400·5 + 200·15)/600 = 8.333 mm
    assert front["center_of_pressure_um"] == [0, 8_333, -36_667]
    top = aero["axes"]["positiveY"]  # base top 40×100 at y=10 and cabin top 20×20 at y=20
    assert top["drag_area_um2"] == (4000 + 400) * MM2
    assert top["center_of_pressure_um"] == [0, 10_909, 0]  # (4000·10 + 400·20)/4400 mm
    assert aero["lift_factor_milli"] == -250


def test_bake_writes_the_auto_aero_cache_in_metres():
    extras = read_glb(bake(source("body-03"))).root_extras
    cache = extras["auto_aero"]
    assert cache["lift_factor"] == Decimal("0.2")
    assert cache["axes"]["negativeZ"] == {"drag_area_m2": Decimal("0.002432"),
                                         "center_of_pressure_m": [Decimal("0"), Decimal("0.022"), Decimal("-0.062")]}


@pytest.mark.parametrize("value", [1.5, -1.001, 0.0005, "strong", True])
def test_a_bad_lift_factor_is_refused(value):
    assert codes(edit(source("body-01"), set_root(lift_factor=value))) == ["field-invalid"]


def test_lift_factor_belongs_to_a_body():
    assert codes(edit(source("chip-01"), set_root(lift_factor=0.1))) == ["field-invalid"]
    assert codes(edit(source("body-01"), set_root(lift_factor=-1))) == []


def test_the_built_in_cars_carry_their_bodies_aero():
    speed, control = archetype_vehicle(1), archetype_vehicle(3)
    body = next(p for p in speed.parts if p.part_type == "body")
    assert body.aero == AeroSpec(
        drag_area_um2=(30 * 124 * MM2, 30 * 124 * MM2, 76 * 124 * MM2, 76 * 124 * MM2, 76 * 30 * MM2, 76 * 30 * MM2),
        center_of_pressure_um=((38_000, 21_000, 0), (-38_000, 21_000, 0), (0, 36_000, 0), (0, 6_000, 0),
                               (0, 21_000, 62_000), (0, 21_000, -62_000)),
        lift_factor_milli=0,
    )
    assert next(p for p in control.parts if p.part_type == "body").aero.lift_factor_milli == 200
    assert all(p.aero is None for p in speed.parts if p.part_type != "body")
