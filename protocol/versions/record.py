"""The six-field build version (A axis) and the compatibility rule (spec/rooms.md §2).

``client_version`` is compared on its major number; ``rapier_version`` (here: the sim_core engine id),
``protocol_version``, ``derive_logic_version``, ``builtin_assets_version`` and
``economy_config_version`` must be equal. ``build_timestamp`` and ``commit_hash`` are diagnostics.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from protocol.errors import ProtocolError
from protocol.identity.keys import PeerId

CLIENT_VERSION = "0.1.0"
PROTOCOL_VERSION = "5.0.0"
DERIVE_LOGIC_VERSION = 4
BUILTIN_ASSETS_VERSION = 3
CLIENT_VERSION_REGEX = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
MAX_SAFE_INTEGER = 2**53 - 1
MAX_VERSION_TEXT = 128

# (reason token, field) in the order reasons are reported.
COMPARED_FIELDS = (
    ("client_version major", "client_version"),
    ("rapier", "rapier_version"),
    ("protocol", "protocol_version"),
    ("derive_logic", "derive_logic_version"),
    ("builtin_assets", "builtin_assets_version"),
    ("economy_config", "economy_config_version"),
)
CLIENT_VERSION_FORMAT = "client_version format"


@dataclass(frozen=True)
class ClientVersionInfo:
    """A build's version record: the spec's eight keys (six compared, two diagnostics)."""

    client_version: str
    rapier_version: str
    protocol_version: str
    derive_logic_version: int
    builtin_assets_version: int
    economy_config_version: int
    build_timestamp: int | float
    commit_hash: str

    def to_wire(self) -> dict[str, Any]:
        """Exactly the spec's eight keys."""
        return asdict(self)

    @classmethod
    def from_wire(cls, obj: object) -> "ClientVersionInfo":
        """Strict shape guard for untrusted records: exactly 8 keys, X.Y.Z, safe integers.

        Raises ``ProtocolError`` (``version-info-invalid``).
        """
        names = [f for f in cls.__dataclass_fields__]
        if not isinstance(obj, Mapping) or set(obj) != set(names) or len(obj) != len(names):
            raise ProtocolError("version-info-invalid", f"a version record has exactly the keys {', '.join(names)}")
        for name in ("client_version", "rapier_version", "protocol_version", "commit_hash"):
            if not isinstance(obj[name], str) or len(obj[name]) > MAX_VERSION_TEXT:
                raise ProtocolError("version-info-invalid", f"{name} must be text of at most {MAX_VERSION_TEXT} characters")
        if not CLIENT_VERSION_REGEX.fullmatch(obj["client_version"]):
            raise ProtocolError("version-info-invalid", "client_version must be X.Y.Z with non-negative integers")
        for name in ("derive_logic_version", "builtin_assets_version", "economy_config_version"):
            value = obj[name]
            if type(value) is not int or abs(value) > MAX_SAFE_INTEGER:
                raise ProtocolError("version-info-invalid", f"{name} must be a safe integer")
        stamp = obj["build_timestamp"]
        if type(stamp) not in (int, float) or not math.isfinite(stamp):
            raise ProtocolError("version-info-invalid", "build_timestamp must be a finite number")
        return cls(**{name: obj[name] for name in names})


def node_version_info(
    engine_id: str, economy_config_version: int, build_timestamp: int, commit_hash: str
) -> ClientVersionInfo:
    """This node's own record: the engine id stands in the rapier_version field: this node
    runs ``sim_core``, not Rapier, and two nodes must run the same engine to race."""
    return ClientVersionInfo(
        client_version=CLIENT_VERSION,
        rapier_version=engine_id,
        protocol_version=PROTOCOL_VERSION,
        derive_logic_version=DERIVE_LOGIC_VERSION,
        builtin_assets_version=BUILTIN_ASSETS_VERSION,
        economy_config_version=economy_config_version,
        build_timestamp=build_timestamp,
        commit_hash=commit_hash,
    )


def _major(client_version: object) -> int | None:
    if isinstance(client_version, str) and CLIENT_VERSION_REGEX.fullmatch(client_version):
        return int(client_version.split(".", 1)[0])
    return None


def incompatibility_reasons(mine: ClientVersionInfo, theirs: ClientVersionInfo) -> list[str]:
    """Ordered reason tokens; empty when the two builds may race together."""
    reasons = []
    my_major, their_major = _major(mine.client_version), _major(theirs.client_version)
    if my_major is None or their_major is None:
        reasons.append(CLIENT_VERSION_FORMAT)
    elif my_major != their_major:
        reasons.append("client_version major")
    for token, name in COMPARED_FIELDS[1:]:
        if getattr(mine, name) != getattr(theirs, name):
            reasons.append(token)
    return reasons


def field_differences(mine: ClientVersionInfo, theirs: ClientVersionInfo) -> list[tuple[str, Any, Any]]:
    """(field, my value, their value) for each reason, so a user sees both sides of a mismatch."""
    reasons = set(incompatibility_reasons(mine, theirs))
    return [
        (name, getattr(mine, name), getattr(theirs, name))
        for token, name in COMPARED_FIELDS
        if token in reasons or (name == "client_version" and CLIENT_VERSION_FORMAT in reasons)
    ]


@dataclass(frozen=True)
class CompatibilityReport:
    """Whether every peer's build may race with this one, and each incompatible peer's reasons."""

    compatible: bool
    incompatible: list[tuple[PeerId, list[str]]]  # (peer, reasons) in the peers' given order


def check_compatibility(mine: ClientVersionInfo, peers: Mapping[PeerId, ClientVersionInfo]) -> CompatibilityReport:
    """This build against every peer's record, by the compatibility rule (``incompatibility_reasons``)."""
    incompatible = []
    for peer, info in peers.items():
        reasons = incompatibility_reasons(mine, info)
        if reasons:
            incompatible.append((peer, reasons))
    return CompatibilityReport(compatible=not incompatible, incompatible=incompatible)


def short_peer(peer_id: str) -> str:
    """Peers are named by the last 4 characters of their PeerId in version errors."""
    return peer_id[-4:]


def describe_incompatibility(report: CompatibilityReport) -> str:
    """``<last4>: reason/reason; …`` as the spec words it."""
    return "; ".join(f"{short_peer(peer)}: {'/'.join(reasons)}" for peer, reasons in report.incompatible)
