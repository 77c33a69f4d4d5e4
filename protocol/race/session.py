"""``RaceSession``: one round of signed input exchange with prediction, rollback and checksum votes.

Sans-IO in the manner of a GGRS P2P session: the shell adds the local input, hands over every message
with the link's authenticated peer, and calls ``advance_frame(now_ms)``, which steps at most one frame
(after any rollback) or says why it waits. Every call returns actions (race_actions). Frames are per
round; ``current_frame`` is the frame about to be stepped, the world's ``frame``.

Finality: a frame is *confirmed* once no message can change it: every active peer's real input is in,
and predictions of lost or removed peers are outside the input window. A connected peer is predicted
for at most ``max_prediction`` frames, then the session waits (0 = lockstep), so a prediction of a
connected peer never becomes final. Votes, the race log and catch-up offers only use confirmed frames.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from protocol.identity.consensus import canonical_peers, quorum
from protocol.encoding.dagcbor import signing_digest
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity, race_id as make_race_id
from protocol.race.actions import (
    ConfirmedInput, DesyncRecord, FrameConfirmed, FrameReport, Misbehaviour, Notify,
    RoundEnded, Send, SessionEnded, VoteDecided, WriteState,
)
from protocol.race.anchor import AnchorFacts, AnchorRound
from protocol.race.catchup import CatchUpRequest, Offer, OfferPins
from protocol.race.inputs import (
    INPUT_WINDOW_AHEAD, INPUT_WINDOW_BEHIND, NO_EVENTS, STATE_BUFFER_FRAMES, PeerInputs, parse_events, wire_events,
)
from protocol.race.keys import RaceKeyBook, announce, verify_race_signature
from protocol.race.messages import (
    LEAVE_REASONS, OFFER_CANDIDATES, InputRecord, RaceAnchorProposal, RaceAnchorSignature, RaceChecksum,
    RaceInput, RaceKey, RaceLeave, RaceOffer,
    RaceProbe, RaceRejoin, RaceRelay, RaceResume, RaceSnapshot, RaceSyncRequest,
)
from protocol.race.recovery import ACTIVE, LOST, RECONNECT_WINDOW_MS, REJOINING, REMOVED, RecoveryMixin
from protocol.race.setup import RaceSetup, RaceWorld
from protocol.race.signing import Event, checksum_digest, input_digest
from protocol.race.votes import AGREED, MINORITY, STRIKE_LIMIT, TIE, VOTE_INTERVAL_FRAMES, VoteBook

OWN_INPUT_HISTORY = 64
PENDING_BEFORE_KEY = 64
OFFER_ALIGNMENT = 8


class RaceStats:
    """Counters for the shell and benchmarks: ``steps`` counts world steps including re-simulation,
    ``rollback_frames`` the re-simulated ones; ``last_rollback`` is the depth of the newest rollback."""

    __slots__ = ("steps", "predicted_inputs", "rollbacks", "rollback_frames", "max_rollback", "last_rollback")

    def __init__(self) -> None:
        self.steps = self.predicted_inputs = self.rollbacks = 0
        self.rollback_frames = self.max_rollback = self.last_rollback = 0


class RaceSession(RecoveryMixin):
    """One node's side of one race round (see the module docstring and docs/race.md)."""

    def __init__(self, setup: RaceSetup, identity: Identity, world: RaceWorld, keys: RaceKeyBook) -> None:
        if identity.peer_id not in setup.slots:
            raise ProtocolError("race-setup-invalid", "this node is not on the roster")
        self.setup = setup
        self.race_id = make_race_id(setup.match_id, setup.round_index)
        self.me = identity.peer_id
        self.peers = setup.roster
        self.others = tuple(p for p in self.peers if p != self.me)
        self.world = world
        self.keys = keys
        self.stats = RaceStats()
        self.strikes = 0
        self.ended: str | None = None
        self._identity = identity
        self._key = identity.race_key(self.race_id)
        self._announce = announce(identity, self.race_id)
        keys.add(self.me, self._announce)  # own key too: forwarded inputs may be this node's
        self._slot = dict(setup.slots)
        self._skills = {p: frozenset(s) for p, s in setup.skills.items()}
        self._inputs = {p: PeerInputs() for p in self.peers}
        self._status = {p: ACTIVE for p in self.peers}
        self._active_from = {p: 0 for p in self.peers}
        self._lost_at: dict[str, int] = {}
        self._pending: dict[str, list[RaceInput]] = {p: [] for p in self.others}
        self._next = world.frame
        self._ring: list[tuple[int, bytes]] = [(-1, b"")] * STATE_BUFFER_FRAMES
        self._frontier = self._next - 1
        self._confirmed = self._next - 1
        self._rollback_to: int | None = None
        self._votes = VoteBook(self.me)
        self._vote_states: dict[int, bytes] = {}
        self._off_line = False
        self._offered: list[Offer] = []
        self._pins = OfferPins()
        self._catch_up: CatchUpRequest | None = None
        self._request_ids = 0
        self._resumes: dict[str, int] = {}
        self._round_ended = False
        self._own_hashes: dict[int, bytes] = {}
        self._anchor: AnchorRound | None = None
        self._early_anchor: list[tuple[str, Any]] = []

    # ---- the shell's view ------------------------------------------------------------------------

    @property
    def current_frame(self) -> int:
        """The frame the next step computes (= frames stepped so far; the spec's ``current``)."""
        return self._next

    @property
    def confirmed_frame(self) -> int:
        """The newest frame no message can change any more (-1 before the first)."""
        return self._confirmed

    def status(self, peer: str) -> str:
        return self._status[peer]

    def next_deadline_ms(self) -> int | None:
        """When ``tick`` next has a timer to fire (a reconnect window closing, a catch-up retry, the
        anchor's proposal slot or timeout), or None when no timer runs. Between frames, e.g. while the
        shell waits for the round's anchor, it ticks at this deadline instead of on a fixed period."""
        if self.ended is not None:
            return None
        deadlines = [at + RECONNECT_WINDOW_MS for at in self._lost_at.values()]
        for timers in (self._catch_up, self._anchor):
            deadline = None if timers is None else timers.next_deadline_ms()
            if deadline is not None:
                deadlines.append(deadline)
        return min(deadlines, default=None)

    @property
    def needs_local_input(self) -> bool:
        """True while this node's input for ``current_frame + input_delay`` is still missing."""
        frame = self._next + self.setup.input_delay
        return (self.ended is None and self._catch_up is None and frame >= self._active_from[self.me]
                and frame not in self._inputs[self.me].real)

    def start(self) -> list[Any]:
        """Announce this round's race key, and send empty inputs for the frames the input delay skips."""
        actions: list[Any] = self._broadcast(self._announce)
        for frame in range(self._next, self._next + self.setup.input_delay):
            actions += self._sign_local(frame, NO_EVENTS)
        return actions

    def add_local_input(self, events: Iterable[Event]) -> list[Any]:
        """Sign and broadcast this node's input for ``current_frame + input_delay`` (first call per frame wins)."""
        if not self.needs_local_input:
            return []
        parsed = parse_events([list(e) for e in events], self._skills[self.me])
        return self._sign_local(self._next + self.setup.input_delay, parsed)

    def leave(self, reason: str = "voluntary") -> list[Any]:
        """Leave the race (``voluntary`` or ``disconnect``): tell everyone, then end as ``left``."""
        if reason not in LEAVE_REASONS:
            raise ProtocolError("race-leave-invalid", f"a leave reason is one of {', '.join(LEAVE_REASONS)}")
        if self.ended is not None:
            return []
        return self._broadcast(RaceLeave(reason)) + self._end("left", "this node left the race", {"reason": reason})

    # ---- messages --------------------------------------------------------------------------------

    def receive(self, peer: str, msg: object, now_ms: int) -> list[Any]:
        """Handle one decoded message from the link's authenticated ``peer``. Never raises for what
        a peer sent: a bad message is dropped with a ``Misbehaviour`` action."""
        if self.ended is not None or peer not in self._pending:
            return []
        handler = self._HANDLERS.get(type(msg))
        if handler is None:
            return [Misbehaviour(peer, "race-unexpected-message")]
        try:
            return handler(self, peer, msg, now_ms)
        except ProtocolError as exc:
            return [Misbehaviour(peer, exc.code)]

    def _on_key(self, peer: str, msg: RaceKey, now_ms: int) -> list[Any]:
        if not self.keys.add(peer, msg) or msg.raceId != self.race_id:
            return []
        actions: list[Any] = []
        pending, self._pending[peer] = self._pending[peer], []
        for early in pending:
            actions += self.receive(peer, early, now_ms)
        return actions

    def _on_input(self, peer: str, msg: RaceInput, now_ms: int) -> list[Any]:
        if self._status[peer] != ACTIVE or msg.frame < self._active_from[peer] or self._catch_up is not None:
            return []
        if not self._next - INPUT_WINDOW_BEHIND <= msg.frame <= self._window_end():
            raise ProtocolError("race-input-outside-window", f"frame {msg.frame} is outside the input window")
        if self.keys.key(self.race_id, peer) is None:
            if len(self._pending[peer]) >= PENDING_BEFORE_KEY:
                raise ProtocolError("race-input-before-key", "inputs arrived before the peer's race key")
            self._pending[peer].append(msg)
            return []
        return self._admit(peer, msg)

    def _admit(self, peer: str, msg: RaceInput) -> list[Any]:
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
            return self._end("equivocation", f"{peer} signed two different inputs for frame {frame}", {
                "peer": peer, "frame": frame, "first": buffer.signed[frame], "second": msg,
            })
        buffer.add(frame, events, msg)
        predicted = buffer.predicted.get(frame)
        if predicted is not None and predicted != events and frame < self._next:
            if self._rollback_to is None or frame < self._rollback_to:
                self._rollback_to = frame
        self._advance_frontier()
        return []

    def _on_checksum(self, peer: str, msg: RaceChecksum, now_ms: int) -> list[Any]:
        if self._catch_up is not None:
            return []  # this node's frames are about to be replaced
        if msg.frame > self._window_end():
            raise ProtocolError("race-vote-outside-window", f"frame {msg.frame} is ahead of any vote")
        if self._status[peer] != ACTIVE or not self._votes.accepts(msg.frame, self._next):
            return []  # decided, too old, or from a peer that is catching up: not counted, not misbehaviour
        key = self.keys.key(self.race_id, peer)
        if key is None or len(msg.hash) != 32 or not verify_race_signature(
            key, checksum_digest(self.race_id, msg.frame, msg.hash), msg.signature
        ):
            raise ProtocolError("race-vote-bad-signature", "the vote is not signed by the peer's race key")
        self._votes.add(peer, msg.frame, msg.hash)
        return []

    def _on_leave(self, peer: str, msg: RaceLeave, now_ms: int) -> list[Any]:
        if msg.reason not in LEAVE_REASONS:
            raise ProtocolError("race-leave-invalid", f"a leave reason is one of {', '.join(LEAVE_REASONS)}")
        return self._remove(peer, msg.reason)

    # ---- stepping --------------------------------------------------------------------------------

    def advance_frame(self, now_ms: int) -> FrameReport:
        """Run timers, roll back if a real input contradicted a prediction, then step at most one frame."""
        actions = self.tick(now_ms)
        rolled = 0
        if self.ended is None and self._rollback_to is not None:
            rolled, more = self._rollback()
            actions += more
        waiting = self._blocked()
        stepped = waiting is None
        if stepped:
            self._step()
        if self.ended is None:
            actions += self._confirm(now_ms)
        if self.ended is None:
            actions += self._decide_votes()
        return FrameReport(stepped, self._next - 1 if stepped else self._next, waiting, rolled, actions)

    def _blocked(self) -> str | None:
        if self.ended is not None:
            return "ended"
        if self._catch_up is not None:
            return "catch-up"
        if self.world.done:
            return "round-over"
        if any(self.keys.key(self.race_id, p) is None for p in self.others if self._status[p] != REMOVED):
            return "keys"
        if self._frontier < self._next - self.setup.max_prediction:
            return "inputs"
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
        frame = self._next
        self._ring[frame % STATE_BUFFER_FRAMES] = (frame, self.world.save_state())
        self.world.step(self._frame_inputs(frame))
        self._next = frame + 1
        self.stats.steps += 1

    def _saved(self, frame: int) -> bytes | None:
        """The pre-step state of ``frame``: the world's own for ``current_frame``, else the ring's."""
        if frame == self._next:
            return self.world.save_state()
        kept, state = self._ring[frame % STATE_BUFFER_FRAMES]
        return state if kept == frame else None

    def _rollback(self) -> tuple[int, list[Any]]:
        target, self._rollback_to = self._rollback_to, None
        state = self._saved(target)
        if state is None:
            return 0, self._end("rollback-too-deep", f"frame {target} is older than the {STATE_BUFFER_FRAMES} saved states")
        end = self._next
        self.world.load_state(state)
        self._next = target
        self.world.step(self._frame_inputs(target))  # its pre-step state is the one just loaded
        self._next += 1
        self.stats.steps += 1
        while self._next < end:
            self._step()
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
        return max(self._next, self._active_from[self.me]) + INPUT_WINDOW_AHEAD

    def _required(self, peer: str, frame: int) -> bool:
        return self._status[peer] == ACTIVE and frame >= self._active_from[peer]

    def _advance_frontier(self) -> None:
        frame = self._frontier + 1
        limit = self._window_end() + self.setup.input_delay
        while frame <= limit and all(
            frame in self._inputs[p].real for p in self.peers if self._required(p, frame)
        ):
            frame += 1
        self._frontier = frame - 1

    def _recompute_frontier(self) -> None:
        self._frontier = self._confirmed
        self._advance_frontier()

    def _final_limit(self) -> int:
        limit = min(self._next - 1, self._frontier)
        if any(s in (LOST, REJOINING) for s in self._status.values()) and not self.world.done:
            limit = min(limit, self._next - INPUT_WINDOW_BEHIND - 1)
        return limit

    def _confirm(self, now_ms: int) -> list[Any]:
        actions: list[Any] = []
        limit = self._final_limit()
        removed = sum(1 for s in self._status.values() if s == REMOVED)
        minority = self._present_count() < quorum(len(self.peers) - removed)
        while self._confirmed < limit:
            frame = self._confirmed + 1
            self._confirmed = frame
            inputs = tuple(self._confirmed_inputs(frame))
            if minority and any(i.signed is None and self._status[i.peer] in (LOST, REJOINING) for i in inputs):
                self._off_line = True  # a minority made a lost peer's prediction final: not the race's history
            actions.append(FrameConfirmed(frame, inputs))
            if (frame + 1) % OFFER_ALIGNMENT == 0:
                self._offered = [self._offer(frame + 1)] + self._offered[:OFFER_CANDIDATES - 1]
            if frame % VOTE_INTERVAL_FRAMES == 0:
                actions += self._vote(frame)
        if self.world.done and self._confirmed == self._next - 1 and not self._round_ended:
            if self._off_line:
                return actions + self._end("partition-void", "the round ended on a minority's history")
            self._round_ended = True
            actions.append(RoundEnded(self._next))
            actions += self._start_anchor(now_ms)
        self._prune()
        return actions

    def _offer(self, frame: int) -> Offer:
        bases = []
        for peer in self.peers:
            base = self._inputs[peer].newest_before(frame)
            if base is not None:
                bases.append(InputRecord(peer, base.frame, base.events, base.signature))
        return Offer(frame, self._saved(frame), bases)

    def _confirmed_inputs(self, frame: int) -> Iterable[ConfirmedInput]:
        for peer in self.peers:
            buffer = self._inputs[peer]
            signed = buffer.signed.get(frame)
            events = buffer.real[frame] if signed is not None else buffer.predicted.get(frame, NO_EVENTS)
            yield ConfirmedInput(peer, self._slot[peer], events, signed)

    def _prune(self) -> None:
        """Forget old frames; a lost peer's inputs are kept whole (no more come): a catching-up peer
        gets them with its snapshot."""
        low = self._confirmed + 1 - STATE_BUFFER_FRAMES
        for peer in self.peers:
            if self._status[peer] not in (LOST, REJOINING):
                self._inputs[peer].prune(low - OWN_INPUT_HISTORY if peer == self.me else low)

    # ---- votes -----------------------------------------------------------------------------------

    def _vote(self, frame: int) -> list[Any]:
        state = self._saved(frame + 1)
        digest = hashlib.sha256(state).digest()
        self._vote_states[frame] = state
        self._own_hashes[frame] = digest
        for old in [f for f in self._vote_states if f < frame - 2 * VOTE_INTERVAL_FRAMES]:
            del self._vote_states[old]
            del self._own_hashes[old]
        self._votes.add(self.me, frame, digest)
        signature = self._key.sign(checksum_digest(self.race_id, frame, digest))
        return self._broadcast(RaceChecksum(frame, digest, signature))

    def _decide_votes(self) -> list[Any]:
        actions: list[Any] = []
        voters = [p for p in self.others if self._status[p] != REMOVED]
        for outcome in self._votes.decide(self._next, voters):
            if self.ended is not None:
                break
            hashes = {p: h.hex() for p, h in sorted(outcome.hashes.items())}
            actions.append(VoteDecided(outcome.frame, outcome.kind, outcome.hashes, outcome.dissenters))
            actions.append(Notify("checksum", {"frame": outcome.frame, "agreed": outcome.kind == AGREED}))
            if outcome.kind != AGREED:
                actions.append(WriteState(outcome.frame, self._vote_states[outcome.frame], f"vote-{outcome.kind}"))
                actions.append(Notify("desync", {"frame": outcome.frame, "peers": list(outcome.dissenters), "hashes": hashes}))
            if outcome.kind == TIE:
                actions += self._end("consensus-invalid", f"no strict majority at frame {outcome.frame}", {
                    "frame": outcome.frame, "hashes": hashes,
                })
            elif outcome.kind == MINORITY:
                self.strikes += 1
                if self.strikes >= STRIKE_LIMIT:
                    actions += self._persistent_desync(outcome.frame, hashes)
            else:
                self.strikes = 0
        return actions

    def _persistent_desync(self, frame: int, hashes: dict[str, str]) -> list[Any]:
        event: dict[str, Any] = {
            "type": "desync", "raceId": self.race_id, "frame": frame,
            "participatingPeers": sorted(hashes), "hashes": hashes,
        }
        event["signatures"] = [{"signer": self.me, "sig": self._identity.sign(signing_digest(event))}]
        actions = self._broadcast(RaceLeave("desync")) + [DesyncRecord(event)]
        return actions + self._end("persistent-desync", f"three minority votes in a row (last at frame {frame})", {
            "frame": frame, "hashes": hashes,
        })

    # ---- round end: the consensus anchor ------------------------------------------------------------

    def _start_anchor(self, now_ms: int) -> list[Any]:
        setup = self.setup
        facts = AnchorFacts(
            match_id=setup.match_id, grid_context_digest=setup.grid_context_digest, grid_seed=setup.grid_seed,
            round_index=setup.round_index, terminal_frame=self._next,
            checksums={f: h.hex() for f, h in self._own_hashes.items()},
            present_peers=tuple(canonical_peers(p for p in self.peers if self._status[p] != REMOVED)),
        )
        self._anchor = AnchorRound(self._identity, facts, setup.ledger_address, now_ms)
        actions = self._anchor.tick(now_ms)
        early, self._early_anchor = self._early_anchor, []
        for peer, msg in early:
            actions += self.receive(peer, msg, now_ms)
        return actions

    def _on_anchor_message(self, peer: str, msg: Any, now_ms: int) -> list[Any]:
        if self._anchor is None:
            if len(self._early_anchor) < 2 * len(self.peers):
                self._early_anchor.append((peer, msg))  # this node's round has not ended yet
            return []
        if isinstance(msg, RaceAnchorProposal):
            return self._anchor.on_proposal(peer, msg)
        return self._anchor.on_signature(peer, msg)

    # ---- helpers ---------------------------------------------------------------------------------

    def _sign_local(self, frame: int, events: tuple[Event, ...]) -> list[Any]:
        msg = RaceInput(frame, wire_events(events), self._key.sign(input_digest(self.race_id, frame, events)))
        self._inputs[self.me].add(frame, events, msg)
        self._advance_frontier()
        return self._broadcast(msg)

    def _broadcast(self, msg: Any) -> list[Any]:
        return [Send(p, msg) for p in self.others if self._status[p] != REMOVED]

    def _give_up(self, reason: str, detail: str) -> list[Any]:
        """End after a failed catch-up, telling the others so that none of them waits for this node."""
        return self._broadcast(RaceLeave("disconnect")) + self._end(reason, detail)

    def _end(self, reason: str, detail: str, evidence: dict[str, Any] | None = None) -> list[Any]:
        if self.ended is not None:
            return []
        self.ended = reason
        return [SessionEnded(reason, detail, evidence or {})]

    _HANDLERS = {
        RaceInput: _on_input, RaceChecksum: _on_checksum, RaceKey: _on_key, RaceLeave: _on_leave,
        RaceAnchorProposal: _on_anchor_message, RaceAnchorSignature: _on_anchor_message,
        RaceRejoin: RecoveryMixin._on_rejoin, RaceRelay: RecoveryMixin._on_relay, RaceResume: RecoveryMixin._on_resume,
        RaceProbe: RecoveryMixin._on_probe, RaceOffer: RecoveryMixin._on_offer,
        RaceSyncRequest: RecoveryMixin._on_sync_request, RaceSnapshot: RecoveryMixin._on_snapshot,
    }
