"""Admission: the one gate between a stranger's bytes and a race (spec/assets.md §8.4).

The embedded manifest is never trusted: the manifest is rebuilt from geometry and declarations, every
hard rule runs again, and the asset is refused unless the rebuilt digest equals the embedded one. The
race then reads only ``AdmittedAsset.manifest``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from sim_core.assets.encoding import manifest_digest
from sim_core.assets.findings import AssetRejected, Finding, Findings
from sim_core.assets.manifest import build_manifest, embedded_digest
from sim_core.assets.reader import read_glb


@dataclass(frozen=True)
class AdmittedAsset:
    content_id: str  # SHA-256 hex of the GLB bytes
    asset_type: str  # part type or "track"
    manifest: dict[str, Any]
    digest: str
    warnings: tuple[Finding, ...] = field(default=())


def content_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check(data: bytes, *, deprecated: frozenset[str] = frozenset()) -> tuple[Findings, AdmittedAsset | None]:
    """All findings for a finalized asset and, when it passes, the admitted asset."""
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
        findings.error("manifest-digest-mismatch", f"the rebuilt manifest digest {digest[:16]}… differs from the embedded {claimed[:16]}…; the asset was altered after baking")
        return findings, None
    kind = manifest["part_type"] if manifest["kind"] == "part" else "track"
    return findings, AdmittedAsset(content_id(data), kind, manifest, digest, tuple(findings.items))


def admit(data: bytes, *, deprecated: frozenset[str] = frozenset()) -> AdmittedAsset:
    """The admitted asset, or ``AssetRejected`` listing every error."""
    findings, admitted = check(data, deprecated=deprecated)
    if admitted is None:
        raise AssetRejected(findings.errors)
    return admitted
