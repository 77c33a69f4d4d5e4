"""Room wire messages (spec/rooms.md §4.6 ``RoomWire.kind``), as strict msgpack dataclasses.

Signed content travels as SignedPayload wire maps (``dict``) and is verified by the receiver; the
sender of every message is the authenticated peer of its link, or, for ``relay``, the origin the
host attests from the link the relayed message arrived on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol.encoding.wire import Message, message

# Messages that cost signature checks or large state: the transport's "expensive" bucket (8 / 4 per s).
EXPENSIVE_TYPES = frozenset(
    {
        "join-request", "ready-declaration", "ready-set-ack", "grid-commit", "grid-reveal",
        "car-rotation", "asset-request",
    }
)


@message("join-request")
class JoinRequest(Message):
    roomId: str
    role: str
    proof: bytes
    nickname: str
    listen: str


@message("join-verdict")
class JoinVerdict(Message):
    ok: bool
    reason: str
    detail: str


@dataclass(frozen=True)
class MemberWire:
    """One member as every member sees it in ``room-state``."""

    peerId: str
    nickname: str
    role: str
    membershipEpoch: int
    ready: bool
    carRotation: list[Any]
    listen: str


@message("room-state")
class RoomState(Message):
    roomId: str
    hostPeerId: str
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
    carRotation: list[Any]


@message("relay")
class Relay(Message):
    """``target`` is a PeerId or ``*``; ``origin`` is empty from a member and set by the host."""

    origin: str
    target: str
    body: bytes


@message("ready-declaration")
class ReadyDeclarationMsg(Message):
    signed: dict[str, Any]


@message("cancel-ready")
class CancelReady(Message):
    reason: str


@message("ready-set-request")
class ReadySetRequest(Message):
    context: dict[str, Any]
    declarations: list[dict[str, Any]]


@message("ready-set-ack")
class ReadySetAck(Message):
    signed: dict[str, Any]


@message("ready-set-refuse")
class ReadySetRefuse(Message):
    readySetDigest: str
    code: str
    detail: str


@message("grid-commit-request")
class GridCommitRequest(Message):
    context: dict[str, Any]


@message("grid-commit")
class GridCommit(Message):
    signed: dict[str, Any]


@message("grid-commitments-locked")
class GridCommitmentsLocked(Message):
    contextDigest: str
    commits: list[dict[str, Any]]


@message("grid-reveal")
class GridReveal(Message):
    signed: dict[str, Any]


@message("grid-ceremony-cancel")
class GridCeremonyCancel(Message):
    contextDigest: str
    reason: str
    missingPeers: list[str]


@message("locked-start-package")
class LockedStartPackageMsg(Message):
    package: dict[str, Any]


@message("match-start")
class MatchStart(Message):
    matchId: str
    startedAt: int
    packageDigest: str
    preStartDisconnects: list[str]


@message("countdown-cancel")
class CountdownCancel(Message):
    reason: str
    leavers: list[str]


@message("leave")
class Leave(Message):
    reason: str


@message("asset-request")
class AssetRequest(Message):
    contentId: str
    offset: int
    length: int


@message("asset-chunk")
class AssetChunk(Message):
    contentId: str
    offset: int
    total: int
    data: bytes


@message("asset-missing")
class AssetMissing(Message):
    contentId: str
