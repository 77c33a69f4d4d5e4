"""What ``open4wd-node asset …`` does (its options are declared in ``open4wd_node.cli.commands.asset``).

Every FILE may be a path, a ``builtin:<type>-NN`` ref, or the content id of an asset in the local store.

A refusal is always a list of coded findings, whether the file could not be read, is not a GLB, or
breaks a rule: in text each is one ``error[code]: sentence`` line, and with ``--json`` every action
prints exactly one JSON object on stdout holding ``accepted`` and ``findings``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from open4wd_base.errors import LocalError
from open4wd_node.assets.store import CONTENT_ID, AssetStore
from open4wd_node.runtime.atomic_file import write_atomic
from open4wd_node.runtime.context import NodeContext
from open4wd_node.runtime.errors import UserError
from open4wd_node.runtime.user_files import UserFile, display_path
from sim_core.assets import admission, builtins
from sim_core.assets.bake import bake
from sim_core.assets.constants import MAX_GLB_BYTES
from sim_core.assets.findings import AssetRejected, Finding, Findings
from sim_core.assets.loadout import AssembledVehicle, assemble
from sim_core.assets.manifest import build_manifest
from sim_core.assets.material_rules import deprecated_set
from sim_core.assets.reader import read_glb
from sim_core.errors import SimError

ASSET_FILE = UserFile("the asset file", MAX_GLB_BYTES, too_large_code="glb-too-large")


def _load(source: str, store: AssetStore) -> bytes:
    if builtins.is_builtin_ref(source):
        return builtins.builtin_bytes(source)
    if CONTENT_ID.match(source) and not os.path.lexists(source):
        return store.get(source)
    return ASSET_FILE.read(source)


def _load_or_finding(source: str, ctx: NodeContext, findings: Findings) -> bytes | None:
    """The bytes behind FILE, or None with the reason (missing, unreadable, not stored, …) as a finding."""
    try:
        return _load(source, AssetStore.in_data_dir(ctx.data_dir))
    except (SimError, UserError) as exc:
        findings.error(exc.code, exc.message)
        return None


def _findings_json(findings: list[Finding]) -> list[dict[str, str]]:
    return [f.as_dict() for f in findings]


def _refuse(source: str, findings: list[Finding], as_json: bool) -> int:
    """A refused FILE: every finding on stderr and, with ``--json``, the report on stdout; exit 1."""
    for f in findings:
        print(f"{f.severity}[{f.code}]: {f.message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"file": display_path(source), "accepted": False, "findings": _findings_json(findings)}))
    return 1


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


def _check_one(source: str, ctx: NodeContext, *, unbaked: bool = False) -> tuple[dict[str, Any], bytes | None]:
    """FILE's report (``accepted``, ``findings``, its ids) and, when it was read, its bytes."""
    report: dict[str, Any] = {"file": display_path(source), "content_id": None, "type": None, "manifest_digest": None}
    findings = Findings()
    data = _load_or_finding(source, ctx, findings)
    if data is not None:
        report["content_id"] = admission.content_id(data)
        if unbaked:
            findings, report["type"] = _check_unbaked(data, deprecated_set(ctx.config.deprecated_materials))
        else:
            findings, admitted = admission.check(data)
            if admitted is not None:
                report["type"], report["manifest_digest"] = admitted.asset_type, admitted.digest
    report["accepted"] = not findings.rejected
    report["findings"] = _findings_json(findings.items)
    return report, data


def _print_report(report: dict[str, Any]) -> None:
    verdict = "accepted" if report["accepted"] else "rejected"
    detail = f" ({report['type']}, manifest {report['manifest_digest'][:16]}…)" if report.get("manifest_digest") else ""
    print(f"{report['file']}: {verdict}{detail}")
    for f in report["findings"]:
        print(f"  {f['severity']}[{f['code']}]: {f['message']}")


