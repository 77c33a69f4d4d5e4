"""Loadout assembly (車輛組裝.md §2–§8, spec/assets.md §7): refs → a legal car, or coded findings.

Everything is integer: each part is placed with ``chassisMount × inverse(partMount)`` using ppm rotation
matrices and µm translations, masses are effective µg (after the passive weapon boost), and the union
AABB, total mass, part mass ratio and centre of mass are exact.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sim_core.assets import constants as C
from sim_core.assets.admission import AdmittedAsset
from sim_core.assets.builtins import is_builtin_ref, stem_of, type_of
from sim_core.assets.findings import Findings, shown
from sim_core.assets.mounts import ROLLER_SLOTS, TIRE_SLOTS, mount_matches
from sim_core.errors import SimError
from sim_core.intmath import round_div

Resolver = Callable[[str], AdmittedAsset]
Rotation = tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int, int]]  # rows, ppm
_CONTENT_ID = re.compile(r"^[0-9a-f]{64}$")
_SINGLE = ("chassis", "body", "motor", "battery")
_KNOWN_KEYS = (*_SINGLE, "tires", "rollers", "chip", "weapon", "passiveWeightSplitPct")
IDENTITY: Rotation = ((1_000_000, 0, 0), (0, 1_000_000, 0), (0, 0, 1_000_000))


@dataclass(frozen=True, slots=True)
class Placement:
    """x_chassis = rotation · (x_part − part_origin) / 1e6 + chassis_origin (µm, ppm)."""

    rotation: Rotation
    part_origin_um: tuple[int, int, int]
    chassis_origin_um: tuple[int, int, int]

    def apply(self, p: tuple[int, ...] | list[int]) -> tuple[int, int, int]:
        """A part-local point (µm) in chassis coordinates (µm, rounded half away from zero)."""
        d = [p[k] - self.part_origin_um[k] for k in range(3)]
        return tuple(
            round_div(sum(self.rotation[r][k] * d[k] for k in range(3)), 1_000_000) + self.chassis_origin_um[r] for r in range(3)
        )  # type: ignore[return-value]


@dataclass(frozen=True)
class PlacedPart:
    """One part of an assembled car: its loadout slot and ref, the admitted asset, its effective mass
    and where it sits on the chassis (``chassis_mount`` None for the chassis itself)."""

    slot: str  # chassis, body, motor, battery, tire_FL…, roller_FL…, chip, weapon
    ref: str
    asset: AdmittedAsset
    mass_ug: int  # effective (passive boost applied to the weapon)
    placement: Placement
    chassis_mount: str | None

    @property
    def manifest(self) -> dict[str, Any]:
        """The part's admitted manifest."""
        return self.asset.manifest


@dataclass(frozen=True)
class AssembledVehicle:
    """A legal car from a loadout: placed parts, total effective mass, centre of mass, the assembled
    AABB (µm), the passive weapon boost and the loadout's warnings."""

    parts: tuple[PlacedPart, ...]
    total_mass_ug: int
    centre_of_mass_um: tuple[int, int, int]
    aabb_min_um: tuple[int, int, int]
    aabb_max_um: tuple[int, int, int]
    passive_mass_reduction_x100: int
    passive_resist_x100: int
    warnings: tuple[Any, ...] = field(default=())

    def part(self, slot: str) -> PlacedPart | None:
        """The part in ``slot`` (``chassis``, ``tire_FL``, …), or None when the slot is empty."""
        return next((p for p in self.parts if p.slot == slot), None)

    def mass_ratio_x1000(self) -> int:
        """Heaviest / lightest part mass ×1000 (the assembly limit is 300 000)."""
        masses = [p.mass_ug for p in self.parts]
        return max(masses) * 1000 // max(1, min(masses))


def _rotation(axes_ppm: list[list[int]]) -> Rotation:
    return tuple(tuple(axes_ppm[c][r] for c in range(3)) for r in range(3))  # type: ignore[return-value]


def placement(chassis_mount: dict[str, Any], part_mount: dict[str, Any]) -> Placement:
    """The ``Placement`` that puts ``part_mount`` onto ``chassis_mount``: rotation Rc·Rpᵀ (ppm), then the
    origins (µm)."""
    rc, rp = _rotation(chassis_mount["axes_ppm"]), _rotation(part_mount["axes_ppm"])
    rot = tuple(
        tuple(round_div(sum(rc[r][k] * rp[c][k] for k in range(3)), 1_000_000) for c in range(3)) for r in range(3)
    )  # Rc·Rpᵀ
    return Placement(rot, tuple(part_mount["position_um"]), tuple(chassis_mount["position_um"]))  # type: ignore[arg-type]


