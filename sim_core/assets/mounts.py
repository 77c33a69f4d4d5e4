"""Mount empties: the whitelist per part type, the chassis template names and the mount checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim_core.assets import constants as C
from sim_core.assets.findings import Findings

if TYPE_CHECKING:  # the reader loads numpy and pygltflib; a loadout built from cached manifests needs neither
    from sim_core.assets.reader import GlbAsset, Node

TIRE_SLOTS = ("FL", "FR", "RL", "RR")
ROLLER_SLOTS = ("FL", "FR", "CL", "CR", "RL", "RR")
BODY_MOUNTS = ("Mount_Body_F", "Mount_Body_RL", "Mount_Body_RC", "Mount_Body_RR")
CHASSIS_MOUNTS = (
    *BODY_MOUNTS,
    "Mount_Battery",
    *(f"Mount_Tire_{s}" for s in TIRE_SLOTS),
    "Mount_Motor",
    "Mount_Chip",
    *(f"Mount_Roller_{s}" for s in ROLLER_SLOTS),
    "Mount_Weapon",
)
PART_MOUNTS = {
    "chassis": CHASSIS_MOUNTS,
    "body": BODY_MOUNTS,
    "battery": ("Mount_Battery",),
    "tire": ("Mount_Tire",),
    "motor": ("Mount_Motor",),
    "chip": ("Mount_Chip",),
    "roller": ("Mount_Roller",),
    "weapon": ("Mount_Weapon",),
}
_RIGID_TOLERANCE_UM = 1_000  # a mount's axes must have unit length within 0.1 %


def mount_matches(part_mount: str, chassis_mount: str) -> bool:
    """Compatible iff equal or the chassis slot extends the part's name (零件與共用介面.md §6.3)."""
    return chassis_mount == part_mount or chassis_mount.startswith(part_mount + "_")


def mount_nodes(asset: GlbAsset, part_type: str, findings: Findings) -> dict[str, Node]:
    """The type's mount empties; any missing, extra or non-rigid ``Mount_*`` empty is ``mount-whitelist``."""
    wanted = PART_MOUNTS[part_type]
    found = {n.name: n for n in asset.nodes if n.name.startswith("Mount_")}
    for name, node in found.items():
        if node.mesh is not None:
            findings.error("mount-whitelist", f"{name} must be an empty, not a mesh node")
    extra = sorted(set(found) - set(wanted))
    missing = [m for m in wanted if m not in found]
    if extra:
        findings.error("mount-whitelist", f"a {part_type} may not carry {', '.join(extra)}; allowed: {', '.join(wanted)}")
    if missing:
        findings.error("mount-whitelist", f"a {part_type} needs {', '.join(missing)}")
    result = {}
    for name in wanted:
        mount = found.get(name)
        if mount is None or mount.mesh is not None:
            continue
        if any(abs(s - 1_000_000) > _RIGID_TOLERANCE_UM for s in mount.frame.scale_um):
            findings.error("mount-whitelist",
                           f"{name} must be a rigid frame (unit scale); its scale is {mount.frame.scale_um} ppm")
            continue
        result[name] = mount
    return result


def check_chassis_mounts(mounts: dict[str, Node], aabb: tuple[tuple[int, ...], tuple[int, ...]], findings: Findings) -> None:
    """Outside-AABB distance, hinge axis tilt of roller mounts (tires always pass)."""
    lo, hi = aabb
    for name, node in mounts.items():
        p = node.frame.position_um
        outside = max(max(lo[k] - p[k], p[k] - hi[k], 0) for k in range(3))
        if outside > C.MOUNT_AABB_REJECT_UM:
            findings.error("mount-aabb-reject",
                           f"{name} lies {outside} µm outside the chassis AABB; at most {C.MOUNT_AABB_REJECT_UM} µm")
        elif outside > C.MOUNT_AABB_WARN_UM:
            findings.warn("mount-aabb-warn", f"{name} lies {outside} µm outside the chassis AABB")
        if name.startswith("Mount_Roller_"):
            tilt = abs(node.frame.axes_ppm[0][1])
            if tilt >= C.HINGE_AXIS_REJECT_SIN_PPM:
                findings.error(
                    "hinge-axis-reject",
                    f"{name}: hinge axis +X tilts out of the chassis X-Z plane "
                    f"(sin = {tilt} ppm ≥ {C.HINGE_AXIS_REJECT_SIN_PPM})",
                )
            elif tilt >= C.HINGE_AXIS_WARN_SIN_PPM:
                findings.warn("hinge-axis-warn", f"{name}: hinge axis +X tilts more than 30° out of the chassis X-Z plane")


def check_mount_spacing(mounts: dict[str, Node], findings: Findings) -> None:
    """``mount-gap-reject`` / ``mount-gap-warn`` for mounts closer than 3 mm / 10 mm: parts fitted there
    would overlap."""
    names = list(mounts)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            pa, pb = mounts[a].frame.position_um, mounts[b].frame.position_um
            d2 = sum((pa[k] - pb[k]) ** 2 for k in range(3))
            if d2 < C.MOUNT_GAP_REJECT_UM**2:
                findings.error("mount-gap-reject", f"{a} and {b} are closer than {C.MOUNT_GAP_REJECT_UM} µm")
            elif d2 < C.MOUNT_GAP_WARN_UM**2:
                findings.warn("mount-gap-warn", f"{a} and {b} are closer than {C.MOUNT_GAP_WARN_UM} µm")