def run_validate(args: argparse.Namespace, ctx: NodeContext) -> int:
    """``asset validate``: check every FILE (admission, or a bake's rules with ``--unbaked``) and report its
    findings; exit 0 when all are accepted, 1 otherwise."""
    reports = [_check_one(source, ctx, unbaked=args.unbaked)[0] for source in args.files]
    accepted = all(r["accepted"] for r in reports)
    if args.json:
        print(json.dumps({"accepted": accepted, "files": reports}))
    else:
        for report in reports:
            _print_report(report)
    return 0 if accepted else 1


def _output_path(text: str) -> Path:
    """Where ``asset bake`` may write: a file name, not an empty string or an existing directory."""
    if not text:
        raise UserError("file-unwritable", "OUT is an empty path; give the name of the GLB file to write")
    if os.path.isdir(text):
        raise UserError("file-unwritable",
                        f"OUT {display_path(text)} is a directory; give the name of the GLB file to write inside it")
    return Path(text)


def run_bake(args: argparse.Namespace, ctx: NodeContext) -> int:
    """``asset bake IN OUT``: write the finalized GLB (exit 0) or report why it cannot be baked (exit 1);
    ``UserError`` ``file-unwritable`` for an OUT that cannot be a file."""
    output = _output_path(args.output)
    findings = Findings()
    data = _load_or_finding(args.input, ctx, findings)
    if data is None:
        return _refuse(args.input, findings.items, args.json)
    try:
        out = bake(data, deprecated=deprecated_set(ctx.config.deprecated_materials))
    except AssetRejected as exc:
        return _refuse(args.input, exc.findings, args.json)
    try:
        write_atomic(output, out)
    except FileNotFoundError:
        raise UserError("file-unwritable", f"cannot write {display_path(args.output)}: the directory "
                                           f"{display_path(str(output.parent))} does not exist") from None
    except OSError as exc:
        raise UserError("file-unwritable", f"cannot write {display_path(args.output)}: {exc.strerror or exc}") from None
    admitted = admission.admit(out)
    if args.json:
        print(json.dumps({"file": display_path(args.input), "accepted": True, "output": display_path(args.output),
                          "type": admitted.asset_type, "content_id": admitted.content_id,
                          "manifest_digest": admitted.digest, "findings": _findings_json(list(admitted.warnings))}))
    else:
        print(f"{display_path(args.output)}: {admitted.asset_type}, content id {admitted.content_id}, manifest {admitted.digest}")
    return 0


def _summary(m: dict[str, Any]) -> dict[str, Any]:
    if m["kind"] == "track":
        return {
            "track_type": m["track_type"], "lap_mode": m["lap_mode"], "route_points": len(m["route"]),
            "checkpoints": len(m["checkpoints"]), "kill_zones": len(m["kill_zones"]), "respawn_points": len(m["respawn_points"]),
            "player_max": m["player_max"], "weather": m["weather"]["type"], "material": m["material"],
        }
    g = m["geometry"]
    out = {"mass_ug": g["mass_ug"], "volume_um3": g["volume_um3"],
           "aabb_size_um": [g["aabb_max_um"][k] - g["aabb_min_um"][k] for k in range(3)],
           "material": m["material"], "mounts": [mt["name"] for mt in m["mounts"]]}
    specific = m[m["part_type"]]
    for key in ("input_mw", "torque_ratio_pct", "configured_output_mw", "energy_capacity_mj", "slot_count", "skill_slots",
                "passive", "mechanism"):
        if specific and key in specific:
            out[key] = specific[key]
    return out


