"""Where a material may be used and whether this client lists it as deprecated (材質表.md §4, §11).

The deprecated list is client-local and never global state: callers pass the node's merged list
(``ctx.config.deprecated_materials``) down; ``DEPRECATED_MATERIAL_IDS`` is only the shipped default.
"""

from __future__ import annotations

from collections.abc import Iterable

from sim_core.assets.constants import PART_TYPES
from sim_core.assets.findings import Findings, shown
from sim_core.errors import SimError
from sim_core.specs.materials import MATERIALS, Material

def check_scope_invariants(materials: tuple[Material, ...]) -> None:
    """Fluids are sensors: on vehicles only weapons may carry them (材質表.md §3); refuse a table that says otherwise."""
    for m in materials:
        if m.is_fluid and any(m.usable_on_vehicle(t) for t in PART_TYPES if t != "weapon"):
            raise SimError("material-table-invalid", f"{m.id}: a fluid may be used on vehicles only by weapons")


check_scope_invariants(MATERIALS)

DEPRECATED_MATERIAL_IDS: frozenset[str] = frozenset()
"""Material ids this client ships as deprecated (today none); the node configuration extends it."""


def deprecated_set(extra: Iterable[str] = ()) -> frozenset[str]:
    """The shipped list plus the node's configured ids (config key and ``--deprecated-material``)."""
    return DEPRECATED_MATERIAL_IDS | frozenset(extra)


def is_material_deprecated(material_id: str, deprecated: Iterable[str] = DEPRECATED_MATERIAL_IDS) -> bool:
    """Plain membership test, as the spec's ``isMaterialDeprecated(id, source)``."""
    return material_id in frozenset(deprecated)


def material_by_id(material_id: object) -> Material | None:
    """The table's material with this id, or None (for any id, including a non-string from an author)."""
    if not isinstance(material_id, str):
        return None
    for m in MATERIALS:
        if m.id == material_id:
            return m
    return None


def check_material(
    material_id: object,
    where: str,
    findings: Findings,
    *,
    part_type: str | None,
    deprecated: frozenset[str],
    for_new_product: bool,
) -> Material | None:
    """Check one material use: known id, scope (vehicle part type or track), deprecation.

    ``part_type`` None means a track (environment scope). Deprecated ids refuse only new products
    (a bake); already-baked assets stay playable, so admission passes ``for_new_product=False``.
    """
    m = material_by_id(material_id)
    if m is None:
        findings.error("material-not-allowed", f"{where}: material {shown(material_id)} is not in the material table")
        return None
    if part_type is None and not m.usable_on_track():
        findings.error("material-not-allowed", f"{where}: material {m.id!r} is not allowed on tracks (environment scope)")
        return None
    if part_type is not None and not m.usable_on_vehicle(part_type):
        allowed = ", ".join(m.allowed_part_types) or "no part type"
        findings.error(
            "material-not-allowed",
            f"{where}: material {m.id!r} is forbidden on vehicle parts except {allowed}; this part is a {part_type}",
        )
        return None
    if for_new_product and is_material_deprecated(m.id, deprecated):
        findings.error("material-not-allowed", f"{where}: material {m.id!r} is deprecated and cannot be used in a new asset")
        return None
    return m
