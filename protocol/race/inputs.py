"""Per-peer input buffers: event validation, real inputs, the predictions that were used, and pruning.

Prediction (spec/netcode.md §4.3): the Hold ticks of the newest real input *before* the frame; Event
skills are never repeated. An input that arrives for a later frame therefore never changes the
prediction of an earlier one, and a prediction is compared with the real input of its own frame only.
"""

from __future__ import annotations

from typing import Any

from protocol.errors import ProtocolError
from protocol.race.messages import MAX_INPUT_EVENTS_PER_FRAME, RaceInput
from protocol.race.signing import HOLD_SKILLS, SKILL_ORDER, Event, canonical_events

INPUT_WINDOW_BEHIND = 8
INPUT_WINDOW_AHEAD = 24
"""Inputs are accepted for frames [current − 8, current + 24] (spec/netcode.md §2.1)."""
STATE_BUFFER_FRAMES = 12
"""Saved pre-step states kept for rollback; inputs are kept as long (plus this node's own for re-sends)."""
NO_EVENTS: tuple[Event, ...] = ()
_HOLDS: dict[tuple[Event, ...], tuple[Event, ...]] = {}


def input_window_end(current_frame: int, resume_frame: int) -> int:
    """The newest frame whose input is accepted at ``current_frame``: current + 24, or, for a node that
    caught up and is still short of its own ``resume_frame``, resume + 24 (the others, waiting for its
    input of that frame, are up to there)."""
    return max(current_frame, resume_frame) + INPUT_WINDOW_AHEAD


def holds(events: tuple[Event, ...]) -> tuple[Event, ...]:
    """The Hold ticks of ``events`` (memoised: there are few distinct inputs in a race)."""
    found = _HOLDS.get(events)
    if found is None:
        found = tuple(e for e in events if e[1])
        if len(_HOLDS) < 4096:
            _HOLDS[events] = found
    return found


def parse_events(raw: object, allowed: frozenset[str]) -> tuple[Event, ...]:
    """Check one frame's events in the spec's order (count and uniqueness, Event/Hold, chip schema) and
    return them canonical. Raises ``ProtocolError`` ``race-input-too-many-events``, ``race-input-invalid``,
    ``race-input-duplicate-skill``, ``race-input-hold-mismatch`` or ``race-input-skill-not-in-chip`` (the
    session re-raises these as ``LocalError`` for this node's own input)."""
    if not isinstance(raw, (list, tuple)) or len(raw) > MAX_INPUT_EVENTS_PER_FRAME:
        raise ProtocolError("race-input-too-many-events", f"an input holds at most {MAX_INPUT_EVENTS_PER_FRAME} events")
    events: list[Event] = []
    for item in raw:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ProtocolError("race-input-invalid", "every event is a [skill, hold] pair")
        skill, hold = item
        if not isinstance(skill, str) or skill not in SKILL_ORDER or type(hold) is not bool:
            raise ProtocolError("race-input-invalid", "an event is [one of the eight skills, true|false]")
        if any(skill == e[0] for e in events):
            raise ProtocolError("race-input-duplicate-skill", f"{skill} appears twice in one frame")
        events.append((skill, hold))
    for skill, hold in events:
        if hold != (skill in HOLD_SKILLS):
            kind = "a Hold" if skill in HOLD_SKILLS else "an Event"
            raise ProtocolError("race-input-hold-mismatch", f"{skill} is {kind} skill")
        if skill not in allowed:
            raise ProtocolError("race-input-skill-not-in-chip", f"{skill} is not in that car's chip slots")
    return canonical_events(events)


def input_prev(raw: object) -> bytes:
    """A peer's ``prev`` (the digest its input chains to). Raises ``ProtocolError`` ``race-input-invalid``
    unless it is 32 bytes."""
    if not isinstance(raw, bytes) or len(raw) != 32:
        raise ProtocolError("race-input-invalid", "an input's prev is a 32-byte digest")
    return raw


def wire_events(events: tuple[Event, ...]) -> list[list[Any]]:
    """Events as the wire carries them: ``[[skill, hold], …]``."""
    return [[skill, hold] for skill, hold in events]


