"""The room's view of assets: resolve refs through admission, check cars and tracks, compute notices.

Implements ``protocol.room.member.RoomAssets`` over the local content store and the built-ins. Every
check runs the Assets code itself (admission, loadout assembly); nothing a peer says about an asset is
trusted. Notices are computed locally from the actual cars and tracks (spec/rooms.md §5) and never sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from open4wd_node.assets.store import AssetStore
from open4wd_node.runtime.config import NodeConfig
from protocol.versions.assets import AssetVersionPolicy, VersionCheckReport, pre_race_version_check
from protocol.errors import ProtocolError
from protocol.room.config import MatchConfig
from protocol.identity.keys import PeerId
from sim_core.assets.admission import AdmittedAsset
from sim_core.assets.builtins import is_builtin_ref
from sim_core.assets.convert import vehicle_from_loadout
from sim_core.assets.findings import AssetRejected
from sim_core.errors import SimError

LOADOUT_SINGLE_SLOTS = ("chassis", "body", "motor", "battery", "chip", "weapon")
DEPRECATED_NOTICE = (
    "Some cars or tracks in this match use retired materials. They race with unchanged physics; "
    "staying in the room accepts the match as fair."
)


def policy_from_config(config: NodeConfig) -> AssetVersionPolicy:
    """This node's asset-version rules (walls, yanked and minimum versions) from its configuration."""
    return AssetVersionPolicy(
        walls=dict(config.asset_walls),
        yanked={k: frozenset(v) for k, v in config.asset_yanked.items()},
        min_versions=dict(config.asset_min_versions),
    )


def asset_materials(asset: AdmittedAsset) -> set[str]:
    """Every material id an admitted part or track uses (its own, its solids and proxies)."""
    manifest = asset.manifest
    found = {manifest.get("material")}
    for key in ("proxies", "solids", "entities"):
        found.update(item.get("material") for item in manifest.get(key, ()) if isinstance(item, dict))
    return {m for m in found if isinstance(m, str)}


