"""Admission: the one gate between a stranger's bytes and a race (spec/assets.md §8.4).

The embedded manifest is never trusted: the manifest is rebuilt from geometry and declarations, every
hard rule runs again, and the asset is refused unless the rebuilt digest equals the embedded one. The
race then reads only ``AdmittedAsset.manifest``.

``admit_cached`` keeps what admission concluded (``sim_core.derived_cache``), keyed by the content id
of the bytes: admission is a pure function of them and of this code. The reader and the rules load
numpy and pygltflib (~150 ms of imports), so they are imported only when admission really runs: a start
served from the cache never pays for them.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from sim_core.assets.constants import ASSET_TYPES
from sim_core.assets.findings import ERROR, AssetRejected, Finding, Findings
from sim_core.derived_cache import DerivedCache, EntryInvalid, EntryKind, process_cache

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class AdmittedAsset:
    """An asset that passed admission: its content id, its type, the manifest rebuilt from its own
    geometry and declarations (the only thing a race reads), that manifest's digest and the warnings."""

    content_id: str  # SHA-256 hex of the GLB bytes
    asset_type: str  # part type or "track"
    manifest: dict[str, Any]
    digest: str
    warnings: tuple[Finding, ...] = field(default=())


def content_id(data: bytes) -> str:
    """The asset's content id: the SHA-256 hex of its bytes (how loadouts and stores name it)."""
    return hashlib.sha256(data).hexdigest()


def check(data: bytes, *, deprecated: frozenset[str] = frozenset()) -> tuple[Findings, AdmittedAsset | None]:
    """All findings for a finalized asset and, when it passes, the admitted asset."""
    from sim_core.assets.encoding import manifest_digest
    from sim_core.assets.manifest import build_manifest, embedded_digest
    from sim_core.assets.reader import read_glb

    findings = Findings()
    try:
        asset = read_glb(data)
    except AssetRejected as exc:
        findings.items.extend(exc.findings)
        return findings, None
    manifest = build_manifest(asset, findings, deprecated=deprecated, for_new_product=False)  # the marker finding first
    claimed = embedded_digest(asset.root_extras, findings)
    if manifest is None or claimed is None or findings.rejected:
        return findings, None
    digest = manifest_digest(manifest)
    if digest != claimed:
        findings.error(
            "manifest-digest-mismatch",
            f"the rebuilt manifest digest {digest[:16]}… differs from the embedded {claimed[:16]}…; "
            "the asset was altered after baking",
        )
        return findings, None
    kind = manifest["part_type"] if manifest["kind"] == "part" else "track"
    return findings, AdmittedAsset(content_id(data), kind, manifest, digest, tuple(findings.items))


def admit(data: bytes, *, deprecated: frozenset[str] = frozenset()) -> AdmittedAsset:
    """The admitted asset, or ``AssetRejected`` listing every error."""
    findings, admitted = check(data, deprecated=deprecated)
    if admitted is None:
        raise AssetRejected(findings.errors)
    return admitted


# ---- the cached gate --------------------------------------------------------------------------------


def _encode(asset: AdmittedAsset) -> bytes:
    body = {"content_id": asset.content_id, "asset_type": asset.asset_type, "manifest": asset.manifest,
            "digest": asset.digest, "warnings": [f.as_dict() for f in asset.warnings]}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _finding(item: object) -> Finding:
    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("code", "severity", "message")):
        raise EntryInvalid("a warning is not a finding")
    if item["severity"] == ERROR or not isinstance(item.get("rule", ""), str):
        raise EntryInvalid("an admitted asset carries warnings only")
    return Finding(item["code"], item["message"], item["severity"], item.get("rule"))


def _decode(payload: bytes, cid: str) -> AdmittedAsset:
    """An admitted asset from a stored entry, checked for shape and for belonging to ``cid``."""
    body = json.loads(payload)
    if not isinstance(body, dict) or set(body) != {"content_id", "asset_type", "manifest", "digest", "warnings"}:
        raise EntryInvalid("not an admitted-asset record")
    manifest, asset_type = body["manifest"], body["asset_type"]
    if body["content_id"] != cid:
        raise EntryInvalid("the record is for other bytes")
    if not isinstance(body["digest"], str) or not _HEX64.match(body["digest"]) or not isinstance(manifest, dict):
        raise EntryInvalid("manifest or digest malformed")
    if asset_type not in ASSET_TYPES or asset_type != (manifest.get("part_type") if manifest.get("kind") == "part" else "track"):
        raise EntryInvalid("asset type does not match the manifest")
    if not isinstance(body["warnings"], list):
        raise EntryInvalid("warnings malformed")
    return AdmittedAsset(cid, asset_type, manifest, body["digest"], tuple(_finding(w) for w in body["warnings"]))


ADMITTED: EntryKind[AdmittedAsset] = EntryKind("admitted", _encode, _decode)


def admit_cached(data: bytes, cid: str | None = None, *, cache: DerivedCache | None = None) -> AdmittedAsset:
    """``admit(data)`` through the cache (default: the process cache). ``cid`` is the bytes' SHA-256
    when the caller has already checked it. The deprecated-material list is not part of the key:
    admission ignores it (it refuses only new products, assets.md §10), so no caller may pass one here."""
    cid = content_id(data) if cid is None else cid
    return (cache or process_cache()).get(ADMITTED, cid, lambda: admit(data))
