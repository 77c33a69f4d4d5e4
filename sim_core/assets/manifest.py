"""The PhysicsManifest: built from an asset's geometry and declarations, embedded in its root extras.

Embedded form (root extras key ``open4wd_node_physics_manifest``)::

    {"version": 1, "digest": "<sha256 hex of the canonical encoding>", "manifest": {...}}

The digest is this node's own (spec/assets.md §8.1: Open4WD's canonical JSON is not published).
"""

from __future__ import annotations

import re
from typing import Any

from sim_core.assets import constants as C
from sim_core.assets.common import marker_type
from sim_core.assets.encoding import manifest_digest
from sim_core.assets.findings import Findings
from sim_core.assets.part import analyse_part
from sim_core.assets.reader import GlbAsset
from sim_core.assets.track import analyse_track

_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def build_manifest(
    asset: GlbAsset, findings: Findings, *, deprecated: frozenset[str], for_new_product: bool, allow_missing_version: bool = False
) -> dict[str, Any] | None:
    """Every hard rule for the asset's type; the manifest body when none failed, else None."""
    kind = marker_type(asset.root_extras, findings, allow_missing_version=allow_missing_version)
    if kind is None:
        return None
    if kind == "track":
        return analyse_track(asset, findings, deprecated=deprecated, for_new_product=for_new_product)
    return analyse_part(asset, kind, findings, deprecated=deprecated, for_new_product=for_new_product)


def envelope(manifest: dict[str, Any]) -> dict[str, Any]:
    """The embedded form of ``manifest``: format version, digest and the manifest itself."""
    return {"version": C.MANIFEST_FORMAT_VERSION, "digest": manifest_digest(manifest), "manifest": manifest}


def embedded_digest(root: dict[str, Any], findings: Findings) -> str | None:
    """The digest a finalized asset claims; a missing or malformed envelope is a coded finding."""
    env = root.get(C.MANIFEST_EXTRAS_KEY)
    if env is None:
        findings.error("manifest-missing",
                       f"root extras carry no {C.MANIFEST_EXTRAS_KEY}; bake the asset first (open4wd-node asset bake)")
        return None
    if not isinstance(env, dict) or env.get("version") != C.MANIFEST_FORMAT_VERSION or isinstance(env.get("version"), bool):
        findings.error("manifest-invalid", f"the embedded manifest must be an object with version {C.MANIFEST_FORMAT_VERSION}")
        return None
    digest = env.get("digest")
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        findings.error("manifest-invalid", "the embedded manifest digest must be 64 lowercase hex digits")
        return None
    return digest
