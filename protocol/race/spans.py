"""Input spans: a run of one owner's consecutive signed inputs as a ``race-inputs`` carries it.

Most frames repeat the frame before (a held skill is held for many frames), and each input must keep
its own signature over its own chained digest (the race log, relays, catch-up and spectators keep and
check inputs one by one). So a span (``InputSpan``) writes each input's signature (64 bytes, the one
part that cannot shrink) and nothing else per input: the frames are consecutive from ``frame``, the
events are ``[count, skills]`` runs (a skill bit mask, the Hold flag being the skill's own), and each
``prev`` is the digest of the input before it, which the receiver computes itself; only the first
input's ``prev`` travels, and not even that when the receiver holds the input it chains to.

``span_entries`` reads a span into single inputs (raising ``ProtocolError`` for a malformed one),
``build_span`` writes one, ``span_bytes`` bounds its encoded size, and ``merge_inputs`` joins two
``race-inputs`` to one peer when the later continues the earlier (the shell sends one per pump tick).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from protocol.encoding.wire import encode_message
from protocol.errors import ProtocolError
from protocol.race.messages import (
    MAX_INPUT_EVENTS_PER_FRAME, MAX_INPUTS_PER_MESSAGE, MAX_SENT_BYTES, MAX_SENT_INPUTS, SIGNATURE_BYTES,
    InputSpan, RaceInputs,
)
from protocol.race.signing import HOLD_SKILLS, SKILLS, Event

OWN = ""
"""The ``owner`` of a span of the sender's own inputs."""
SKILL_BITS = {skill: 1 << i for i, skill in enumerate(SKILLS)}
ALL_SKILLS = (1 << len(SKILLS)) - 1


def skills_mask(events: Iterable[Event]) -> int:
    """The bit mask of a frame's events (canonical events in, bit ``i`` for the ``i``-th skill)."""
    mask = 0
    for skill, _ in events:
        mask |= SKILL_BITS[skill]
    return mask


@lru_cache(maxsize=ALL_SKILLS + 1)
def _mask_events(mask: int) -> tuple[Event, ...]:
    return tuple((skill, skill in HOLD_SKILLS) for i, skill in enumerate(SKILLS) if mask >> i & 1)


def mask_events(mask: object, allowed: frozenset[str]) -> tuple[Event, ...]:
    """A run's events, canonical, each with its skill's Hold flag. Raises ``ProtocolError``
    ``race-input-invalid`` (not a mask of the eight skills), ``race-input-too-many-events`` or
    ``race-input-skill-not-in-chip`` (the input rules a mask can break)."""
    if type(mask) is not int or not 0 <= mask <= ALL_SKILLS:
        raise ProtocolError("race-input-invalid", "a run's skills are a bit mask of the eight skills")
    events = _mask_events(mask)
    if len(events) > MAX_INPUT_EVENTS_PER_FRAME:
        raise ProtocolError("race-input-too-many-events",
                            f"an input holds at most {MAX_INPUT_EVENTS_PER_FRAME} events")
    for skill, _ in events:
        if skill not in allowed:
            raise ProtocolError("race-input-skill-not-in-chip", f"{skill} is not in that car's chip slots")
    return events


def span_entries(span: InputSpan, allowed: frozenset[str]) -> list[tuple[int, tuple[Event, ...], bytes]]:
    """The inputs a span holds, in frame order: ``(frame, events, signature)`` each (the caller chains
    their ``prev``). Raises ``ProtocolError``: ``race-inputs-too-many`` (more inputs than a message may
    carry), ``race-inputs-invalid`` (a run of no frame, signatures that are not 64 bytes per input, a
    ``prev`` that is neither empty nor 32 bytes, a negative frame) or a rule a run's skills break."""
    count = 0
    for run_count, _ in span.runs:
        if run_count < 1:
            raise ProtocolError("race-inputs-invalid", "every run of a span holds at least one frame")
        count += run_count
        if count > MAX_INPUTS_PER_MESSAGE:
            raise ProtocolError("race-inputs-too-many", f"a race-inputs carries at most {MAX_INPUTS_PER_MESSAGE} inputs")
    if len(span.signatures) != SIGNATURE_BYTES * count or span.frame < 0 or len(span.prev) not in (0, 32):
        raise ProtocolError("race-inputs-invalid",
                            "a span has a frame ≥ 0, a prev of 0 or 32 bytes and 64 signature bytes per input")
    entries = []
    frame, at = span.frame, 0
    signatures = span.signatures
    for run_count, mask in span.runs:
        events = mask_events(mask, allowed)
        for _ in range(run_count):
            entries.append((frame, events, signatures[at:at + SIGNATURE_BYTES]))
            frame += 1
            at += SIGNATURE_BYTES
    return entries


