"""Loadout assembly: every archetype is a legal car; each loadout code has its trigger."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim_core.assets.admission import AdmittedAsset
from sim_core.assets.builtins import admitted_builtin
from sim_core.assets.loadout import assemble

ROLLERS = {1: ("FL", "FR"), 2: ("FL", "FR", "CL", "CR", "RL", "RR"), 3: ("FL", "FR", "RL", "RR")}


def archetype(n: int, **overrides: Any) -> dict[str, Any]:
    ref = lambda kind: f"builtin:{kind}-{n:02d}"  # noqa: E731
    loadout = {
        "chassis": ref("chassis"), "body": ref("body"), "motor": ref("motor"), "battery": ref("battery"),
        "tires": {s: ref("tire") for s in ("FL", "FR", "RL", "RR")}, "rollers": {s: ref("roller") for s in ROLLERS[n]},
        "chip": ref("chip"), "weapon": ref("weapon"),
    }
    loadout.update(overrides)
    return loadout


def codes(loadout: dict[str, Any], resolver: Any = admitted_builtin) -> list[str]:
    findings, _ = assemble(loadout, resolver)
    return sorted(set(f.code for f in findings.errors))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_every_archetype_assembles_into_a_legal_car(n: int) -> None:
    findings, car = assemble(archetype(n), admitted_builtin)
    assert not findings.rejected, findings.codes()
    assert car is not None
    size = [car.aabb_max_um[k] - car.aabb_min_um[k] for k in range(3)]
    assert size[0] <= 130_000 and size[1] <= 100_000 and size[2] <= 250_000
    assert 50_000_000 <= car.total_mass_ug <= 500_000_000
    assert car.mass_ratio_x1000() <= 300_000


def test_speed_build_matches_the_spec_figures() -> None:
    """Weakest speed build ≈ 125.4 W and ≈ 215 g with 12 parts; body/roller ≈ 249:1 (spec/assets.md §10)."""
    _, car = assemble(archetype(1), admitted_builtin)
    assert car is not None and len(car.parts) == 12
    motor, battery = car.part("motor").manifest["motor"], car.part("battery").manifest["battery"]  # type: ignore[union-attr]
    assert min(motor["input_mw"], battery["configured_output_mw"]) == 125_379
    assert 210_000_000 <= car.total_mass_ug <= 220_000_000
    body, roller = car.part("body").mass_ug, car.part("roller_FL").mass_ug  # type: ignore[union-attr]
    assert 248 * roller <= body <= 251 * roller
    assert car.passive_mass_reduction_x100 == 450  # chip weapon slot 30 % × split 50 × 30 / 100


def test_wheels_hinge_on_the_chassis_mounts() -> None:
    _, car = assemble(archetype(1), admitted_builtin)
    assert car is not None
    tire = car.part("tire_FR")
    assert tire is not None and tire.chassis_mount == "Mount_Tire_FR"
    assert tire.placement.apply((0, 0, 0)) == (41_000, 3_000, -48_000)
    motor = car.part("motor")
    assert motor is not None and motor.placement.apply((0, -12_000, 0)) == (0, 6_000, 36_000)


def test_missing_parts_and_bad_refs() -> None:
    assert codes(archetype(1, motor=None)) == ["loadout-missing-part"]
    assert codes(archetype(1, tires={"FL": "builtin:tire-01"})) == ["loadout-missing-part"]
    assert codes(archetype(1, chip=None)) == ["loadout-weapon-requires-chip"]
    assert codes(archetype(1, body="builtin:body-09")) == ["loadout-unknown-builtin"]
    assert codes(archetype(1, body="builtin:motor-01")) == ["loadout-part-type-mismatch"]
    assert codes(archetype(1, body="local:3f2a")) == ["loadout-ref-invalid"]
    assert codes(archetype(1, spoiler="builtin:body-01")) == ["loadout-invalid"]
    assert codes(archetype(1, rollers={"XX": "builtin:roller-01"})) == ["loadout-invalid"]


def test_passive_split_rules() -> None:
    assert codes(archetype(1, passiveWeightSplitPct=101)) == ["loadout-passive-split-range"]
    assert codes(archetype(1, passiveWeightSplitPct=True)) == ["loadout-passive-split-range"]
    assert codes(archetype(2, passiveWeightSplitPct=50)) == ["loadout-passive-split-target"]  # active weapon
    assert codes(archetype(1, weapon=None, passiveWeightSplitPct=50)) == ["loadout-passive-split-target"]
    _, car = assemble(archetype(1, passiveWeightSplitPct=100), admitted_builtin)
    assert car is not None and (car.passive_mass_reduction_x100, car.passive_resist_x100) == (900, 0)


def test_part_mass_ratio_limit_with_real_builtins() -> None:
    """The heavy body (≈ 135 g) with the speed roller (≈ 0.3 g) is ≈ 455:1, above 300."""
    assert codes(archetype(2, rollers={"FL": "builtin:roller-01"})) == ["loadout-part-mass-ratio"]


def _scaled(ref: str, factor: int) -> AdmittedAsset:
    asset = admitted_builtin(ref)
    manifest = copy.deepcopy(asset.manifest)
    manifest["geometry"]["mass_ug"] *= factor
    g = manifest["geometry"]
    g["aabb_min_um"] = [v * factor for v in g["aabb_min_um"]]
    g["aabb_max_um"] = [v * factor for v in g["aabb_max_um"]]
    return replace(asset, manifest=manifest)


def test_total_mass_and_aabb_limits() -> None:
    heavy_body = lambda ref: _scaled(ref, 4) if ref == "builtin:body-02" else admitted_builtin(ref)  # noqa: E731
    assert "loadout-mass-out-of-range" in codes(archetype(2), heavy_body)
    assert "loadout-aabb-exceeded" in codes(archetype(2), heavy_body)


def test_chip_weapon_slot_without_weapon_is_only_a_warning() -> None:
    findings, car = assemble(archetype(1, weapon=None), admitted_builtin)
    assert car is not None and findings.codes() == ["loadout-weapon-skill-unused"]


def _without_mount(ref: str) -> AdmittedAsset:
    asset = admitted_builtin(ref)
    manifest = copy.deepcopy(asset.manifest)
    manifest["mounts"] = []
    return replace(asset, manifest=manifest)


def test_mount_missing_and_solver_floor() -> None:
    no_mount = lambda ref: _without_mount(ref) if ref == "builtin:motor-01" else admitted_builtin(ref)  # noqa: E731

    assert codes(archetype(1), no_mount) == ["loadout-mount-missing"]

    def feather_chassis(ref: str) -> AdmittedAsset:
        asset = admitted_builtin(ref)
        if ref != "builtin:chassis-03":
            return asset
        manifest = copy.deepcopy(asset.manifest)
        manifest["geometry"]["mass_ug"] = 900_000
        return replace(asset, manifest=manifest)

    assert "loadout-chassis-solver-floor" in codes(archetype(3), feather_chassis)


LOADOUT_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.sampled_from(["builtin:chip-01", "builtin:tire-01", "builtin:weapon-02", "builtin:chassis-09", "a" * 64]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["FL", "FR", "RL", "RR", "CL", "x"]), inner, max_size=4)
    ),
    max_leaves=6,
)
LOADOUT_KEYS = st.sampled_from(
    ["chassis", "body", "motor", "battery", "tires", "rollers", "chip", "weapon", "passiveWeightSplitPct", "spoiler"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 3), st.dictionaries(LOADOUT_KEYS, LOADOUT_VALUES, max_size=4))
def test_any_json_in_any_slot_is_a_finding_or_a_car(n: int, changes: dict[str, Any]) -> None:
    """A loadout file holds whatever its author typed: every value is refused with a code or builds a car."""
    findings, car = assemble(archetype(n, **changes), admitted_builtin)
    assert car is not None or findings.errors
    assert all(f.code.startswith("loadout-") or f.code in ("unknown-builtin", "builtin-missing") for f in findings.items), (
        findings.codes()
    )
