"""What ``open4wd-node asset …`` does (its options are declared in ``open4wd_node.commands.asset``).

Every FILE may be a path, a ``builtin:<type>-NN`` ref, or the content id of an asset in the local store.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from open4wd_node.asset_store import CONTENT_ID, AssetStore
from open4wd_node.atomic_file import write_atomic
from open4wd_node.context import NodeContext
from sim_core.assets import admission, builtins
from sim_core.assets.bake import bake
from sim_core.assets.findings import AssetRejected, Findings
from sim_core.assets.loadout import assemble
from sim_core.assets.manifest import build_manifest
from sim_core.assets.material_rules import deprecated_set
from sim_core.assets.reader import read_glb
from sim_core.errors import SimError


def _load(source: str, store: AssetStore) -> bytes:
    if builtins.is_builtin_ref(source):
        return builtins.builtin_bytes(source)
    if CONTENT_ID.match(source) and not Path(source).exists():
        return store.get(source)
    try:
        return Path(source).read_bytes()
    except OSError as exc:
        raise SimError("file-unreadable", f"cannot read {source}: {exc.strerror}") from None


def _check_unbaked(data: bytes, deprecated: frozenset[str]) -> tuple[Findings, str | None]:
    """The rules a bake would apply to an author's source file (marker version may be absent)."""
    findings = Findings()
    try:
        asset = read_glb(data)
    except AssetRejected as exc:
        findings.items.extend(exc.findings)
        return findings, None
    manifest = build_manifest(asset, findings, deprecated=deprecated, for_new_product=True, allow_missing_version=True)
    return findings, None if manifest is None else manifest.get("part_type", "track")


def _validate_one(source: str, args: argparse.Namespace, ctx: NodeContext) -> dict[str, Any]:
    report: dict[str, Any] = {"file": source, "content_id": None, "type": None, "manifest_digest": None}
    try:
        data = _load(source, AssetStore.in_data_dir(ctx.data_dir))
    except SimError as exc:
        findings = Findings()
        findings.error(exc.code, exc.message)
    else:
        report["content_id"] = admission.content_id(data)
        if args.unbaked:
            findings, report["type"] = _check_unbaked(data, deprecated_set(ctx.config.deprecated_materials))
        else:
            findings, admitted = admission.check(data)
            if admitted is not None:
                report["type"], report["manifest_digest"] = admitted.asset_type, admitted.digest
    report["accepted"] = not findings.rejected
    report["findings"] = [f.as_dict() for f in findings.items]
    return report


def _print_report(report: dict[str, Any]) -> None:
    verdict = "accepted" if report["accepted"] else "rejected"
    detail = f" ({report['type']}, manifest {report['manifest_digest'][:16]}…)" if report.get("manifest_digest") else ""
    print(f"{report['file']}: {verdict}{detail}")
    for f in report["findings"]:
        print(f"  {f['severity']}[{f['code']}]: {f['message']}")


def run_validate(args: argparse.Namespace, ctx: NodeContext) -> int:
    reports = [_validate_one(source, args, ctx) for source in args.files]
    accepted = all(r["accepted"] for r in reports)
    if args.json:
        print(json.dumps({"accepted": accepted, "files": reports}, ensure_ascii=False))
    else:
        for report in reports:
            _print_report(report)
    return 0 if accepted else 1


def run_bake(args: argparse.Namespace, ctx: NodeContext) -> int:
    data = _load(args.input, AssetStore.in_data_dir(ctx.data_dir))
    try:
        out = bake(data, deprecated=deprecated_set(ctx.config.deprecated_materials))
    except AssetRejected as exc:
        for f in exc.findings:
            print(f"error[{f.code}]: {f.message}", file=sys.stderr)
        return 1
    try:
        write_atomic(Path(args.output), out)
    except OSError as exc:
        raise SimError("file-unwritable", f"cannot write {args.output}: {exc.strerror}") from None
    admitted = admission.admit(out)
    print(f"{args.output}: {admitted.asset_type}, content id {admitted.content_id}, manifest {admitted.digest}")
    return 0


def _summary(m: dict[str, Any]) -> dict[str, Any]:
    if m["kind"] == "track":
        return {
            "track_type": m["track_type"], "lap_mode": m["lap_mode"], "route_points": len(m["route"]),
            "checkpoints": len(m["checkpoints"]), "kill_zones": len(m["kill_zones"]), "respawn_points": len(m["respawn_points"]),
            "player_max": m["player_max"], "weather": m["weather"]["type"], "material": m["material"],
        }
    g = m["geometry"]
    out = {"mass_ug": g["mass_ug"], "volume_um3": g["volume_um3"], "aabb_size_um": [g["aabb_max_um"][k] - g["aabb_min_um"][k] for k in range(3)],
           "material": m["material"], "mounts": [mt["name"] for mt in m["mounts"]]}
    specific = m[m["part_type"]]
    for key in ("input_mw", "torque_ratio_pct", "configured_output_mw", "energy_capacity_mj", "slot_count", "skill_slots", "passive", "mechanism"):
        if specific and key in specific:
            out[key] = specific[key]
    return out


