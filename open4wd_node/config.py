"""Node configuration: built-in defaults, overridden by a TOML file, overridden by command-line options.

``configs/node.toml`` documents every option with its default; a test keeps it equal to ``DEFAULTS``.
Unknown keys and mistyped values are refused with ``config-invalid`` rather than ignored.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from open4wd_node.context_errors import UserError
from open4wd_node.values import MAX_SAFE_INTEGER, IntRange, ValueRejected


@dataclass(frozen=True)
class NodeConfig:
    # On-chain governance epoch this node plays under; one of the six version fields.
    economy_config_version: int = 1
    # Client-local deprecated material ids (soft notice only; never blocks, never sent).
    deprecated_materials: tuple[str, ...] = field(default_factory=tuple)
    # Identity key file; empty = "<data-dir>/identity.key".
    identity_file: str = ""
    # B-axis asset schema policy, per asset type (all empty today, as in the spec's pre-launch state):
    # versions that start a new compatibility class, yanked (broken) versions, and minimum usable versions.
    asset_walls: dict[str, tuple[int, ...]] = field(default_factory=dict)
    asset_yanked: dict[str, tuple[int, ...]] = field(default_factory=dict)
    asset_min_versions: dict[str, int] = field(default_factory=dict)


DEFAULTS = NodeConfig()
_TYPES: dict[str, Any] = {
    "economy_config_version": IntRange(1, MAX_SAFE_INTEGER),
    "deprecated_materials": tuple,
    "identity_file": str,
    "asset_walls": "versions-by-type",
    "asset_yanked": "versions-by-type",
    "asset_min_versions": "version-by-type",
}


def _positive_int(value: Any) -> bool:
    return type(value) is int and value >= 1


def _coerce(key: str, value: Any) -> Any:
    want = _TYPES[key]
    if isinstance(want, IntRange):  # the same rule as the command-line option
        try:
            return want.check(value)
        except ValueRejected as exc:
            raise UserError("config-invalid", f"option {key!r} {exc}") from None
    if want is str and not isinstance(value, str):
        raise UserError("config-invalid", f"option {key!r} must be a string, got {value!r}")
    if want in ("versions-by-type", "version-by-type"):
        single = want == "version-by-type"
        ok = isinstance(value, dict) and all(
            _positive_int(v) if single else isinstance(v, list) and all(_positive_int(x) for x in v)
            for v in value.values()
        )
        if not ok:
            shape = "a table of type = version" if single else "a table of type = [versions]"
            raise UserError("config-invalid", f"option {key!r} must be {shape} (positive integers)")
        return dict(value) if single else {k: tuple(sorted(set(v))) for k, v in value.items()}
    if want is tuple:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UserError("config-invalid", f"option {key!r} must be a list of strings")
        return tuple(value)
    return value


def config_from_mapping(data: dict[str, Any], base: NodeConfig = DEFAULTS) -> NodeConfig:
    known = {f.name for f in fields(NodeConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UserError("config-invalid", f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return replace(base, **{key: _coerce(key, value) for key, value in data.items()})


def load_config(path: Path | None) -> NodeConfig:
    """The defaults, or the defaults overridden by the TOML file at ``path``."""
    if path is None:
        return DEFAULTS
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError("config-unreadable", f"cannot read {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError("config-invalid", f"{path} is not valid TOML: {exc}") from None
    return config_from_mapping(data)
