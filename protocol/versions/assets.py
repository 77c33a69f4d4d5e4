"""B-axis asset schema versions: downgrade targets, drift and unusable assets (spec/rooms.md §5.2–5.4, §6).

Pure functions over per-type walls, yanks and minimum versions (client configuration; all empty today,
so no notice fires in production, exactly as in the spec's pre-launch state). Every peer computes the
report itself; nothing of it crosses the wire.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

SKIPPED_PREFIXES = ("builtin:", "local:")


@dataclass(frozen=True)
class AssetVersionPolicy:
    """This client's schema-version policy per asset type: compatibility walls, yanked versions, minimums."""

    walls: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    yanked: Mapping[str, frozenset[int]] = field(default_factory=dict)
    min_versions: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class VersionCheckReport:
    """The B-axis verdict over a match's assets: downgrade targets, drifting types, unusable refs."""

    downgrade_by_type: dict[str, int]
    schema_drift_types: list[str]
    unusable: list[str]

    @property
    def ok(self) -> bool:
        """Whether nothing blocks the race (no unusable asset)."""
        return not self.unusable


def compatibility_class(version: int, walls: Iterable[int]) -> int:
    """How many walls lie at or below ``version`` (a wall V separates < V from ≥ V)."""
    return sum(1 for wall in walls if version >= wall)


def downgrade_target(versions: Iterable[int], walls: Iterable[int], yanked: Iterable[int] = ()) -> int | None:
    """Version every asset of a type is computed at, or None when all held versions are compatible."""
    held = sorted(set(versions))
    walls, yanked = sorted(walls), set(yanked)
    if not held:
        return None
    classes = {v: compatibility_class(v, walls) for v in held}
    lowest = min(classes.values())
    if all(c == lowest for c in classes.values()):
        return None
    in_lowest = [v for v in held if classes[v] == lowest]
    candidates = [v for v in in_lowest if v not in yanked]
    if candidates:
        return max(candidates)
    return next((v for v in range(min(in_lowest) - 1, 0, -1) if v not in yanked), None)


def effective_min(min_version: int, yanked: Iterable[int] = ()) -> int:
    """A minimum that lands on a yanked version falls to the nearest non-yanked version below it."""
    yanked = set(yanked)
    if min_version not in yanked:
        return min_version
    return next((v for v in range(min_version - 1, 0, -1) if v not in yanked), min_version)


def pre_race_version_check(
    refs: Iterable[str],
    policy: AssetVersionPolicy,
    version_of: Callable[[str], int | None],
    type_of: Callable[[str], str | None],
) -> VersionCheckReport:
    """Skip built-in and local refs and refs of unknown version or type; block only the known-unusable."""
    by_type: dict[str, set[int]] = {}
    unusable: list[str] = []
    for ref in dict.fromkeys(refs):
        if ref.startswith(SKIPPED_PREFIXES):
            continue
        version, kind = version_of(ref), type_of(ref)
        if version is None or kind is None:
            continue
        floor = effective_min(policy.min_versions.get(kind, 1), policy.yanked.get(kind, ()))
        if version < floor:
            unusable.append(ref)
            continue
        by_type.setdefault(kind, set()).add(version)
    downgrades: dict[str, int] = {}
    drift: list[str] = []
    for kind in sorted(by_type):
        target = downgrade_target(by_type[kind], policy.walls.get(kind, ()), policy.yanked.get(kind, ()))
        if target is not None:
            downgrades[kind] = target
        elif len(by_type[kind]) > 1:
            drift.append(kind)
    return VersionCheckReport(downgrades, drift, unusable)