def run_inspect(args: argparse.Namespace, ctx: NodeContext) -> int:
    """``asset inspect FILE``: an admitted asset's ids and manifest summary (exit 0), or its findings (exit 1)."""
    findings = Findings()
    data = _load_or_finding(args.file, ctx, findings)
    admitted = None
    if data is not None:
        findings, admitted = admission.check(data)
    if admitted is None:
        return _refuse(args.file, findings.items, args.json)
    if args.json:
        print(json.dumps({"file": display_path(args.file), "accepted": True, "content_id": admitted.content_id,
                          "type": admitted.asset_type, "manifest_digest": admitted.digest, "manifest": admitted.manifest,
                          "findings": _findings_json(list(admitted.warnings))}))
        return 0
    print(f"{'type:':<22}{admitted.asset_type}")
    print(f"{'content id:':<22}{admitted.content_id}")
    print(f"{'manifest digest:':<22}{admitted.digest}")
    for key, value in _summary(admitted.manifest).items():
        print(f"{key + ':':<22}{value}")
    for f in admitted.warnings:
        print(f"{f.severity}[{f.code}]: {f.message}")
    return 0


def _import_one(source: str, ctx: NodeContext, store: AssetStore) -> dict[str, Any]:
    report, data = _check_one(source, ctx)
    report["stored"] = None
    if report["accepted"] and data is not None:
        try:
            report["stored"] = store.put(data)
        except SimError as exc:  # the store is full, or refuses the size
            refusal = Finding(exc.code, exc.message)
        except OSError as exc:  # the data directory cannot hold files
            refusal = Finding("store-unwritable",
                              f"cannot write into the asset store {display_path(str(store.root))}: {exc.strerror or exc}")
        else:
            return report
        report["accepted"] = False
        report["findings"].append(refusal.as_dict())
    return report


def run_import(args: argparse.Namespace, ctx: NodeContext) -> int:
    """``asset import FILE…``: store every accepted FILE in the local store; exit 0 when all were stored."""
    store = AssetStore.in_data_dir(ctx.data_dir)
    reports = [_import_one(source, ctx, store) for source in args.files]
    accepted = all(r["accepted"] for r in reports)
    if args.json:
        print(json.dumps({"accepted": accepted, "files": reports}))
        return 0 if accepted else 1
    for report in reports:
        if report["accepted"]:
            print(f"{report['file']}: stored as {report['stored']} ({report['type']})")
            continue
        print(f"{report['file']}: rejected; not stored")
        for f in report["findings"]:
            print(f"  {f['severity']}[{f['code']}]: {f['message']}")
    return 0 if accepted else 1


def _manifest(car: AssembledVehicle, slot: str) -> dict[str, Any]:
    """The manifest of the part in ``slot``, which every assembled car has (``LocalError`` otherwise)."""
    part = car.part(slot)
    if part is None:
        raise LocalError("loadout-part-missing", f"an assembled car without its {slot}")
    return part.manifest


def _figures(car: AssembledVehicle) -> dict[str, Any]:
    motor, battery = _manifest(car, "motor")["motor"], _manifest(car, "battery")["battery"]
    return {
        "parts": len(car.parts),
        "total_mass_ug": car.total_mass_ug,
        "drive_power_mw": min(motor["input_mw"], battery["configured_output_mw"]),
        "part_mass_ratio_x1000": car.mass_ratio_x1000(),
        "size_um": [car.aabb_max_um[k] - car.aabb_min_um[k] for k in range(3)],
        "centre_of_mass_um": list(car.centre_of_mass_um),
    }


def run_loadout(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Assemble a loadout (JSON file) from built-ins and stored assets; print findings and key figures."""
    from open4wd_node.assets.cars import loadout_file

    try:
        loadout = loadout_file("the loadout file").read(args.file)
    except UserError as exc:
        findings, car = Findings(), None
        findings.error(exc.code, exc.message)
    else:
        findings, car = assemble(loadout, AssetStore.in_data_dir(ctx.data_dir).admitted)
    figures = None if car is None else _figures(car)
    if args.json:
        print(json.dumps({"file": display_path(args.file), "accepted": car is not None, "figures": figures,
                          "findings": _findings_json(findings.items)}))
    else:
        print(f"{display_path(args.file)}: {'legal car' if car is not None else 'rejected'}")
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
        {"ref": ref, "type": builtins.type_of(ref), "variant": builtins.describe(ref),
         "content_id": builtins.shipped_digests()[builtins.stem_of(ref) + ".glb"]}
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
