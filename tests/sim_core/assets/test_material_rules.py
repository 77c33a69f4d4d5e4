"""Material scope rules and the client-local deprecated list (no global state)."""

from __future__ import annotations

from pathlib import Path

from open4wd_node.runtime.context import NodeContext
from sim_core.assets.findings import Findings
from sim_core.assets.material_rules import DEPRECATED_MATERIAL_IDS, check_material, deprecated_set, is_material_deprecated
from sim_core.specs.materials import MATERIALS


def test_shipped_list_is_empty_and_extendable_per_node(tmp_path: Path) -> None:
    assert DEPRECATED_MATERIAL_IDS == frozenset()
    assert not is_material_deprecated("abs")
    (tmp_path / "node.toml").write_text('deprecated_materials = ["abs"]\n')
    ctx = NodeContext.open(tmp_path, None).with_overrides(economy_config_version=None, deprecated_materials=["pc"])
    mine = deprecated_set(ctx.config.deprecated_materials)
    assert mine == {"abs", "pc"}
    assert is_material_deprecated("abs", mine) and is_material_deprecated("pc", mine)
    assert not is_material_deprecated("abs")  # another node's list is untouched


def test_scope_classes_follow_the_table() -> None:
    def allowed(mid: str, part_type: str | None) -> bool:
        findings = Findings()
        return check_material(mid, "x", findings, part_type=part_type, deprecated=frozenset(), for_new_product=True) is not None

    vehicle = [m.id for m in MATERIALS if allowed(m.id, "chassis")]
    weapon = [m.id for m in MATERIALS if allowed(m.id, "weapon")]
    track = [m.id for m in MATERIALS if allowed(m.id, None)]
    assert len(vehicle) == 14 and vehicle[-1] == "steel"
    assert len(weapon) == 19 and "lava" in weapon and "asphalt" not in weapon  # fluids only on weapons
    assert len(track) == 31


def test_a_table_that_lets_fluids_onto_other_parts_is_refused() -> None:
    import dataclasses

    import pytest

    from sim_core.assets.material_rules import check_scope_invariants
    from sim_core.errors import SimError

    check_scope_invariants(MATERIALS)
    oil = next(m for m in MATERIALS if m.id == "oil")
    leaky = tuple(dataclasses.replace(m, allowed_part_types=("weapon", "tire")) if m is oil else m for m in MATERIALS)
    with pytest.raises(SimError) as exc:
        check_scope_invariants(leaky)
    assert exc.value.code == "material-table-invalid"
