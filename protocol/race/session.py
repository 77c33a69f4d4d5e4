"""``RaceSession``: one round of signed input exchange with prediction, rollback and checksum votes.

Sans-IO in the manner of a GGRS P2P session: the shell adds the local input, hands over every message
with the link's authenticated peer, and calls ``advance_frame(now_ms)``, which steps at most one frame
(after any rollback) or says why it waits. Every call takes an explicit ``now_ms`` and returns
``RaceAction`` values (``protocol.race.actions``). Frames are per round; ``current_frame`` is the frame
about to be stepped, the world's ``frame``.

The session is composed like GGRS's ``P2PSession``: a ``SyncLayer`` owns the world and its saved states,
a ``PeerTable`` the peers' statuses, ``PeerInputs`` each peer's inputs, ``VoteBook`` the checksum votes,
``Recovery`` the disconnect and catch-up rules (it reaches the session only through ``SessionPort``),
``AnchorRound`` the end-of-round anchor.

Finality: a frame is *confirmed* once no message can change it: every active peer's real input is in,
and predictions of lost or removed peers are outside the input window. A connected peer is predicted
for at most ``max_prediction`` frames, then the session waits (0 = lockstep), so a prediction of a
connected peer never becomes final. Votes, the race log and catch-up offers only use confirmed frames.

Faults: what a peer sent is refused with a ``PeerError`` inside a handler, which ``receive`` turns into
that peer's ``Misbehaviour``; a misuse by this node's own shell (or a bug) raises ``LocalError`` out of
the call, and is never blamed on a peer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from protocol.encoding.dagcbor import signing_digest
from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.identity.consensus import canonical_peers, quorum
from protocol.identity.keys import Identity
from protocol.identity.keys import race_id as make_race_id
from protocol.race.actions import (
    ChecksumVoted, ConfirmedInput, DesyncDetected, DesyncRecord, FrameConfirmed, FrameReport, Misbehaviour,
    RaceAction, RoundEnded, Send, SessionEnded, SessionEndReason, VoteDecided, WaitReason, WriteState,
)
from protocol.race.anchor import AnchorFacts, AnchorRound
from protocol.race.inputs import (
    INPUT_WINDOW_AHEAD, INPUT_WINDOW_BEHIND, NO_EVENTS, STATE_BUFFER_FRAMES, PeerInputs, parse_events, wire_events,
)
from protocol.race.keys import RaceKeyBook, announce, verify_race_signature
from protocol.race.messages import (
    LeaveReason, RaceAnchorProposal, RaceAnchorSignature, RaceChecksum, RaceInput, RaceKey, RaceLeave, RaceOffer,
    RaceProbe, RaceRejoin, RaceRelay, RaceResume, RaceSnapshot, RaceSyncRequest,
)
from protocol.race.peers import ACTIVE, LOST, REJOINING, REMOVED, PeerStatus, PeerTable
from protocol.race.recovery import Recovery
from protocol.race.setup import RaceSetup, RaceWorld
from protocol.race.signing import Event, checksum_digest, input_digest
from protocol.race.sync import SyncLayer
from protocol.race.votes import STRIKE_LIMIT, VOTE_INTERVAL_FRAMES, VoteBook, VoteKind

OWN_INPUT_HISTORY = 64
PENDING_BEFORE_KEY = 64

Handler = Callable[[str, Any, int], list[RaceAction]]
"""A message handler: ``(peer, message, now_ms) -> actions``, raising ``PeerError`` for a bad message."""


class RaceStats:
    """Counters for the shell and benchmarks: ``steps`` counts world steps including re-simulation,
    ``rollback_frames`` the re-simulated ones; ``last_rollback`` is the depth of the newest rollback."""

    __slots__ = ("steps", "predicted_inputs", "rollbacks", "rollback_frames", "max_rollback", "last_rollback")

    def __init__(self) -> None:
        self.steps = self.predicted_inputs = self.rollbacks = 0
        self.rollback_frames = self.max_rollback = self.last_rollback = 0


class RaceSession:
    """One node's side of one race round (see the module docstring and docs/race.md).

    Raises ``LocalError`` ``race-setup-invalid`` when this node is not on the setup's roster, or its own
    race key cannot be recorded in ``keys``."""

    def __init__(self, setup: RaceSetup, identity: Identity, world: RaceWorld, keys: RaceKeyBook) -> None:
        if identity.peer_id not in setup.slots:
            raise LocalError("race-setup-invalid", "this node is not on the roster")
        self.setup = setup
        self.race_id = make_race_id(setup.match_id, setup.round_index)
        self.me = identity.peer_id
        self.peers = setup.roster
        self.others = tuple(p for p in self.peers if p != self.me)
        self.world = world
        self.keys = keys
        self.stats = RaceStats()
        self.strikes = 0
        self.ended: SessionEndReason | None = None
        self._identity = identity
        self._key = identity.race_key(self.race_id)
        self._announce = announce(identity, self.race_id)
        try:
            keys.add(self.me, self._announce)  # own key too: forwarded inputs may be this node's
        except PeerError as exc:  # this node's own announce: a misuse of the key book, not a peer's fault
            raise LocalError("race-setup-invalid", f"this node's race key was refused: {exc.message}") from exc
        self._slot = dict(setup.slots)
        self._skills = {p: frozenset(s) for p, s in setup.skills.items()}
        self._peers = PeerTable(self.me, self.peers)
        self._inputs = {p: PeerInputs() for p in self.peers}
        self._pending: dict[str, list[RaceInput]] = {p: [] for p in self.others}
        self._sync = SyncLayer(world)
        self._frontier = world.frame - 1
        self._confirmed = world.frame - 1
        self._rollback_to: int | None = None
        self._votes = VoteBook(self.me)
        self._own_hashes: dict[int, bytes] = {}
        self._round_ended = False
        self._anchor: AnchorRound | None = None
        self._early_anchor: list[tuple[str, RaceAnchorProposal | RaceAnchorSignature]] = []
        self._recovery = Recovery(setup=setup, race_id=self.race_id, race_key=self._key, keys=keys, peers=self._peers,
                                  inputs=self._inputs, sync=self._sync, session=_RecoveryPort(self))
        recovery = self._recovery
        self._handlers: dict[type, Handler] = {
            RaceInput: self._on_input, RaceChecksum: self._on_checksum, RaceKey: self._on_key, RaceLeave: self._on_leave,
            RaceAnchorProposal: self._on_anchor_message, RaceAnchorSignature: self._on_anchor_message,
            RaceRejoin: recovery.on_rejoin, RaceRelay: recovery.on_relay, RaceResume: recovery.on_resume,
            RaceProbe: recovery.on_probe, RaceOffer: recovery.on_offer, RaceSyncRequest: recovery.on_sync_request,
            RaceSnapshot: recovery.on_snapshot,
        }

    # ---- the shell's view ------------------------------------------------------------------------

    @property
    def current_frame(self) -> int:
        """The frame the next step computes (= frames stepped so far; the spec's ``current``)."""
        return self._sync.current_frame

    @property
    def confirmed_frame(self) -> int:
        """The newest frame no message can change any more (-1 before the first)."""
        return self._confirmed

    def status(self, peer: str) -> PeerStatus:
        """``peer``'s status in this round. Raises ``LocalError`` ``race-unknown-peer`` for a peer off the roster."""
        status = self._peers.statuses.get(peer)
        if status is None:
            raise LocalError("race-unknown-peer", f"{peer} is not on this round's roster")
        return status

    def next_deadline_ms(self) -> int | None:
        """When ``tick`` next has a timer to fire (a reconnect window closing, a catch-up retry, the
        anchor's proposal slot or timeout), or None when no timer runs. Between frames, e.g. while the
        shell waits for the round's anchor, it ticks at this deadline instead of on a fixed period."""
        if self.ended is not None:
            return None
        deadlines = [d for d in (self._recovery.next_deadline_ms(),
                                 None if self._anchor is None else self._anchor.next_deadline_ms()) if d is not None]
        return min(deadlines, default=None)

    @property
    def needs_local_input(self) -> bool:
        """True while this node's input for ``current_frame + input_delay`` is still missing."""
        frame = self._sync.current_frame + self.setup.input_delay
        return (self.ended is None and not self._recovery.catching_up and frame >= self._peers.active_from[self.me]
                and frame not in self._inputs[self.me].real)

    def start(self, now_ms: int) -> list[RaceAction]:
        """Announce this round's race key, and send empty inputs for the frames the input delay skips."""
        actions = self._broadcast(self._announce)
        current = self._sync.current_frame
        for frame in range(current, current + self.setup.input_delay):
            actions += self._sign_local(frame, NO_EVENTS)
        return actions

    def add_local_input(self, events: Iterable[Event], now_ms: int) -> list[RaceAction]:
        """Sign and broadcast this node's input for ``current_frame + input_delay`` (first call per frame
        wins; nothing while ``needs_local_input`` is false). Raises ``LocalError`` with the input's code
        (``race-input-too-many-events``, ``race-input-invalid``, ``race-input-duplicate-skill``,
        ``race-input-hold-mismatch``, ``race-input-skill-not-in-chip``) for events the rules refuse."""
        if not self.needs_local_input:
            return []
        try:
            parsed = parse_events([list(e) for e in events], self._skills[self.me])
        except PeerError as exc:  # the rules a peer's input breaks, broken by this node's own driver
            raise LocalError(exc.code, exc.message) from exc
        return self._sign_local(self._sync.current_frame + self.setup.input_delay, parsed)

    def leave(self, reason: LeaveReason, now_ms: int) -> list[RaceAction]:
        """Leave the race (``voluntary`` or ``disconnect``): tell everyone, then end as ``left``. Raises
        ``LocalError`` ``race-leave-invalid`` for a reason that is not a ``LeaveReason``."""
        parsed = LeaveReason.parse(reason)
        if parsed is None:
            raise LocalError("race-leave-invalid", f"a leave reason is one of {', '.join(LeaveReason)}")
        if self.ended is not None:
            return []
        return (self._broadcast(RaceLeave(parsed.value))
                + self._end(SessionEndReason.LEFT, "this node left the race", {"reason": parsed.value}))

    def peer_lost(self, peer: str, now_ms: int) -> list[RaceAction]:
        """The link to ``peer`` broke: predict it for the reconnect window (``tick`` closes the window)."""
        return self._recovery.peer_lost(peer, now_ms)

    def peer_reconnected(self, peer: str, now_ms: int) -> list[RaceAction]:
        """A new link to ``peer`` is up: tell it who we race as and where we are."""
        return self._recovery.peer_reconnected(peer, now_ms)

    def tick(self, now_ms: int) -> list[RaceAction]:
        """Timers: reconnect windows (the partition guard), catch-up retries, the anchor's slots and timeout."""
        if self.ended is not None:
            return []
        actions = self._recovery.tick(now_ms)
        if self.ended is None and self._anchor is not None:
            actions += self._anchor.tick(now_ms)
        return actions

    # ---- messages --------------------------------------------------------------------------------

    def receive(self, peer: str, msg: object, now_ms: int) -> list[RaceAction]:
        """Handle one decoded message from the link's authenticated ``peer``.

        Never raises for what a peer sent: a message that breaks a rule (a ``PeerError`` in its handler)
        is dropped with a ``Misbehaviour`` action. A ``LocalError`` (a bug of this node) propagates."""
        if self.ended is not None or peer not in self._pending:
            return []
        handler = self._handlers.get(type(msg))
        if handler is None:
            return [Misbehaviour(peer, "race-unexpected-message")]
        try:
            return handler(peer, msg, now_ms)
        except PeerError as exc:
            return [Misbehaviour(peer, exc.code)]

    def _on_key(self, peer: str, msg: RaceKey, now_ms: int) -> list[RaceAction]:
        if not self.keys.add(peer, msg) or msg.raceId != self.race_id:
            return []
        actions: list[RaceAction] = []
        pending, self._pending[peer] = self._pending[peer], []
        for early in pending:
            actions += self.receive(peer, early, now_ms)
        return actions

    def _on_input(self, peer: str, msg: RaceInput, now_ms: int) -> list[RaceAction]:
        if self._peers.statuses[peer] is not ACTIVE or msg.frame < self._peers.active_from[peer] or self._recovery.catching_up:
            return []
        if not self._sync.current_frame - INPUT_WINDOW_BEHIND <= msg.frame <= self._window_end():
            raise ProtocolError("race-input-outside-window", f"frame {msg.frame} is outside the input window")
        if self.keys.key(self.race_id, peer) is None:
            if len(self._pending[peer]) >= PENDING_BEFORE_KEY:
                raise ProtocolError("race-input-before-key", "inputs arrived before the peer's race key")
            self._pending[peer].append(msg)
            return []
        return self._admit(peer, msg)

    def _admit(self, peer: str, msg: RaceInput) -> list[RaceAction]:
        """Validate, verify and store one input of ``peer`` whose frame is inside the window."""
        frame = msg.frame
        key = self.keys.key(self.race_id, peer)
        events = parse_events(msg.events, self._skills[peer])
        if key is None or not verify_race_signature(key, input_digest(self.race_id, frame, events), msg.signature):
            raise ProtocolError("race-input-bad-signature", "the input is not signed by the peer's race key")
        buffer = self._inputs[peer]
        known = buffer.real.get(frame)
        if known is not None:
            if known == events:
                return []
            return self._end(SessionEndReason.EQUIVOCATION, f"{peer} signed two different inputs for frame {frame}", {
                "peer": peer, "frame": frame, "first": buffer.signed[frame], "second": msg,
            })
        buffer.add(frame, events, msg)
        predicted = buffer.predicted.get(frame)
        if predicted is not None and predicted != events and frame < self._sync.current_frame:
            if self._rollback_to is None or frame < self._rollback_to:
                self._rollback_to = frame
        self._advance_frontier()
        return []

    def _on_checksum(self, peer: str, msg: RaceChecksum, now_ms: int) -> list[RaceAction]:
        if self._recovery.catching_up:
            return []  # this node's frames are about to be replaced
        if msg.frame > self._window_end():
            raise ProtocolError("race-vote-outside-window", f"frame {msg.frame} is ahead of any vote")
        if self._peers.statuses[peer] is not ACTIVE or not self._votes.accepts(msg.frame, self._sync.current_frame):
            return []  # decided, too old, or from a peer that is catching up: not counted, not misbehaviour
        key = self.keys.key(self.race_id, peer)
        if key is None or len(msg.hash) != 32 or not verify_race_signature(
            key, checksum_digest(self.race_id, msg.frame, msg.hash), msg.signature
        ):
            raise ProtocolError("race-vote-bad-signature", "the vote is not signed by the peer's race key")
        self._votes.add(peer, msg.frame, msg.hash)
        return []

    def _on_leave(self, peer: str, msg: RaceLeave, now_ms: int) -> list[RaceAction]:
        reason = LeaveReason.parse(msg.reason)
        if reason is None:
            raise ProtocolError("race-leave-invalid", f"a leave reason is one of {', '.join(LeaveReason)}")
        return self._recovery.remove(peer, reason)

    # ---- stepping --------------------------------------------------------------------------------

    def advance_frame(self, now_ms: int) -> FrameReport:
        """Run timers, roll back if a real input contradicted a prediction, then step at most one frame."""
        actions = self.tick(now_ms)
        rolled = 0
        if self.ended is None and self._rollback_to is not None:
            rolled, more = self._rollback(self._rollback_to)
            actions += more
        waiting = self._blocked()
        stepped = waiting is None
        if stepped:
            self._step()
        if self.ended is None:
            actions += self._confirm(now_ms)
        if self.ended is None:
            actions += self._decide_votes()
        current = self._sync.current_frame
        return FrameReport(stepped, current - 1 if stepped else current, waiting, rolled, actions)

    def _blocked(self) -> WaitReason | None:
        if self.ended is not None:
            return WaitReason.ENDED
        if self._recovery.catching_up:
            return WaitReason.CATCH_UP
        if self.world.done:
            return WaitReason.ROUND_OVER
        if any(self.keys.key(self.race_id, p) is None for p in self._peers.remaining_others()):
            return WaitReason.KEYS
        if self._frontier < self._sync.current_frame - self.setup.max_prediction:
            return WaitReason.INPUTS
        return None

    def _frame_inputs(self, frame: int) -> dict[int, tuple[Event, ...]]:
        inputs = {}
        for peer in self.peers:
            buffer = self._inputs[peer]
            events = buffer.real.get(frame)
            if events is None:
                events = buffer.predict(frame)
                buffer.predicted[frame] = events
                self.stats.predicted_inputs += 1
            if events:
                inputs[self._slot[peer]] = events
        return inputs

    def _step(self) -> None:
        self._sync.step(self._frame_inputs(self._sync.current_frame))
        self.stats.steps += 1

    def _rollback(self, target: int) -> tuple[int, list[RaceAction]]:
        """Re-simulate from ``target`` (the earliest frame whose prediction proved wrong) to the present."""
        self._rollback_to = None
        sync = self._sync
        end = sync.current_frame
        if not sync.rollback_to(target):
            return 0, self._end(SessionEndReason.ROLLBACK_TOO_DEEP,
                                f"frame {target} is older than the {STATE_BUFFER_FRAMES} saved states")
        while sync.current_frame < end:
            self._step()  # the first re-step starts from the state just loaded, which is not saved again
        depth = end - target
        stats = self.stats
        stats.rollbacks += 1
        stats.rollback_frames += depth
        stats.last_rollback = depth
        stats.max_rollback = max(stats.max_rollback, depth)
        return depth, []

    # ---- finality --------------------------------------------------------------------------------

    def _window_end(self) -> int:
        """The newest frame accepted: current + 24, or, for a node that caught up and is still short of
        its resume frame, resume + 24 (the others, waiting for its input of that frame, are up to there)."""
        return max(self._sync.current_frame, self._peers.active_from[self.me]) + INPUT_WINDOW_AHEAD

    def _advance_frontier(self) -> None:
        frame = self._frontier + 1
        limit = self._window_end() + self.setup.input_delay
        required = self._peers.required
        while frame <= limit and all(frame in self._inputs[p].real for p in self.peers if required(p, frame)):
            frame += 1
        self._frontier = frame - 1

    def _recompute_frontier(self) -> None:
        self._frontier = self._confirmed
        self._advance_frontier()

    def _final_limit(self) -> int:
        current = self._sync.current_frame
        limit = min(current - 1, self._frontier)
        if self._peers.any_lost() and not self.world.done:
            limit = min(limit, current - INPUT_WINDOW_BEHIND - 1)
        return limit

    def _confirm(self, now_ms: int) -> list[RaceAction]:
        actions: list[RaceAction] = []
        limit = self._final_limit()
        minority = self._peers.present_count() < quorum(len(self.peers) - self._peers.removed_count())
        while self._confirmed < limit:
            frame = self._confirmed + 1
            self._confirmed = frame
            inputs = tuple(self._confirmed_inputs(frame))
            actions.append(FrameConfirmed(frame, inputs))
            self._recovery.on_confirmed(frame, inputs, minority)
            if frame % VOTE_INTERVAL_FRAMES == 0:
                actions += self._vote(frame)
        current = self._sync.current_frame
        if self.world.done and self._confirmed == current - 1 and not self._round_ended:
            if self._recovery.off_line:
                return actions + self._end(SessionEndReason.PARTITION_VOID, "the round ended on a minority's history")
            self._round_ended = True
            actions.append(RoundEnded(current))
            actions += self._start_anchor(now_ms)
        self._prune()
        return actions

    def _confirmed_inputs(self, frame: int) -> Iterator[ConfirmedInput]:
        for peer in self.peers:
            buffer = self._inputs[peer]
            signed = buffer.signed.get(frame)
            events = buffer.real[frame] if signed is not None else buffer.predicted.get(frame, NO_EVENTS)
            yield ConfirmedInput(peer, self._slot[peer], events, signed)

    def _prune(self) -> None:
        """Forget old frames; a lost peer's inputs are kept whole (no more come): a catching-up peer
        gets them with its snapshot."""
        low = self._confirmed + 1 - STATE_BUFFER_FRAMES
        statuses = self._peers.statuses
        for peer in self.peers:
            if statuses[peer] is not LOST and statuses[peer] is not REJOINING:
                self._inputs[peer].prune(low - OWN_INPUT_HISTORY if peer == self.me else low)

    def _restart_at(self, frame: int) -> None:
        """A snapshot of ``frame`` replaced the world (the sync layer already restarted there): forget
        every frame-keyed fact of the old history."""
        self._confirmed = frame - 1
        self._rollback_to = None
        self._votes = VoteBook(self.me)
        self._own_hashes.clear()
        self.strikes = 0
        for buffer in self._inputs.values():
            buffer.reset(frame)

    # ---- votes -----------------------------------------------------------------------------------

    def _vote(self, frame: int) -> list[RaceAction]:
        state = self._sync.keep(frame + 1)  # the state after ``frame``, kept for a state file on a mismatch
        digest = hashlib.sha256(state).digest()
        self._own_hashes[frame] = digest
        horizon = frame - 2 * VOTE_INTERVAL_FRAMES
        self._sync.release_before(horizon + 1)
        for old in [f for f in self._own_hashes if f < horizon]:
            del self._own_hashes[old]
        self._votes.add(self.me, frame, digest)
        signature = self._key.sign(checksum_digest(self.race_id, frame, digest))
        return self._broadcast(RaceChecksum(frame, digest, signature))

    def _decide_votes(self) -> list[RaceAction]:
        actions: list[RaceAction] = []
        for outcome in self._votes.decide(self._sync.current_frame, self._peers.remaining_others()):
            if self.ended is not None:
                break
            hashes = {p: h.hex() for p, h in sorted(outcome.hashes.items())}
            actions.append(VoteDecided(outcome.frame, outcome.kind, outcome.hashes, outcome.dissenters))
            actions.append(ChecksumVoted(outcome.frame, outcome.kind is VoteKind.AGREED))
            if outcome.kind is not VoteKind.AGREED:
                actions.append(WriteState(outcome.frame, self._sync.kept(outcome.frame + 1), f"vote-{outcome.kind.value}"))
                actions.append(DesyncDetected(outcome.frame, list(outcome.dissenters), hashes))
            if outcome.kind is VoteKind.TIE:
                actions += self._end(SessionEndReason.CONSENSUS_INVALID, f"no strict majority at frame {outcome.frame}", {
                    "frame": outcome.frame, "hashes": hashes,
                })
            elif outcome.kind is VoteKind.MINORITY:
                self.strikes += 1
                if self.strikes >= STRIKE_LIMIT:
                    actions += self._persistent_desync(outcome.frame, hashes)
            else:
                self.strikes = 0
        return actions

    def _persistent_desync(self, frame: int, hashes: dict[str, str]) -> list[RaceAction]:
        event: dict[str, Any] = {
            "type": "desync", "raceId": self.race_id, "frame": frame,
            "participatingPeers": sorted(hashes), "hashes": hashes,
        }
        event["signatures"] = [{"signer": self.me, "sig": self._identity.sign(signing_digest(event))}]
        actions = self._broadcast(RaceLeave(LeaveReason.DESYNC.value)) + [DesyncRecord(event)]
        return actions + self._end(SessionEndReason.PERSISTENT_DESYNC,
                                   f"three minority votes in a row (last at frame {frame})", {"frame": frame, "hashes": hashes})

    # ---- round end: the consensus anchor ------------------------------------------------------------

    def _start_anchor(self, now_ms: int) -> list[RaceAction]:
        setup = self.setup
        facts = AnchorFacts(
            match_id=setup.match_id, grid_context_digest=setup.grid_context_digest, grid_seed=setup.grid_seed,
            round_index=setup.round_index, terminal_frame=self._sync.current_frame,
            checksums={f: h.hex() for f, h in self._own_hashes.items()},
            present_peers=tuple(canonical_peers(p for p in self.peers if self._peers.statuses[p] is not REMOVED)),
        )
        anchor = self._anchor = AnchorRound(self._identity, facts, setup.ledger_address, now_ms)
        actions = anchor.tick(now_ms)
        early, self._early_anchor = self._early_anchor, []
        for peer, msg in early:
            actions += self.receive(peer, msg, now_ms)
        return actions

    def _on_anchor_message(self, peer: str, msg: RaceAnchorProposal | RaceAnchorSignature, now_ms: int) -> list[RaceAction]:
        if self._anchor is None:
            if len(self._early_anchor) < 2 * len(self.peers):
                self._early_anchor.append((peer, msg))  # this node's round has not ended yet
            return []
        return self._anchor.receive(peer, msg, now_ms)

    # ---- helpers ---------------------------------------------------------------------------------

    def _sign_local(self, frame: int, events: tuple[Event, ...]) -> list[RaceAction]:
        msg = RaceInput(frame, wire_events(events), self._key.sign(input_digest(self.race_id, frame, events)))
        self._inputs[self.me].add(frame, events, msg)
        self._advance_frontier()
        return self._broadcast(msg)

    def _broadcast(self, msg: Any) -> list[RaceAction]:
        return [Send(p, msg) for p in self._peers.remaining_others()]

    def _end(self, reason: SessionEndReason, detail: str, evidence: dict[str, Any] | None = None) -> list[RaceAction]:
        if self.ended is not None:
            return []
        self.ended = reason
        return [SessionEnded(reason, detail, evidence or {})]


class _RecoveryPort:
    """The session as ``Recovery`` sees it (``SessionPort``): exactly the seven operations it may use."""

    __slots__ = ("_session",)

    def __init__(self, session: RaceSession) -> None:
        self._session = session

    @property
    def ended(self) -> SessionEndReason | None:
        return self._session.ended

    @property
    def confirmed_frame(self) -> int:
        return self._session._confirmed

    def window_end(self) -> int:
        return self._session._window_end()

    def recompute_frontier(self) -> None:
        self._session._recompute_frontier()

    def admit(self, peer: str, msg: RaceInput) -> list[RaceAction]:
        return self._session._admit(peer, msg)

    def end(self, reason: SessionEndReason, detail: str, evidence: dict[str, Any] | None = None) -> list[RaceAction]:
        return self._session._end(reason, detail, evidence)

    def restart_at(self, frame: int) -> None:
        self._session._restart_at(frame)
