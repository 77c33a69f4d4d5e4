"""A member's view of its room: version negotiation, checks, Ready, acks, grid ceremony, start.

Every node runs one (the host too, for its own seat). It never trusts the host: it re-verifies the
ReadySet, the grid commitments and the LockedStartPackage itself, and asks its ``RoomAssets`` (the
shell's asset code) whether every car and track is present, valid and usable before it acks.
Sans-IO: methods take ``now_ms`` and return ``RoomAction``s. Only the host's link speaks for the room
(room state, the ceremony, the start); another member speaks only through the host's relay, under the
origin the host attests, and only about itself. A message that breaks a rule changes nothing, is
answered with an ``error`` event and blamed on whoever sent it (``Misbehaviour``: the host, or a
relayed message's origin); a misuse by the local shell (declaring Ready without a car, say) raises
``LocalError``. The member always says when its own Ready is refused (``ready-refused``) or withdrawn
(``ready-withdrawn``), and ``--auto-ready`` declares again when that may help.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

from protocol.encoding.dagcbor import signing_digest
from protocol.encoding.wire import Message, decode_message, encode_message
from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.identity.keys import Identity
from protocol.identity.signed import SignedPayload
from protocol.spectate.assign import check_sources
from protocol.room.actions import FetchAssets, HostSuccession, MatchStarted, RelayedIn, RoomAction, Send, refused
from protocol.room.config import MatchConfig
from protocol.room.events import (
    CompatibilityChecked,
    CountdownCancelled,
    CountdownStarted,
    ErrorReported,
    GridCancelled,
    Joined,
    MatchBegan,
    MemberJoined,
    MemberLeft,
    ReadyRefused,
    ReadyWithdrawn,
    RoomDecided,
    SuccessorChosen,
)
from protocol.room.invitation import role_proof
from protocol.room.locked_start import LockedStart, verify_package
from protocol.room.messages import (
    AssetChunk,
    AssetMissing,
    AssetRequest,
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
    LockedStartPackageMsg,
    RELAY_TO_ALL,
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
from protocol.room.ready import build_ack, build_declaration, read_ready_set, refused_declarations
from protocol.room.start_grid import build_commit, build_reveal, check_commit, commitment, grid_context, new_nonce
from protocol.transaction import FaultOutcome, MachineFault, restore, snapshot
from protocol.room.states import (
    WAITING_PHASES, CeremonyCancel, Departure, ReadyCancel, ReadyWithdrawal, Role, RoomPhase, StallDecision,
)
from protocol.versions.collection import (
    Broadcast,
    CollectionFinished,
    CollectorAction,
    Unicast,
    VersionCollector,
    VersionInfoMessage,
    VersionRequest,
    answer_version_request,
)
from protocol.versions.record import ClientVersionInfo, field_differences, incompatibility_reasons
from protocol.identity.keys import PeerId

__all__ = ["MemberRoom", "RoomAssets"]

RELAYED_TYPES: dict[str, type[Message]] = {
    VersionRequest.TYPE: VersionRequest,
    VersionInfoMessage.TYPE: VersionInfoMessage,
    AssetRequest.TYPE: AssetRequest,
    AssetChunk.TYPE: AssetChunk,
    AssetMissing.TYPE: AssetMissing,
}


class RoomAssets(Protocol):
    """What the member needs from the shell's asset code (pure answers over the local store).

    ``check_rotation``'s verdict depends on the rotation and the store only; ``peer`` just names the
    car in messages, so the member may reuse a pass for the same rotation of another peer. A car or
    track that cannot race is refused with a ``ProtocolError`` (a peer declared it); the member turns
    that into a refusal of the ReadySet or the package, never into a crash."""

    def track_digests(self, config: MatchConfig) -> list[str]:
        """The manifest digest of each round's track; raises ``ProtocolError`` for an unusable track."""
        ...

    def check_rotation(self, peer: PeerId, rotation: list[Any]) -> None:
        """Raise ``ProtocolError`` (``asset-missing``, ``asset-version-unusable:…``, ``loadout-…``) unless
        every car of ``rotation`` can race here."""
        ...

    def missing_assets(self, refs: list[str]) -> list[str]:
        """The refs of ``refs`` this node does not hold."""
        ...

    def rotation_refs(self, rotation: list[Any]) -> list[str]:
        """Every asset ref the cars of ``rotation`` name; raises ``ProtocolError`` for a malformed car."""
        ...


