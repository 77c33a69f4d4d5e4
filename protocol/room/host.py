"""The host's authoritative room (spec/rooms.md §4): admission, membership, Ready, ReadySet, grid, start.

Sans-IO: every method takes an explicit ``now_ms`` and returns ``RoomAction``s. The host is also a
participant; its own member logic talks to this object like any remote member does, with the host's
PeerId as the sender. Messages are accepted only from the authenticated link peer (``receive``), and
each changes only that peer's own state: no message names another member whose Ready, cars or seat it
would change (a declaration, an ack, a commit or a reveal must be signed by the sender; a relay's
origin is the sender). A message that breaks a rule changes nothing, is answered with an ``error``
event and, unless it came from the host's own seat, blamed on its sender (``Misbehaviour``); a refused
Ready declaration is also answered on its sender's link (``ready-refused``), so that the sender knows
and can declare again. No member can stall the room: a ReadySet that some participant refuses or does
not answer is judged, the Ready of whoever it failed on withdrawn, and a member it keeps failing on
removed (``protocol.room.stalls``: every such decision a ``room-decision`` to every member). A misuse by
the local shell raises ``LocalError``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from protocol.encoding.dagcbor import signing_digest
from protocol.encoding.wire import Message
from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.identity.keys import Identity
from protocol.identity.signed import NONCE_BYTES, SignedPayload, SignedVerifier
from protocol.spectate.assign import assign_sources
from protocol.room.actions import CloseLink, RoomAction, Send, refused
from protocol.room.capacity import CapacityReservations
from protocol.room.config import MatchConfig, RoomLimits
from protocol.room.events import (
    CountdownCancelled,
    CountdownStarted,
    GridCancelled,
    MemberJoined,
    MemberLeft,
    ReadyChanged,
    ReadySetFormed,
    ReadySetRefused,
    RoomDecided,
)
from protocol.room.invitation import check_role_proof
from protocol.room.locked_start import COUNTDOWN_MS, build_package, package_digest
from protocol.room.messages import (
    CancelReady,
    CarRotation,
    CountdownCancel,
    Culprit,
    GridCeremonyCancel,
    GridCommit,
    GridCommitmentsLocked,
    GridCommitRequest,
    GridReveal,
    JoinRequest,
    JoinVerdict,
    Leave,
    RELAY_TO_ALL,
    LockedStartPackageMsg,
    MatchStart,
    MemberWire,
    ReadyDeclarationMsg,
    ReadyRefusal,
    ReadySetAck,
    ReadySetRefuse,
    ReadySetRequest,
    Relay,
    RoomDecision,
    RoomState,
)
from protocol.link.contact import MAX_CONTACT_CHARS
from protocol.room.phases import INITIAL_PHASE, PhaseChange, next_phase
from protocol.room.ready import check_ack, parse_declaration, ready_set_context
from protocol.room.stalls import (
    ANSWER_PENDING, ANSWER_TIMEOUT_MS, FETCH_WAIT_MS, READY_AGAIN_MS, STRIKE_LIMIT, StrikeBook, Verdict, judge,
)
from protocol.room.start_grid import PHASE_TIMEOUT_MS, check_commit, check_reveal, grid_context
from protocol.transaction import FaultOutcome, MachineFault, restore, snapshot
from protocol.room.states import (
    WAITING_PHASES,
    CeremonyCancel,
    CountdownCancelReason,
    Departure,
    JoinReason,
    Role,
    RoomPhase,
    StallDecision,
)
from protocol.identity.keys import PeerId

MAX_NICKNAME = 32
MAX_LISTEN = MAX_CONTACT_CHARS  # a contact: the direct address, relays and signaling services (protocol.link.contact)
MAX_CODE = 64  # the longest code or reason kept from a peer's text (shown, and passed on)
MAX_DETAIL = 300


@dataclass
class Member:
    """One member as the host keeps it: identity, role, epoch, announced address, cars and declaration."""

    peer_id: PeerId
    role: Role
    nickname: str
    epoch: int
    listen: str = ""
    rotation: list[Any] | None = None
    declaration: SignedPayload | None = None

    def wire(self) -> MemberWire:
        """How every member sees this one in ``room-state``."""
        return MemberWire(
            self.peer_id, self.nickname, self.role, self.epoch, self.declaration is not None,
            list(self.rotation or []), self.listen,
        )


@dataclass
class Ceremony:
    """Per-attempt state from the ReadySet to the countdown; dropped whole on any invalidation."""

    ready_context: dict[str, Any]
    ready_digest: str
    acks: dict[PeerId, SignedPayload] = field(default_factory=dict)
    refusals: dict[PeerId, tuple[str, str, list[Culprit]]] = field(default_factory=dict)
    """refuser → (code, detail, culprits) of its last refusal of this ReadySet."""
    formed_ms: int = 0
    grid_ctx: dict[str, Any] | None = None
    commits: dict[PeerId, SignedPayload] = field(default_factory=dict)
    reveals: dict[PeerId, SignedPayload] = field(default_factory=dict)
    deadline_ms: int | None = None


HostHandler = Callable[["HostRoom", PeerId, Any, int], list[RoomAction]]


class HostRoom:
    """The host's room machine: admits members, keeps the room state, and runs Ready → ReadySet → grid
    → countdown → start, broadcasting every change. Input: ``join`` (a link's first message),
    ``receive`` (every later message), ``link_closed`` and ``tick``; output: ``RoomAction`` lists."""

    def __init__(
        self,
        identity: Identity,
        room_id: str,
        config: MatchConfig,
        limits: RoomLimits,
        secrets: Mapping[str, bytes | None],
        track_digests: list[str],
        now_ms: int,
        nickname: str = "host",
        listen: str = "",
    ) -> None:
        """A new room hosted by ``identity`` (seated as its first participant). ``secrets`` holds the role
        secret per role (None: nobody may join in that role); ``track_digests`` are the rounds' tracks."""
        self.identity = identity
        self.room_id = room_id
        self.config = config
        self.limits = limits
        self.secrets = secrets
        self.track_digests = track_digests
        self.phase = INITIAL_PHASE
        self.members: dict[PeerId, Member] = {}
        self.membership_epoch = 0
        self.state_epoch = 0
        self.seats = {Role.PARTICIPANT: CapacityReservations(limits.max_players),
                      Role.SPECTATOR: CapacityReservations(limits.max_spectators)}
        self.verifier = SignedVerifier(lambda peer: self._is_participant(peer))
        self.ceremony: Ceremony | None = None
        self.package: dict[str, Any] | None = None
        self.countdown_deadline: int | None = None
        self.pre_start_disconnects: list[PeerId] = []
        self.seeded: dict[PeerId, Member] = {}  # members carried over by host succession
        self.strikes = StrikeBook()
        self._add(identity.peer_id, Role.PARTICIPANT, nickname, listen)

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
    ) -> HostRoom:
        """The successor's room after the host was lost while waiting (spec/rooms.md §4.2).

        Participants keep their join order, epochs and cars and are re-admitted with the participant
        invitation they already hold; their seats stay reserved. The successor never learned the
        spectator secret, so spectating closes (fail closed) instead of falling back to open.

        Raises ``LocalError`` (``succession-invalid``) when ``identity`` is not a member of ``state``
        (only a listed participant may succeed), and ``ProtocolError`` when the lost host's last room
        state holds settings this node refuses (``config-invalid``).
        """
        me = next((m for m in state.members if m.peerId == identity.peer_id), None)
        if me is None:
            raise LocalError("succession-invalid", "only a member of the last room state can succeed its host")
        room = cls(
            identity, state.roomId, MatchConfig.from_wire(state.matchConfig),
            RoomLimits(state.minPlayers, state.maxPlayers, 0), {Role.PARTICIPANT: participant_secret, Role.SPECTATOR: None},
            track_digests, now_ms, nickname=me.nickname, listen=listen,
        )
        room.members[identity.peer_id].epoch = me.membershipEpoch
        room.members[identity.peer_id].rotation = list(me.carRotation) or None
        room.membership_epoch = max(m.membershipEpoch for m in state.members)
        for m in state.members:
            if m.role == Role.PARTICIPANT and m.peerId not in (identity.peer_id, lost_host):
                room.seeded[m.peerId] = Member(
                    m.peerId, Role.PARTICIPANT, m.nickname, m.membershipEpoch, m.listen, list(m.carRotation) or None
                )
                room.seats[Role.PARTICIPANT].try_reserve(m.peerId)
        return room

    # ---- helpers ----------------------------------------------------------------------------------

    def _is_participant(self, peer: PeerId) -> bool:
        member = self.members.get(peer)
        return member is not None and member.role == Role.PARTICIPANT

    @property
    def participants(self) -> list[PeerId]:
        """The participants' PeerIds in join order (the host first)."""
        return [p for p, m in self.members.items() if m.role == Role.PARTICIPANT]

    def _add(self, peer: PeerId, role: Role, nickname: str, listen: str) -> Member:
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
        """The current ``room-state`` under a new state epoch (what every member is sent on a change)."""
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

    def _broadcast(self, message: Message, *, role: Role | None = None) -> list[RoomAction]:
        return [Send(p, message) for p, m in self.members.items() if role is None or m.role == role]

    def _broadcast_state(self) -> list[RoomAction]:
        return self._broadcast(self.state_message())

    def _invalidate_ceremony(self, why: CeremonyCancel) -> list[RoomAction]:
        """Acks and grid ceremony die with any roster change; declarations survive (spec §4.6)."""
        actions: list[RoomAction] = []
        if self.ceremony is not None and self.ceremony.grid_ctx is not None:
            digest = signing_digest(self.ceremony.grid_ctx).hex()
            actions += self._broadcast(GridCeremonyCancel(digest, why, []), role=Role.PARTICIPANT)
        self.ceremony = None
        if self.phase is not RoomPhase.COLLECTING:
            self._move(PhaseChange.CEREMONY_DROPPED)
        return actions

    def _move(self, change: PhaseChange) -> None:
        """Change the phase as ``change`` says (``protocol.room.phases``: the one table of legal moves).
        Raises ``LocalError`` ``room-phase-illegal`` for a move the current phase does not allow: a bug."""
        self.phase = next_phase(self.phase, change)

    def _declaration(self, peer: PeerId) -> SignedPayload:
        """A participant's declaration where the phase guarantees one (a bug otherwise)."""
        declaration = self.members[peer].declaration
        if declaration is None:
            raise LocalError("room-state-corrupt", f"{peer[-4:]} has no Ready declaration in phase {self.phase}")
        return declaration

    def _grid(self) -> tuple[Ceremony, dict[str, Any]]:
        """The running grid ceremony and its context, where the phase guarantees one (a bug otherwise)."""
        ceremony = self.ceremony
        if ceremony is None or ceremony.grid_ctx is None:
            raise LocalError("room-state-corrupt", f"no grid ceremony in phase {self.phase}")
        return ceremony, ceremony.grid_ctx

    def _locked_package(self) -> dict[str, Any]:
        """The LockedStartPackage, where the phase guarantees one (a bug otherwise)."""
        if self.package is None:
            raise LocalError("room-state-corrupt", f"no start package in phase {self.phase}")
        return self.package

    # ---- admission --------------------------------------------------------------------------------

    def join(self, peer: PeerId, transcript: bytes, request: JoinRequest, now_ms: int) -> list[RoomAction]:
        """A link's first message: admit ``peer`` (the link's authenticated PeerId, whose handshake gave
        ``transcript``) or refuse it with a verdict and close its link. Never raises for what it sent; a
        bug while admitting puts the room back as it was and raises ``MachineFault`` (``receive``)."""
        saved = snapshot(self, self._KEPT)
        try:
            return self._join(peer, transcript, request, now_ms)
        except Exception as exc:
            restore(self, saved)
            raise MachineFault("the room host", peer, FaultOutcome.RESTORED, exc) from exc

    def _join(self, peer: PeerId, transcript: bytes, request: JoinRequest, now_ms: int) -> list[RoomAction]:
        verdict = self._admit(peer, transcript, request, now_ms)
        if verdict is not None:
            return [Send(peer, JoinVerdict(False, verdict[0], verdict[1])), CloseLink(peer, verdict[0])]
        role = Role(request.role)
        rejoin = peer in self.members
        actions: list[RoomAction] = []
        if not rejoin:
            self._add(peer, role, request.nickname[:MAX_NICKNAME], request.listen[:MAX_LISTEN])
            if role == Role.PARTICIPANT:
                self.strikes.returned(peer, now_ms)
                actions += self._invalidate_ceremony(CeremonyCancel.MEMBERSHIP_CHANGED)
        actions.append(Send(peer, JoinVerdict(True, JoinReason.OK, "rejoined" if rejoin else "joined")))
        actions.append(MemberJoined(peer, role, self.members[peer].nickname))
        return actions + self._broadcast_state()

    def _admit(self, peer: PeerId, transcript: bytes, request: JoinRequest, now_ms: int) -> tuple[JoinReason, str] | None:
        """None to admit, else (reason, detail); the reason set is the spec's closed set."""
        if request.roomId != self.room_id:
            return JoinReason.JOIN_REJECTED, "no such room here"
        if request.role not in tuple(Role):
            return JoinReason.JOIN_REJECTED, "role must be participant or spectator"
        role = Role(request.role)
        if self.phase in (RoomPhase.STARTED, RoomPhase.CLOSED):
            return JoinReason.ROOM_CLOSED, "the match has started or the room is closed"
        secret = self.secrets.get(role)
        if role == Role.SPECTATOR and (secret is None or self.limits.max_spectators == 0):
            return JoinReason.SPECTATORS_DISABLED, "this room does not admit spectators"
        if peer in self.members and self.members[peer].role != role:
            return JoinReason.JOIN_REJECTED, "already in this room with another role"
        if role == Role.PARTICIPANT and self.phase == RoomPhase.COUNTDOWN and peer not in self.members:
            return JoinReason.JOIN_REJECTED, "participant admission is closed during the countdown"
        if role == Role.PARTICIPANT and self.strikes.barred(peer, now_ms):
            return JoinReason.JOIN_REJECTED, (f"removed for stalling the room ({STRIKE_LIMIT} failed Ready ceremonies); "
                                              "try again later")
        seats = self.seats[role]
        if peer not in self.seeded and not seats.try_reserve(peer):
            return (JoinReason.SPECTATOR_FULL, "no spectator seat is free") if role == Role.SPECTATOR else (
                JoinReason.JOIN_REJECTED, "the room is full")
        if secret is None or not check_role_proof(
            request.proof, secret, transcript, self.room_id, role, peer, self.identity.peer_id
        ):
            seats.release(peer)
            return JoinReason.JOIN_REJECTED, "the invitation proof does not match"
        seats.commit(peer)
        return None

    # ---- messages ---------------------------------------------------------------------------------

    def receive(self, peer: PeerId, msg: Message, now_ms: int) -> list[RoomAction]:
        """A message from the authenticated member ``peer`` (the host's own seat included).

        Never raises for what a peer sent: a message that breaks a rule (a ``PeerError``) is dropped
        and answered with an ``error`` event, and blamed on ``peer`` (``Misbehaviour``) unless it came
        from the host's own seat. A message from a non-member is ignored without blame: it changes
        nothing, and a departing member's last messages (an asset reply queued after its ``leave``, a
        refused joiner's) may still be on their way while its link closes.

        Each message is a transaction: whatever a handler changed before it raised is put back, a rule's
        refusal and a bug alike. A bug (any other exception, a ``LocalError`` included) then raises
        ``MachineFault`` (outcome ``restored``, chained to it) for the shell to log and close the link on.
        A relay changes nothing here (it is forwarded), so it is handled without a copy.
        """
        if peer not in self.members:
            return []
        own = peer == self.identity.peer_id
        handler = self._HANDLERS.get(type(msg))
        if handler is None:
            return refused(peer, "unexpected-message", f"{peer[-4:]} sent {msg.TYPE}", blame=not own)
        saved = None if isinstance(msg, Relay) else snapshot(self, self._KEPT)
        try:
            return handler(self, peer, msg, now_ms)
        except PeerError as exc:
            if saved is not None:
                restore(self, saved)
            return refused(peer, exc.code, f"from {peer[-4:]}: {exc.message}", blame=not own)
        except Exception as exc:
            if saved is not None:
                restore(self, saved)
            raise MachineFault("the room host", peer, FaultOutcome.RESTORED, exc) from exc

    def _on_relay(self, peer: PeerId, msg: Relay, now_ms: int) -> list[RoomAction]:
        if msg.origin not in ("", peer):  # members send it empty; the host attests the link's peer
            raise ProtocolError("relay-origin-invalid", "a relay may not name another member as its origin")
        attested = Relay(origin=peer, target=msg.target, body=msg.body)
        if msg.target == RELAY_TO_ALL:
            return [Send(p, attested) for p in self.members if p != peer]
        target = PeerId(msg.target)
        return [Send(target, attested)] if target in self.members and target != peer else []

    def _on_rotation(self, peer: PeerId, msg: CarRotation, now_ms: int) -> list[RoomAction]:
        member = self.members[peer]
        if member.role != Role.PARTICIPANT or self.phase not in WAITING_PHASES:
            raise ProtocolError("not-allowed", "only a participant may choose cars, and only while waiting")
        if member.declaration is not None:
            raise ProtocolError("not-allowed", "cancel Ready before changing cars")
        if len(msg.carRotation) != len(self.config.rounds):
            raise ProtocolError("rotation-invalid", f"declare exactly one car per round ({len(self.config.rounds)})")
        member.rotation = list(msg.carRotation)
        return self._broadcast_state()

    def _on_ready(self, peer: PeerId, msg: ReadyDeclarationMsg, now_ms: int) -> list[RoomAction]:
        """A declaration is accepted, or refused and answered on its sender's link (``ready-refused``)
        beside the usual ``error`` and blame: the sender is not Ready and may declare again."""
        try:
            return self._accept_ready(peer, msg, now_ms)
        except PeerError as exc:
            nonce = msg.signed.get("nonce")
            echo = nonce if isinstance(nonce, bytes) and len(nonce) == NONCE_BYTES else b""
            answer = ReadyRefusal(echo, exc.code[:MAX_CODE], exc.message[:MAX_DETAIL])
            own = peer == self.identity.peer_id
            return refused(peer, exc.code, f"from {peer[-4:]}: {exc.message}", blame=not own) + [Send(peer, answer)]

    def _accept_ready(self, peer: PeerId, msg: ReadyDeclarationMsg, now_ms: int) -> list[RoomAction]:
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
        self.strikes.ready(peer)
        actions: list[RoomAction] = [ReadyChanged(peer, True)]
        actions += self._invalidate_ceremony(CeremonyCancel.READY_CHANGED)
        return actions + self._broadcast_state() + self._maybe_request_ready_set(now_ms)

    def _on_cancel_ready(self, peer: PeerId, msg: CancelReady, now_ms: int) -> list[RoomAction]:
        """Withdraws the sender's own declaration, nobody else's. A spectator has none to cancel; a
        participant without one changes nothing (its cancel may cross a withdrawal by the host), so it
        costs no event, no ceremony and no room-state broadcast."""
        member = self.members[peer]
        if member.role != Role.PARTICIPANT:
            raise ProtocolError("not-allowed", "only a participant has a Ready to cancel")
        if self.phase not in WAITING_PHASES:
            raise ProtocolError("not-allowed", "too late to cancel Ready; leave the room instead")
        if member.declaration is None:
            return []
        member.declaration = None
        actions: list[RoomAction] = [ReadyChanged(peer, False)]
        actions += self._invalidate_ceremony(CeremonyCancel.READY_CANCELLED)
        return actions + self._broadcast_state()

    def _maybe_request_ready_set(self, now_ms: int) -> list[RoomAction]:
        participants = self.participants
        if self.phase != RoomPhase.COLLECTING or len(participants) < self.limits.min_players:
            return []
        envelopes: dict[PeerId, SignedPayload] = {}
        for p in participants:
            envelope = self.members[p].declaration
            if envelope is None:
                return []
            envelopes[p] = envelope
        declarations = {p: parse_declaration(envelopes[p]) for p in participants}
        context = ready_set_context(self.room_id, self.config.digest, declarations)
        self.ceremony = Ceremony(context, signing_digest(context).hex(), deadline_ms=now_ms + ANSWER_TIMEOUT_MS,
                                 formed_ms=now_ms)
        self._move(PhaseChange.READY_SET_FORMED)
        request = ReadySetRequest(context, [envelopes[p].to_wire() for p in sorted(participants)])
        actions: list[RoomAction] = [ReadySetFormed(self.ceremony.ready_digest, sorted(participants))]
        return actions + self._broadcast(request, role=Role.PARTICIPANT) + self._broadcast_state()

    def _on_ack(self, peer: PeerId, msg: ReadySetAck, now_ms: int) -> list[RoomAction]:
        ceremony = self.ceremony
        if self.phase != RoomPhase.VERIFYING or ceremony is None:
            return []
        envelope = self.verifier.check(msg.signed, now_ms)
        if envelope.signer != peer:
            raise ProtocolError("ack-invalid", "an ack must come from its signer's link")
        check_ack(envelope, self.room_id, ceremony.ready_digest)
        self.verifier.commit(envelope, now_ms)
        ceremony.acks[peer] = envelope
        ceremony.refusals.pop(peer, None)  # an ack after a refusal (the asset it lacked arrived) replaces it
        if set(ceremony.acks) != set(self.participants):
            return self._judge_when_answered(now_ms)
        ceremony.grid_ctx = grid_context(self.room_id, self.participants, self.track_digests, len(self.config.rounds))
        ceremony.deadline_ms = now_ms + PHASE_TIMEOUT_MS
        self._move(PhaseChange.ALL_ACKED)
        return self._broadcast(GridCommitRequest(ceremony.grid_ctx), role=Role.PARTICIPANT) + self._broadcast_state()

    def _on_refuse(self, peer: PeerId, msg: ReadySetRefuse, now_ms: int) -> list[RoomAction]:
        """Shown only from a participant about the ReadySet now waiting for acks; one about an earlier
        ReadySet crossed a change of the room and is dropped (as a late ack is)."""
        if not self._is_participant(peer):
            raise ProtocolError("not-allowed", "only a participant is asked to acknowledge a ReadySet")
        ceremony = self.ceremony
        if self.phase != RoomPhase.VERIFYING or ceremony is None or msg.readySetDigest != ceremony.ready_digest:
            return []
        participants = self.participants
        culprits: dict[str, Culprit] = {}
        for culprit in msg.culprits[:len(participants)]:
            if culprit.peer in participants and culprit.peer != peer:
                culprits.setdefault(culprit.peer, Culprit(culprit.peer, culprit.code[:MAX_CODE], culprit.detail[:MAX_DETAIL]))
        ceremony.acks.pop(peer, None)
        ceremony.refusals[peer] = (msg.code[:MAX_CODE], msg.detail[:MAX_DETAIL], list(culprits.values()))
        actions: list[RoomAction] = [ReadySetRefused(peer, msg.code[:MAX_CODE], msg.detail[:MAX_DETAIL])]
        return actions + self._judge_when_answered(now_ms)

    def _judge_when_answered(self, now_ms: int) -> list[RoomAction]:
        """Once every participant has acked or refused the ReadySet for good (a refusal for an asset still
        on its way is no answer yet), and some refused: judge (``stalls.judge``)."""
        ceremony = self.ceremony
        if ceremony is None:
            return []
        if ceremony.refusals and set(self.participants) <= set(ceremony.acks) | self._final_refusals(ceremony):
            return self._judge(now_ms)
        return []

    @staticmethod
    def _final_refusals(ceremony: Ceremony) -> set[PeerId]:
        """The refusers whose refusal is an answer (not only a wait for an asset on its way)."""
        return {p for p, (_, _, culprits) in ceremony.refusals.items()
                if not culprits or any(c.code not in ANSWER_PENDING for c in culprits)}

    def _answer_timeout(self, now_ms: int) -> list[RoomAction]:
        """The ReadySet's answer time ran out: judge it, unless every participant answered but some are
        still fetching a car's assets, within ``FETCH_WAIT_MS`` of the ReadySet: then wait once more."""
        ceremony = self.ceremony
        if ceremony is None:
            return []
        answered = set(ceremony.acks) | set(ceremony.refusals)
        fetching = set(ceremony.refusals) - self._final_refusals(ceremony)
        if fetching and set(self.participants) <= answered and now_ms < ceremony.formed_ms + FETCH_WAIT_MS:
            ceremony.deadline_ms = min(now_ms + ANSWER_TIMEOUT_MS, ceremony.formed_ms + FETCH_WAIT_MS)
            return []
        return self._judge(now_ms)

    def _judge(self, now_ms: int) -> list[RoomAction]:
        """The ReadySet failed (refused, or not answered in time): withdraw the Ready of whoever it failed
        on, one strike each (``stalls.judge``), and go back to collecting; the others stay Ready. With no
        verdict (only refusals of the set itself, and nobody acked it) the room waits in ``verifying``."""
        ceremony = self.ceremony
        if ceremony is None:
            return []
        verdicts = judge(self.participants, self.identity.peer_id, ceremony.acks, ceremony.refusals)
        if not verdicts:
            ceremony.deadline_ms = None
            return []
        self.ceremony = None
        self._move(PhaseChange.READY_SET_JUDGED)
        return self._strike(verdicts, now_ms)

    def _strike(self, verdicts: list[Verdict], now_ms: int) -> list[RoomAction]:
        """Withdraw each verdict's participant's Ready, count its strike, tell every member (``room-decision``)
        and remove those at the limit, or not Ready again in time (never the host's own seat); then the new
        room state, and the next ReadySet if everyone left is Ready."""
        actions: list[RoomAction] = []
        removed = []
        for verdict in verdicts:
            member = self.members.get(verdict.peer)
            if member is None:
                continue
            member.declaration = None
            strikes = self.strikes.strike(verdict.peer, now_ms)
            out = verdict.peer != self.identity.peer_id and (
                strikes >= STRIKE_LIMIT or verdict.decision is StallDecision.READY_NOT_RENEWED)
            decision = RoomDecision(verdict.peer, verdict.decision, verdict.code, verdict.detail, list(verdict.by),
                                    strikes, out)
            actions.append(RoomDecided(decision))
            actions += self._broadcast(decision)
            if out:
                removed.append(verdict.peer)
        for peer in removed:
            actions += self._leave(peer, Departure.STALLED)
        return actions + self._broadcast_state() + self._maybe_request_ready_set(now_ms)

    def _on_commit(self, peer: PeerId, msg: GridCommit, now_ms: int) -> list[RoomAction]:
        ceremony = self.ceremony
        if self.phase != RoomPhase.GRID_COMMIT or ceremony is None or ceremony.grid_ctx is None:
            return []
        grid_digest = signing_digest(ceremony.grid_ctx)
        envelope = self.verifier.check(msg.signed, now_ms)
        if envelope.signer != peer:
            raise ProtocolError("grid-invalid", "a commit must come from its signer's link")
        check_commit(envelope, grid_digest)
        self.verifier.commit(envelope, now_ms)
        ceremony.commits.setdefault(peer, envelope)
        if set(ceremony.commits) != set(self.participants):
            return []
        self._move(PhaseChange.ALL_COMMITTED)
        ceremony.deadline_ms = now_ms + PHASE_TIMEOUT_MS
        locked = GridCommitmentsLocked(grid_digest.hex(), [ceremony.commits[p].to_wire() for p in sorted(ceremony.commits)])
        return self._broadcast(locked, role=Role.PARTICIPANT) + self._broadcast_state()

    def _on_reveal(self, peer: PeerId, msg: GridReveal, now_ms: int) -> list[RoomAction]:
        ceremony = self.ceremony
        if self.phase != RoomPhase.GRID_REVEAL or ceremony is None or ceremony.grid_ctx is None:
            return []
        grid_digest = signing_digest(ceremony.grid_ctx)
        envelope = self.verifier.check(msg.signed, now_ms)
        if envelope.signer != peer:
            raise ProtocolError("grid-invalid", "a reveal must come from its signer's link")
        committed = check_commit(ceremony.commits[peer], grid_digest)
        check_reveal(envelope, grid_digest, committed)
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
            declarations=[self._declaration(p) for p in participants],
            acks=[ceremony.acks[p] for p in participants],
            grid_ctx=ceremony.grid_ctx,
            commits=[ceremony.commits[p] for p in participants],
            reveals=[ceremony.reveals[p] for p in participants],
            started_at=now_ms,
            countdown_deadline=now_ms + COUNTDOWN_MS,
        )
        self._move(PhaseChange.ALL_REVEALED)
        self.countdown_deadline = now_ms + COUNTDOWN_MS
        ceremony.deadline_ms = None
        actions: list[RoomAction] = [CountdownStarted(self.package["matchId"], self.countdown_deadline)]
        return actions + self._broadcast(LockedStartPackageMsg(self.package)) + self._broadcast_state()

    def _on_leave(self, peer: PeerId, msg: Leave, now_ms: int) -> list[RoomAction]:
        return self.link_closed(peer, now_ms, reason=msg.reason[:MAX_CODE] or Departure.LEFT)

    _KEPT: ClassVar[frozenset[str]] = frozenset({"identity", "config", "limits", "secrets", "track_digests", "package"})
    """What a message's transaction shares instead of copying: the identity, and values the room only ever
    replaces (settings, the locked start package), never changes in place."""

    _HANDLERS: ClassVar[dict[type[Message], HostHandler]] = {
        Relay: _on_relay,
        CarRotation: _on_rotation,
        ReadyDeclarationMsg: _on_ready,
        CancelReady: _on_cancel_ready,
        ReadySetAck: _on_ack,
        ReadySetRefuse: _on_refuse,
        GridCommit: _on_commit,
        GridReveal: _on_reveal,
        Leave: _on_leave,
    }

    # ---- departures and timers --------------------------------------------------------------------

    def link_closed(self, peer: PeerId, now_ms: int, reason: str = Departure.LINK_CLOSED) -> list[RoomAction]:
        """``peer``'s link ended (or it left, saying ``reason``): free its seat and tell the room; in the
        countdown a participant counts as a pre-start disconnect instead (spec §4.6)."""
        member = self.members.get(peer)
        if member is None or peer == self.identity.peer_id:
            return []
        if self.phase == RoomPhase.COUNTDOWN and member.role == Role.PARTICIPANT:
            return self._countdown_disconnect(peer, now_ms)
        if self.phase in (RoomPhase.STARTED, RoomPhase.CLOSED):
            return [MemberLeft(peer, reason)]
        return self._leave(peer, reason) + self._broadcast_state() + self._maybe_request_ready_set(now_ms)

    def _leave(self, peer: PeerId, reason: str) -> list[RoomAction]:
        """``peer`` is out of the room (it left, its link ended, or the host removed it): its seat is free
        and its link closed with ``reason``; a participant's departure drops the ceremony."""
        member = self.members.pop(peer)
        self.seats[member.role].deactivate(peer)
        self.strikes.forget(peer)
        actions: list[RoomAction] = [CloseLink(peer, reason), MemberLeft(peer, reason)]
        if member.role == Role.PARTICIPANT:
            self.membership_epoch += 1
            actions += self._invalidate_ceremony(CeremonyCancel.MEMBERSHIP_CHANGED)
        return actions

    def _countdown_disconnect(self, peer: PeerId, now_ms: int) -> list[RoomAction]:
        """Survivors continue only if ≥ 2 and a strict majority of the locked roster (spec §4.6)."""
        if peer not in self.pre_start_disconnects:
            self.pre_start_disconnects.append(peer)
        roster = sorted(self.package["readySetContext"]["roster"]) if self.package else self.participants
        survivors = [p for p in roster if p not in self.pre_start_disconnects]
        actions: list[RoomAction] = [MemberLeft(peer, Departure.COUNTDOWN_DISCONNECT)]
        if len(survivors) >= 2 and len(survivors) * 2 > len(roster):
            return actions
        leavers = list(self.pre_start_disconnects)
        for gone in leavers:
            member = self.members.pop(gone, None)
            if member is not None:
                self.seats[member.role].deactivate(gone)
        for member in self.members.values():
            member.declaration = None
        self._move(PhaseChange.COUNTDOWN_CANCELLED)
        self.package, self.ceremony, self.countdown_deadline = None, None, None
        self.pre_start_disconnects = []
        self.membership_epoch += 1
        cancel = CountdownCancel(CountdownCancelReason.NO_MAJORITY, leavers)
        actions.append(CountdownCancelled(leavers))
        return actions + self._broadcast(cancel) + self._broadcast_state()

    def next_deadline(self) -> int | None:
        """When ``tick`` next has work: the countdown's end, the running ReadySet's or grid phase's timeout,
        or the first deadline of a participant with a strike to be Ready again."""
        if self.phase == RoomPhase.COUNTDOWN:
            return self.countdown_deadline
        deadlines = list(self._ready_again().values())
        if self.ceremony is not None and self.ceremony.deadline_ms is not None:
            deadlines.append(self.ceremony.deadline_ms)
        return min(deadlines, default=None)

    def _ready_again(self) -> dict[PeerId, int]:
        """The participants (never the host's seat) with a strike that are not Ready, and by when they must
        be (``stalls.READY_AGAIN_MS``), while the room is waiting."""
        if self.phase not in WAITING_PHASES:
            return {}
        return {p: at for p, at in self.strikes.deadlines().items()
                if p != self.identity.peer_id and p in self.members and self.members[p].declaration is None}

    def tick(self, now_ms: int) -> list[RoomAction]:
        """Timer event: start the match at the countdown's end, judge a ReadySet not answered in time,
        cancel a grid phase that timed out, remove a participant with a strike not Ready again in time."""
        if self.phase == RoomPhase.COUNTDOWN:
            deadline = self.countdown_deadline
            return self._start(now_ms) if deadline is not None and now_ms >= deadline else []
        actions: list[RoomAction] = []
        ceremony = self.ceremony
        if ceremony is not None and ceremony.deadline_ms is not None and now_ms >= ceremony.deadline_ms:
            actions += self._answer_timeout(now_ms) if self.phase == RoomPhase.VERIFYING else self._grid_timeout(now_ms)
        late = [p for p, at in sorted(self._ready_again().items()) if now_ms >= at]
        if late:
            verdicts = [Verdict(p, StallDecision.READY_NOT_RENEWED, "ready-not-renewed",
                                f"not Ready again within {READY_AGAIN_MS // 1000} s of a failed Ready ceremony", ())
                        for p in late]
            actions += self._strike(verdicts, now_ms)
        return actions

    def _grid_timeout(self, now_ms: int) -> list[RoomAction]:
        """Fail closed naming the missing peers; their Ready is withdrawn (a strike each) so the room can go on."""
        ceremony, grid_ctx = self._grid()
        done = ceremony.commits if self.phase == RoomPhase.GRID_COMMIT else ceremony.reveals
        missing = sorted(p for p in self.participants if p not in done)
        digest = signing_digest(grid_ctx).hex()
        self.ceremony = None
        self._move(PhaseChange.GRID_TIMED_OUT)
        cancel = GridCeremonyCancel(digest, CeremonyCancel.TIMEOUT, missing)
        actions: list[RoomAction] = [GridCancelled(missing)]
        actions += self._broadcast(cancel, role=Role.PARTICIPANT)
        return actions + self._strike([Verdict(p, StallDecision.GRID_TIMEOUT, "grid-timeout",
                                               f"missed a start-grid phase ({PHASE_TIMEOUT_MS // 1000} s)", ())
                                       for p in missing], now_ms)

    def _start(self, now_ms: int) -> list[RoomAction]:
        package = self._locked_package()
        self._move(PhaseChange.COUNTDOWN_ENDED)
        racers = [p for p in sorted(package["readySetContext"]["roster"]) if p not in self.pre_start_disconnects]
        spectators = [p for p, m in self.members.items() if m.role == Role.SPECTATOR]
        start = MatchStart(package["matchId"], package["startedAt"], package_digest(package), list(self.pre_start_disconnects),
                           assign_sources(racers, spectators))
        return self._broadcast(start) + self._broadcast_state()
