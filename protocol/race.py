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

from protocol.consensus import canonical_peers, quorum
from protocol.dagcbor import signing_digest
from protocol.errors import ProtocolError
from protocol.identity import Identity, race_id as make_race_id
from protocol.race_actions import (
    CaughtUp, CloseLink, ConfirmedInput, DesyncRecord, FrameConfirmed, FrameReport, Misbehaviour, Notify,
    RoundEnded, Send, SessionEnded, VoteDecided, WriteState,
)
from protocol.race_anchor import AnchorFacts, AnchorRound
from protocol.race_catchup import RESUME_LEAD_FRAMES, CatchUpRequest, Offer, OfferPins
from protocol.race_inputs import NO_EVENTS, PeerInputs, parse_events, wire_events
from protocol.race_keys import RaceKeyBook, announce, verify_race_signature
from protocol.race_messages import (
    LEAVE_REASONS, OFFER_CANDIDATES, SYNC_SNAPSHOT_MAX_BYTES, Candidate, InputRecord, RaceAnchorProposal, RaceAnchorSignature, RaceChecksum,
    RaceInput, RaceKey, RaceLeave, RaceOffer,
    RaceProbe, RaceRejoin, RaceRelay, RaceResume, RaceSnapshot, RaceSyncRequest,
)
from protocol.race_setup import RaceSetup, RaceWorld
from protocol.race_signing import Event, catch_up_digest, checksum_digest, input_digest
from protocol.race_votes import AGREED, MINORITY, STRIKE_LIMIT, TIE, VOTE_INTERVAL_FRAMES, VoteBook

INPUT_WINDOW_BEHIND = 8
INPUT_WINDOW_AHEAD = 24
STATE_BUFFER_FRAMES = 12
OWN_INPUT_HISTORY = 64
PENDING_BEFORE_KEY = 64
RECONNECT_WINDOW_MS = 15_000
OFFER_ALIGNMENT = 8
ACTIVE, LOST, REJOINING, REMOVED = "active", "lost", "rejoining", "removed"


class RaceStats:
    """Counters for the shell and benchmarks: ``steps`` counts world steps including re-simulation,
    ``rollback_frames`` the re-simulated ones; ``last_rollback`` is the depth of the newest rollback."""

    __slots__ = ("steps", "predicted_inputs", "rollbacks", "rollback_frames", "max_rollback", "last_rollback")

    def __init__(self) -> None:
        self.steps = self.predicted_inputs = self.rollbacks = 0
        self.rollback_frames = self.max_rollback = self.last_rollback = 0


