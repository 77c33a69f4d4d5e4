"""The LockedStartPackage: everything a race needs, signed by everyone, copied to every member.

Built by the host once every ack and every grid reveal is in; every member re-verifies it in full
(signatures, ReadySet digest, acks of the whole roster, grid proof, match id) and trusts nothing
the host merely asserts. The race reads cars and slots only from this package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protocol.encoding.dagcbor import derive_match_id, signing_digest
from protocol.errors import ProtocolError
from protocol.room.ready import ReadyDeclaration, check_ack, verify_ready_set
from protocol.room.config import MatchConfig
from protocol.identity.signed import SignedPayload
from protocol.room.start_grid import base_order, grid_context, verify_grid_proof
from protocol.versions.record import ClientVersionInfo
from protocol.identity.keys import PeerId

PACKAGE_TYPE = "locked-start-package"
COUNTDOWN_MS = 5_000
PACKAGE_KEYS = {
    "type", "version", "roomId", "matchConfig", "readySetContext", "readySetDigest", "declarations", "acks",
    "gridProof", "matchId", "startedAt", "countdownDeadline",
}


@dataclass(frozen=True)
class LockedStart:
    """A verified LockedStartPackage: the match id, times, roster, settings, declarations and grid seed."""

    match_id: str
    started_at: int
    countdown_deadline: int
    roster: list[PeerId]
    config: MatchConfig
    declarations: dict[PeerId, ReadyDeclaration]
    grid_seed: bytes
    grid_context_digest: bytes
    digest: str
    package: dict[str, Any]

    def slots(self, round_index: int) -> dict[PeerId, int]:
        """Start slot of every roster peer in this round (base order rotated by the round index)."""
        order = base_order(self.grid_seed, self.roster)
        n = len(order)
        return {peer: (i + round_index) % n for i, peer in enumerate(order)}

    def car(self, peer: PeerId, round_index: int) -> Any:
        """The loadout ``peer`` declared for round ``round_index``."""
        return self.declarations[peer].car_rotation[round_index]


def build_package(
    *,
    room_id: str,
    config: MatchConfig,
    ready_context: Mapping[str, Any],
    ready_digest: str,
    declarations: Sequence[SignedPayload],
    acks: Sequence[SignedPayload],
    grid_ctx: Mapping[str, Any],
    commits: Sequence[SignedPayload],
    reveals: Sequence[SignedPayload],
    started_at: int,
    countdown_deadline: int,
) -> dict[str, Any]:
    """The host's LockedStartPackage from everything the ceremony collected.

    Raises ``ProtocolError`` when the grid proof does not hold (``grid-invalid``) or the match id
    cannot be derived (``match-id-input-invalid``): the ceremony's signed material came from peers.
    """
    digest, seed = verify_grid_proof(grid_ctx, commits, reveals)
    match_id = derive_match_id(list(ready_context["roster"]), started_at, {}, digest.hex(), seed.hex())
    return {
        "type": PACKAGE_TYPE,
        "version": 1,
        "roomId": room_id,
        "matchConfig": config.to_wire(),
        "readySetContext": dict(ready_context),
        "readySetDigest": ready_digest,
        "declarations": [d.to_wire() for d in sorted(declarations, key=lambda e: e.signer)],
        "acks": [a.to_wire() for a in sorted(acks, key=lambda e: e.signer)],
        "gridProof": {
            "context": dict(grid_ctx),
            "commits": [c.to_wire() for c in sorted(commits, key=lambda e: e.signer)],
            "reveals": [r.to_wire() for r in sorted(reveals, key=lambda e: e.signer)],
        },
        "matchId": match_id,
        "startedAt": started_at,
        "countdownDeadline": countdown_deadline,
    }


def package_digest(package: Mapping[str, Any]) -> str:
    """The package's digest as ``match-start`` names it: hex ``signing_digest(package)``."""
    return signing_digest(package).hex()


def verify_package(
    package: object,
    *,
    room_id: str,
    mine: ClientVersionInfo,
    track_digests: Sequence[str],
    expected_ready_digest: str | None = None,
) -> LockedStart:
    """Re-verify a package from scratch; raises ``ProtocolError`` ``locked-start-invalid`` (or a more
    precise code from the ReadySet, ack, grid or match-id checks)."""
    if not isinstance(package, Mapping) or set(package) != PACKAGE_KEYS or package["type"] != PACKAGE_TYPE:
        raise ProtocolError("locked-start-invalid", "malformed locked start package")
    if package["roomId"] != room_id:
        raise ProtocolError("locked-start-invalid", "the package is for another room")
    config = MatchConfig.from_wire(package["matchConfig"])
    context = package["readySetContext"]
    if not isinstance(context, Mapping):
        raise ProtocolError("locked-start-invalid", "malformed ReadySet context")
    declarations = verify_ready_set(
        context,
        _list(package["declarations"]),
        room_id=room_id,
        config_digest=config.digest,
        rounds=len(config.rounds),
        mine=mine,
    )
    ready_digest = signing_digest(context).hex()
    if package["readySetDigest"] != ready_digest or (expected_ready_digest not in (None, ready_digest)):
        raise ProtocolError("locked-start-invalid", "the package's ReadySet is not the one this node acknowledged")
    acked = set()
    for raw in _list(package["acks"]):
        envelope = SignedPayload.from_wire(raw)
        check_ack(envelope, room_id, ready_digest)
        acked.add(envelope.signer)
    roster = sorted(declarations)
    if sorted(acked) != roster or len(package["acks"]) != len(roster):
        raise ProtocolError("locked-start-invalid", "the package needs exactly one ack from every participant")
    proof = package["gridProof"]
    if not isinstance(proof, Mapping) or set(proof) != {"context", "commits", "reveals"}:
        raise ProtocolError("locked-start-invalid", "malformed grid proof")
    expected_grid = grid_context(room_id, roster, track_digests, len(config.rounds))
    if proof["context"] != expected_grid:
        raise ProtocolError("locked-start-invalid", "the grid context differs from the roster, tracks or rounds")
    digest, seed = verify_grid_proof(expected_grid, _list(proof["commits"]), _list(proof["reveals"]))
    started, deadline = package["startedAt"], package["countdownDeadline"]
    if type(started) is not int or type(deadline) is not int or deadline - started != COUNTDOWN_MS:
        raise ProtocolError("locked-start-invalid", "the countdown must end 5 s after startedAt")
    match_id = derive_match_id(roster, started, {}, digest.hex(), seed.hex())
    if package["matchId"] != match_id:
        raise ProtocolError("locked-start-invalid", "the match id does not follow from the roster and grid proof")
    return LockedStart(
        match_id, started, deadline, roster, config, declarations, seed, digest, package_digest(package), dict(package)
    )


def _list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise ProtocolError("locked-start-invalid", "expected a list in the package")
    return value