class NodeRoomAssets:
    """``protocol.room.member.RoomAssets`` over this node's store and the built-ins (module docstring).
    Admissions and refusals are remembered per ref (a ref names fixed bytes)."""

    def __init__(self, store: AssetStore, config: NodeConfig) -> None:
        self.store = store
        self.policy = policy_from_config(config)
        self.deprecated = frozenset(config.deprecated_materials)
        self._admitted: dict[str, AdmittedAsset] = {}
        self._refused: dict[str, AssetRejected] = {}

    def resolve(self, ref: str) -> AdmittedAsset:
        """Admit a ref once (admission rebuilds the manifest; it is the expensive part). A refusal is
        remembered too: a ref names fixed bytes, so admitting them again would refuse them again."""
        refused = self._refused.get(ref)
        if refused is not None:
            raise AssetRejected(refused.findings)
        if ref not in self._admitted:
            try:
                self._admitted[ref] = self.store.admitted(ref)
            except AssetRejected as exc:
                self._refused[ref] = exc
                raise
        return self._admitted[ref]

    def prepare(self, refs: Iterable[str]) -> None:
        """Resolve ``refs`` ahead of the room's checks, which run synchronously on the event loop: the
        shell calls this through ``run_blocking`` so that reading and admitting happen in a worker
        thread and the checks find the answers ready. A ref that is missing or refused is not an error
        here: the check that follows reports it with its code."""
        for ref in refs:
            try:
                self.resolve(ref)
            except SimError:
                continue

    def _resolve_coded(self, ref: str) -> AdmittedAsset:
        try:
            return self.resolve(ref)
        except SimError as exc:
            raise ProtocolError(exc.code, f"{ref}: {exc.message}") from None

    # ---- RoomAssets --------------------------------------------------------------------------------

    def rotation_refs(self, rotation: list[Any]) -> list[str]:
        """Every part ref the cars of ``rotation`` use, once each, in order; ``ProtocolError``
        ``loadout-invalid`` for a car that is not a loadout object."""
        refs: list[str] = []
        for car in rotation:
            if not isinstance(car, dict):
                raise ProtocolError("loadout-invalid", "a car is an object of slot → part ref")
            refs += [car[k] for k in LOADOUT_SINGLE_SLOTS if isinstance(car.get(k), str)]
            for group in ("tires", "rollers"):
                parts = car.get(group, {})
                if not isinstance(parts, dict):
                    raise ProtocolError("loadout-invalid", f"{group} must map positions to part refs")
                refs += [v for v in parts.values() if isinstance(v, str)]
        return list(dict.fromkeys(refs))

    def missing_assets(self, refs: list[str]) -> list[str]:
        """The refs that are neither built-in nor in the local store (to be fetched from their owner)."""
        return [r for r in refs if not is_builtin_ref(r) and not self.store.has(r)]

    def check_rotation(self, peer: PeerId, rotation: list[Any]) -> None:
        """Refuse a car rotation that cannot race here: ``ProtocolError`` with the code of the first
        problem (``asset-missing``, a finding's code, a ``SimError`` code, ``asset-version-unusable``)."""
        refs = self.rotation_refs(rotation)
        missing = self.missing_assets(refs)
        if missing:
            raise ProtocolError("asset-missing", f"{peer[-4:]}'s car uses {missing[0][:12]}…, which this node does not hold yet")
        for index, car in enumerate(rotation):
            try:
                vehicle_from_loadout(car, self.resolve, f"{peer}#{index}")  # legal, and the simulation accepts it
            except AssetRejected as exc:
                first = exc.findings[0]
                raise ProtocolError(first.code, f"{peer[-4:]}'s car for round {index + 1}: {first.message}") from None
            except SimError as exc:
                raise ProtocolError(exc.code, f"{peer[-4:]}'s car for round {index + 1}: {exc.message}") from None
        report = self.version_report(refs)
        if report.unusable:
            raise ProtocolError("asset-version-unusable", f"asset-version-unusable:{report.unusable[0]}")

    def track_digests(self, config: MatchConfig) -> list[str]:
        """Each round's track digest, in round order; ``ProtocolError`` when a ref is not an admissible
        track (its ``SimError`` code, or ``config-invalid``)."""
        digests = []
        for number, round_config in enumerate(config.rounds, start=1):
            asset = self._resolve_coded(round_config.track_ref)
            if asset.asset_type != "track":
                raise ProtocolError("config-invalid", f"round {number}: {round_config.track_ref} is not a track")
            digests.append(asset.digest)
        return digests

    # ---- notices -----------------------------------------------------------------------------------

    def version_report(self, refs: Iterable[str]) -> VersionCheckReport:
        """The pre-race asset-version check of ``refs`` under this node's policy (unknown refs are skipped)."""
        def known(ref: str) -> AdmittedAsset | None:
            try:
                return self.resolve(ref)
            except SimError:
                return None

        def version_of(ref: str) -> int | None:
            asset = known(ref)
            return None if asset is None else asset.manifest.get("asset_schema_version")

        def type_of(ref: str) -> str | None:
            asset = known(ref)
            return None if asset is None else asset.asset_type

        return pre_race_version_check(refs, self.policy, version_of, type_of)

    def notices(self, config: MatchConfig, rotations: Iterable[list[Any]]) -> list[tuple[str, str]]:
        """(kind, text) for this node's own view of the match; never names a material."""
        refs = [r.track_ref for r in config.rounds]
        for rotation in rotations:
            try:
                refs += self.rotation_refs(rotation)
            except ProtocolError:
                continue
        refs = [r for r in dict.fromkeys(refs) if is_builtin_ref(r) or self.store.has(r)]
        notices: list[tuple[str, str]] = []
        if self.deprecated and any(asset_materials(a) & self.deprecated for a in self._admitted_all(refs)):
            notices.append(("deprecated-material", DEPRECATED_NOTICE))
        report = self.version_report(refs)
        for kind, target in report.downgrade_by_type.items():
            notices.append(("downgrade", f"every {kind} in this match is computed at schema version {target} "
                                         "(downgraded for the whole field)"))
        for kind in report.schema_drift_types:
            notices.append(("schema-drift",
                            f"{kind} assets of several schema versions are in this match; data may differ slightly"))
        return notices

    def _admitted_all(self, refs: list[str]) -> list[AdmittedAsset]:
        out = []
        for ref in refs:
            try:
                out.append(self.resolve(ref))
            except SimError:
                continue
        return out