class RaceSession:
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
        keys.add(self.me, announce(identity, self.race_id))  # own key too: snapshot bases may be our inputs
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

    @property
    def needs_local_input(self) -> bool:
        """True while this node's input for ``current_frame + input_delay`` is still missing."""
        frame = self._next + self.setup.input_delay
        return self.ended is None and frame >= self._active_from[self.me] and frame not in self._inputs[self.me].real

    def start(self) -> list[Any]:
        """Announce this round's race key, and send empty inputs for the frames the input delay skips."""
        actions: list[Any] = self._broadcast(announce(self._identity, self.race_id))
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

    def _on_relay(self, peer: str, msg: RaceRelay, now_ms: int) -> list[Any]:
        """Inputs of a lost peer that another peer still got: each is checked against its owner's key."""
        actions: list[Any] = []
        for record in msg.inputs:
            owner = record.peer
            if owner not in self._pending or self._status[owner] == REMOVED or self._catch_up is not None:
                continue
            if not max(self._next - INPUT_WINDOW_BEHIND, self._active_from[owner]) <= record.frame <= self._window_end():
                continue
            actions += self._admit(owner, RaceInput(record.frame, record.events, record.signature))
            if self.ended is not None:
                break
        return actions

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

    # ---- peers come and go -----------------------------------------------------------------------

    def _present_count(self) -> int:
        return 1 + sum(1 for p in self.others if self._status[p] == ACTIVE)

    def _remove(self, peer: str, reason: str) -> list[Any]:
        if self._status[peer] == REMOVED:
            return []
        self._status[peer] = REMOVED
        self._lost_at.pop(peer, None)
        self._pins.drop(peer)
        self._recompute_frontier()
        return [Notify("leave", {"peer": peer, "reason": reason})]

    def peer_lost(self, peer: str, now_ms: int) -> list[Any]:
        """The link to ``peer`` broke: predict it for the reconnect window (``tick`` closes the window)."""
        if self.ended is not None or self._status.get(peer) != ACTIVE or peer == self.me:
            return []
        self._status[peer] = LOST
        self._lost_at[peer] = now_ms
        self._recompute_frontier()
        signed = self._inputs[peer].signed
        first = self._confirmed + 1 - STATE_BUFFER_FRAMES  # survivors a little behind this node need these too
        relay = [InputRecord(peer, f, signed[f].events, signed[f].signature) for f in sorted(signed) if f >= first]
        actions: list[Any] = [Notify("peer-lost", {"peer": peer})]
        if relay:
            actions += [Send(p, RaceRelay(relay)) for p in self.others if self._status[p] == ACTIVE]
        return actions

    def tick(self, now_ms: int) -> list[Any]:
        """Timers: reconnect windows (the partition guard) and catch-up retries."""
        if self.ended is not None:
            return []
        actions: list[Any] = []
        expired = [p for p, at in sorted(self._lost_at.items()) if now_ms - at >= RECONNECT_WINDOW_MS]
        if expired:
            if self._off_line or self._present_count() < quorum(len(self.peers)):
                return self._end("partition-void", "this side of the partition is not a strict majority of the roster", {
                    "present": sorted(p for p in self.peers if p == self.me or self._status[p] == ACTIVE),
                })
            for peer in expired:
                actions += self._remove(peer, "disconnect")
        if self._catch_up is not None:
            actions += self._catch_up_timers(now_ms)
        if self._anchor is not None:
            actions += self._anchor.tick(now_ms)
        return actions

    def peer_reconnected(self, peer: str, now_ms: int) -> list[Any]:
        """A new link to ``peer`` is up: tell it who we race as and where we are."""
        if self.ended is not None or peer not in self._pending:
            return []
        msg = RaceRejoin(self.race_id, self.setup.loadouts[self.me], self._next, self._off_line)
        return [Send(peer, msg)]

    def _on_rejoin(self, peer: str, msg: RaceRejoin, now_ms: int) -> list[Any]:
        if msg.raceId != self.race_id:
            raise ProtocolError("race-rejoin-invalid", "the rejoin is for another round")
        if msg.loadoutDigest != self.setup.loadouts[peer]:
            return [CloseLink(peer, "reconnect-loadout-mismatch")]
        if self._status[peer] == REMOVED:
            return [CloseLink(peer, "race-peer-removed")]
        actions: list[Any] = []
        if msg.catchUp:
            if self._status[peer] == ACTIVE:
                self._lost_at[peer] = now_ms
            self._status[peer] = REJOINING
            self._recompute_frontier()
        else:
            if self._status[peer] != ACTIVE:
                self._status[peer] = ACTIVE
                self._active_from[peer] = max(self._active_from[peer], self._confirmed + 1)
                self._lost_at.pop(peer, None)
                self._recompute_frontier()
            actions = self._resend(peer, msg.nextFrame - INPUT_WINDOW_BEHIND)
        if self._off_line:
            actions += self._maybe_start_catch_up(now_ms)
            if self._catch_up is not None and msg.catchUp is False and self._catch_up.add_voter(peer):
                actions += self._probe([peer])  # a voter that came back after the probes went out
        return actions

    def _resend(self, peer: str, first: int) -> list[Any]:
        signed = self._inputs[self.me].signed
        return [Send(peer, signed[f]) for f in sorted(signed) if f >= first]

    # ---- catch-up: requester -----------------------------------------------------------------------

    def _maybe_start_catch_up(self, now_ms: int) -> list[Any]:
        if self._catch_up is not None:
            return []
        need = quorum(len(self.peers))
        if len(self.peers) - 1 < need:
            return self._give_up("catch-up-impossible", f"a {len(self.peers)}-player race cannot vouch for a snapshot")
        voters = [p for p in self.others if self._status[p] == ACTIVE]
        if len(voters) < need:
            return []
        self._request_ids += 1
        self._catch_up = CatchUpRequest(self._request_ids, voters, need, now_ms, self._next)
        return self._probe(voters)

    def _probe(self, voters: Iterable[str]) -> list[Any]:
        rid = self._catch_up.request_id
        return [Send(p, RaceProbe(rid, self._key.sign(catch_up_digest(self.race_id, "probe", rid, p, []))))
                for p in voters]

    def _catch_up_timers(self, now_ms: int) -> list[Any]:
        verdict = self._catch_up.on_timer(now_ms)
        if verdict == "reprobe":
            self._request_ids += 1
            self._catch_up.restart(self._request_ids)
            self._catch_up.voters = [p for p in self.others if self._status[p] == ACTIVE]
            return self._probe(self._catch_up.voters)
        if verdict == "next-voter":
            return self._request_snapshot(now_ms)
        if verdict == "failed":
            self._catch_up = None
            return self._give_up("catch-up-failed", "no strict majority vouched for one snapshot in time")
        return []

    def _signed_by(self, peer: str, digest: bytes, signature: bytes, code: str) -> None:
        key = self.keys.key(self.race_id, peer)
        if key is None or not verify_race_signature(key, digest, signature):
            raise ProtocolError(code, "the message is not signed by the peer's race key")

    def _on_offer(self, peer: str, msg: RaceOffer, now_ms: int) -> list[Any]:
        request = self._catch_up
        if request is None or msg.requestId != request.request_id:
            return []  # an answer to an earlier probe round
        candidates = [(c.frame, c.hash) for c in msg.candidates]
        if len(candidates) > OFFER_CANDIDATES or any(len(h) != 32 for _, h in candidates):
            raise ProtocolError("race-offer-invalid", f"an offer has at most {OFFER_CANDIDATES} (frame, 32-byte hash) candidates")
        self._signed_by(peer, catch_up_digest(self.race_id, "offer", msg.requestId, self.me, candidates),
                        msg.signature, "race-offer-bad-signature")
        if request.add_offer(peer, candidates):
            return self._request_snapshot(now_ms)
        return []

    def _request_snapshot(self, now_ms: int) -> list[Any]:
        request = self._catch_up
        target = request.next_voter(now_ms)
        if target is None:
            self._catch_up = None
            return self._give_up("catch-up-failed", "every voter of the agreed snapshot failed to deliver it")
        frame, digest = request.target
        rid = request.request_id
        signature = self._key.sign(catch_up_digest(self.race_id, "sync-request", rid, target, [(frame, digest)]))
        return [Send(target, RaceSyncRequest(rid, frame, digest, signature))]

    def _on_snapshot(self, peer: str, msg: RaceSnapshot, now_ms: int) -> list[Any]:
        request = self._catch_up
        if request is None or request.pending != peer or msg.requestId != request.request_id:
            raise ProtocolError("race-snapshot-unexpected", "no sync request to this peer matches the snapshot")
        frame, digest = request.target
        try:
            if msg.frame != frame or len(msg.state) > SYNC_SNAPSHOT_MAX_BYTES or hashlib.sha256(msg.state).digest() != digest:
                raise ProtocolError("race-snapshot-mismatch", "the snapshot is not the one the majority vouched for")
            self._signed_by(peer, catch_up_digest(self.race_id, "snapshot", msg.requestId, self.me, [(frame, digest)]),
                            msg.signature, "race-snapshot-bad-signature")
            inputs = self._check_records(msg.inputs)
            self._load_snapshot(msg.state, frame)
        except ProtocolError as exc:
            return [Misbehaviour(peer, exc.code)] + self._request_snapshot(now_ms)
        return self._apply_snapshot(frame, digest, inputs)

    def _check_records(self, records: list[InputRecord]) -> dict[tuple[str, int], tuple[RaceInput, tuple[Event, ...]]]:
        """Verify every forwarded input against its owner's race key; two different ones for one
        (peer, frame) make the snapshot unusable."""
        checked: dict[tuple[str, int], tuple[RaceInput, tuple[Event, ...]]] = {}
        for record in records:
            if record.peer not in self._inputs:
                raise ProtocolError("race-snapshot-mismatch", "a forwarded input is not of the roster")
            events = parse_events(record.events, self._skills[record.peer])
            self._signed_by(record.peer, input_digest(self.race_id, record.frame, events), record.signature,
                            "race-snapshot-bad-signature")
            known = checked.setdefault((record.peer, record.frame), (RaceInput(record.frame, record.events, record.signature), events))
            if known[1] != events:
                raise ProtocolError("race-snapshot-mismatch", "two different inputs for one peer and frame")
        return checked

    def _load_snapshot(self, state: bytes, frame: int) -> None:
        try:
            self.world.load_state(state)
        except Exception:  # the world's own validation error; the snapshot came from a peer
            raise ProtocolError("race-snapshot-invalid", "the world refused the snapshot") from None
        if self.world.frame != frame:
            raise ProtocolError("race-snapshot-invalid", "the snapshot's frame differs from its label")

    def _apply_snapshot(self, frame: int, digest: bytes,
                        inputs: dict[tuple[str, int], tuple[RaceInput, tuple[Event, ...]]]) -> list[Any]:
        self._catch_up = None
        self._off_line = False
        self._next = frame
        self._confirmed = frame - 1
        self._rollback_to = None
        self._ring = [(-1, b"")] * STATE_BUFFER_FRAMES
        self._votes = VoteBook(self.me)
        self._vote_states.clear()
        self._own_hashes.clear()
        self.strikes = 0
        for buffer in self._inputs.values():
            buffer.reset(frame)
        for (peer, at), (signed, events) in sorted(inputs.items()):
            if at < frame:
                self._inputs[peer].set_base(at, events, signed)
            else:
                self._inputs[peer].add(at, events, signed)
        resume = frame + RESUME_LEAD_FRAMES
        for peer in self.peers:
            self._active_from[peer] = resume if peer == self.me else max(frame, self._resumes.get(peer, 0))
        self._recompute_frontier()
        active = [p for p in self.others if self._status[p] == ACTIVE]
        return [Send(p, RaceResume(frame, resume)) for p in active] + [CaughtUp(frame, digest, resume)]

    # ---- catch-up: responder -------------------------------------------------------------------------

    def _on_probe(self, peer: str, msg: RaceProbe, now_ms: int) -> list[Any]:
        self._signed_by(peer, catch_up_digest(self.race_id, "probe", msg.requestId, self.me, []), msg.signature,
                        "race-probe-bad-signature")
        if not self._offered or self._off_line:
            return []
        candidates = self._pins.pin(peer, msg.requestId, self._offered, self._next)
        signature = self._key.sign(catch_up_digest(self.race_id, "offer", msg.requestId, peer, candidates))
        return [Send(peer, RaceOffer(msg.requestId, [Candidate(f, h) for f, h in candidates], signature))]

    def _on_sync_request(self, peer: str, msg: RaceSyncRequest, now_ms: int) -> list[Any]:
        candidate = (msg.frame, msg.hash)
        self._signed_by(peer, catch_up_digest(self.race_id, "sync-request", msg.requestId, self.me, [candidate]),
                        msg.signature, "race-sync-request-bad-signature")
        offer = self._pins.take(peer, msg.requestId, candidate, self._next)
        inputs = list(offer.bases)
        for other in self.others:
            if self._status[other] != ACTIVE:  # nobody re-sends these: forward what this node used
                signed = self._inputs[other].signed
                inputs += [InputRecord(other, f, signed[f].events, signed[f].signature) for f in sorted(signed) if f >= msg.frame]
        signature = self._key.sign(catch_up_digest(self.race_id, "snapshot", msg.requestId, peer, [candidate]))
        return [Send(peer, RaceSnapshot(msg.requestId, msg.frame, offer.state, inputs, signature))]

    def _on_resume(self, peer: str, msg: RaceResume, now_ms: int) -> list[Any]:
        """A peer caught up. It was ``rejoining`` here, or it is a fellow of this node's minority that
        never lost its link to us: either way its real inputs restart at ``resumeFrame``."""
        if self._status[peer] not in (REJOINING, ACTIVE):
            raise ProtocolError("race-resume-unexpected", "the peer was not catching up")
        if msg.resumeFrame != msg.frame + RESUME_LEAD_FRAMES:
            raise ProtocolError("race-resume-invalid", f"real inputs resume {RESUME_LEAD_FRAMES} frames after the snapshot")
        self._resumes[peer] = msg.resumeFrame
        if self._catch_up is not None:
            return []  # taken into account when this node's own snapshot arrives
        if msg.resumeFrame < self._next - INPUT_WINDOW_BEHIND:
            return [CloseLink(peer, "rejoin-too-late")]
        self._status[peer] = ACTIVE
        self._active_from[peer] = max(self._active_from[peer], msg.resumeFrame)
        self._lost_at.pop(peer, None)
        self._recompute_frontier()
        return self._resend(peer, msg.frame) + [Notify("rejoin", {"peer": peer, "frame": msg.resumeFrame})]

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
        RaceRejoin: _on_rejoin, RaceProbe: _on_probe, RaceOffer: _on_offer, RaceSyncRequest: _on_sync_request,
        RaceSnapshot: _on_snapshot, RaceResume: _on_resume, RaceRelay: _on_relay,
        RaceAnchorProposal: _on_anchor_message, RaceAnchorSignature: _on_anchor_message,
    }