MemberHandler = Callable[["MemberRoom", PeerId, Any, int], list[RoomAction]]

WITHDRAWN = {
    ReadyWithdrawal.PLAYER: "this node cancelled its Ready",
    ReadyWithdrawal.GRID_TIMEOUT: "the host withdrew this node's Ready: it missed a start-grid phase; declare Ready again",
    ReadyWithdrawal.DECLARATION_REFUSED: "the room refused this node's car or build; choose another car and declare Ready",
    ReadyWithdrawal.REFUSAL_OVERRULED: "this node refused a car or build the room accepts; its Ready is withdrawn",
    ReadyWithdrawal.NO_ANSWER: "this node did not answer the ReadySet in time; its Ready is withdrawn",
    ReadyWithdrawal.COUNTDOWN_CANCELLED: "the countdown was cancelled and everyone is un-Ready",
    ReadyWithdrawal.HOST_LOST: "the host was lost; its successor starts with nobody Ready",
    ReadyWithdrawal.UNEXPLAINED: "the host's room state no longer lists this node as Ready",
}


WITHDRAWN_BY = {
    StallDecision.DECLARATION_REFUSED: ReadyWithdrawal.DECLARATION_REFUSED,
    StallDecision.REFUSAL_OVERRULED: ReadyWithdrawal.REFUSAL_OVERRULED,
    StallDecision.NO_ANSWER: ReadyWithdrawal.NO_ANSWER,
    StallDecision.GRID_TIMEOUT: ReadyWithdrawal.GRID_TIMEOUT,
}
"""How a room decision about this node explains the loss of its Ready (a removal closes its link)."""
AGAIN = frozenset({ReadyWithdrawal.UNEXPLAINED, ReadyWithdrawal.REFUSAL_OVERRULED, ReadyWithdrawal.NO_ANSWER})
"""Withdrawals after which auto-ready declares again: nothing this node did explains it, or the room may
have changed since (its refusal was overruled, or its answer did not arrive); each costs a strike, so a
node that keeps refusing is removed (protocol/room/stalls.py). Not after its own cancel, a refused car (the
same car would be refused again: the player chooses another) or a missed grid phase (a node deaf to the
grid would restart the ceremony again and again)."""


def _role(role: str) -> Role:
    try:
        return Role(role)
    except ValueError:
        raise LocalError("role-invalid", f"a member's role is one of {', '.join(Role)}, not {role!r}") from None


