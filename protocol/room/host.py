"""The host's authoritative room (spec/rooms.md §4): admission, membership, Ready, ReadySet, grid, start.

Sans-IO: every method takes an explicit ``now_ms`` and returns actions (``room_actions``). The host is
also a participant; its own member logic talks to this object like any remote member does, with the
host's PeerId as the sender. Messages are accepted only from the authenticated link peer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.room.capacity import CapacityReservations
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.room.invitation import check_role_proof
from protocol.room.locked_start import COUNTDOWN_MS, build_package, package_digest
from protocol.room.ready import check_ack, context_digest, parse_declaration, ready_set_context
from protocol.room.actions import CloseLink, Notify, Send
from protocol.room.config import MatchConfig, RoomLimits
from protocol.room.messages import (
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
    MemberWire,
    ReadyDeclarationMsg,
    ReadySetAck,
    ReadySetRefuse,
    ReadySetRequest,
    Relay,
    RoomState,
)
from protocol.identity.signed import SignedPayload, SignedVerifier
from protocol.room.start_grid import PHASE_TIMEOUT_MS, check_commit, check_reveal, context_digest as grid_digest, grid_context
from protocol.encoding.wire import Message

COLLECTING, VERIFYING, GRID_COMMIT, GRID_REVEAL, COUNTDOWN, STARTED, CLOSED = (
    "collecting", "verifying", "grid-commit", "grid-reveal", "countdown", "started", "closed",
)
WAITING_PHASES = (COLLECTING, VERIFYING, GRID_COMMIT, GRID_REVEAL)
MAX_NICKNAME = 32


@dataclass
class Member:
    peer_id: str
    role: str
    nickname: str
    epoch: int
    listen: str = ""
    rotation: list[Any] | None = None
    declaration: SignedPayload | None = None

    def wire(self) -> MemberWire:
        return MemberWire(
            self.peer_id, self.nickname, self.role, self.epoch, self.declaration is not None,
            list(self.rotation or []), self.listen,
        )


@dataclass
class Ceremony:
    """Per-attempt state from the ReadySet to the countdown; dropped whole on any invalidation."""

    ready_context: dict[str, Any]
    ready_digest: str
    acks: dict[str, SignedPayload] = field(default_factory=dict)
    grid_ctx: dict[str, Any] | None = None
    commits: dict[str, SignedPayload] = field(default_factory=dict)
    reveals: dict[str, SignedPayload] = field(default_factory=dict)
    deadline_ms: int | None = None


class HostRoom:
    def __init__(
        self,
        identity: Identity,
        room_id: str,
        config: MatchConfig,
        limits: RoomLimits,
        secrets: dict[str, bytes | None],
        track_digests: list[str],
        now_ms: int,
        nickname: str = "host",
        listen: str = "",
    ) -> None:
        self.identity = identity
        self.room_id = room_id
        self.config = config
        self.limits = limits
        self.secrets = secrets
        self.track_digests = track_digests
        self.phase = COLLECTING
        self.members: dict[str, Member] = {}
        self.membership_epoch = 0
        self.state_epoch = 0
        self.seats = {"participant": CapacityReservations(limits.max_players),
                      "spectator": CapacityReservations(limits.max_spectators)}
        self.verifier = SignedVerifier(lambda peer: self._is_participant(peer))
        self.ceremony: Ceremony | None = None
        self.package: dict[str, Any] | None = None
        self.countdown_deadline: int | None = None
        self.pre_start_disconnects: list[str] = []
        self.seeded: dict[str, Member] = {}  # members carried over by host succession
        self._add(identity.peer_id, "participant", nickname, listen)

    @classmethod
    def succeed(
        cls,
        identity: Identity,
        state: RoomState,
        lost_host: str,
        participant_secret: bytes,
        track_digests: list[str],
        now_ms: int,
        listen: str = "",
    ) -> "HostRoom":
        """The successor's room after the host was lost while waiting (spec/rooms.md §4.2).

        Participants keep their join order, epochs and cars and are re-admitted with the participant
        invitation they already hold; their seats stay reserved. The successor never learned the
        spectator secret, so spectating closes (fail closed) instead of falling back to open.
        """
        me = next(m for m in state.members if m.peerId == identity.peer_id)
        room = cls(
            identity, state.roomId, MatchConfig.from_wire(state.matchConfig),
            RoomLimits(state.minPlayers, state.maxPlayers, 0), {"participant": participant_secret, "spectator": None},
            track_digests, now_ms, nickname=me.nickname, listen=listen,
        )
        room.members[identity.peer_id].epoch = me.membershipEpoch
        room.members[identity.peer_id].rotation = list(me.carRotation) or None
        room.membership_epoch = max(m.membershipEpoch for m in state.members)
        for m in state.members:
            if m.role == "participant" and m.peerId not in (identity.peer_id, lost_host):
                room.seeded[m.peerId] = Member(m.peerId, m.role, m.nickname, m.membershipEpoch, m.listen, list(m.carRotation) or None)
                room.seats["participant"].try_reserve(m.peerId)
        return room

    # ---- helpers ----------------------------------------------------------------------------------

    def _is_participant(self, peer: str) -> bool:
        member = self.members.get(peer)
        return member is not None and member.role == "participant"

    @property
    def participants(self) -> list[str]:
        return [p for p, m in self.members.items() if m.role == "participant"]

    def _add(self, peer: str, role: str, nickname: str, listen: str) -> Member:
        seeded = self.seeded.pop(peer, None)
        if seeded is None:
            self.membership_epoch += 1
        member = Member(peer, role, nickname, self.membership_epoch if seeded is None else seeded.epoch, listen)
        if seeded is not None:
            member.rotation = seeded.rotation
        self.members[peer] = member
        self.seats[role].try_reserve(peer)
        self.seats[role].commit(peer)
        return member

    def state_message(self) -> RoomState:
        self.state_epoch += 1
        return RoomState(
            roomId=self.room_id,
            hostPeerId=self.identity.peer_id,
            phase=self.phase,
            matchConfig=self.config.to_wire(),
            configDigest=self.config.digest,
            minPlayers=self.limits.min_players,
            maxPlayers=self.limits.max_players,
            maxSpectators=self.limits.max_spectators,
            members=[m.wire() for m in self.members.values()],
            stateEpoch=self.state_epoch,
        )

    def _broadcast(self, message: Message, *, role: str | None = None) -> list[object]:
        return [Send(p, message) for p, m in self.members.items() if role is None or m.role == role]

    def _broadcast_state(self) -> list[object]:
        return self._broadcast(self.state_message())

    def _invalidate_ceremony(self, why: str) -> list[object]:
        """Acks and grid ceremony die with any roster change; declarations survive (spec §4.6)."""
        actions: list[object] = []
        if self.ceremony is not None and self.ceremony.grid_ctx is not None:
            digest = grid_digest(self.ceremony.grid_ctx).hex()
            actions += self._broadcast(GridCeremonyCancel(digest, why, []), role="participant")
        self.ceremony = None
        if self.phase in (VERIFYING, GRID_COMMIT, GRID_REVEAL):
            self.phase = COLLECTING
        return actions

    # ---- admission --------------------------------------------------------------------------------

    def join(self, peer: str, transcript: bytes, request: JoinRequest, now_ms: int) -> list[object]:
        verdict = self._admit(peer, transcript, request)
        if verdict is not None:
            return [Send(peer, JoinVerdict(False, verdict[0], verdict[1])), CloseLink(peer, verdict[0])]
        role = request.role
        rejoin = peer in self.members
        actions: list[object] = []
        if not rejoin:
            self._add(peer, role, request.nickname[:MAX_NICKNAME], request.listen[:64])
            if role == "participant":
                actions += self._invalidate_ceremony("membership-changed")
        actions.append(Send(peer, JoinVerdict(True, "ok", "rejoined" if rejoin else "joined")))
        actions.append(Notify("member-joined", {"peer": peer, "role": role, "nickname": self.members[peer].nickname}))
        return actions + self._broadcast_state()

    def _admit(self, peer: str, transcript: bytes, request: JoinRequest) -> tuple[str, str] | None:
        """None to admit, else (reason, detail); the reason set is the spec's closed set."""
        role = request.role
        if request.roomId != self.room_id:
            return "join-rejected", "no such room here"
        if role not in ("participant", "spectator"):
            return "join-rejected", "role must be participant or spectator"
        if self.phase in (STARTED, CLOSED):
            return "room-closed", "the match has started or the room is closed"
        secret = self.secrets.get(role)
        if role == "spectator" and (secret is None or self.limits.max_spectators == 0):
            return "spectators-disabled", "this room does not admit spectators"
        if peer in self.members and self.members[peer].role != role:
            return "join-rejected", "already in this room with another role"
        if role == "participant" and self.phase == COUNTDOWN and peer not in self.members:
            return "join-rejected", "participant admission is closed during the countdown"
        seats = self.seats[role]
        if peer not in self.seeded and not seats.try_reserve(peer):
            return ("spectator-full", "no spectator seat is free") if role == "spectator" else (
                "join-rejected", "the room is full")
        if secret is None or not check_role_proof(
            request.proof, secret, transcript, self.room_id, role, peer, self.identity.peer_id
        ):
            seats.release(peer)
            return "join-rejected", "the invitation proof does not match"
        seats.commit(peer)
        return None

    # ---- messages ---------------------------------------------------------------------------------

    def message(self, peer: str, msg: Message, now_ms: int) -> list[object]:
        """A message from the authenticated member ``peer``; bad content is refused, never fatal."""
        if peer not in self.members:
            return []
        handler = _HANDLERS.get(type(msg))
        if handler is None:
            return [Notify("error", {"code": "unexpected-message", "message": f"{peer[-4:]} sent {msg.TYPE}"})]
        try:
            return handler(self, peer, msg, now_ms)
        except ProtocolError as exc:
            return [Notify("error", {"code": exc.code, "message": f"from {peer[-4:]}: {exc.message}"})]

    def _on_relay(self, peer: str, msg: Relay, now_ms: int) -> list[object]:
        attested = Relay(origin=peer, target=msg.target, body=msg.body)
        if msg.target == "*":
            return [Send(p, attested) for p in self.members if p != peer]
        return [Send(msg.target, attested)] if msg.target in self.members and msg.target != peer else []

    def _on_rotation(self, peer: str, msg: CarRotation, now_ms: int) -> list[object]:
        member = self.members[peer]
        if member.role != "participant" or self.phase not in WAITING_PHASES:
            raise ProtocolError("not-allowed", "only a participant may choose cars, and only while waiting")
        if member.declaration is not None:
            raise ProtocolError("not-allowed", "cancel Ready before changing cars")
        if len(msg.carRotation) != len(self.config.rounds):
            raise ProtocolError("rotation-invalid", f"declare exactly one car per round ({len(self.config.rounds)})")
        member.rotation = list(msg.carRotation)
        return self._broadcast_state()

    def _on_ready(self, peer: str, msg: ReadyDeclarationMsg, now_ms: int) -> list[object]:
        member = self.members[peer]
        if self.phase not in WAITING_PHASES:
            raise ProtocolError("not-allowed", "Ready is only possible while waiting")
        envelope = self.verifier.check(msg.signed, now_ms)
        declaration = parse_declaration(envelope)
        if declaration.participant != peer:
            raise ProtocolError("ready-invalid", "a declaration must come from its own participant's link")
        if declaration.room_id != self.room_id or declaration.config_digest != self.config.digest:
            raise ProtocolError("ready-stale", "the declaration is for other room settings; declare again")
        if declaration.membership_epoch != member.epoch:
            raise ProtocolError("ready-stale", "the declaration names an old membership epoch")
        if len(declaration.car_rotation) != len(self.config.rounds):
            raise ProtocolError("rotation-invalid", "declare exactly one car per round")
        self.verifier.commit(envelope, now_ms)
        member.rotation = list(declaration.car_rotation)
        member.declaration = envelope
        actions = [Notify("ready", {"peer": peer, "ready": True})] + self._invalidate_ceremony("ready-changed")
        return actions + self._broadcast_state() + self._maybe_request_ready_set(now_ms)

    def _on_cancel_ready(self, peer: str, msg: CancelReady, now_ms: int) -> list[object]:
        if self.phase not in WAITING_PHASES:
            raise ProtocolError("not-allowed", "too late to cancel Ready; leave the room instead")
        self.members[peer].declaration = None
        actions = [Notify("ready", {"peer": peer, "ready": False})] + self._invalidate_ceremony("ready-cancelled")
        return actions + self._broadcast_state()

    def _maybe_request_ready_set(self, now_ms: int) -> list[object]:
        participants = self.participants
        if self.phase != COLLECTING or len(participants) < self.limits.min_players:
            return []
        if any(self.members[p].declaration is None for p in participants):
            return []
        declarations = {p: parse_declaration(self.members[p].declaration) for p in participants}
        context = ready_set_context(self.room_id, self.config.digest, declarations)
        self.ceremony = Ceremony(context, context_digest(context))
        self.phase = VERIFYING
        request = ReadySetRequest(context, [self.members[p].declaration.to_wire() for p in sorted(participants)])
        return [Notify("ready-set", {"digest": self.ceremony.ready_digest, "roster": sorted(participants)})] + (
            self._broadcast(request, role="participant") + self._broadcast_state()
        )

    def _on_ack(self, peer: str, msg: ReadySetAck, now_ms: int) -> list[object]:
        ceremony = self.ceremony
        if self.phase != VERIFYING or ceremony is None:
            return []
        envelope = self.verifier.check(msg.signed, now_ms)
        if envelope.signer != peer:
            raise ProtocolError("ack-invalid", "an ack must come from its signer's link")
        check_ack(envelope, self.room_id, ceremony.ready_digest)
        self.verifier.commit(envelope, now_ms)
        ceremony.acks[peer] = envelope
        if set(ceremony.acks) != set(self.participants):
            return []
        ceremony.grid_ctx = grid_context(self.room_id, self.participants, self.track_digests, len(self.config.rounds))
        ceremony.deadline_ms = now_ms + PHASE_TIMEOUT_MS
        self.phase = GRID_COMMIT
        return self._broadcast(GridCommitRequest(ceremony.grid_ctx), role="participant") + self._broadcast_state()

    def _on_refuse(self, peer: str, msg: ReadySetRefuse, now_ms: int) -> list[object]:
        return [Notify("ready-set-refused", {"peer": peer, "code": msg.code[:64], "detail": msg.detail[:300]})]

    def _on_commit(self, peer: str, msg: GridCommit, now_ms: int) -> list[object]:
        ceremony = self.ceremony
        if self.phase != GRID_COMMIT or ceremony is None or ceremony.grid_ctx is None:
            return []
        envelope = self.verifier.check(msg.signed, now_ms)
        if envelope.signer != peer:
            raise ProtocolError("grid-invalid", "a commit must come from its signer's link")
        check_commit(envelope, grid_digest(ceremony.grid_ctx))
        self.verifier.commit(envelope, now_ms)
        ceremony.commits.setdefault(peer, envelope)
        if set(ceremony.commits) != set(self.participants):
            return []
        self.phase = GRID_REVEAL
        ceremony.deadline_ms = now_ms + PHASE_TIMEOUT_MS
        locked = GridCommitmentsLocked(
            grid_digest(ceremony.grid_ctx).hex(), [ceremony.commits[p].to_wire() for p in sorted(ceremony.commits)]
        )
        return self._broadcast(locked, role="participant") + self._broadcast_state()

    def _on_reveal(self, peer: str, msg: GridReveal, now_ms: int) -> list[object]:
        ceremony = self.ceremony
        if self.phase != GRID_REVEAL or ceremony is None or ceremony.grid_ctx is None:
            return []
        envelope = self.verifier.check(msg.signed, now_ms)
        if envelope.signer != peer:
            raise ProtocolError("grid-invalid", "a reveal must come from its signer's link")
        committed = check_commit(ceremony.commits[peer], grid_digest(ceremony.grid_ctx))
        check_reveal(envelope, grid_digest(ceremony.grid_ctx), committed)
        self.verifier.commit(envelope, now_ms)
        ceremony.reveals.setdefault(peer, envelope)
        if set(ceremony.reveals) != set(self.participants):
            return []
        participants = sorted(self.participants)
        self.package = build_package(
            room_id=self.room_id,
            config=self.config,
            ready_context=ceremony.ready_context,
            ready_digest=ceremony.ready_digest,
            declarations=[self.members[p].declaration for p in participants],
            acks=[ceremony.acks[p] for p in participants],
            grid_ctx=ceremony.grid_ctx,
            commits=[ceremony.commits[p] for p in participants],
            reveals=[ceremony.reveals[p] for p in participants],
            started_at=now_ms,
            countdown_deadline=now_ms + COUNTDOWN_MS,
        )
        self.phase = COUNTDOWN
        self.countdown_deadline = now_ms + COUNTDOWN_MS
        ceremony.deadline_ms = None
        actions = [Notify("countdown", {"match_id": self.package["matchId"], "deadline_ms": self.countdown_deadline})]
        return actions + self._broadcast(LockedStartPackageMsg(self.package)) + self._broadcast_state()

    def _on_leave(self, peer: str, msg: Leave, now_ms: int) -> list[object]:
        return self.link_closed(peer, now_ms, reason=msg.reason[:64] or "left")

    # ---- departures and timers --------------------------------------------------------------------

    def link_closed(self, peer: str, now_ms: int, reason: str = "link-closed") -> list[object]:
        member = self.members.get(peer)
        if member is None or peer == self.identity.peer_id:
            return []
        if self.phase == COUNTDOWN and member.role == "participant":
            return self._countdown_disconnect(peer, now_ms)
        if self.phase in (STARTED, CLOSED):
            return [Notify("member-left", {"peer": peer, "reason": reason})]
        del self.members[peer]
        self.seats[member.role].deactivate(peer)
        actions: list[object] = [CloseLink(peer, reason), Notify("member-left", {"peer": peer, "reason": reason})]
        if member.role == "participant":
            self.membership_epoch += 1
            actions += self._invalidate_ceremony("membership-changed")
        return actions + self._broadcast_state() + self._maybe_request_ready_set(now_ms)

    def _countdown_disconnect(self, peer: str, now_ms: int) -> list[object]:
        """Survivors continue only if ≥ 2 and a strict majority of the locked roster (spec §4.6)."""
        if peer not in self.pre_start_disconnects:
            self.pre_start_disconnects.append(peer)
        roster = sorted(self.package["readySetContext"]["roster"]) if self.package else self.participants
        survivors = [p for p in roster if p not in self.pre_start_disconnects]
        actions: list[object] = [Notify("member-left", {"peer": peer, "reason": "countdown-disconnect"})]
        if len(survivors) >= 2 and len(survivors) * 2 > len(roster):
            return actions
        leavers = list(self.pre_start_disconnects)
        for gone in leavers:
            member = self.members.pop(gone, None)
            if member is not None:
                self.seats[member.role].deactivate(gone)
        for member in self.members.values():
            member.declaration = None
        self.phase, self.package, self.ceremony, self.countdown_deadline = COLLECTING, None, None, None
        self.pre_start_disconnects = []
        self.membership_epoch += 1
        cancel = CountdownCancel("no-majority", leavers)
        return actions + [Notify("countdown-cancelled", {"leavers": leavers})] + self._broadcast(cancel) + self._broadcast_state()

    def next_deadline(self) -> int | None:
        if self.phase == COUNTDOWN:
            return self.countdown_deadline
        if self.ceremony is not None and self.phase in (GRID_COMMIT, GRID_REVEAL):
            return self.ceremony.deadline_ms
        return None

    def tick(self, now_ms: int) -> list[object]:
        deadline = self.next_deadline()
        if deadline is None or now_ms < deadline:
            return []
        if self.phase == COUNTDOWN:
            return self._start(now_ms)
        return self._grid_timeout(now_ms)

    def _grid_timeout(self, now_ms: int) -> list[object]:
        """Fail closed naming the missing peers; their Ready is withdrawn so the room can go on."""
        ceremony = self.ceremony
        done = ceremony.commits if self.phase == GRID_COMMIT else ceremony.reveals
        missing = sorted(p for p in self.participants if p not in done)
        digest = grid_digest(ceremony.grid_ctx).hex()
        for peer in missing:
            self.members[peer].declaration = None
        self.ceremony, self.phase = None, COLLECTING
        cancel = GridCeremonyCancel(digest, "timeout", missing)
        return [Notify("grid-cancelled", {"missing": missing})] + self._broadcast(cancel, role="participant") + self._broadcast_state()

    def _start(self, now_ms: int) -> list[object]:
        self.phase = STARTED
        start = MatchStart(
            self.package["matchId"], self.package["startedAt"], package_digest(self.package), list(self.pre_start_disconnects)
        )
        return self._broadcast(start) + self._broadcast_state()


_HANDLERS = {
    Relay: HostRoom._on_relay,
    CarRotation: HostRoom._on_rotation,
    ReadyDeclarationMsg: HostRoom._on_ready,
    CancelReady: HostRoom._on_cancel_ready,
    ReadySetAck: HostRoom._on_ack,
    ReadySetRefuse: HostRoom._on_refuse,
    GridCommit: HostRoom._on_commit,
    GridReveal: HostRoom._on_reveal,
    Leave: HostRoom._on_leave,
}