class PeerInputs:
    """One peer's inputs around the current frame; frames below ``low`` are pruned.

    ``real`` holds every input taken, ``signed`` those whose signature is verified, ``pending`` those
    taken from the peer's own link whose signature is not verified yet (a later verified input of the
    chain will cover them: ``RaceSession._settle``), ``digests`` the input digest of each held input,
    ``checked`` the frames of ``signed`` whose own signature was checked (the others are proven by a
    later input's: a span forwarded to a peer ends at a checked one, which then proves it whole)."""

    __slots__ = ("real", "signed", "pending", "digests", "checked", "predicted", "base_frame", "base_events",
                 "base_signed", "low", "newest", "through")

    def __init__(self) -> None:
        self.real: dict[int, tuple[Event, ...]] = {}
        self.signed: dict[int, RaceInput] = {}
        self.pending: dict[int, RaceInput] = {}
        self.digests: dict[int, bytes] = {}
        self.checked: set[int] = set()
        self.predicted: dict[int, tuple[Event, ...]] = {}
        self.base_frame = -1
        self.base_events: tuple[Event, ...] = NO_EVENTS
        self.base_signed: RaceInput | None = None
        self.low = 0
        self.newest = -1
        self.through = -1
        """Every real input up to this frame is (or was, before pruning) held: what this node acknowledges."""

    def contiguous(self, start: int) -> int:
        """The newest frame ``f`` such that every real input of ``[start, f]`` is held (``start - 1`` when
        the input of ``start`` is missing): the ``ack`` this node sends. Frames below ``start`` (before the
        peer's ``active_from``) are not owed, so they are skipped."""
        through = max(self.through, start - 1)
        real = self.real
        while through + 1 in real:
            through += 1
        self.through = through
        return through

    def add(self, frame: int, events: tuple[Event, ...], signed: RaceInput, digest: bytes, checked: bool = True) -> None:
        """Store the verified real input of ``frame`` (its events, the signed message and its digest);
        ``checked``: by its own signature (else by a later input's)."""
        self.real[frame] = events
        self.signed[frame] = signed
        self.digests[frame] = digest
        if checked:
            self.checked.add(frame)
        self.newest = max(self.newest, frame)

    def hold(self, frame: int, events: tuple[Event, ...], signed: RaceInput, digest: bytes) -> None:
        """Store the real input of ``frame`` whose signature is not verified yet: it is stepped with, but
        nothing final uses it until ``verified`` moves it to ``signed``."""
        self.real[frame] = events
        self.pending[frame] = signed
        self.digests[frame] = digest
        self.newest = max(self.newest, frame)

    def message(self, frame: int) -> RaceInput | None:
        """The signed message held for ``frame``, verified or pending (None: none is held)."""
        return self.signed.get(frame) or self.pending.get(frame)

    def verified(self, frame: int, checked: bool) -> RaceInput:
        """The pending input of ``frame`` is authentic (``checked``: by its own signature): it joins
        ``signed``. Returns it."""
        signed = self.signed[frame] = self.pending.pop(frame)
        if checked:
            self.checked.add(frame)
        return signed

    def discard(self, frame: int) -> None:
        """Forget the pending input of ``frame`` (its signature failed): the frame is predicted again, and
        the ack falls back below it so that the peer sends it again."""
        del self.real[frame], self.pending[frame], self.digests[frame]
        self.newest = max(self.real, default=self.base_frame)
        self.through = min(self.through, frame - 1)

    def predict(self, frame: int) -> tuple[Event, ...]:
        """The prediction for ``frame``: Hold ticks of the newest real input before it."""
        real = self.real
        if self.newest < frame:  # the common case, and a lost peer's: no scan
            return holds(real.get(self.newest, self.base_events))
        for g in range(frame - 1, max(self.low, self.base_frame + 1) - 1, -1):
            events = real.get(g)
            if events is not None:
                return holds(events)
        return holds(self.base_events)

    def newest_before(self, frame: int) -> RaceInput | None:
        """The newest signed real input before ``frame`` (the base a catching-up peer predicts from)."""
        for g in range(frame - 1, max(self.low, self.base_frame + 1) - 1, -1):
            if g in self.signed:
                return self.signed[g]
        return self.base_signed

    def set_base(self, frame: int, events: tuple[Event, ...], signed: RaceInput | None) -> None:
        """Make the input of ``frame`` the prediction base (the newest real input below the kept frames),
        unless a newer base is already known."""
        if frame > self.base_frame:
            self.base_frame, self.base_events, self.base_signed = frame, events, signed
            self.newest = max(self.newest, frame)

    def prune(self, low: int) -> None:
        """Forget frames below ``low``, keeping the newest real input among them as the prediction base."""
        for frame in range(self.low, low):
            events = self.real.pop(frame, None)
            if events is not None:
                self.set_base(frame, events, self.signed.get(frame))
            self.signed.pop(frame, None)
            self.digests.pop(frame, None)
            self.checked.discard(frame)
            self.predicted.pop(frame, None)
        self.low = max(self.low, low)

    def reset(self, low: int) -> None:
        """Drop everything (a snapshot replaced the state); frames start again at ``low``."""
        self.real.clear()
        self.signed.clear()
        self.pending.clear()
        self.digests.clear()
        self.checked.clear()
        self.predicted.clear()
        self.base_frame, self.base_events, self.base_signed = -1, NO_EVENTS, None
        self.low = low
        self.newest = -1
        self.through = low - 1
