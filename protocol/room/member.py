"""A member's view of its room: version negotiation, checks, Ready, acks, grid ceremony, start.

Every node runs one (the host too, for its own seat). It never trusts the host: it re-verifies the
ReadySet, the grid commitments and the LockedStartPackage itself, and asks its ``RoomAssets`` (the
shell's asset code) whether every car and track is present, valid and usable before it acks.
Sans-IO: methods take ``now_ms`` and return ``room_actions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from typing import Any, Protocol

from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.room.invitation import role_proof
from protocol.room.locked_start import LockedStart, verify_package
from protocol.room.ready import build_ack, build_declaration, verify_ready_set
from protocol.room.ready import context_digest as ready_set_digest
from protocol.room.actions import Notify, Send
from protocol.room.config import MatchConfig
from protocol.room.messages import (
    AssetChunk,
    AssetMissing,
    AssetRequest,
    CancelReady,
    CarRotation,
    CountdownCancel,
    GridCeremonyCancel,
    GridCommit,
    GridCommitmentsLocked,
    GridCommitRequest,
    GridReveal,
    JoinRequest,
    JoinVerdict,
    Leave,
    LockedStartPackageMsg,
    MatchStart,
    ReadyDeclarationMsg,
    ReadySetAck,
    ReadySetRefuse,
    ReadySetRequest,
    Relay,
    RoomState,
)
from protocol.identity.signed import SignedPayload
from protocol.room.start_grid import build_commit, build_reveal, check_commit, commitment, context_digest, grid_context, new_nonce
from protocol.versions.collection import (
    Broadcast,
    CollectionFinished,
    Unicast,
    VersionCollector,
    VersionInfoMessage,
    VersionRequest,
    answer_version_request,
)
from protocol.versions.record import ClientVersionInfo, field_differences, incompatibility_reasons
from protocol.encoding.wire import Message, decode_message, encode_message

RELAYED_TYPES = {
    VersionRequest.TYPE: VersionRequest,
    VersionInfoMessage.TYPE: VersionInfoMessage,
    AssetRequest.TYPE: AssetRequest,
    AssetChunk.TYPE: AssetChunk,
    AssetMissing.TYPE: AssetMissing,
}


class RoomAssets(Protocol):
    """What the member needs from the shell's asset code (pure answers over the local store).

    ``check_rotation``'s verdict depends on the rotation and the store only; ``peer`` just names the
    car in messages, so the member may reuse a pass for the same rotation of another peer."""

    def track_digests(self, config: MatchConfig) -> list[str]: ...

    def check_rotation(self, peer: str, rotation: list[Any]) -> None: ...

    def missing_assets(self, refs: list[str]) -> list[str]: ...

    def rotation_refs(self, rotation: list[Any]) -> list[str]: ...


@dataclass(frozen=True)
class RelayedIn:
    """An asset message from ``origin`` (attested by the host) for the shell's asset transfer."""

    origin: str
    message: Message


@dataclass(frozen=True)
class FetchAssets:
    """Refs this node lacks, with the member that declared them (the shell fetches and stores them)."""

    owner: str
    refs: list[str]


@dataclass(frozen=True)
class HostSuccession:
    """The host was lost while waiting: ``successor`` (listening at ``listen``) hosts from now on."""

    successor: str
    listen: str
    state: RoomState


@dataclass(frozen=True)
class MatchStarted:
    locked: LockedStart
    pre_start_disconnects: list[str]