def build_span(owner: str, frame: int, prev: bytes, events: Sequence[tuple[Event, ...]],
               signatures: Sequence[bytes]) -> InputSpan:
    """The span of the inputs of ``frame``, ``frame + 1``, … with these canonical ``events`` and
    ``signatures``; ``prev`` is the first input's (empty: the receiver holds the input it chains to)."""
    runs: list[tuple[int, int]] = []
    for frame_events in events:
        mask = skills_mask(frame_events)
        if runs and runs[-1][1] == mask:
            runs[-1] = (runs[-1][0] + 1, mask)
        else:
            runs.append((1, mask))
    return InputSpan(owner, frame, prev, runs, b"".join(signatures))


SPAN_OVERHEAD = 1 + 9 + 3 + 3 + 3
"""An upper bound of a span's encoded bytes besides its owner, its ``prev``, its runs and its
signatures: the array's head, the frame (a uint64 at most), the heads of ``prev``, of the runs and of
the signatures (each at most three bytes below 64 KiB)."""
RUN_BYTES = 1 + 3 + 2
"""An upper bound of one encoded run: the pair's head, the count (below 64 Ki frames), the mask (< 256)."""


def span_bytes(owner: str, prev: bytes, runs: int, inputs: int) -> int:
    """An upper bound of the encoded size of a span with these parts (``span_entries`` refuses more
    than ``MAX_INPUTS_PER_MESSAGE`` inputs, so a count never needs more than the bound)."""
    return SPAN_OVERHEAD + len(owner.encode()) + 3 + len(prev) + RUN_BYTES * runs + SIGNATURE_BYTES * inputs


def merge_inputs(older: RaceInputs, newer: RaceInputs) -> RaceInputs | None:
    """One ``race-inputs`` that carries everything ``older`` and ``newer`` (sent to the same peer, in this
    order, nothing read in between) carry, with ``newer``'s ack and wants; None when that is not one
    message: a span of ``newer`` that neither continues nor covers ``older``'s of the same owner, or more
    than the send caps."""
    spans = {span.owner: span for span in older.spans}
    for span in newer.spans:
        before = spans.get(span.owner)
        if before is None:
            spans[span.owner] = span
            continue
        joined = _join(before, span)
        if joined is None:
            return None
        spans[span.owner] = joined
    order = [s.owner for s in older.spans] + [s.owner for s in newer.spans if s.owner not in {o.owner for o in older.spans}]
    merged = RaceInputs(newer.ack, [spans[owner] for owner in order], newer.want)
    if sum(s.count for s in merged.spans) > MAX_SENT_INPUTS or len(encode_message(merged)) > MAX_SENT_BYTES:
        return None
    return merged


def _join(before: InputSpan, after: InputSpan) -> InputSpan | None:
    """``after`` continuing ``before`` (its first frame right after ``before``'s last, chained to it),
    or ``after`` alone when it starts no later and reaches as far (a re-send from the receiver's
    acknowledgement covers what went before); None otherwise."""
    end = before.frame + before.count
    if after.frame <= before.frame and after.frame + after.count >= end:
        return after
    if after.frame != end or after.prev:
        return None
    runs = list(before.runs)
    for run in after.runs:
        if runs and runs[-1][1] == run[1]:
            runs[-1] = (runs[-1][0] + run[0], run[1])
        else:
            runs.append(run)
    return InputSpan(before.owner, before.frame, before.prev, runs, before.signatures + after.signatures)