class MemberRoom:
    """One node's member machine: it joins, keeps the host's room state, collects versions, declares
    Ready and acks only what it verified itself. Input: ``receive`` (messages from the host), the local
    commands (``declare_ready``, ``cancel_ready``, ``set_rotation``, ``leave``), ``asset_stored``,
    ``host_lost`` and ``tick``; output: ``RoomAction`` lists."""

    def __init__(
        self,
        identity: Identity,
        room_id: str,
        host_peer: PeerId,
        role: Role,
        my_info: ClientVersionInfo,
        assets: RoomAssets,
        *,
        choose_car: Callable[[int], list[Any]] | None = None,
        auto_ready: bool = False,
        nickname: str = "player",
        listen: str = "",
    ) -> None:
        """A member of ``room_id`` hosted by ``host_peer``; ``choose_car`` gives one loadout per round once
        the rounds are known, ``auto_ready`` declares Ready as soon as nothing blocks it.

        Raises ``LocalError`` (``role-invalid``) for a role that is not a ``Role``.
        """
        self.identity = identity
        self.me = identity.peer_id
        self.room_id = room_id
        self.host_peer = host_peer
        self.role = _role(role)
        self.my_info = my_info
        self.assets = assets
        self.choose_car = choose_car  # rounds -> one loadout per round, asked once the rounds are known
        self.rotation: list[Any] | None = None
        self.auto_ready = auto_ready
        self.nickname = nickname
        self.listen = listen  # where this node accepts links if it must succeed the host
        self.state: RoomState | None = None
        self.collector: VersionCollector | None = None
        self.compatibility: dict[PeerId, list[str]] = {}
        self.ready_sent_epoch: tuple[int, str] | None = None
        self.declared_nonce: bytes | None = None  # of the last declaration sent, until the host refuses it
        self.ready_refused: tuple[str, int] | None = None  # (code, room-state epoch) of the last refusal
        self.withdrawal: ReadyWithdrawal | None = None  # what would explain the loss of this node's Ready
        self.acked_digest: str | None = None
        self.grid_nonces: dict[bytes, bytes] = {}
        self.grid_context_digest: bytes | None = None
        self.locked: LockedStart | None = None
        self.started = False
        self.requested: set[str] = set()
        self.refused_for_assets: ReadySetRequest | None = None  # answered again once the fetch completes
        self.refused_rotation: tuple[str, str] | None = None  # (repr of the cars, code) the room refused
        self.passed_rotations: set[str] = set()  # repr of every car rotation that passed the asset checks

    # ---- the view ---------------------------------------------------------------------------------

    @property
    def members(self) -> list[PeerId]:
        """Every member's PeerId in join order, as the last room state lists them (empty before one)."""
        return [m.peerId for m in self.state.members] if self.state else []

    def _member(self, peer: PeerId) -> MemberWire | None:
        return next((m for m in self.state.members if m.peerId == peer), None) if self.state else None

    @property
    def config(self) -> MatchConfig | None:
        """The match settings of the last room state (None before one); raises ``ProtocolError``
        (``config-invalid``) when the host's settings are malformed."""
        return MatchConfig.from_wire(self.state.matchConfig) if self.state else None

    def _state(self) -> RoomState:
        """The room state a message from the host builds on: one that arrives before any room state
        breaks the order of the protocol (``room-state-missing``)."""
        if self.state is None:
            raise ProtocolError("room-state-missing", "the host sent a room step before any room state")
        return self.state

    def _room(self) -> tuple[RoomState, MatchConfig]:
        """The room state and its settings (``room-state-missing``, ``config-invalid``)."""
        state = self._state()
        return state, MatchConfig.from_wire(state.matchConfig)

    def versions_ok(self) -> bool:
        """Whether every other member's version record arrived and is compatible with this node's."""
        c = self.collector
        return c is not None and c.finished and not c.missing and all(not r for r in self.compatibility.values())

    def receive(self, peer: PeerId, msg: Message, now_ms: int) -> list[RoomAction]:
        """A message on the link to the host (``peer`` must be the host).

        Never raises for what a peer sent: a message that breaks a rule (a ``PeerError``) is dropped,
        answered with an ``error`` event and blamed on the host (``Misbehaviour``; not in a host node,
        where the host is this node). A message from any other peer changes nothing and is blamed on
        that peer (``not-from-host``): only the host's link speaks for the room.

        Each message is a transaction: whatever a handler changed before it raised is put back, a rule's
        refusal and a bug alike. A bug (any other exception, a ``LocalError`` included) then raises
        ``MachineFault`` (outcome ``restored``, chained to it) for the shell to log and close the link on.
        """
        if peer != self.host_peer:
            return refused(peer, "not-from-host", f"{peer[-4:]} sent {msg.TYPE} but is not this room's host", blame=True)
        own = peer == self.me
        handler = self._HANDLERS.get(type(msg))
        if handler is None:
            return refused(peer, "unexpected-message", f"host sent {msg.TYPE}", blame=not own)
        saved = snapshot(self, self._KEPT)
        try:
            return handler(self, peer, msg, now_ms)
        except PeerError as exc:
            restore(self, saved)
            return refused(peer, exc.code, exc.message, blame=not own)
        except Exception as exc:
            restore(self, saved)
            raise MachineFault("the room member", peer, FaultOutcome.RESTORED, exc) from exc

    def join_request(self, transcript: bytes, secret: bytes) -> JoinRequest:
        """The first message on a new link: a role proof bound to this link's transcript."""
        proof = role_proof(secret, transcript, self.room_id, self.role, self.me, self.host_peer)
        return JoinRequest(self.room_id, self.role, proof, self.nickname, self.listen)

    def _on_verdict(self, peer: PeerId, msg: JoinVerdict, now_ms: int) -> list[RoomAction]:
        if not msg.ok:
            return [ErrorReported(msg.reason, msg.detail or "the host refused to admit this node")]
        return [Joined(self.room_id, self.role)]

    def _on_state(self, peer: PeerId, msg: RoomState, now_ms: int) -> list[RoomAction]:
        if msg.roomId != self.room_id or msg.hostPeerId != self.host_peer:
            raise ProtocolError("room-state-invalid", "room state for another room or host")
        if self.state is not None and msg.stateEpoch <= self.state.stateEpoch:
            return []
        before = set(self.members)
        listed = self._member(self.me)
        was_ready = listed is not None and listed.ready
        self.state = msg
        actions: list[RoomAction] = self._ready_lost() if was_ready else []
        for joined in self.members:
            m = self._member(joined)
            if joined not in before and joined != self.me and m is not None:
                actions.append(MemberJoined(joined, m.role, m.nickname))
        for gone in sorted(before - set(self.members)):
            actions.append(MemberLeft(gone))
            self.compatibility.pop(gone, None)
        if set(self.members) != before:
            actions += self._collect_versions(now_ms)
        if self.role == Role.PARTICIPANT and self.rotation is None and self.choose_car is not None:
            _, config = self._room()
            actions += self.set_rotation(self.choose_car(len(config.rounds)))
        actions += self._fetch_missing(msg)
        return actions + self._maybe_auto_ready(now_ms)

    def _ready_lost(self) -> list[RoomAction]:
        """This node was listed Ready in the previous room state: if the new one does not list it Ready,
        say so with what explained it (this node's own cancel, a grid timeout, a cancelled countdown),
        or as unexplained, whatever withdrew it; an unexplained loss is declared again (auto-ready)."""
        listed = self._member(self.me)
        if listed is None or listed.ready:
            return []
        reason = self.withdrawal or ReadyWithdrawal.UNEXPLAINED
        self.withdrawal = None
        if reason in AGAIN:
            self.ready_sent_epoch = None  # declaring again may help: auto-ready does
        return [ReadyWithdrawn(reason, WITHDRAWN[reason])]

    # ---- versions ---------------------------------------------------------------------------------

    def _collect_versions(self, now_ms: int) -> list[RoomAction]:
        """A new member set: the collector keeps the records of the members still here, asks the others."""
        self.compatibility = {p: r for p, r in self.compatibility.items() if p in self.members}
        if self.collector is None:
            self.collector = VersionCollector(self.me, self.my_info, self.members)
            return self._collector_actions(self.collector.start(now_ms), now_ms)
        return self._collector_actions(self.collector.update_members(self.members, now_ms), now_ms)

    def _collector_actions(self, produced: list[CollectorAction], now_ms: int) -> list[RoomAction]:
        actions: list[RoomAction] = []
        for action in produced:
            if isinstance(action, Broadcast):
                actions.append(Send(self.host_peer, Relay("", RELAY_TO_ALL, encode_message(action.message))))
            elif isinstance(action, Unicast):
                actions.append(Send(self.host_peer, Relay("", action.peer, encode_message(action.message))))
            elif isinstance(action, CollectionFinished):
                actions += self._report_compatibility(action)
        return actions

    def _report_compatibility(self, finished: CollectionFinished) -> list[RoomAction]:
        """One ``compatibility`` event per peer whose verdict is new (a join does not repeat the others)."""
        actions: list[RoomAction] = []
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
            actions.append(CompatibilityChecked(peer, not reasons, reasons, differences))
        return actions

    def _on_relay(self, peer: PeerId, msg: Relay, now_ms: int) -> list[RoomAction]:
        origin = PeerId(msg.origin)  # the host attests who sent it
        if origin == self.me:
            return []
        try:
            inner = decode_message(msg.body, RELAYED_TYPES)
        except PeerError as exc:  # the host only attests who sent it: the fault is the origin's
            return refused(origin, exc.code, exc.message, blame=True)
        if isinstance(inner, (VersionRequest, VersionInfoMessage)) and inner.sender != origin:
            # a member speaks only for itself: the sender it names must be the origin the host attests
            detail = f"{origin[-4:]} relayed a {inner.TYPE} naming {inner.sender[-4:]} as its sender"
            return refused(origin, "relay-sender-mismatch", detail, blame=True)
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

    def host_lost(self, now_ms: int) -> list[RoomAction]:
        """The link to the host ended. While waiting, the next participant in join order succeeds it
        (``host-succession`` and a ``HostSuccession`` action); otherwise the room is over (``error``)."""
        state = self.state
        if state is None or state.phase not in WAITING_PHASES or self.started or self.role != Role.PARTICIPANT:
            return [ErrorReported("host-lost", "the link to the host ended; the room is over")]
        successor = next((m for m in state.members if m.role == Role.PARTICIPANT and m.peerId != self.host_peer), None)
        if successor is None:
            return [ErrorReported("room-closed", "the host left and nobody can succeed it")]
        actions: list[RoomAction] = [SuccessorChosen(self.host_peer, successor.peerId)]
        listed = self._member(self.me)
        if listed is not None and listed.ready:  # the successor's room starts with nobody Ready
            actions.append(ReadyWithdrawn(ReadyWithdrawal.HOST_LOST, WITHDRAWN[ReadyWithdrawal.HOST_LOST]))
        return actions + [HostSuccession(successor.peerId, successor.listen, state)]

    def tick(self, now_ms: int) -> list[RoomAction]:
        """Timer event: the version collection's retry or end."""
        produced = self.collector.timer_fired(now_ms) if self.collector is not None else []
        if not produced:
            return []
        return self._collector_actions(produced, now_ms) + self._maybe_auto_ready(now_ms)

    def next_deadline(self) -> int | None:
        """When ``tick`` next has work (the version collection's timer), or None."""
        return self.collector.deadline_ms if self.collector is not None else None

    # ---- cars and Ready ---------------------------------------------------------------------------

    def _check_rotation(self, peer: PeerId, rotation: list[Any]) -> None:
        """The assets' verdict on a rotation, checked once per distinct rotation (assembling a car takes
        milliseconds, and Ready, the ReadySet and the package ask for every car). A pass stays valid: a
        room only ever adds assets to the store and its version policy is fixed; a failure is re-checked."""
        key = repr(rotation)
        if key not in self.passed_rotations:
            self.assets.check_rotation(peer, rotation)
            self.passed_rotations.add(key)

    def _fetch_missing(self, state: RoomState) -> list[RoomAction]:
        """Ask for what this node lacks to race: the match's tracks (from the host) and the assets of
        the other members' cars (from each owner). Ready waits until they are stored."""
        actions: list[RoomAction] = []
        try:
            tracks = sorted({r.track_ref for r in MatchConfig.from_wire(state.matchConfig).rounds})
        except ProtocolError:
            tracks = []  # malformed settings are refused where they are used
        missing_tracks = [r for r in self.assets.missing_assets(tracks) if r not in self.requested]
        if missing_tracks and state.hostPeerId != self.me:
            self.requested.update(missing_tracks)
            actions.append(FetchAssets(state.hostPeerId, missing_tracks))
        for m in state.members:
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

    def asset_stored(self, ref: str, now_ms: int) -> list[RoomAction]:
        """The shell stored a fetched asset: Ready may now be possible, and a ReadySet refused only
        because this asset was still on its way is answered again (the host still waits for the ack)."""
        self.requested.discard(ref)
        pending = self.refused_for_assets
        if pending is not None and not self.requested and self.state is not None and self.state.phase == RoomPhase.VERIFYING:
            return self._on_ready_set(self.host_peer, pending, now_ms)
        return self._maybe_auto_ready(now_ms)

    def set_rotation(self, rotation: list[Any]) -> list[RoomAction]:
        """Choose this participant's cars, one per round (the host checks the count)."""
        self.rotation = list(rotation)
        return [Send(self.host_peer, CarRotation(self.rotation))]

    def declare_ready(self, now_ms: int) -> list[RoomAction]:
        """Sign and send this participant's Ready declaration.

        Raises ``LocalError`` (``not-allowed``) unless this node is a participant listed in the room
        with a car (``ready_blockers`` says what else would make the host or the peers refuse it).
        """
        me = self._member(self.me)
        if self.role != Role.PARTICIPANT or self.state is None or self.rotation is None or me is None:
            raise LocalError("not-allowed", "only a participant with a car can declare Ready")
        self.ready_sent_epoch = (me.membershipEpoch, self.state.configDigest)
        envelope = build_declaration(
            self.identity, self.room_id, self.state.configDigest, me.membershipEpoch, self.my_info, self.rotation, now_ms
        )
        self.declared_nonce, self.ready_refused, self.withdrawal = envelope.nonce, None, None
        return [Send(self.host_peer, ReadyDeclarationMsg(envelope.to_wire()))]

    def leave(self) -> list[RoomAction]:
        """Tell the host this node leaves the room."""
        return [Send(self.host_peer, Leave(Departure.VOLUNTARY))]

    def cancel_ready(self) -> list[RoomAction]:
        """Withdraw Ready; an explicit cancel also stops auto-ready (the player decided).

        Raises ``LocalError`` (``not-allowed``) for a spectator, which has no Ready (the host would
        refuse its cancel as a broken rule).
        """
        if self.role != Role.PARTICIPANT:
            raise LocalError("not-allowed", "only a participant has a Ready to cancel")
        self.ready_sent_epoch = None
        self.auto_ready = False
        self.withdrawal = ReadyWithdrawal.PLAYER
        return [Send(self.host_peer, CancelReady(ReadyCancel.PLAYER))]

    def ready_blockers(self) -> list[str]:
        """Why this node cannot declare Ready now (empty when it can)."""
        if self.state is None or self.role != Role.PARTICIPANT:
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
            blockers.append("fetching the track or the assets of other members' cars")
        participants = [m for m in self.state.members if m.role == Role.PARTICIPANT]
        if len(participants) < self.state.minPlayers:
            blockers.append(f"waiting for {self.state.minPlayers} participants")
        if self.ready_refused is not None and self.state.stateEpoch <= self.ready_refused[1]:
            blockers.append(f"the host refused Ready ({self.ready_refused[0]}); waiting for the room to change")
        if self.refused_rotation is not None and self.refused_rotation[0] == repr(self.rotation):
            blockers.append(f"the room refused this node's car ({self.refused_rotation[1]}); choose another car")
        return blockers

    def _maybe_auto_ready(self, now_ms: int) -> list[RoomAction]:
        if not self.auto_ready or self.state is None or self.state.phase != RoomPhase.COLLECTING:
            return []
        me = self._member(self.me)
        if me is None or me.ready or self.ready_blockers():
            return []
        if self.ready_sent_epoch == (me.membershipEpoch, self.state.configDigest):
            return []
        return self.declare_ready(now_ms)

    def _on_ready_refused(self, peer: PeerId, msg: ReadyRefusal, now_ms: int) -> list[RoomAction]:
        """The host refused this node's last declaration: say why; this node is not Ready. Auto-ready
        declares again once a newer room state shows the room changed (a refusal changes nothing at the
        host, so a reason that persists costs one declaration per change of the room, never a loop). The
        refusal of an earlier declaration, overtaken by a later one, is dropped."""
        if self.declared_nonce is None or msg.nonce not in (b"", self.declared_nonce):
            return []
        state = self._state()
        self.declared_nonce, self.ready_sent_epoch = None, None
        code = msg.code[:64]
        self.ready_refused = (code, state.stateEpoch)
        return [ReadyRefused(code, msg.detail[:300])]

    # ---- ReadySet, grid, package, start -----------------------------------------------------------

    def _on_ready_set(self, peer: PeerId, msg: ReadySetRequest, now_ms: int) -> list[RoomAction]:
        if self.role != Role.PARTICIPANT:
            return []
        self.refused_for_assets = None
        try:
            _, config = self._room()
            declarations = read_ready_set(msg.context, msg.declarations, room_id=self.room_id,
                                          config_digest=config.digest, rounds=len(config.rounds))
            if self.me not in msg.context["roster"]:
                raise ProtocolError("ready-set-invalid", "this node is not in the ReadySet")
            self.assets.track_digests(config)
            culprits = refused_declarations(declarations, self.my_info, self._check_rotation)
        except ProtocolError as exc:  # the set itself: refused naming nobody (the room judges the refusal)
            return self._refuse_ready_set(msg, exc.code, exc.message, [])
        if culprits:  # the room's answer is a refusal naming whose declaration and why, not a Misbehaviour
            if any(c.code == "asset-missing" for c in culprits) and self.requested:
                self.refused_for_assets = msg
            named = "; ".join(f"{c.peer[-4:]}: {c.detail}" for c in culprits)
            return self._refuse_ready_set(msg, culprits[0].code, named, culprits)
        self.acked_digest = signing_digest(msg.context).hex()
        ack = build_ack(self.identity, self.room_id, self.acked_digest, now_ms)
        return [Send(self.host_peer, ReadySetAck(ack.to_wire()))]

    def _refuse_ready_set(self, msg: ReadySetRequest, code: str, detail: str, culprits: list[Culprit]) -> list[RoomAction]:
        return [
            Send(self.host_peer, ReadySetRefuse(_safe_digest(msg.context), code, detail[:300], culprits)),
            ErrorReported(code, f"not acknowledging the ReadySet: {detail}"),
        ]

    def _on_decision(self, peer: PeerId, msg: RoomDecision, now_ms: int) -> list[RoomAction]:
        """The host withdrew a participant's Ready (protocol/room/stalls.py): reported; this node's own is
        explained by it (``ready-withdrawn`` when the room state shows it), and a refused car is not
        declared again by auto-ready until the cars change. Raises ``ProtocolError`` ``room-decision-invalid``
        for a decision that is not a ``StallDecision`` or about a non-participant."""
        try:
            decision = StallDecision(msg.decision)
        except ValueError:
            raise ProtocolError("room-decision-invalid", f"a room decision is one of {', '.join(StallDecision)}") from None
        member = self._member(msg.participant)
        if member is None or member.role != Role.PARTICIPANT:
            raise ProtocolError("room-decision-invalid", "a room decision names a participant of the room")
        participants = {m.peerId for m in self.state.members if m.role == Role.PARTICIPANT} if self.state else set()
        by = [p for p in dict.fromkeys(msg.by) if p in participants]  # shown as given, of the room's participants
        ruling = RoomDecision(msg.participant, decision, msg.code[:64], msg.detail[:300], by, msg.strikes, msg.removed)
        if msg.participant == self.me and decision in WITHDRAWN_BY:
            self.withdrawal = WITHDRAWN_BY[decision]
            if decision is StallDecision.DECLARATION_REFUSED:
                self.refused_rotation = (repr(self.rotation), ruling.code)
        return [RoomDecided(ruling)]

    def _expected_grid_context(self) -> dict[str, Any]:
        state, config = self._room()
        roster = [m.peerId for m in state.members if m.role == Role.PARTICIPANT]
        return grid_context(self.room_id, roster, self.assets.track_digests(config), len(config.rounds))

    def _on_grid_request(self, peer: PeerId, msg: GridCommitRequest, now_ms: int) -> list[RoomAction]:
        if self.role != Role.PARTICIPANT or self.acked_digest is None:
            return []
        if msg.context != self._expected_grid_context():
            raise ProtocolError("grid-invalid", "the grid context does not match this room's roster and tracks")
        digest = signing_digest(msg.context)
        nonce = self.grid_nonces.setdefault(digest, new_nonce())  # a retry reuses the cached nonce
        self.grid_context_digest = digest
        return [Send(self.host_peer, GridCommit(build_commit(self.identity, digest, nonce, now_ms).to_wire()))]

    def _on_commitments(self, peer: PeerId, msg: GridCommitmentsLocked, now_ms: int) -> list[RoomAction]:
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
        roster = sorted(m.peerId for m in self._state().members if m.role == Role.PARTICIPANT)
        if sorted(signers) != roster or len(msg.commits) != len(roster):
            raise ProtocolError("grid-invalid", "the locked commitments do not cover exactly the roster")
        reveal = build_reveal(self.identity, digest, self.grid_nonces[digest], now_ms)
        return [Send(self.host_peer, GridReveal(reveal.to_wire()))]

    def _on_grid_cancel(self, peer: PeerId, msg: GridCeremonyCancel, now_ms: int) -> list[RoomAction]:
        self.acked_digest = None
        self.grid_context_digest = None
        if msg.reason == CeremonyCancel.TIMEOUT and self.me in msg.missingPeers:
            self.withdrawal = ReadyWithdrawal.GRID_TIMEOUT  # the host withdraws the missing peers' Ready
        return [GridCancelled(list(msg.missingPeers), msg.reason)]

    def _on_package(self, peer: PeerId, msg: LockedStartPackageMsg, now_ms: int) -> list[RoomAction]:
        _, config = self._room()
        locked = verify_package(
            msg.package,
            room_id=self.room_id,
            mine=self.my_info,
            track_digests=self.assets.track_digests(config),
            expected_ready_digest=self.acked_digest if self.role == Role.PARTICIPANT else None,
        )
        for member in locked.roster:
            self._check_rotation(member, locked.declarations[member].car_rotation)
        self.locked = locked
        return [CountdownStarted(locked.match_id, locked.countdown_deadline)]

    def _on_countdown_cancel(self, peer: PeerId, msg: CountdownCancel, now_ms: int) -> list[RoomAction]:
        self.locked, self.acked_digest, self.ready_sent_epoch = None, None, None
        self.withdrawal = ReadyWithdrawal.COUNTDOWN_CANCELLED
        return [CountdownCancelled(list(msg.leavers))]

    def _on_match_start(self, peer: PeerId, msg: MatchStart, now_ms: int) -> list[RoomAction]:
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
        spectators = [m.peerId for m in self.state.members if m.role == Role.SPECTATOR] if self.state else []
        check_sources(msg.spectatorSources, spectators, survivors)
        self.started = True
        return [
            MatchBegan(locked.match_id, locked.roster, list(msg.preStartDisconnects)),
            MatchStarted(locked, list(msg.preStartDisconnects), dict(msg.spectatorSources)),
        ]

    _KEPT: ClassVar[frozenset[str]] = frozenset({"identity", "my_info", "assets", "choose_car", "state", "locked"})
    """What a message's transaction shares instead of copying: the identity, the asset store, the car
    chooser, and values the member only ever replaces (the host's last room state, the verified start),
    never changes in place."""

    _HANDLERS: ClassVar[dict[type[Message], MemberHandler]] = {
        JoinVerdict: _on_verdict,
        RoomState: _on_state,
        Relay: _on_relay,
        ReadyRefusal: _on_ready_refused,
        RoomDecision: _on_decision,
        ReadySetRequest: _on_ready_set,
        GridCommitRequest: _on_grid_request,
        GridCommitmentsLocked: _on_commitments,
        GridCeremonyCancel: _on_grid_cancel,
        LockedStartPackageMsg: _on_package,
        CountdownCancel: _on_countdown_cancel,
        MatchStart: _on_match_start,
    }


def _safe_digest(context: Mapping[str, Any]) -> str:
    try:
        return signing_digest(context).hex()
    except ProtocolError:
        return ""
