"""``SpectateSource``: what a racing participant streams to the spectators assigned to it.

Sans-IO (spec/netcode.md §6.4, GGRS's spectator session seen from the host side). The race shell tells
the source what its own race session did — the round began, a race key was verified, a frame became
final, a vote was signed or decided, a checkpoint was kept, the round or the match ended — and the
source answers with ``Send`` actions for every subscribed spectator. It keeps only what a spectator
that subscribes now needs: the round descriptor, the newest checkpoint (refreshed at every vote frame,
every 120 frames), and the confirmed inputs and decided votes since that checkpoint: a bounded
backlog, whatever the length of the race.

The source never waits for a spectator: what it returns goes into a bounded queue per spectator in the
shell, and a spectator whose queue is full is dropped (``spectator-too-slow``); see
``open4wd_node/race/spectators.py``.
"""

from __future__ import annotations

from dataclasses import replace
from collections.abc import Callable, Iterable, Mapping, Sequence
from hashlib import sha256

from protocol.actions import Send
from protocol.race.actions import FrameConfirmed, RaceAction, VoteDecided
from protocol.race.messages import RaceChecksum, RaceKey
from protocol.errors import ProtocolError
from protocol.identity.keys import race_id
from protocol.race.keys import RaceKeyBook
from protocol.spectate.messages import (
    MODE_SELECT_MAX_BYTES, FrameInput, KeyAnnounce, ModeSelect, RosterEntry, SessionEnd, SignedVote, SpectateCheckpoint,
    SpectateEndReason, SpectateInputs, SpectateKey, SpectateMode, SpectateRound, SpectateRoundEnd, SpectateVote,
)
from protocol.encoding.wire import Message, encode_message
from protocol.identity.keys import PeerId


class _Round:
    """What the source keeps of the current round for spectators that subscribe later."""

    def __init__(self, index: int, track_ref: str, roster: list[RosterEntry]) -> None:
        self.index = index
        self.track_ref = track_ref
        self.roster = roster
        self.keys: dict[str, KeyAnnounce] = {}
        self.book = RaceKeyBook([entry.peer for entry in roster])
        self.checkpoint: SpectateCheckpoint | None = None  # with epoch 0: each spectator gets its own epoch's copy
        self.inputs: list[tuple[int, list[FrameInput]]] = []  # confirmed frames since the checkpoint
        self.ballots: dict[int, dict[str, SignedVote]] = {}  # vote frame -> signed votes seen, until decided
        self.votes: list[tuple[int, list[SignedVote]]] = []  # decided votes from the checkpoint's on
        self.end: tuple[int, dict[PeerId, str]] | None = None


