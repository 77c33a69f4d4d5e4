"""Ready declarations, the ReadySet and its acks (spec/rooms.md §4.6).

A declaration is a SignedPayload by the participant's master key over
``{type, roomId, configDigest, membershipEpoch, participant, clientVersion, carRotation}``. The ReadySet
context binds the room, the config, the canonical roster and the digest of every declaration envelope;
each participant signs an ack over the context digest only after checking everything itself. The
ReadySet digest is ``signing_digest(context).hex()`` (``protocol.encoding.dagcbor``). Everything here
judges what peers signed and sent, so refusals are ``ProtocolError``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protocol.encoding import dagcbor
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.identity.signed import SignedPayload, build_signed, check_signature
from protocol.room.messages import Culprit
from protocol.versions.record import ClientVersionInfo, check_compatibility, describe_incompatibility
from protocol.identity.keys import PeerId

DECLARATION_TYPE = "ready-declaration"
ACK_TYPE = "ready-set-ack"
CONTEXT_TYPE = "ready-set-context"
READY_SET_VERSION = 1
DECLARATION_KEYS = {"type", "roomId", "configDigest", "membershipEpoch", "participant", "clientVersion", "carRotation"}


@dataclass(frozen=True)
class ReadyDeclaration:
    """A parsed Ready declaration, with the envelope it came in (kept as evidence for the package)."""

    room_id: str
    config_digest: str
    membership_epoch: int
    participant: PeerId
    client_version: ClientVersionInfo
    car_rotation: list[Any]
    envelope: SignedPayload

    @property
    def envelope_digest(self) -> str:
        """The digest of the exact envelope (see ``envelope_digest``)."""
        return envelope_digest(self.envelope)


def envelope_digest(envelope: SignedPayload) -> str:
    """Hex SHA-256 of the canonical envelope: binds the exact signed bytes, nonce and signature included."""
    return hashlib.sha256(dagcbor.encode(envelope.to_wire())).hexdigest()


def build_declaration(
    identity: Identity,
    room_id: str,
    config_digest: str,
    membership_epoch: int,
    version: ClientVersionInfo,
    car_rotation: Sequence[Any],
    now_ms: int,
) -> SignedPayload:
    """This participant's signed Ready declaration for the room, settings, epoch, build and cars."""
    payload = {
        "type": DECLARATION_TYPE,
        "roomId": room_id,
        "configDigest": config_digest,
        "membershipEpoch": membership_epoch,
        "participant": identity.peer_id,
        "clientVersion": version.to_wire(),
        "carRotation": list(car_rotation),
    }
    return build_signed(identity, payload, now_ms)


def parse_declaration(envelope: SignedPayload) -> ReadyDeclaration:
    """Shape of a declaration whose envelope was already verified; the signer must be the participant.

    Raises ``ProtocolError`` (``ready-invalid``, ``version-info-invalid``).
    """
    p = envelope.payload
    if not isinstance(p, Mapping) or set(p) != DECLARATION_KEYS or p["type"] != DECLARATION_TYPE:
        raise ProtocolError("ready-invalid", "a ready declaration has exactly the spec's fields")
    if p["participant"] != envelope.signer:
        raise ProtocolError("ready-invalid", "a ready declaration must be signed by its participant")
    if not isinstance(p["roomId"], str) or not isinstance(p["configDigest"], str):
        raise ProtocolError("ready-invalid", "roomId and configDigest must be text")
    if type(p["membershipEpoch"]) is not int or p["membershipEpoch"] < 0:
        raise ProtocolError("ready-invalid", "membershipEpoch must be a non-negative integer")
    if not isinstance(p["carRotation"], list):
        raise ProtocolError("ready-invalid", "carRotation must be a list with one car per round")
    return ReadyDeclaration(
        p["roomId"],
        p["configDigest"],
        p["membershipEpoch"],
        p["participant"],
        ClientVersionInfo.from_wire(p["clientVersion"]),
        p["carRotation"],
        envelope,
    )


def ready_set_context(room_id: str, config_digest: str, declarations: Mapping[PeerId, ReadyDeclaration]) -> dict[str, Any]:
    """The ReadySet context: room, settings, canonical roster and each declaration's envelope digest."""
    return {
        "type": CONTEXT_TYPE,
        "version": READY_SET_VERSION,
        "roomId": room_id,
        "configDigest": config_digest,
        "roster": sorted(declarations),
        "declarations": {peer: d.envelope_digest for peer, d in declarations.items()},
    }


