"""The relay daemon's settings: the ``[relay]`` table of the configuration file (``configs/relay.toml``
documents every key with its default), then ``--listen`` and ``--metrics`` on the command line.

Every key is checked by a rule of ``open4wd_node.runtime.values`` (a refused value names the key and the
rule: ``config-invalid``), and the limits become a ``RelayLimits`` (``protocol.relay.limits``) and the door's
``ListenerLimits``. This module imports nothing heavy: the command declares its options from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from open4wd_node.net.admission import LISTENER_LIMITS, ListenerLimits
from open4wd_node.runtime.addresses import LISTEN, METRICS_ADDRESS, Address
from open4wd_node.runtime.errors import UserError
from open4wd_node.runtime.values import IntRange, ListOf, Rule, Text, ValueRejected
from protocol.identity.keys import is_valid_peer_id
from open4wd_base.errors import LocalError
from protocol.relay.limits import RelayLimits

COUNT = IntRange(1, 1_000_000)
SECONDS = IntRange(1, 7 * 24 * 3600)
BYTES = IntRange(64 * 1024, 2**50)
PEER_IDS = ListOf(Text(64))




@dataclass(frozen=True)
class RelaySettings:
    """Everything ``open4wd-node relay`` runs with."""

    listen: Address = Address("0.0.0.0", 4100)
    metrics: Address | None = Address("127.0.0.1", 9464)
    drain_grace_s: int = 30
    limits: RelayLimits = field(default_factory=RelayLimits)
    door: ListenerLimits = LISTENER_LIMITS


_DEFAULT = RelayLimits()
# key -> (rule, RelayLimits field, multiplier from the key's unit to the field's)
LIMIT_KEYS: dict[str, tuple[Rule, str, int]] = {
    "reservation_ttl_s": (SECONDS, "reservation_ttl_ms", 1000),
    "max_reservations": (COUNT, "max_reservations", 1),
    "max_reservations_per_source": (COUNT, "max_reservations_per_source", 1),
    "max_circuits": (COUNT, "max_circuits", 1),
    "max_circuits_per_peer": (COUNT, "max_circuits_per_peer", 1),
    "max_circuits_per_source": (COUNT, "max_circuits_per_source", 1),
    "circuit_duration_s": (SECONDS, "circuit_duration_ms", 1000),
    "circuit_bytes": (BYTES, "circuit_bytes", 1),
    "circuit_bytes_per_second": (BYTES, "circuit_bytes_per_second", 1),
    "circuit_burst_bytes": (BYTES, "circuit_burst_bytes", 1),
    "total_bytes_per_second": (BYTES, "total_bytes_per_second", 1),
    "idle_timeout_s": (SECONDS, "idle_timeout_ms", 1000),
    "connect_timeout_s": (SECONDS, "connect_timeout_ms", 1000),
}
DOOR_KEYS: dict[str, Rule] = {"openings": COUNT, "openings_per_source": COUNT}
OTHER_KEYS: dict[str, Rule] = {"listen": LISTEN, "metrics": METRICS_ADDRESS, "drain_grace_s": IntRange(0, 3600),
                               "allow": PEER_IDS, "deny": PEER_IDS}


def default_of(key: str) -> Any:
    """A key's built-in default, in the key's unit (what ``configs/relay.toml`` shows)."""
    if key in LIMIT_KEYS:
        _, name, unit = LIMIT_KEYS[key]
        return getattr(_DEFAULT, name) // unit
    if key in DOOR_KEYS:
        return getattr(LISTENER_LIMITS, key)
    return {"listen": "0.0.0.0:4100", "metrics": "127.0.0.1:9464", "drain_grace_s": 30, "allow": [], "deny": []}[key]


def relay_settings(table: dict[str, Any]) -> RelaySettings:
    """The settings of a ``[relay]`` table (missing keys keep their defaults); ``UserError``
    ``config-invalid`` naming the key for an unknown key or a refused value."""
    rules: dict[str, Rule] = {**{key: rule for key, (rule, _, _) in LIMIT_KEYS.items()}, **DOOR_KEYS, **OTHER_KEYS}
    unknown = sorted(set(table) - set(rules))
    if unknown:
        raise UserError("config-invalid", f"unknown [relay] option(s) {', '.join(unknown)}; known: {', '.join(sorted(rules))}")
    values: dict[str, Any] = {}
    for key, value in table.items():
        try:
            values[key] = rules[key].check(value)
        except ValueRejected as exc:
            raise UserError("config-invalid", f"[relay] option {key!r} {exc}") from None
    for key in ("allow", "deny"):
        bad = [p for p in values.get(key, ()) if not is_valid_peer_id(p)]
        if bad:
            raise UserError("config-invalid", f"[relay] option {key!r} takes PeerIds (z…), got {bad[0]!r}")
    limits = {name: values[key] * unit for key, (_, name, unit) in LIMIT_KEYS.items() if key in values}
    if "allow" in values:
        limits["allow"] = frozenset(values["allow"]) or None
    if "deny" in values:
        limits["deny"] = frozenset(values["deny"])
    door = {key: values[key] for key in DOOR_KEYS if key in values}
    try:
        relay_limits = RelayLimits(**limits)
        door_limits = ListenerLimits(**{**{"openings": LISTENER_LIMITS.openings,
                                           "openings_per_source": LISTENER_LIMITS.openings_per_source}, **door})
    except ValueError as exc:  # the door's share must fit in its total
        raise UserError("config-invalid", f"[relay] {exc}") from None
    except LocalError as exc:  # RelayLimits refuses an inconsistent set (relay-limit-invalid)
        raise UserError("config-invalid", f"[relay] {exc.message}") from None
    return RelaySettings(
        listen=values.get("listen", RelaySettings.listen),
        metrics=values["metrics"] if "metrics" in values else RelaySettings.metrics,
        drain_grace_s=values.get("drain_grace_s", RelaySettings.drain_grace_s),
        limits=relay_limits, door=door_limits,
    )