class MemberRoom:
    def __init__(
        self,
        identity: Identity,
        room_id: str,
        host_peer: str,
        role: str,
        my_info: ClientVersionInfo,
        assets: RoomAssets,
        *,
        choose_car: Callable[[int], list[Any]] | None = None,
        auto_ready: bool = False,
        nickname: str = "player",
        listen: str = "",
    ) -> None:
        self.identity = identity
        self.me = identity.peer_id
        self.room_id = room_id
        self.host_peer = host_peer
        self.role = role
        self.my_info = my_info
        self.assets = assets
        self.choose_car = choose_car  # rounds -> one loadout per round, asked once the rounds are known
        self.rotation: list[Any] | None = None
        self.auto_ready = auto_ready
        self.nickname = nickname
        self.listen = listen  # where this node accepts links if it must succeed the host
        self.state: RoomState | None = None
        self.collector: VersionCollector | None = None
        self.compatibility: dict[str, list[str]] = {}
        self.ready_sent_epoch: tuple[int, str] | None = None
        self.acked_digest: str | None = None
        self.grid_nonces: dict[bytes, bytes] = {}
        self.grid_context_digest: bytes | None = None
        self.locked: LockedStart | None = None
        self.started = False
        self.requested: set[str] = set()
        self.refused_for_assets: ReadySetRequest | None = None  # answered again once the fetch completes
        self.passed_rotations: set[str] = set()  # repr of every car rotation that passed the asset checks

    # ---- the view ---------------------------------------------------------------------------------

    @property
    def members(self) -> list[str]:
        return [m.peerId for m in self.state.members] if self.state else []

    def _member(self, peer: str):
        return next((m for m in self.state.members if m.peerId == peer), None) if self.state else None

    @property
    def config(self) -> MatchConfig | None:
        return MatchConfig.from_wire(self.state.matchConfig) if self.state else None

    def versions_ok(self) -> bool:
        c = self.collector
        return c is not None and c.finished and not c.missing and all(not r for r in self.compatibility.values())

    def message(self, peer: str, msg: Message, now_ms: int) -> list[object]:
        """A message on the link to the host (``peer`` must be the host)."""
        if peer != self.host_peer:
            return []
        handler = _HANDLERS.get(type(msg))
        if handler is None:
            return [Notify("error", {"code": "unexpected-message", "message": f"host sent {msg.TYPE}"})]
        try:
            return handler(self, msg, now_ms)
        except ProtocolError as exc:
            return [Notify("error", {"code": exc.code, "message": exc.message})]

    def join_request(self, transcript: bytes, secret: bytes) -> JoinRequest:
        """The first message on a new link: a role proof bound to this link's transcript."""
        proof = role_proof(secret, transcript, self.room_id, self.role, self.me, self.host_peer)
        return JoinRequest(self.room_id, self.role, proof, self.nickname, self.listen)

    def _on_verdict(self, msg: JoinVerdict, now_ms: int) -> list[object]:
        if not msg.ok:
            return [Notify("error", {"code": msg.reason, "message": msg.detail or "the host refused to admit this node"})]
        return [Notify("joined", {"room_id": self.room_id, "role": self.role})]

    def _on_state(self, msg: RoomState, now_ms: int) -> list[object]:
        if msg.roomId != self.room_id or msg.hostPeerId != self.host_peer:
            raise ProtocolError("room-state-invalid", "room state for another room or host")
        if self.state is not None and msg.stateEpoch <= self.state.stateEpoch:
            return []
        before = set(self.members)
        self.state = msg
        actions: list[object] = []
        for peer in self.members:
            if peer not in before and peer != self.me:
                m = self._member(peer)
                actions.append(Notify("member-joined", {"peer": peer, "role": m.role, "nickname": m.nickname}))
        for peer in sorted(before - set(self.members)):
            actions.append(Notify("member-left", {"peer": peer}))
            self.compatibility.pop(peer, None)
        if set(self.members) != before:
            actions += self._collect_versions(now_ms)
        if self.role == "participant" and self.rotation is None and self.choose_car is not None:
            actions += self.set_rotation(self.choose_car(len(self.config.rounds)))
        actions += self._fetch_missing()
        return actions + self._maybe_auto_ready(now_ms)

    # ---- versions ---------------------------------------------------------------------------------

    def _collect_versions(self, now_ms: int) -> list[object]:
        """A new member set: the collector keeps the records of the members still here, asks the others."""
        self.compatibility = {p: r for p, r in self.compatibility.items() if p in self.members}
        if self.collector is None:
            self.collector = VersionCollector(self.me, self.my_info, self.members)
            return self._collector_actions(self.collector.start(now_ms), now_ms)
        return self._collector_actions(self.collector.update_members(self.members, now_ms), now_ms)

    def _collector_actions(self, produced: list[object], now_ms: int) -> list[object]:
        actions: list[object] = []
        for action in produced:
            if isinstance(action, Broadcast):
                actions.append(Send(self.host_peer, Relay("", "*", encode_message(action.message))))
            elif isinstance(action, Unicast):
                actions.append(Send(self.host_peer, Relay("", action.peer, encode_message(action.message))))
            elif isinstance(action, CollectionFinished):
                actions += self._report_compatibility(action)
        return actions

    def _report_compatibility(self, finished: CollectionFinished) -> list[object]:
        """One ``compatibility`` event per peer whose verdict is new (a join does not repeat the others)."""
        actions: list[object] = []
        for peer in self.members:
            if peer == self.me:
                continue
            info = finished.collected.get(peer)
            if info is None:
                reasons = ["missing"]
                differences: list[str] = []
            else:
                reasons = incompatibility_reasons(self.my_info, info)
                differences = [f"your {f} {a}, peer's {b}" for f, a, b in field_differences(self.my_info, info)]
            if self.compatibility.get(peer) == reasons:
                continue
            self.compatibility[peer] = reasons
            actions.append(
                Notify("compatibility", {"peer": peer, "compatible": not reasons, "reasons": reasons, "differences": differences})
            )
        return actions

    def _on_relay(self, msg: Relay, now_ms: int) -> list[object]:
        origin = msg.origin
        if origin == self.me:
            return []
        inner = decode_message(msg.body, RELAYED_TYPES)
        if isinstance(inner, VersionRequest):
            # Served whether or not this node lists the origin yet (spec §3 serveVersionRequests has no
            # membership rule; the host attests the origin): a request may overtake the room-state
            # that lists its sender, and dropping it would leave the sender waiting for a timeout.
            reply = answer_version_request(inner, origin, self.me, self.my_info)
            return [] if reply is None else [Send(self.host_peer, Relay("", origin, encode_message(reply)))]
        if origin not in self.members:
            return []
        if isinstance(inner, VersionInfoMessage):
            if self.collector is None:
                return []
            return self._collector_actions(self.collector.receive(origin, inner, now_ms), now_ms) + self._maybe_auto_ready(now_ms)
        return [RelayedIn(origin, inner)]

    def host_lost(self, now_ms: int) -> list[object]:
        """The link to the host ended. While waiting, the next participant in join order succeeds it."""
        waiting = self.state is not None and self.state.phase in ("collecting", "verifying", "grid-commit", "grid-reveal")
        if not waiting or self.started or self.role != "participant":
            return [Notify("error", {"code": "host-lost", "message": "the link to the host ended; the room is over"})]
        successor = next(
            (m for m in self.state.members if m.role == "participant" and m.peerId != self.host_peer), None
        )
        if successor is None:
            return [Notify("error", {"code": "room-closed", "message": "the host left and nobody can succeed it"})]
        notice = Notify("host-succession", {"lost": self.host_peer, "successor": successor.peerId})
        return [notice, HostSuccession(successor.peerId, successor.listen, self.state)]

    def tick(self, now_ms: int) -> list[object]:
        produced = self.collector.timer_fired(now_ms) if self.collector is not None else []
        if not produced:
            return []
        return self._collector_actions(produced, now_ms) + self._maybe_auto_ready(now_ms)

    def next_deadline(self) -> int | None:
        return self.collector.deadline_ms if self.collector is not None else None

    # ---- cars and Ready ---------------------------------------------------------------------------

    def _check_rotation(self, peer: str, rotation: list[Any]) -> None:
        """The assets' verdict on a rotation, checked once per distinct rotation (assembling a car takes
        milliseconds, and Ready, the ReadySet and the package ask for every car). A pass stays valid: a
        room only ever adds assets to the store and its version policy is fixed; a failure is re-checked."""
        key = repr(rotation)
        if key not in self.passed_rotations:
            self.assets.check_rotation(peer, rotation)
            self.passed_rotations.add(key)

    def _fetch_missing(self) -> list[object]:
        actions: list[object] = []
        for m in self.state.members:
            if m.peerId == self.me or not m.carRotation:
                continue
            try:
                refs = self.assets.rotation_refs(m.carRotation)
            except ProtocolError:
                continue  # an invalid car shows up when the ReadySet is checked
            missing = [r for r in self.assets.missing_assets(refs) if r not in self.requested]
            if missing:
                self.requested.update(missing)
                actions.append(FetchAssets(m.peerId, missing))
        return actions

    def asset_stored(self, ref: str, now_ms: int) -> list[object]:
        """The shell stored a fetched asset: Ready may now be possible, and a ReadySet refused only
        because this asset was still on its way is answered again (the host still waits for the ack)."""
        self.requested.discard(ref)
        pending = self.refused_for_assets
        if pending is not None and not self.requested and self.state is not None and self.state.phase == "verifying":
            return self._on_ready_set(pending, now_ms)
        return self._maybe_auto_ready(now_ms)

    def set_rotation(self, rotation: list[Any]) -> list[object]:
        self.rotation = list(rotation)
        return [Send(self.host_peer, CarRotation(self.rotation))]

    def declare_ready(self, now_ms: int) -> list[object]:
        if self.role != "participant" or self.state is None or self.rotation is None:
            raise ProtocolError("not-allowed", "only a participant with a car can declare Ready")
        me = self._member(self.me)
        self.ready_sent_epoch = (me.membershipEpoch, self.state.configDigest)
        envelope = build_declaration(
            self.identity, self.room_id, self.state.configDigest, me.membershipEpoch, self.my_info, self.rotation, now_ms
        )
        return [Send(self.host_peer, ReadyDeclarationMsg(envelope.to_wire()))]

    def leave(self) -> list[object]:
        return [Send(self.host_peer, Leave("voluntary"))]

    def cancel_ready(self) -> list[object]:
        """Withdraw Ready; an explicit cancel also stops auto-ready (the player decided)."""
        self.ready_sent_epoch = None
        self.auto_ready = False
        return [Send(self.host_peer, CancelReady("player"))]

    def ready_blockers(self) -> list[str]:
        """Why this node cannot declare Ready now (empty when it can)."""
        if self.state is None or self.role != "participant":
            return ["not a participant"]
        blockers = []
        if self.rotation is None:
            blockers.append("no car chosen")
        else:
            try:
                self._check_rotation(self.me, self.rotation)
            except ProtocolError as exc:
                blockers.append(exc.code)
        if not self.versions_ok():
            blockers.append("versions not confirmed with every member")
        if self.requested:
            blockers.append("fetching the assets of other members' cars")
        participants = [m for m in self.state.members if m.role == "participant"]
        if len(participants) < self.state.minPlayers:
            blockers.append(f"waiting for {self.state.minPlayers} participants")
        return blockers

    def _maybe_auto_ready(self, now_ms: int) -> list[object]:
        if not self.auto_ready or self.state is None or self.state.phase not in ("collecting",):
            return []
        me = self._member(self.me)
        if me is None or me.ready or self.ready_blockers():
            return []
        if self.ready_sent_epoch == (me.membershipEpoch, self.state.configDigest):
            return []
        return self.declare_ready(now_ms)

    # ---- ReadySet, grid, package, start -----------------------------------------------------------

    def _on_ready_set(self, msg: ReadySetRequest, now_ms: int) -> list[object]:
        if self.role != "participant":
            return []
        self.refused_for_assets = None
        try:
            config = self.config
            verify_ready_set(
                msg.context,
                msg.declarations,
                room_id=self.room_id,
                config_digest=config.digest,
                rounds=len(config.rounds),
                mine=self.my_info,
                check_rotation=self._check_rotation,
            )
            if self.me not in msg.context["roster"]:
                raise ProtocolError("ready-set-invalid", "this node is not in the ReadySet")
            self.assets.track_digests(config)
        except ProtocolError as exc:
            if exc.code == "asset-missing" and self.requested:
                self.refused_for_assets = msg
            return [
                Send(self.host_peer, ReadySetRefuse(_safe_digest(msg.context), exc.code, exc.message)),
                Notify("error", {"code": exc.code, "message": f"not acknowledging the ReadySet: {exc.message}"}),
            ]
        self.acked_digest = ready_set_digest(msg.context)
        ack = build_ack(self.identity, self.room_id, self.acked_digest, now_ms)
        return [Send(self.host_peer, ReadySetAck(ack.to_wire()))]

    def _expected_grid_context(self) -> dict[str, Any]:
        config = self.config
        roster = [m.peerId for m in self.state.members if m.role == "participant"]
        return grid_context(self.room_id, roster, self.assets.track_digests(config), len(config.rounds))

    def _on_grid_request(self, msg: GridCommitRequest, now_ms: int) -> list[object]:
        if self.role != "participant" or self.acked_digest is None:
            return []
        if msg.context != self._expected_grid_context():
            raise ProtocolError("grid-invalid", "the grid context does not match this room's roster and tracks")
        digest = context_digest(msg.context)
        nonce = self.grid_nonces.setdefault(digest, new_nonce())  # a retry reuses the cached nonce
        self.grid_context_digest = digest
        return [Send(self.host_peer, GridCommit(build_commit(self.identity, digest, nonce, now_ms).to_wire()))]

    def _on_commitments(self, msg: GridCommitmentsLocked, now_ms: int) -> list[object]:
        digest = self.grid_context_digest
        if digest is None or msg.contextDigest != digest.hex():
            return []
        signers = set()
        for raw in msg.commits:
            envelope = SignedPayload.from_wire(raw)
            committed = check_commit(envelope, digest)
            if envelope.signer == self.me:
                if committed != commitment(digest, self.me, self.grid_nonces[digest]):
                    raise ProtocolError("grid-invalid", "the host altered this node's commitment")
            signers.add(envelope.signer)
        roster = sorted(m.peerId for m in self.state.members if m.role == "participant")
        if sorted(signers) != roster or len(msg.commits) != len(roster):
            raise ProtocolError("grid-invalid", "the locked commitments do not cover exactly the roster")
        reveal = build_reveal(self.identity, digest, self.grid_nonces[digest], now_ms)
        return [Send(self.host_peer, GridReveal(reveal.to_wire()))]

    def _on_grid_cancel(self, msg: GridCeremonyCancel, now_ms: int) -> list[object]:
        self.acked_digest = None
        self.grid_context_digest = None
        return [Notify("grid-cancelled", {"reason": msg.reason, "missing": list(msg.missingPeers)})]

    def _on_package(self, msg: LockedStartPackageMsg, now_ms: int) -> list[object]:
        locked = verify_package(
            msg.package,
            room_id=self.room_id,
            mine=self.my_info,
            track_digests=self.assets.track_digests(self.config),
            expected_ready_digest=self.acked_digest if self.role == "participant" else None,
        )
        for peer in locked.roster:
            self._check_rotation(peer, locked.declarations[peer].car_rotation)
        self.locked = locked
        return [Notify("countdown", {"match_id": locked.match_id, "deadline_ms": locked.countdown_deadline})]

    def _on_countdown_cancel(self, msg: CountdownCancel, now_ms: int) -> list[object]:
        self.locked, self.acked_digest, self.ready_sent_epoch = None, None, None
        return [Notify("countdown-cancelled", {"leavers": list(msg.leavers)})]

    def _on_match_start(self, msg: MatchStart, now_ms: int) -> list[object]:
        locked = self.locked
        if locked is None or self.started:
            raise ProtocolError("match-start-invalid", "match-start without a verified start package")
        if (msg.matchId, msg.startedAt, msg.packageDigest) != (locked.match_id, locked.started_at, locked.digest):
            raise ProtocolError("match-start-invalid", "match-start does not match the verified start package")
        if any(p not in locked.roster for p in msg.preStartDisconnects):
            raise ProtocolError("match-start-invalid", "pre-start disconnects outside the roster")
        survivors = [p for p in locked.roster if p not in msg.preStartDisconnects]
        if len(survivors) < 2 or len(survivors) * 2 <= len(locked.roster):
            raise ProtocolError("match-start-invalid", "too few survivors for a strict majority")
        self.started = True
        return [
            Notify("match-start", {"match_id": locked.match_id, "roster": locked.roster,
                                   "pre_start_disconnects": list(msg.preStartDisconnects)}),
            MatchStarted(locked, list(msg.preStartDisconnects)),
        ]


def _safe_digest(context: object) -> str:
    try:
        return ready_set_digest(context)
    except ProtocolError:
        return ""


_HANDLERS = {
    JoinVerdict: MemberRoom._on_verdict,
    RoomState: MemberRoom._on_state,
    Relay: MemberRoom._on_relay,
    ReadySetRequest: MemberRoom._on_ready_set,
    GridCommitRequest: MemberRoom._on_grid_request,
    GridCommitmentsLocked: MemberRoom._on_commitments,
    GridCeremonyCancel: MemberRoom._on_grid_cancel,
    LockedStartPackageMsg: MemberRoom._on_package,
    CountdownCancel: MemberRoom._on_countdown_cancel,
    MatchStart: MemberRoom._on_match_start,
}