class SpectateSource:
    """The spectator side of one participant's match (module docstring). ``spectators`` are the PeerIds
    the room admitted as spectators; ``capacity`` the most this source serves at once."""

    def __init__(self, match_id: str, spectators: Iterable[str], capacity: int) -> None:
        self.match_id = match_id
        self.admitted = frozenset(spectators)
        self.capacity = capacity
        self.subscribers: dict[PeerId, int] = {}  # spectator -> the sourceEpoch it asked with
        self._epochs: dict[str, int] = {}  # spectator -> the newest epoch it ever asked with
        self._round: _Round | None = None
        self._ended: SpectateEndReason | None = None

    # ---- spectators ----------------------------------------------------------------------------------

    def receive(self, peer: PeerId, msg: Message, now_ms: int) -> list[Send]:
        """A spectator's ``mode-select`` (the first and only message of its link): subscribe it and
        return its backlog. Raises ``ProtocolError``: ``spectate-unexpected-message``,
        ``spectate-mode-select-too-large``, ``spectate-mode-unsupported``, ``spectate-wrong-match``,
        ``spectate-not-admitted`` (not a spectator of this room), ``spectate-stale-epoch``,
        ``spectator-full``: the shell closes the link with the code."""
        if not isinstance(msg, ModeSelect):
            raise ProtocolError("spectate-unexpected-message", f"a spectator only sends mode-select, not {msg.TYPE}")
        if len(encode_message(msg)) > MODE_SELECT_MAX_BYTES:
            raise ProtocolError("spectate-mode-select-too-large", f"mode-select is at most {MODE_SELECT_MAX_BYTES} bytes")
        if msg.mode != SpectateMode.REPLAY:
            raise ProtocolError("spectate-mode-unsupported", "this source serves mode 'replay' only")
        if msg.matchId != self.match_id:
            raise ProtocolError("spectate-wrong-match", "this node is not racing that match")
        if peer not in self.admitted:
            raise ProtocolError("spectate-not-admitted", "only the room's spectators may watch its match")
        if msg.sourceEpoch < 1 or msg.sourceEpoch <= self._epochs.get(peer, 0):
            raise ProtocolError("spectate-stale-epoch", "a spectator's source epochs only grow")
        if peer not in self.subscribers and len(self.subscribers) >= self.capacity:
            raise ProtocolError("spectator-full", f"this source serves at most {self.capacity} spectators")
        self._epochs[peer] = self.subscribers[peer] = msg.sourceEpoch
        return [Send(peer, m) for m in self._backlog(msg.sourceEpoch)]

    def drop(self, peer: PeerId) -> None:
        """``peer``'s link ended (or was dropped as too slow): stop serving it."""
        self.subscribers.pop(peer, None)

    @property
    def load(self) -> int:
        """Spectators served now."""
        return len(self.subscribers)

    def _backlog(self, epoch: int) -> list[Message]:
        """Everything a spectator subscribing now needs, in order."""
        if self._ended is not None:
            return [SessionEnd(epoch, self._ended.value)]
        current = self._round
        if current is None or current.checkpoint is None:
            return []  # the round's descriptor and checkpoint go out with its first checkpoint
        out: list[Message] = [self._descriptor(current, epoch), replace(current.checkpoint, sourceEpoch=epoch)]
        out += [SpectateInputs(epoch, current.index, f, inputs) for f, inputs in current.inputs]
        out += [SpectateVote(epoch, current.index, f, votes) for f, votes in current.votes]
        if current.end is not None:
            out.append(SpectateRoundEnd(epoch, current.index, *current.end))
        return out

    def _descriptor(self, current: _Round, epoch: int) -> SpectateRound:
        return SpectateRound(epoch, self.match_id, current.index, current.track_ref, list(current.roster),
                             list(current.keys.values()))

    def _to_all(self, make: Callable[..., Message], *fields: object) -> list[Send]:
        """``make(epoch, *fields)`` to every subscriber, each with its own epoch."""
        return [Send(peer, make(epoch, *fields)) for peer, epoch in self.subscribers.items()]

    # ---- what the race did ---------------------------------------------------------------------------

    def round_started(self, index: int, track_ref: str, roster: list[RosterEntry]) -> None:
        """A new round; its descriptor goes out with its first checkpoint."""
        self._round = _Round(index, track_ref, sorted(roster, key=lambda e: e.slot))

    def key(self, peer: PeerId, msg: RaceKey) -> list[Send]:
        """A race key announce this node verified (or its own): kept, and forwarded once the round's
        descriptor is out."""
        current = self._round
        if current is None or peer in current.keys or msg.raceId != race_id(self.match_id, current.index):
            return []
        try:
            current.book.add(peer, msg)  # only a key that verifies is forwarded: a viewer drops a source for less
        except ProtocolError:
            return []
        announce = KeyAnnounce(peer, msg.raceId, msg.publicKey, msg.signature)
        current.keys[peer] = announce
        return self._to_all(SpectateKey, current.index, announce) if current.checkpoint is not None else []

    def confirmed(self, frame: int, inputs: list[FrameInput]) -> list[Send]:
        """A frame became final with these inputs (each as its racer signed it)."""
        current = self._round
        if current is None or current.checkpoint is None or frame < current.checkpoint.frame:
            return []
        current.inputs.append((frame, inputs))
        return self._to_all(SpectateInputs, current.index, frame, inputs)

    def ballot(self, peer: PeerId, frame: int, state_hash: bytes, signature: bytes) -> None:
        """A signed checksum vote this node made or received (the session checks them; this keeps them)."""
        if self._round is not None:
            self._round.ballots.setdefault(frame, {})[peer] = SignedVote(peer, state_hash, signature)

    def vote_decided(self, frame: int, tallied: Mapping[PeerId, bytes]) -> list[Send]:
        """The vote of ``frame`` was tallied (``tallied``: the votes the session accepted, by racer): those
        signed votes go to the spectators."""
        current = self._round
        if current is None:
            return []
        votes = [v for v in current.ballots.pop(frame, {}).values() if tallied.get(v.peer) == v.hash]
        for old in [f for f in current.ballots if f < frame]:
            del current.ballots[old]
        if current.checkpoint is None or frame + 1 < current.checkpoint.frame:
            return []
        current.votes.append((frame, votes))
        return self._to_all(SpectateVote, current.index, frame, votes)

    def checkpoint(self, frame: int, state: bytes) -> list[Send]:
        """This node's state at ``frame`` (right after vote frame ``frame − 1`` became final) is the new
        checkpoint; the backlog before it is dropped. The round's first one also opens the stream."""
        current = self._round
        if current is None or (current.checkpoint is not None and frame <= current.checkpoint.frame):
            return []
        first = current.checkpoint is None
        current.checkpoint = SpectateCheckpoint(0, current.index, frame, sha256(state).digest(), state)
        current.inputs = [(f, i) for f, i in current.inputs if f >= frame]
        current.votes = [(f, v) for f, v in current.votes if f + 1 >= frame]
        if not first:
            return []
        out: list[Send] = []
        for peer, epoch in self.subscribers.items():
            out += [Send(peer, self._descriptor(current, epoch)), Send(peer, replace(current.checkpoint, sourceEpoch=epoch))]
        return out

    def round_ended(self, frame: int, left: dict[PeerId, str]) -> list[Send]:
        """The round is over at ``frame``; ``left`` the racers removed from it, with their reasons."""
        current = self._round
        if current is None or current.end is not None:
            return []
        current.end = (frame, dict(left))
        return self._to_all(SpectateRoundEnd, current.index, frame, dict(left)) if current.checkpoint else []

    def end(self, reason: SpectateEndReason) -> list[Send]:
        """This source's stream ends (once): every spectator is told why."""
        if self._ended is not None:
            return []
        self._ended = reason
        return self._to_all(SessionEnd, reason.value)

    # ---- glue: what a race session's actions and messages mean to the spectators ---------------------

    def observe(self, me: PeerId, actions: Sequence[RaceAction], vote_state: Callable[[int], bytes | None]) -> list[Send]:
        """Read this node's race session's ``actions`` (in order): final frames, this node's own signed
        votes (each also makes the state after its frame the new checkpoint: ``vote_state``), decided votes.
        Nothing is kept in a room without spectators: nobody could ever subscribe."""
        if not self.admitted:
            return []
        out: list[Send] = []
        for action in actions:
            if isinstance(action, FrameConfirmed):
                out += self.confirmed(action.frame, [
                    FrameInput(i.peer, [list(e) for e in i.events], *i.proof)
                    for i in action.inputs
                ])
            elif isinstance(action, Send) and isinstance(action.message, RaceChecksum):
                vote = action.message
                fresh = self._round is not None and me not in self._round.ballots.get(vote.frame, {})
                self.ballot(me, vote.frame, vote.hash, vote.signature)
                state = vote_state(vote.frame) if fresh else None
                if state is not None:
                    out += self.checkpoint(vote.frame + 1, state)
            elif isinstance(action, VoteDecided):
                out += self.vote_decided(action.frame, action.hashes)
        return out

    def observe_message(self, peer: PeerId, msg: Message) -> list[Send]:
        """A race message this node's session accepted from ``peer``: its race key, its signed vote."""
        if not self.admitted:
            return []
        if isinstance(msg, RaceKey):
            return self.key(peer, msg)
        if isinstance(msg, RaceChecksum):
            self.ballot(peer, msg.frame, msg.hash, msg.signature)
        return []
