"""The relay's sans-IO book of reservations and circuits, with every limit that applies when one is asked
for (docs/relay.md). No trio, no sockets, no clock: every call takes ``now_ms`` and the requester's
authenticated PeerId and source address (its IP, or IPv6 /64, as the listener's door counts it).

A refusal raises ``RelayRefused`` with its code and is counted in ``refusals``; the shell tells the peer
the code (the link's ``link-close``) and exports the counts as metrics.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import NoReturn

from open4wd_base.errors import LocalError
from protocol.identity.keys import is_valid_peer_id
from protocol.relay.limits import Refusal, RelayLimits, RelayRefused
from protocol.relay.proof import check_reservation
from protocol.identity.keys import PeerId


@dataclass
class Reservation:
    """``peer`` is reachable through this relay until ``expires_ms`` (refreshed by a new proof)."""

    peer: PeerId
    source: str
    expires_ms: int


@dataclass(frozen=True)
class Circuit:
    """An open (or opening) circuit: ``dialer`` at ``source`` asked for ``target``."""

    circuit_id: bytes
    dialer: PeerId
    source: str
    target: PeerId
    opened_ms: int


class RelayBook:
    """Reservations and circuits of one relay, and the refusals by code."""

    def __init__(self, relay_peer: str, limits: RelayLimits) -> None:
        self.relay_peer = relay_peer
        self.limits = limits
        self.reservations: dict[str, Reservation] = {}
        self.circuits: dict[bytes, Circuit] = {}
        self.refusals: Counter[Refusal] = Counter()
        self.draining = False

    # ---- reservations ----------------------------------------------------------------------------

    def reserve(self, peer: PeerId, source: str, proof: bytes, transcript: bytes, now_ms: int) -> Reservation:
        """Grant or refresh ``peer``'s reservation for the TTL. The proof must be ``peer``'s signature over
        this relay and this link (``protocol.relay.proof``); a refresh keeps the peer's place."""
        limits = self.limits
        if self.draining:
            self._refuse(Refusal.RELAY_DRAINING, "this relay is shutting down; reserve at another relay")
        self._check_lists(peer, reserving=True)
        if not check_reservation(peer, proof, self.relay_peer, transcript):
            self._refuse(Refusal.RESERVATION_REFUSED,
                         "the reservation proof is not this node's signature over this link with this relay")
        held = self.reservations.get(peer)
        if held is None:
            if len(self.reservations) >= limits.max_reservations:
                self._refuse(Refusal.RELAY_FULL, f"this relay holds its most reservations ({limits.max_reservations}); "
                                                 "use another relay")
            from_source = sum(1 for r in self.reservations.values() if r.source == source)
            if from_source >= limits.max_reservations_per_source:
                self._refuse(Refusal.SOURCE_LIMIT, f"{source} already holds {from_source} reservations here, its share")
        reservation = Reservation(peer, source, now_ms + limits.reservation_ttl_ms)
        self.reservations[peer] = reservation
        return reservation

    def release(self, peer: PeerId) -> None:
        """Drop ``peer``'s reservation (released, or its control link ended); its open circuits stay."""
        self.reservations.pop(peer, None)

    def expired(self, now_ms: int) -> list[str]:
        """Drop and name the reservations whose TTL passed without a refresh."""
        gone = sorted(peer for peer, r in self.reservations.items() if r.expires_ms <= now_ms)
        for peer in gone:
            del self.reservations[peer]
        return gone

    def next_expiry_ms(self) -> int | None:
        """When the next reservation expires (None without reservations)."""
        return min((r.expires_ms for r in self.reservations.values()), default=None)

    # ---- circuits --------------------------------------------------------------------------------

    def open_circuit(self, circuit_id: bytes, dialer: PeerId, source: str, target: PeerId, now_ms: int) -> Circuit:
        """Count a circuit from ``dialer`` (at ``source``) to reserved ``target``, or refuse it."""
        limits = self.limits
        if circuit_id in self.circuits:
            raise LocalError("circuit-id-taken", "a circuit id was used twice")
        if self.draining:
            self._refuse(Refusal.RELAY_DRAINING, "this relay is shutting down; try another relay or a direct link")
        self._check_lists(dialer, reserving=False)
        if dialer == target:
            self._refuse(Refusal.CIRCUIT_SELF, "a circuit to yourself")
        if not is_valid_peer_id(target) or target not in self.reservations:
            self._refuse(Refusal.PEER_NOT_RESERVED, f"{target} holds no reservation at this relay")
        if len(self.circuits) >= limits.max_circuits:
            self._refuse(Refusal.RELAY_FULL, f"this relay carries its most circuits ({limits.max_circuits})")
        to_target = sum(1 for c in self.circuits.values() if c.target == target)
        if to_target >= limits.max_circuits_per_peer:
            self._refuse(Refusal.CIRCUIT_LIMIT, f"{target} already has {to_target} circuits here, the most per peer")
        from_source = sum(1 for c in self.circuits.values() if c.source == source)
        if from_source >= limits.max_circuits_per_source:
            self._refuse(Refusal.SOURCE_LIMIT, f"{source} already has {from_source} circuits here, its share")
        circuit = Circuit(circuit_id, dialer, source, target, now_ms)
        self.circuits[circuit_id] = circuit
        return circuit

    def answer(self, circuit_id: bytes, peer: PeerId) -> Circuit:
        """The reserved peer's answering connection for ``circuit_id``: the circuit, if ``peer`` is its
        target; ``circuit-unknown`` otherwise (late, made up, or someone else's)."""
        circuit = self.circuits.get(circuit_id)
        if circuit is None or circuit.target != peer:
            self._refuse(Refusal.CIRCUIT_UNKNOWN, "no circuit to you is waiting under that id (it may have timed out)")
        return circuit

    def close_circuit(self, circuit_id: bytes) -> None:
        """The circuit ended (or never opened): its places are free."""
        self.circuits.pop(circuit_id, None)

    def refuse(self, refusal: Refusal, message: str) -> RelayRefused:
        """Count a refusal the shell decided (a connect timed out) and return its error to raise."""
        self.refusals[refusal] += 1
        return RelayRefused(refusal, message)

    def _refuse(self, refusal: Refusal, message: str) -> NoReturn:
        raise self.refuse(refusal, message)

    def _check_lists(self, peer: PeerId, *, reserving: bool) -> None:
        if peer in self.limits.deny:
            self._refuse(Refusal.PEER_DENIED, "this relay's operator does not serve your PeerId")
        if reserving and self.limits.allow is not None and peer not in self.limits.allow:
            self._refuse(Refusal.PEER_DENIED, "this relay reserves only for the PeerIds its operator allows")