def build_ack(identity: Identity, room_id: str, ready_set_digest: str, now_ms: int) -> SignedPayload:
    """This participant's signed ack of the ReadySet with ``ready_set_digest``."""
    return build_signed(identity, {"type": ACK_TYPE, "roomId": room_id, "readySetDigest": ready_set_digest}, now_ms)


def check_ack(envelope: SignedPayload, room_id: str, ready_set_digest: str) -> None:
    """Raise ``ProtocolError`` (``invalid-signature``, ``ack-invalid``) unless ``envelope`` is a valid ack
    of this ReadySet."""
    check_signature(envelope)
    expected = {"type": ACK_TYPE, "roomId": room_id, "readySetDigest": ready_set_digest}
    if envelope.payload != expected:
        raise ProtocolError("ack-invalid", "the ack does not cover this ReadySet")


def read_ready_set(
    context: object, envelopes: Sequence[object], *, room_id: str, config_digest: str, rounds: int
) -> dict[PeerId, ReadyDeclaration]:
    """The ReadySet's declarations, once the set itself holds: every signature, each participant once, the
    room, settings and car count of each, and the context built from exactly these declarations. Raises
    ``ProtocolError`` (``envelope-invalid``, ``invalid-signature``, ``ready-invalid``, ``ready-set-invalid``):
    whoever built the set is at fault, not one participant."""
    declarations: dict[PeerId, ReadyDeclaration] = {}
    for raw in envelopes:
        envelope = raw if isinstance(raw, SignedPayload) else SignedPayload.from_wire(raw)
        check_signature(envelope)
        declaration = parse_declaration(envelope)
        if declaration.participant in declarations:
            raise ProtocolError("ready-set-invalid", "a participant appears twice in the ReadySet")
        declarations[declaration.participant] = declaration
    for d in declarations.values():
        if d.room_id != room_id or d.config_digest != config_digest:
            raise ProtocolError("ready-set-invalid", f"{d.participant[-4:]} declared for another room or settings")
        if len(d.car_rotation) != rounds:
            raise ProtocolError("ready-set-invalid", f"{d.participant[-4:]} must declare one car per round ({rounds})")
    if context != ready_set_context(room_id, config_digest, declarations):
        raise ProtocolError("ready-set-invalid", "the ReadySet context does not match its declarations")
    return declarations


def refused_declarations(
    declarations: Mapping[PeerId, ReadyDeclaration], mine: ClientVersionInfo,
    check_rotation: Callable[[PeerId, list[Any]], None] = lambda peer, rotation: None,
) -> list[Culprit]:
    """The participants whose declaration this node cannot race with, in PeerId order, each with why: a
    build incompatible with this node's (``version-incompatible``), or a car the assets refuse (whatever
    ``check_rotation`` raises: ``asset-missing``, ``asset-version-unusable:…``, ``loadout-…``)."""
    culprits = []
    for peer in sorted(declarations):
        report = check_compatibility(mine, {peer: declarations[peer].client_version})
        if not report.compatible:
            culprits.append(Culprit(peer, "version-incompatible", describe_incompatibility(report)))
            continue
        try:
            check_rotation(peer, declarations[peer].car_rotation)
        except ProtocolError as exc:
            culprits.append(Culprit(peer, exc.code, exc.message))
    return culprits


def verify_ready_set(
    context: object,
    envelopes: Sequence[object],
    *,
    room_id: str,
    config_digest: str,
    rounds: int,
    mine: ClientVersionInfo,
    check_rotation: Callable[[PeerId, list[Any]], None] = lambda peer, rotation: None,
) -> dict[PeerId, ReadyDeclaration]:
    """Everything a participant checks before it acks (``read_ready_set``, then ``refused_declarations``);
    raises a coded error naming the first problem.

    Raises ``ProtocolError`` (``envelope-invalid``, ``invalid-signature``, ``ready-invalid``,
    ``ready-set-invalid``, ``version-incompatible``, or whatever ``check_rotation`` raises for a car).
    """
    declarations = read_ready_set(context, envelopes, room_id=room_id, config_digest=config_digest, rounds=rounds)
    culprits = refused_declarations(declarations, mine, check_rotation)
    if culprits:
        raise ProtocolError(culprits[0].code, culprits[0].detail)
    return declarations
