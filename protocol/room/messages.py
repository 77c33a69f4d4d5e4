"""Room wire messages (spec/rooms.md §4.6 ``RoomWire.kind``), as strict typed msgpack messages.

Signed content travels as SignedPayload wire maps (``dict``) and is verified by the receiver; the
sender of every message is the authenticated peer of its link, or, for ``relay``, the origin the
host attests from the link the relayed message arrived on.
"""

from __future__ import annotations

from typing import Any

from protocol.encoding.wire import Message, Record, message
from protocol.identity.keys import PeerId

# Messages that cost signature checks or large state: the transport's "expensive" bucket (8 / 4 per s).
EXPENSIVE_TYPES = frozenset(
    {
        "join-request", "ready-declaration", "ready-set-ack", "grid-commit", "grid-reveal",
        "car-rotation", "asset-request",
    }
)


@message("join-request")
class JoinRequest(Message):
    """A link's first message: join ``roomId`` as ``role``, proving the invitation secret over the link."""

    roomId: str
    role: str
    proof: bytes
    nickname: str
    listen: str


@message("join-verdict")
class JoinVerdict(Message):
    """The host's answer to a join request: admitted (``ok``), or refused with the spec's ``reason``."""

    ok: bool
    reason: str
    detail: str


class MemberWire(Record):
    """One member as every member sees it in ``room-state``."""

    peerId: PeerId
    nickname: str
    role: str
    membershipEpoch: int
    ready: bool
    carRotation: list[Any]
    listen: str


@message("room-state")
class RoomState(Message):
    """The host's whole room as every member sees it, broadcast on every change (newer ``stateEpoch`` wins)."""

    roomId: str
    hostPeerId: PeerId
    phase: str
    matchConfig: dict[str, Any]
    configDigest: str
    minPlayers: int
    maxPlayers: int
    maxSpectators: int
    members: list[MemberWire]
    stateEpoch: int


@message("car-rotation")
class CarRotation(Message):
    """A participant's cars, one loadout per round."""

    carRotation: list[Any]


RELAY_TO_ALL = "*"  # ``relay.target`` for every other member


@message("relay")
class Relay(Message):
    """``target`` is a PeerId or ``*``; ``origin`` is empty from a member and set by the host."""

    origin: str
    target: str
    body: bytes


@message("ready-declaration")
class ReadyDeclarationMsg(Message):
    """A participant's signed Ready declaration (a SignedPayload wire map)."""

    signed: dict[str, Any]


@message("ready-refused")
class ReadyRefusal(Message):
    """The host's answer to a ``ready-declaration`` it refused, on its sender's link only: the
    declaration's ``nonce`` (empty when it had none), the refusal's ``code`` and ``detail``. Nothing
    changed; the sender may declare again."""

    nonce: bytes
    code: str
    detail: str


@message("cancel-ready")
class CancelReady(Message):
    """A participant withdraws its Ready declaration."""

    reason: str


@message("ready-set-request")
class ReadySetRequest(Message):
    """The host asks every participant to check and ack the ReadySet (context and declarations)."""

    context: dict[str, Any]
    declarations: list[dict[str, Any]]


@message("ready-set-ack")
class ReadySetAck(Message):
    """A participant's signed ack of the ReadySet digest."""

    signed: dict[str, Any]


class Culprit(Record):
    """A participant whose declaration a refusal refuses, and why (``code``, ``detail``)."""

    peer: PeerId
    code: str
    detail: str


@message("ready-set-refuse")
class ReadySetRefuse(Message):
    """A participant will not ack the ReadySet, saying why (``code``, ``detail``), and whose declarations it
    refuses (``culprits``: each participant whose car or build it cannot race with; none when it refuses
    the set itself). The host judges the refusal by everyone's answers (protocol/room/stalls.py)."""

    readySetDigest: str
    code: str
    detail: str
    culprits: list[Culprit]


@message("room-decision")
class RoomDecision(Message):
    """The host withdrew ``participant``'s Ready for ``decision`` (a ``StallDecision``: its declaration was
    refused, its refusal overruled, it did not answer, it missed a start-grid phase, or it was not Ready
    again in time), with the ``code`` and ``detail`` of the refusal or timeout, decided by the answers of
    ``by``; ``strikes`` within the window; ``removed``: it is out of the room (sent to every member)."""

    participant: PeerId
    decision: str
    code: str
    detail: str
    by: list[PeerId]
    strikes: int
    removed: bool


@message("grid-commit-request")
class GridCommitRequest(Message):
    """The host opens the start-grid ceremony over the locked context."""

    context: dict[str, Any]


@message("grid-commit")
class GridCommit(Message):
    """A participant's signed grid commitment."""

    signed: dict[str, Any]


@message("grid-commitments-locked")
class GridCommitmentsLocked(Message):
    """Every commitment, locked: each participant now reveals its nonce."""

    contextDigest: str
    commits: list[dict[str, Any]]


@message("grid-reveal")
class GridReveal(Message):
    """A participant's signed nonce reveal."""

    signed: dict[str, Any]


@message("grid-ceremony-cancel")
class GridCeremonyCancel(Message):
    """The host dropped the grid ceremony (``reason``; ``missingPeers`` on a timeout)."""

    contextDigest: str
    reason: str
    missingPeers: list[PeerId]


@message("locked-start-package")
class LockedStartPackageMsg(Message):
    """The LockedStartPackage, for every member to re-verify; the countdown runs."""

    package: dict[str, Any]


@message("match-start")
class MatchStart(Message):
    """The countdown ended: the match starts with the package of ``packageDigest``; ``spectatorSources``
    maps each spectator of the room to the racer that streams the race to it (``assign_sources``)."""

    matchId: str
    startedAt: int
    packageDigest: str
    preStartDisconnects: list[PeerId]
    spectatorSources: dict[PeerId, PeerId]


@message("countdown-cancel")
class CountdownCancel(Message):
    """Too few of the locked roster remained: the countdown is cancelled and everyone un-Ready."""

    reason: str
    leavers: list[PeerId]


@message("leave")
class Leave(Message):
    """The sender leaves the room."""

    reason: str


@message("asset-request")
class AssetRequest(Message):
    """Ask a member (through the host's relay) for ``length`` bytes of an asset from ``offset``."""

    contentId: str
    offset: int
    length: int


@message("asset-chunk")
class AssetChunk(Message):
    """Bytes of an asset from ``offset`` of its ``total`` size."""

    contentId: str
    offset: int
    total: int
    data: bytes


@message("asset-missing")
class AssetMissing(Message):
    """The asked member does not serve that asset."""

    contentId: str
