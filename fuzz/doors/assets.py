"""GLB assets, every stage a peer's or a user's file goes through: the container and its JSON, the
reader (glTF, Open4WD extras), admission (what a room runs on a fetched asset) and the bake (an
author's source to a physics manifest), each on what the stage before it would let through."""

from __future__ import annotations

from fuzz.harness import Target
from sim_core.assets.admission import check
from sim_core.assets.bake import bake
from sim_core.assets.container import read_container
from sim_core.assets.findings import Findings
from sim_core.assets.reader import read_glb


def _coded_findings(findings: Findings) -> None:
    """Admission answers with findings, never by raising: each has a kebab-case code and a sentence."""
    for finding in findings.items:
        assert finding.code and finding.code == finding.code.lower() and " " not in finding.code, finding
        assert finding.message, finding


def admission_once(data: bytes) -> None:
    """What ``NodeRoomAssets`` runs on an asset fetched from a peer (and ``asset validate`` on a file)."""
    findings, admitted = check(data)
    _coded_findings(findings)
    assert admitted is not None or findings.errors


def bake_once(data: bytes) -> None:
    """An author's unbaked source through ``asset bake``; what it writes must then be admitted."""
    baked = bake(data)
    findings, admitted = check(baked)
    assert admitted is not None, findings.codes()


TARGETS = {
    "glb-container": Target("glb-container", read_container, "the GLB container and its JSON chunk"),
    "glb-reader": Target("glb-reader", read_glb, "the GLB reader: glTF, geometry, Open4WD extras"),
    "glb-admission": Target("glb-admission", admission_once, "admission of a baked asset (a peer's fetched asset)"),
    "glb-bake": Target("glb-bake", bake_once, "the bake of an author's source GLB"),
}