def run_inspect(args: argparse.Namespace, ctx: NodeContext) -> int:
    data = _load(args.file, AssetStore.in_data_dir(ctx.data_dir))
    findings, admitted = admission.check(data)
    if admitted is None:
        for f in findings.items:
            print(f"{f.severity}[{f.code}]: {f.message}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"content_id": admitted.content_id, "type": admitted.asset_type, "manifest_digest": admitted.digest, "manifest": admitted.manifest}))
        return 0
    print(f"{'type:':<22}{admitted.asset_type}")
    print(f"{'content id:':<22}{admitted.content_id}")
    print(f"{'manifest digest:':<22}{admitted.digest}")
    for key, value in _summary(admitted.manifest).items():
        print(f"{key + ':':<22}{value}")
    for f in admitted.warnings:
        print(f"{f.severity}[{f.code}]: {f.message}")
    return 0


def run_import(args: argparse.Namespace, ctx: NodeContext) -> int:
    store = AssetStore.in_data_dir(ctx.data_dir)
    status = 0
    for source in args.files:
        data = _load(source, store)
        findings, admitted = admission.check(data)
        if admitted is None:
            status = 1
            print(f"{source}: rejected; not stored")
            for f in findings.errors:
                print(f"  error[{f.code}]: {f.message}")
            continue
        print(f"{source}: stored as {store.put(data)} ({admitted.asset_type})")
    return status


def run_loadout(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Assemble a loadout (JSON file) from built-ins and stored assets; print findings and key figures."""
    try:
        loadout = json.loads(Path(args.file).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SimError("file-unreadable", f"cannot read {args.file}: {exc.strerror}") from None
    except ValueError as exc:
        raise SimError("loadout-invalid", f"{args.file} is not JSON: {exc}") from None
    findings, car = assemble(loadout, AssetStore.in_data_dir(ctx.data_dir).admitted)
    figures = None
    if car is not None:
        motor, battery = car.part("motor").manifest["motor"], car.part("battery").manifest["battery"]  # type: ignore[union-attr]
        figures = {
            "parts": len(car.parts),
            "total_mass_ug": car.total_mass_ug,
            "drive_power_mw": min(motor["input_mw"], battery["configured_output_mw"]),
            "part_mass_ratio_x1000": car.mass_ratio_x1000(),
            "size_um": [car.aabb_max_um[k] - car.aabb_min_um[k] for k in range(3)],
            "centre_of_mass_um": list(car.centre_of_mass_um),
        }
    if args.json:
        print(json.dumps({"accepted": car is not None, "figures": figures, "findings": [f.as_dict() for f in findings.items]}))
    else:
        print(f"{args.file}: {'legal car' if car is not None else 'rejected'}")
        for key, value in (figures or {}).items():
            print(f"  {key + ':':<24}{value}")
        for f in findings.items:
            print(f"  {f.severity}[{f.code}]: {f.message}")
    return 0 if car is not None else 1


def run_builtin(args: argparse.Namespace, ctx: NodeContext) -> int:
    """``--list`` the shipped built-ins, or ``--export NAME FILE`` one of them as a GLB file (written
    atomically: a failed write leaves no torn file)."""
    if args.export:
        return _export_builtin(*args.export, as_json=args.json)
    rows = [
        {"ref": ref, "type": builtins.type_of(ref), "variant": builtins.describe(ref), "content_id": builtins.shipped_digests()[builtins.stem_of(ref) + ".glb"]}
        for ref in builtins.BUILTIN_REFS
    ]
    if args.json:
        print(json.dumps({"builtins": rows}))
    else:
        for row in rows:
            print(f"{row['ref']:<22} {row['variant']:<9} {row['content_id']}")
    return 0


def _export_builtin(name: str, file: str, *, as_json: bool) -> int:
    ref = name if builtins.is_builtin_ref(name) else builtins.PREFIX + name  # "tire-01" or "builtin:tire-01"
    data = builtins.builtin_bytes(ref)  # unknown-builtin names the known refs
    try:
        write_atomic(Path(file), data)
    except OSError as exc:
        raise SimError("file-unwritable", f"cannot write {file}: {exc.strerror or exc}; choose a writable path") from None
    report = {"ref": ref, "file": file, "content_id": admission.content_id(data), "bytes": len(data)}
    print(json.dumps(report) if as_json else f"{ref} -> {file} ({len(data)} bytes, content id {report['content_id']})")
    return 0


ACTIONS = {
    "validate": run_validate, "bake": run_bake, "inspect": run_inspect, "import": run_import,
    "loadout": run_loadout, "builtin": run_builtin,
}
