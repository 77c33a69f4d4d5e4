"""What a relay allows (docs/relay.md, "Limits"), and the coded refusal every limit answers with.

Every number here is enforced: reservations by the ``RelayBook`` when granted, circuits by the book when
opened, and a circuit's duration, bytes, bandwidth and idle time by its ``CircuitMeter`` while bytes flow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from open4wd_base.errors import CodedError, LocalError

MIB = 1024 * 1024
COPY_CHUNK_BYTES = 64 * 1024  # the most a relay reads from one end at once (a bucket must hold it)


class Refusal(StrEnum):
    """Why a relay refused a reservation or a circuit, or ended one: the code the peer is told and the
    label of the ``open4wd_relay_refusals_total`` / ``open4wd_relay_circuit_ends_total`` series."""

    RESERVATION_REFUSED = "reservation-refused"  # the proof does not verify
    PEER_DENIED = "peer-denied"  # the PeerId is on the deny list, or not on the allow list
    RELAY_FULL = "relay-full"  # every reservation or circuit place of the relay is taken
    SOURCE_LIMIT = "source-limit"  # the source address holds its share of reservations or circuits
    PEER_NOT_RESERVED = "peer-not-reserved"  # a connect to a PeerId without a reservation here
    CIRCUIT_LIMIT = "circuit-limit"  # the reserved peer has its most circuits open
    CIRCUIT_SELF = "circuit-self"  # a node asked for a circuit to itself
    CIRCUIT_UNKNOWN = "circuit-unknown"  # an accept for a circuit nobody is waiting on (late, or made up)
    CIRCUIT_TIMEOUT = "circuit-timeout"  # the reserved peer did not answer a connect in time
    RELAY_DRAINING = "relay-draining"  # the relay is shutting down: no new reservation or circuit
    RESERVATION_EXPIRED = "reservation-expired"  # not refreshed within its TTL


class CircuitEnd(StrEnum):
    """Why a circuit ended (``open4wd_relay_circuit_ends_total{reason}``)."""

    CLOSED = "closed"  # one end hung up (the ordinary end)
    DURATION = "circuit-duration"  # open longer than ``circuit_duration_ms``
    BYTES = "circuit-bytes"  # carried more than ``circuit_bytes``
    IDLE = "circuit-idle"  # no byte either way for ``idle_timeout_ms``
    DRAINED = "relay-drained"  # the drain's grace period ended


class RelayRefused(CodedError):
    """The relay's policy refused a request (a limit, a list, a bad proof): told to the peer with
    ``code`` and counted; neither this relay's bug nor, in itself, the peer's misbehaviour."""

    def __init__(self, refusal: Refusal, message: str) -> None:
        super().__init__(refusal.value, message)
        self.refusal = refusal


@dataclass(frozen=True)
class RelayLimits:
    """Every limit of a relay; the defaults are the shipped ``configs/relay.toml``."""

    reservation_ttl_ms: int = 3_600_000  # a reservation lasts 1 h unless refreshed
    max_reservations: int = 1024
    max_reservations_per_source: int = 16  # one source address (a NAT) may hold this many
    max_circuits: int = 2048
    max_circuits_per_peer: int = 16  # an 8-player race needs 7 mesh circuits plus the room's
    max_circuits_per_source: int = 64  # circuits asked for from one source address
    circuit_duration_ms: int = 4 * 3_600_000  # a long match, with its rounds
    circuit_bytes: int = 1024 * MIB
    circuit_bytes_per_second: int = 8 * MIB  # each direction of one circuit
    circuit_burst_bytes: int = 16 * MIB  # a race link's 4 MiB catch-up state passes at once
    total_bytes_per_second: int = 512 * MIB  # every circuit together, both directions
    idle_timeout_ms: int = 60_000  # the ends ping every 3 s, so only a dead circuit is this idle
    connect_timeout_ms: int = 5_000  # how long a connect waits for the reserved peer's answer
    allow: frozenset[str] | None = None  # if set, only these PeerIds may reserve
    deny: frozenset[str] = field(default_factory=frozenset)  # these PeerIds may neither reserve nor connect

    def __post_init__(self) -> None:
        numbers = {name: getattr(self, name) for name in (
            "reservation_ttl_ms", "max_reservations", "max_reservations_per_source", "max_circuits",
            "max_circuits_per_peer", "max_circuits_per_source", "circuit_duration_ms", "circuit_bytes",
            "circuit_bytes_per_second", "circuit_burst_bytes", "total_bytes_per_second", "idle_timeout_ms",
            "connect_timeout_ms")}
        for name, value in numbers.items():
            if value <= 0:
                raise LocalError("relay-limit-invalid", f"{name} must be positive, got {value}")
        if self.circuit_burst_bytes < COPY_CHUNK_BYTES:
            raise LocalError("relay-limit-invalid", f"circuit_burst_bytes must hold one read ({COPY_CHUNK_BYTES} bytes)")
        if self.total_bytes_per_second < COPY_CHUNK_BYTES:
            raise LocalError("relay-limit-invalid",
                             f"total_bytes_per_second must be at least one read ({COPY_CHUNK_BYTES} bytes)")
