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


@dataclass(frozen=True)
class NodeConfig:
    # On-chain governance epoch this node plays under; one of the six version fields.
    economy_config_version: int = 1
    # Client-local deprecated material ids (soft notice only; never blocks, never sent).
    deprecated_materials: tuple[str, ...] = field(default_factory=tuple)
    # Identity key file; empty = "<data-dir>/identity.key".
    identity_file: str = ""


DEFAULTS = NodeConfig()
_TYPES: dict[str, type] = {"economy_config_version": int, "deprecated_materials": tuple, "identity_file": str}


def _coerce(key: str, value: Any) -> Any:
    want = _TYPES[key]
    if want is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise UserError("config-invalid", f"option {key!r} must be an integer, got {value!r}")
    if want is str and not isinstance(value, str):
        raise UserError("config-invalid", f"option {key!r} must be a string, got {value!r}")
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
