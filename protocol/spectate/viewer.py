"""``SpectateViewer``: a spectator's read-only re-simulation of a match it watches through a source.

Sans-IO, the viewer side of GGRS's spectator session (spec/netcode.md §6.4). It trusts nothing its
source says that it can check:

- the round descriptor must equal what the verified start package says (track, slots, loadouts);
- every race key must be signed by its racer's master key; every input by its racer's race key, for
  exactly that round and frame; every vote by its racer's race key;
- the source's checkpoint is loaded at once (a late viewer joins through it), and vouched for by the
  players' signed votes of the frame before it: the hash of its bytes must be the agreed one;
- at every vote frame the viewer's own hash is compared with the players' agreed hash (a strict
  majority of the round's roster); a match makes that state the newest verified checkpoint, a mismatch
  reloads the newest verified checkpoint and re-simulates from it (no vote, no ledger entry); a second
  mismatch at the same frame ends the session (``error``: this viewer cannot reproduce the race).

Anything that fails a check drops the source (``DropSource``) and asks the next one (``DialSource``
with ``sourceEpoch`` + 1); messages of an older epoch or another peer are refused without blame on the
new source. Frames are shown through an adaptive jitter buffer: a frame is stepped only while more
than ``target`` newer frames wait behind it (``target`` 2–6: one more each time the buffer runs dry,
one less after 600 frames without that), except at the round's end, which is played out at once.

The viewer sends nothing but ``mode-select``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from open4wd_base.errors import SimError
from protocol.actions import Misbehaviour
from protocol.errors import ProtocolError
from protocol.transaction import FaultOutcome, MachineFault
from protocol.identity.keys import race_id
from protocol.race.inputs import input_prev
from protocol.race.keys import RaceKeyBook, verify_race_signature
from protocol.race.messages import MAX_INPUT_EVENTS_PER_FRAME, RaceKey
from protocol.race.setup import RaceWorld
from protocol.race.signing import SKILL_ORDER, Event, checksum_digest, input_digest
from protocol.race.votes import VOTE_INTERVAL_FRAMES
from protocol.encoding.wire import Message
from protocol.spectate.actions import (
    CheckpointLoaded, DialSource, DropSource, FrameShown, HashChecked, KeyVerified, RoundBegan, RoundOver, ViewEnded,
    ViewerAction,
)
from protocol.spectate.messages import (
    FrameInput, KeyAnnounce, ModeSelect, SessionEnd, SpectateCheckpoint, SpectateEndReason, SpectateInputs,
    SpectateKey, SpectateMode, SpectateRound, SpectateRoundEnd, SpectateVote,
)
from protocol.identity.keys import PeerId

JITTER_MIN, JITTER_MAX, JITTER_START = 2, 6, 2
SHRINK_AFTER_FRAMES = 600
MAX_BUFFERED_FRAMES = 1200
"""Frames held ahead of the world at most (20 s): a source that sends far ahead is refused."""
MAX_SOURCE_ATTEMPTS_PER_RACER = 2
"""Each racer may be asked to be the source this often per match before the viewer gives up."""


class ViewerPhase(StrEnum):
    """Where the viewer is (the spec's ``waiting-checkpoint`` among them)."""

    WAITING_ROUND = "waiting-round"  # no descriptor from the current source yet
    WAITING_CHECKPOINT = "waiting-checkpoint"
    PLAYING = "playing"
    ROUND_OVER = "round-over"
    ENDED = "ended"


@dataclass(frozen=True)
class ViewRound:
    """What the verified start package says of a round: its track, start slots and loadout digests."""

    track_ref: str
    slots: Mapping[PeerId, int]
    loadouts: Mapping[PeerId, str]


class SpectateViewer:
    """One spectator's view of one match (module docstring). ``rounds`` come from the verified start
    package; ``make_world(round)`` builds a round's world (the shell's); ``sources`` is the order in
    which racers are asked to be the source: the host's assignment first."""

    def __init__(self, match_id: str, rounds: Sequence[ViewRound], make_world: Callable[[int], RaceWorld],
                 sources: Sequence[PeerId]) -> None:
        self.match_id = match_id
        self.rounds = list(rounds)
        self.make_world = make_world
        roster = sorted({p for r in self.rounds for p in r.slots})
        self.keys = RaceKeyBook(roster)
        self._candidates = list(sources)
        self._attempts_left = MAX_SOURCE_ATTEMPTS_PER_RACER * len(self._candidates)
        self.source: PeerId | None = None
        self.epoch = 0
        self.phase = ViewerPhase.WAITING_ROUND
        self.round_index = -1
        self.world: RaceWorld | None = None
        self.target = JITTER_START
        self.underruns = 0
        self._since_underrun = 0
        self._inputs: dict[int, tuple[FrameInput, ...]] = {}
        self._agreed: dict[int, tuple[bytes, dict[str, bytes]]] = {}  # vote frame -> agreed hash, votes
        self._own: dict[int, tuple[bytes, bytes]] = {}  # vote frame -> (own hash, state after it)
        self._verified: tuple[int, bytes] | None = None  # newest checkpoint the players' votes vouched for
        self._unverified: tuple[int, bytes] | None = None  # the source's checkpoint until its vote arrives
        self._last_checkpoint = -1
        self._mismatched: set[int] = set()
        self._end: tuple[int, dict[PeerId, str]] | None = None
        self._final: SpectateEndReason | None = None  # the match ended; shown once the last round is over

    # ---- sources -------------------------------------------------------------------------------------

    def start(self, now_ms: int) -> list[ViewerAction]:
        """Ask the host's assigned source."""
        return self._next_source(None, "")

    def source_lost(self, now_ms: int) -> list[ViewerAction]:
        """The current source's link ended: ask the next one."""
        if self.phase is ViewerPhase.ENDED or self.source is None:
            return []
        return self._next_source(self.source, "spectate-source-lost")

    def _next_source(self, failed: PeerId | None, code: str) -> list[ViewerAction]:
        actions: list[ViewerAction] = [] if failed is None else [DropSource(failed, code)]
        if self._attempts_left <= 0 or not self._candidates:
            return actions + self._finish(SpectateEndReason.SOURCE_UNAVAILABLE, "no racer can be the source any more")
        self._attempts_left -= 1
        if failed is not None and failed in self._candidates:  # the next racer in order, the failed one last
            at = self._candidates.index(failed)
            self._candidates = self._candidates[at + 1:] + self._candidates[:at + 1]
        self.source = self._candidates[0]
        self.epoch += 1
        if self.phase is not ViewerPhase.ROUND_OVER:
            self.phase = ViewerPhase.WAITING_ROUND
        return actions + [DialSource(self.source, ModeSelect(SpectateMode.REPLAY.value, self.match_id, self.epoch))]

    # ---- messages ------------------------------------------------------------------------------------

    def receive(self, peer: PeerId, msg: Message, now_ms: int) -> list[ViewerAction]:
        """A message from ``peer``: refused without further effect unless it is the current source's of
        the current epoch; a current source's message that fails a check drops that source. A bug of this
        node (any other exception) breaks the view: its world and buffers may be half changed, and a copy
        of them before each message would cost far more than the message, so it ends (``error``) and
        raises ``MachineFault`` (outcome ``broken``) carrying its end."""
        if self.phase is ViewerPhase.ENDED:
            return []
        epoch = getattr(msg, "sourceEpoch", None)
        if peer != self.source or epoch != self.epoch:
            return [Misbehaviour(peer, "spectate-stale-source")]
        try:
            return self._dispatch(msg)
        except ProtocolError as exc:
            return [Misbehaviour(peer, exc.code), *self._next_source(peer, exc.code)]
        except Exception as exc:  # a bug of this node: the view is broken (its world, its buffers), and ends
            ended = self._finish(SpectateEndReason.ERROR, f"internal-error: this viewer failed ({type(exc).__name__})")
            raise MachineFault("the spectator's viewer", peer, FaultOutcome.BROKEN, exc, ended) from exc

    def _dispatch(self, msg: Message) -> list[ViewerAction]:
        if self.phase is ViewerPhase.ROUND_OVER and getattr(msg, "round", None) == self.round_index:
            return []  # a new source's backlog of the round this viewer already finished
        match msg:
            case SpectateRound():
                return self._on_round(msg)
            case SpectateKey():
                return self._add_key(msg.key)
            case SpectateCheckpoint():
                return self._on_checkpoint(msg)
            case SpectateInputs():
                self._on_inputs(msg)
                return []
            case SpectateVote():
                return self._on_vote(msg)
            case SpectateRoundEnd():
                return self._on_round_end(msg)
            case SessionEnd():
                return self._on_session_end(msg)
        raise ProtocolError("spectate-unexpected-message", f"a source does not send {msg.TYPE}")

    def _add_key(self, key: KeyAnnounce) -> list[ViewerAction]:
        if key.raceId != race_id(self.match_id, self.round_index):
            raise ProtocolError("race-key-invalid", "a race key of another round")
        new = self.keys.add(key.peer, RaceKey(key.raceId, key.publicKey, key.signature))
        return [KeyVerified(self.round_index, key)] if new else []

    def _on_round(self, msg: SpectateRound) -> list[ViewerAction]:
        next_round = self.phase is ViewerPhase.ROUND_OVER and msg.round > self.round_index
        if self.phase is not ViewerPhase.WAITING_ROUND and not next_round:
            raise ProtocolError("spectate-unexpected-message", "a round descriptor out of turn")
        if msg.matchId != self.match_id or not 0 <= msg.round < len(self.rounds) or msg.round < self.round_index:
            raise ProtocolError("spectate-descriptor-mismatch", "the descriptor names another match or round")
        facts = self.rounds[msg.round]
        roster = {e.peer: (e.slot, e.loadout) for e in msg.roster}
        if (msg.trackRef != facts.track_ref or len(roster) != len(msg.roster)
                or roster != {p: (facts.slots[p], facts.loadouts[p]) for p in facts.slots}):
            raise ProtocolError("spectate-descriptor-mismatch", "the descriptor differs from the verified start package")
        actions: list[ViewerAction] = []
        if msg.round != self.round_index or self.world is None:
            self._begin_round(msg.round)
            actions.append(RoundBegan(msg.round, dict(facts.slots)))
        for key in msg.keys:
            actions += self._add_key(key)
        self.phase = ViewerPhase.WAITING_CHECKPOINT
        return actions

    def _begin_round(self, index: int) -> None:
        self.round_index = index
        self.world = self.make_world(index)
        self._inputs.clear()
        self._agreed.clear()
        self._own.clear()
        self._verified = self._unverified = None
        self._last_checkpoint = -1
        self._mismatched.clear()
        self._end = None

    def _on_checkpoint(self, msg: SpectateCheckpoint) -> list[ViewerAction]:
        world = self._world()
        if self.phase is not ViewerPhase.WAITING_CHECKPOINT or msg.round != self.round_index:
            raise ProtocolError("spectate-unexpected-message", "a checkpoint out of turn")
        if msg.frame < self._last_checkpoint:
            raise ProtocolError("spectate-checkpoint-stale", "a checkpoint older than the last one accepted")
        if hashlib.sha256(msg.state).digest() != msg.stateHash:
            raise ProtocolError("spectate-checkpoint-invalid", "the checkpoint's bytes do not have its hash")
        try:
            world.load_state(msg.state)
        except SimError as exc:  # the world refused the source's bytes (any other exception is a bug: it propagates)
            raise ProtocolError("spectate-checkpoint-invalid", f"the world refused the checkpoint ({exc.code})") from exc
        if world.frame != msg.frame:
            raise ProtocolError("spectate-checkpoint-invalid", "the checkpoint's frame differs from its label")
        self._last_checkpoint = msg.frame
        self._unverified = (msg.frame, msg.state)
        self._own = {f: v for f, v in self._own.items() if f < msg.frame}
        self._inputs = {f: v for f, v in self._inputs.items() if f >= msg.frame}
        self.phase = ViewerPhase.PLAYING
        actions: list[ViewerAction] = [CheckpointLoaded(self.round_index, msg.frame, msg.state, msg.stateHash, "source")]
        vouched = self._agreed.get(msg.frame - 1)
        if vouched is not None:
            actions += self._check_checkpoint(msg.frame - 1, vouched[0])
        return actions

    def _on_inputs(self, msg: SpectateInputs) -> None:
        world = self._world()
        if self.phase not in (ViewerPhase.PLAYING, ViewerPhase.WAITING_CHECKPOINT) or msg.round != self.round_index:
            raise ProtocolError("spectate-unexpected-message", "inputs out of turn")
        if msg.frame < world.frame or msg.frame in self._inputs:
            return  # already stepped or held: a source after a change repeats what the old one sent
        if msg.frame > world.frame + MAX_BUFFERED_FRAMES:
            raise ProtocolError("spectate-inputs-ahead", "inputs far beyond the frames held")
        facts = self.rounds[self.round_index]
        if sorted(i.peer for i in msg.inputs) != sorted(facts.slots):
            raise ProtocolError("spectate-inputs-invalid", "a frame's inputs must name every racer once")
        race = race_id(self.match_id, self.round_index)
        for entry in msg.inputs:
            events = _events(entry.events)
            if entry.signature is None:
                continue  # a final prediction of a lost racer: the next vote vouches for it
            key = self.keys.key(race, entry.peer)
            digest = input_digest(race, msg.frame, events, input_prev(entry.prev))
            if key is None or not verify_race_signature(key, digest, entry.signature):
                raise ProtocolError("race-input-bad-signature", f"frame {msg.frame}: an input not signed by its racer")
        self._inputs[msg.frame] = tuple(msg.inputs)

    def _on_vote(self, msg: SpectateVote) -> list[ViewerAction]:
        if msg.round != self.round_index or msg.frame % VOTE_INTERVAL_FRAMES:
            raise ProtocolError("spectate-unexpected-message", "a vote of another round or frame")
        race = race_id(self.match_id, self.round_index)
        roster = self.rounds[self.round_index].slots
        counts: dict[bytes, int] = {}
        votes: dict[str, bytes] = {}
        for vote in msg.votes:  # a vote that does not verify counts as absent: a source cannot forge one
            key = self.keys.key(race, vote.peer)
            if vote.peer not in roster or vote.peer in votes or key is None or not verify_race_signature(
                    key, checksum_digest(race, msg.frame, vote.hash), vote.signature):
                continue
            votes[vote.peer] = vote.hash
            counts[vote.hash] = counts.get(vote.hash, 0) + 1
        agreed = next((h for h, n in counts.items() if 2 * n > len(roster)), None)
        if agreed is None:
            return []  # no strict majority of the roster: nothing this viewer can check
        self._agreed[msg.frame] = (agreed, votes)
        for old in [f for f in self._agreed if f < msg.frame - 2 * VOTE_INTERVAL_FRAMES]:
            del self._agreed[old]
        actions = self._check_checkpoint(msg.frame, agreed)
        return actions + self._check(msg.frame)

    def _check_checkpoint(self, frame: int, agreed: bytes) -> list[ViewerAction]:
        """The source's checkpoint after vote ``frame`` must hash to the players' agreed hash."""
        if self._unverified is None or self._unverified[0] != frame + 1:
            return []
        if hashlib.sha256(self._unverified[1]).digest() != agreed:
            raise ProtocolError("spectate-checkpoint-mismatch", "the checkpoint is not the state the players agreed on")
        self._verified = max(self._verified or self._unverified, self._unverified)
        self._unverified = None
        return []

    def _check(self, frame: int) -> list[ViewerAction]:
        """Compare the viewer's own hash after vote ``frame`` with the agreed one, once both are known."""
        agreed, own = self._agreed.get(frame), self._own.pop(frame, None)
        if agreed is None or own is None:
            if own is not None:
                self._own[frame] = own
            return []
        checked = HashChecked(self.round_index, frame, own[0] == agreed[0], own[0], agreed[1])
        if checked.agreed:
            self._verified = (frame + 1, own[1])
            self._inputs = {f: v for f, v in self._inputs.items() if f >= frame + 1}
            return [checked]
        return [checked, *self._reload(frame)]

    def _reload(self, frame: int) -> list[ViewerAction]:
        """The viewer's state after ``frame`` is not the players': back to the newest verified checkpoint."""
        if frame in self._mismatched or self._verified is None:
            return self._finish(SpectateEndReason.ERROR, f"this viewer cannot reproduce the players' state after frame {frame}")
        self._mismatched.add(frame)
        at, state = self._verified
        self._world().load_state(state)
        self._own = {f: v for f, v in self._own.items() if f < at}
        return [CheckpointLoaded(self.round_index, at, state, hashlib.sha256(state).digest(), "hash-mismatch")]

    def _on_round_end(self, msg: SpectateRoundEnd) -> list[ViewerAction]:
        if msg.round != self.round_index:
            raise ProtocolError("spectate-unexpected-message", "the end of another round")
        self._end = (msg.frame, dict(msg.left))
        return self._round_over()

    def _on_session_end(self, msg: SessionEnd) -> list[ViewerAction]:
        try:
            reason = SpectateEndReason(msg.reason)
        except ValueError:
            raise ProtocolError("spectate-end-invalid", "an unknown session-end reason") from None
        if reason is SpectateEndReason.SOURCE_UNAVAILABLE:
            raise ProtocolError("spectate-source-unavailable", "the source stopped racing")
        if reason is SpectateEndReason.MATCH_END:
            self._final = reason
            return self._round_over()
        return self._finish(reason, "the source ended the stream")

    def _round_over(self) -> list[ViewerAction]:
        """Once the world is done and the source said so: the round is over (and the match, after the last)."""
        world = self.world
        actions: list[ViewerAction] = []
        if self.phase is ViewerPhase.PLAYING and world is not None and world.done and self._end is not None:
            self.phase = ViewerPhase.ROUND_OVER
            actions.append(RoundOver(self.round_index, world.frame, self._end[1]))
        if self.phase is ViewerPhase.ROUND_OVER and self._final is not None and self.round_index == len(self.rounds) - 1:
            actions += self._finish(self._final, "")
        return actions

    def _finish(self, reason: SpectateEndReason, detail: str) -> list[ViewerAction]:
        if self.phase is ViewerPhase.ENDED:
            return []
        self.phase = ViewerPhase.ENDED
        return [ViewEnded(reason, detail)]

    # ---- frames --------------------------------------------------------------------------------------

    def buffered(self) -> int:
        """Consecutive frames held from the world's next one on."""
        world = self.world
        if world is None:
            return 0
        n = world.frame
        while n in self._inputs:
            n += 1
        return n - world.frame

    def advance(self, now_ms: int) -> tuple[bool, list[ViewerAction]]:
        """Step at most one frame if the jitter buffer allows: (stepped, actions)."""
        world = self.world
        if self.phase is not ViewerPhase.PLAYING or world is None or world.done:
            return False, []
        buffered = self.buffered()
        if buffered == 0:
            if self._since_underrun > 0:  # the buffer ran dry while frames flowed: hold more
                self.underruns += 1
                self.target = min(JITTER_MAX, self.target + 1)
                self._since_underrun = 0
            return False, []
        if buffered <= self.target and self._end is None:
            return False, []
        frame = world.frame
        inputs = self._inputs[frame]  # kept until a verified checkpoint passes it: a reload re-steps it
        slots = self.rounds[self.round_index].slots
        world.step({slots[i.peer]: _events(i.events) for i in sorted(inputs, key=lambda i: slots[i.peer]) if i.events})
        self._since_underrun += 1
        if self._since_underrun >= SHRINK_AFTER_FRAMES and self.target > JITTER_MIN:
            self.target -= 1
            self._since_underrun = 1
        actions: list[ViewerAction] = [FrameShown(self.round_index, frame, inputs, buffered - 1, self.target)]
        if frame % VOTE_INTERVAL_FRAMES == 0:
            state = world.save_state()
            self._own[frame] = (hashlib.sha256(state).digest(), state)
            actions += self._check(frame)
        if world.done:
            actions += self._round_over()
        return True, actions

    def _world(self) -> RaceWorld:
        if self.world is None:
            raise ProtocolError("spectate-unexpected-message", "no round descriptor yet")
        return self.world


def _events(raw: list[list[object]]) -> tuple[Event, ...]:
    """A frame's events as signed: ``(skill, hold)`` pairs in canonical order, at most 4, each skill once.
    Raises ``ProtocolError`` ``race-input-invalid`` otherwise."""
    if len(raw) > MAX_INPUT_EVENTS_PER_FRAME:
        raise ProtocolError("race-input-invalid", f"at most {MAX_INPUT_EVENTS_PER_FRAME} events per frame")
    events: list[Event] = []
    for event in raw:
        if (len(event) != 2 or not isinstance(event[0], str) or event[0] not in SKILL_ORDER
                or not isinstance(event[1], bool)):
            raise ProtocolError("race-input-invalid", "an event is a [skill, hold] pair")
        events.append((event[0], event[1]))
    if [e[0] for e in events] != sorted({e[0] for e in events}, key=SKILL_ORDER.__getitem__):
        raise ProtocolError("race-input-invalid", "events in canonical skill order, each skill once")
    return tuple(events)