def _slots(loadout: dict[str, Any], findings: Findings) -> list[tuple[str, str, str]]:
    """(slot, ref, expected part type) for every filled slot; shape errors become findings."""
    unknown = sorted(set(loadout) - set(_KNOWN_KEYS))
    if unknown:
        findings.error("loadout-invalid", f"unknown loadout key(s) {', '.join(unknown)}; allowed: {', '.join(_KNOWN_KEYS)}")
    slots = []
    for key in _SINGLE:
        ref = loadout.get(key)
        if not ref:
            findings.error("loadout-missing-part", f"slot {key} is empty; a car needs chassis, body, motor, battery and 4 tires")
        else:
            slots.append((key, ref, key))
    tires = loadout.get("tires")
    if not isinstance(tires, dict) or set(tires) != set(TIRE_SLOTS) or not all(tires.values()):
        findings.error("loadout-missing-part", f"tires must map exactly {', '.join(TIRE_SLOTS)} to part refs")
    else:
        slots += [(f"tire_{s}", tires[s], "tire") for s in TIRE_SLOTS]
    rollers = loadout.get("rollers", {})
    if not isinstance(rollers, dict) or not set(rollers) <= set(ROLLER_SLOTS):
        findings.error("loadout-invalid", f"rollers must map a subset of {', '.join(ROLLER_SLOTS)} to part refs")
    else:
        slots += [(f"roller_{s}", rollers[s], "roller") for s in ROLLER_SLOTS if rollers.get(s)]
    for key in ("chip", "weapon"):
        if loadout.get(key):
            slots.append((key, loadout[key], key))
    if loadout.get("weapon") and not loadout.get("chip"):
        findings.error("loadout-weapon-requires-chip", "a weapon needs a chip in the loadout")
    return slots


def _resolve(slot: str, ref: Any, expected: str, resolver: Resolver, findings: Findings) -> AdmittedAsset | None:
    if not isinstance(ref, str) or not (is_builtin_ref(ref) or _CONTENT_ID.match(ref)):
        findings.error(
            "loadout-ref-invalid",
            f"slot {slot}: {shown(ref)} is neither builtin:<type>-NN nor a content id (64 hex); "
            "local: refs are for the test slot only",
        )
        return None
    if is_builtin_ref(ref):
        try:
            stem_of(ref)
        except SimError:
            findings.error("loadout-unknown-builtin", f"slot {slot}: {ref} is not a known built-in")
            return None
        if type_of(ref) != expected:
            findings.error("loadout-part-type-mismatch", f"slot {slot} needs a {expected}; {ref} is a {type_of(ref)}")
            return None
    try:
        asset = resolver(ref)
    except SimError as exc:
        findings.error(exc.code, f"slot {slot}: {exc.message}")
        return None
    if asset.asset_type != expected:
        findings.error("loadout-part-type-mismatch", f"slot {slot} needs a {expected}; {ref} is a {asset.asset_type}")
        return None
    return asset


def _mount(manifest: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((m for m in manifest["mounts"] if m["name"] == name), None)


def _chassis_mount_name(slot: str) -> str:
    if slot == "body":
        return "Mount_Body_F"
    kind, _, position = slot.partition("_")
    return f"Mount_{kind.capitalize()}" + (f"_{position}" if position else "")


def _passive(
    loadout: dict[str, Any], weapon: AdmittedAsset | None, chip: AdmittedAsset | None, findings: Findings
) -> tuple[int, int]:
    """(massReductionPctX100, resistPctX100) of the passive weapon boost (算式表.md §3)."""
    split = loadout.get("passiveWeightSplitPct")
    if split is not None and (isinstance(split, bool) or not isinstance(split, int) or not 0 <= split <= 100):
        findings.error("loadout-passive-split-range", f"passiveWeightSplitPct must be an integer 0–100, got {shown(split)}")
        return 0, 0
    passive = weapon is not None and weapon.manifest["weapon"]["passive"]
    if split is not None and not passive:
        findings.error("loadout-passive-split-target", "passiveWeightSplitPct applies only to a passive weapon")
        return 0, 0
    if not passive or chip is None:
        return 0, 0
    pct = next((s["allocation_pct"] for s in chip.manifest["chip"]["skill_slots"] if s["skill"] == "weapon"), 0)
    split = C.PASSIVE_SPLIT_DEFAULT_PCT if split is None else split
    return pct * split * C.K_PASSIVE_EFFECT_MAX_PCT // 100, pct * (100 - split) * C.K_PASSIVE_EFFECT_MAX_PCT // 100


def _corners(lo: list[int], hi: list[int]) -> list[tuple[int, int, int]]:
    return [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]


def assemble(loadout: dict[str, Any], resolver: Resolver) -> tuple[Findings, AssembledVehicle | None]:
    """Check every loadout rule; the assembled car when all pass."""
    findings = Findings()
    if not isinstance(loadout, dict):
        findings.error("loadout-invalid", "a loadout is an object of slot → part ref")
        return findings, None
    resolved = {slot: (ref, _resolve(slot, ref, kind, resolver, findings)) for slot, ref, kind in _slots(loadout, findings)}
    if findings.rejected or any(a is None for _, a in resolved.values()):
        return findings, None
    assets = {slot: a for slot, (_, a) in resolved.items()}
    reduction, resist = _passive(loadout, assets.get("weapon"), assets.get("chip"), findings)
    chassis = assets["chassis"].manifest  # type: ignore[union-attr]
    parts = []
    for slot, (ref, asset) in resolved.items():
        assert asset is not None
        mass = asset.manifest["geometry"]["mass_ug"]
        if slot == "weapon":
            mass = mass * (10_000 - reduction) // 10_000
        if slot == "chassis":
            parts.append(PlacedPart(slot, ref, asset, mass, Placement(IDENTITY, (0, 0, 0), (0, 0, 0)), None))
            continue
        chassis_name = _chassis_mount_name(slot)
        chassis_mount = _mount(chassis, chassis_name)
        part_mount = next((m for m in asset.manifest["mounts"] if chassis_mount and mount_matches(m["name"], chassis_name)), None)
        if chassis_mount is None or part_mount is None:
            findings.error("loadout-mount-missing", f"slot {slot}: {ref} has no mount matching the chassis's {chassis_name}")
            continue
        parts.append(PlacedPart(slot, ref, asset, mass, placement(chassis_mount, part_mount), chassis_name))
    if findings.rejected:
        return findings, None
    if (
        loadout.get("chip")
        and loadout.get("weapon") is None
        and any(s["skill"] == "weapon" for s in assets["chip"].manifest["chip"]["skill_slots"])  # type: ignore[union-attr]
    ):
        findings.warn("loadout-weapon-skill-unused", "the chip allocates a weapon skill slot but the car has no weapon")
    return findings, _finish(parts, reduction, resist, findings)


def _finish(parts: list[PlacedPart], reduction: int, resist: int, findings: Findings) -> AssembledVehicle | None:
    total = sum(p.mass_ug for p in parts)
    if not C.VEHICLE_MASS_MIN_UG <= total <= C.VEHICLE_MASS_MAX_UG:
        findings.error("loadout-mass-out-of-range", f"the car weighs {total} µg; it must weigh 50–500 g (effective masses)")
    masses = [p.mass_ug for p in parts]
    if max(masses) > C.VEHICLE_PART_MASS_RATIO_MAX * min(masses):
        findings.error("loadout-part-mass-ratio",
                       f"heaviest / lightest part is {max(masses)}/{min(masses)} µg, above {C.VEHICLE_PART_MASS_RATIO_MAX}")
    if next(p.mass_ug for p in parts if p.slot == "chassis") < C.CHASSIS_MIN_MASS_UG:
        findings.error("loadout-chassis-solver-floor", "the chassis must weigh at least 1 g")
    corners = [
        p.placement.apply(c)
        for p in parts
        for c in _corners(p.manifest["geometry"]["aabb_min_um"], p.manifest["geometry"]["aabb_max_um"])
    ]
    lo = tuple(min(c[k] for c in corners) for k in range(3))
    hi = tuple(max(c[k] for c in corners) for k in range(3))
    size = [hi[k] - lo[k] for k in range(3)]
    if any(size[k] > C.VEHICLE_AABB_MAX_UM[k] for k in range(3)):
        findings.error("loadout-aabb-exceeded",
                       f"the car measures {size} µm (x, y, z); at most {list(C.VEHICLE_AABB_MAX_UM)} (width, height, length)")
    if findings.rejected or total <= 0:
        return None
    com = tuple(
        round_div(sum(p.mass_ug * p.placement.apply(p.manifest["geometry"]["centroid_um"])[k] for p in parts), total)
        for k in range(3)
    )
    return AssembledVehicle(tuple(parts), total, com, lo, hi, reduction, resist, tuple(findings.items))  # type: ignore[arg-type]
