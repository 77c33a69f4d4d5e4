"""What each ``race-inputs`` carries: every input once since the receiver's acknowledgement, again only
when that acknowledgement stops moving, and inputs of other peers that the receiver asked for.

A race link is an ordered stream: an input that went out arrives unless the link breaks (then a new
link starts with a rejoin that re-sends) or the receiver sets it aside (it was behind, say), and in both
cases the receiver's ``ack`` stops short of it. So a sender need not repeat every unacknowledged input
in every message, as GGRS does over UDP (it made messages grow with the round trip, and on a thin link
the round trip with them: a race ran at a quarter of real time). Each (receiver, owner) pair is a
``Stream``: what the receiver acknowledged, the newest frame sent to it since, and since when the oldest
sent input waits for its acknowledgement; after ``RESEND_MS`` without the acknowledgement moving, the
stream goes back to the first unacknowledged input and sends from there again.

``InputStreams`` holds this node's streams: its own inputs to each peer, and, for each peer that wants
another peer's inputs (its link to that one is down: ``RaceInputs.want``), that owner's verified inputs
to it. A message carries at most ``MAX_SENT_INPUTS`` inputs and ``MAX_SENT_BYTES`` bytes, this node's own
inputs first, then each forwarded owner in roster order; what did not fit goes at the next message or
at ``next_deadline_ms``. A layer under ``RaceSession`` like ``Recovery``: the session calls it, it
never calls the session; it reads the shared ``PeerInputs`` buffers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from protocol.encoding.wire import encode_message
from protocol.race.inputs import PeerInputs
from protocol.race.messages import (
    MAX_INPUTS_PER_MESSAGE, MAX_SENT_BYTES, MAX_SENT_INPUTS, InputSpan, RaceInputs, Want,
)
from protocol.race.signing import Event
from protocol.race.spans import OWN, build_span, span_bytes
from protocol.identity.keys import PeerId

RESEND_MS = 200
"""A stream whose oldest sent input has waited this long without the receiver's acknowledgement moving
goes back to the first unacknowledged input (GGRS's running retry interval)."""
FLUSH_MS = 20
"""A forwarded input, or an acknowledgement this node owes, waits at most this long (a little over a
frame at 60 Hz) for this node's own next ``race-inputs`` to that peer, which then carries it: one message
per frame and peer while this node steps, and the acknowledgements still flow while it does not (a peer
whose inputs this node took must not send them again for want of hearing so)."""


class Stream:
    """One owner's inputs on their way to one peer."""

    __slots__ = ("acked", "sent", "chained", "waiting_since")

    def __init__(self) -> None:
        self.acked = -1
        """The newest frame up to which the peer holds every input of the owner (its ``ack``)."""
        self.sent = -1
        """The newest frame sent to the peer since the stream last went back to its ``acked``."""
        self.chained = False
        """Whether the last span sent on this link ended at ``sent``: the next may leave out its ``prev``."""
        self.waiting_since: int | None = None
        """Since when the oldest input sent and not acknowledged waits (None: none waits)."""

    def acknowledge(self, ack: int, now_ms: int) -> None:
        """The peer holds every input up to ``ack``. An ack that goes back (the peer restarted from a
        snapshot) sends again from there."""
        if ack == self.acked:
            return
        if ack < self.acked:
            self.sent = min(self.sent, ack)
            self.chained = False
        self.acked = ack
        self.waiting_since = now_ms if self.sent > ack else None

    def resend_due(self) -> int | None:
        """When the stream goes back to its acknowledgement, or None while nothing sent waits."""
        return None if self.waiting_since is None or self.sent <= self.acked else self.waiting_since + RESEND_MS

    def first(self, now_ms: int) -> tuple[int, bool]:
        """The first frame to send now, and whether that is a re-send (the acknowledgement stood still
        for ``RESEND_MS``: the stream went back to it)."""
        due = self.resend_due()
        if due is not None and now_ms >= due:
            self.sent = self.acked
            self.chained = False
            return self.acked + 1, True
        return max(self.sent, self.acked) + 1, False

    def went_out(self, last: int, resent: bool, now_ms: int) -> None:
        """Inputs up to ``last`` were just sent in one span."""
        if resent or self.sent <= self.acked:
            self.waiting_since = now_ms
        self.sent = last
        self.chained = True


class InputStreams:
    """This node's input streams to each peer: its own, and those it forwards (module docstring)."""

    __slots__ = ("_me", "_inputs", "_active_from", "_own", "_forwarded", "_flush_at", "resends")

    def __init__(self, me: PeerId, others: Iterable[PeerId], inputs: Mapping[PeerId, PeerInputs],
                 active_from: Mapping[PeerId, int]) -> None:
        """``inputs`` and ``active_from`` (the first frame of each racer's inputs that counts: after a
        rejoin or a snapshot, none exists before it) are the session's, shared."""
        self._me = me
        self._inputs = inputs
        self._active_from = active_from
        self._own = {p: Stream() for p in others}
        self._forwarded: dict[PeerId, dict[PeerId, Stream]] = {p: {} for p in self._own}
        """peer → {owner it wants forwarded → the stream}: the peer's latest ``want``."""
        self._flush_at: dict[PeerId, int] = {}
        """peer → when inputs it should have that no message carried yet must go (a forwarded input
        waits for this node's next message; what a capped message left out goes at once)."""
        self.resends = 0
        """Spans sent again because an acknowledgement stood still (``RaceStats.resends``)."""

    # ---- what the peers say ---------------------------------------------------------------------------

    def acked(self, peer: PeerId) -> int:
        """The newest own frame ``peer`` said it holds every input up to."""
        return self._own[peer].acked

    def acknowledge(self, peer: PeerId, ack: int, now_ms: int) -> None:
        """``peer``'s ``ack`` of this node's inputs (never past the newest this node made)."""
        self._own[peer].acknowledge(max(-1, min(ack, self._inputs[self._me].newest)), now_ms)

    def want(self, peer: PeerId, wants: Mapping[PeerId, int], now_ms: int) -> list[PeerId]:
        """``peer``'s wants (owner → its ack of that owner's inputs) replace its earlier ones; returns the
        owners newly wanted, in the order given."""
        streams = self._forwarded[peer]
        for owner in [o for o in streams if o not in wants]:
            del streams[owner]
        added = []
        for owner, ack in wants.items():
            stream = streams.get(owner)
            if stream is None:
                stream = streams[owner] = Stream()
                added.append(owner)
            stream.acknowledge(ack, now_ms)
        return added

    def wanted(self, owner: PeerId) -> bool:
        """Whether some peer wants ``owner``'s inputs forwarded (then each is verified as it arrives)."""
        return any(owner in streams for streams in self._forwarded.values())

    def wanted_by(self, owner: PeerId) -> list[PeerId]:
        """The peers that want ``owner``'s inputs forwarded."""
        return [p for p, streams in self._forwarded.items() if owner in streams]

    def held(self, owner: PeerId, now_ms: int) -> None:
        """A new verified input of ``owner`` is held: it goes to each peer that wants it with this node's
        next message to that peer, at the latest ``FLUSH_MS`` from now."""
        for peer in self.wanted_by(owner):
            self._flush_at.setdefault(peer, now_ms + FLUSH_MS)

    def owe_ack(self, peer: PeerId, now_ms: int) -> None:
        """``peer`` sent inputs: this node's next message to it, at the latest ``FLUSH_MS`` from now, says
        how far it holds them."""
        self._flush_at.setdefault(peer, now_ms + FLUSH_MS)

    def go_back(self, peer: PeerId) -> None:
        """Send this node's inputs to ``peer`` from its acknowledgement on again, now (its watchdog asked)."""
        own = self._own[peer]
        own.sent, own.chained = own.acked, False

    def forget(self, peer: PeerId) -> None:
        """``peer``'s link went down or a new one came up: what was sent on the old one and its wants
        count for nothing (a new link starts with a rejoin, which re-sends)."""
        own = self._own[peer]
        own.sent, own.chained, own.waiting_since = own.acked, False, None
        self._forwarded[peer].clear()
        self._flush_at.pop(peer, None)

    def restart(self, frame: int) -> None:
        """A snapshot of ``frame`` replaced this node's history: its inputs from ``frame`` on are new."""
        for peer, own in self._own.items():
            own.acknowledge(min(own.acked, frame - 1), 0)
            own.sent, own.chained, own.waiting_since = min(own.sent, frame - 1), False, None
            self._forwarded[peer].clear()

    # ---- what goes out ----------------------------------------------------------------------------------

    def next_deadline_ms(self, peers: Iterable[PeerId]) -> int | None:
        """When a message to one of ``peers`` is next due (``due``), or None."""
        deadlines = [d for p in peers if (d := self._deadline(p)) is not None]
        return min(deadlines, default=None)

    def due(self, peer: PeerId, now_ms: int) -> bool:
        """Whether ``peer`` should get a ``race-inputs`` now, this node's own next one aside: inputs are
        waiting to be forwarded to it or were left out of a capped message, or a stream must go back to
        its acknowledgement."""
        deadline = self._deadline(peer)
        return deadline is not None and now_ms >= deadline

    def _deadline(self, peer: PeerId) -> int | None:
        deadlines = [self._flush_at.get(peer), self._own[peer].resend_due()]
        deadlines += [s.resend_due() for s in self._forwarded[peer].values()]
        return min((d for d in deadlines if d is not None), default=None)

    def message(self, peer: PeerId, ack: int, want: list[Want], forward: Iterable[PeerId], now_ms: int) -> RaceInputs:
        """The ``race-inputs`` for ``peer`` now: ``ack`` and ``want`` (this node's), this node's inputs it
        has neither acknowledged nor been sent since, then those of each owner of ``forward`` (owners it
        wants that this node may forward), within the caps."""
        self._flush_at.pop(peer, None)
        inputs_left = MAX_SENT_INPUTS
        bytes_left = MAX_SENT_BYTES - len(encode_message(RaceInputs(ack, [], want))) - 2  # the spans list's head grows
        spans: list[InputSpan] = []
        wanted = self._forwarded[peer]
        streams = [(self._me, OWN, self._own[peer])] + [(o, o, wanted[o]) for o in forward if o in wanted]
        for owner, field, stream in streams:
            span, used = self._span(peer, owner, field, stream, inputs_left, bytes_left, now_ms)
            if span is not None:
                spans.append(span)
                inputs_left -= span.count
                bytes_left -= used
        return RaceInputs(ack, spans, want)

    def _span(self, peer: PeerId, owner: PeerId, field: str, stream: Stream, inputs_left: int, bytes_left: int,
              now_ms: int) -> tuple[InputSpan | None, int]:
        """The span of ``owner``'s verified inputs that ``stream`` sends now (None: nothing), and an upper
        bound of its bytes. It starts at the stream's first frame to send (no older than what this node
        keeps, nor than the input window's width below the newest, nor than the owner's first frame that
        counts) and runs through the consecutive verified inputs held, as far as the caps allow. A span of
        another owner's inputs ends at one whose own signature this node checked, so that the receiver's
        one check of the span's newest signature proves it whole (this node's own are all checked)."""
        buffer = self._inputs[owner]
        first, resent = stream.first(now_ms)
        first = max(first, buffer.low, buffer.newest - MAX_INPUTS_PER_MESSAGE + 1, self._active_from[owner])
        signed, real, checked = buffer.signed, buffer.real, buffer.checked
        start = signed.get(first)
        if start is None:
            return None, 0
        prev = b"" if stream.chained and first == stream.sent + 1 else start.prev
        events: list[tuple[Event, ...]] = []
        signatures: list[bytes] = []
        runs = 0
        frame = first
        end, end_runs = first, 0  # the span so far ends before ``end`` (a checked input), with ``end_runs`` runs
        while frame in signed and len(events) < inputs_left:
            frame_events = real[frame]
            new_run = not events or frame_events != events[-1]
            if span_bytes(field, prev, runs + new_run, len(events) + 1) > bytes_left:
                break
            runs += new_run
            events.append(frame_events)
            signatures.append(signed[frame].signature)
            frame += 1
            if frame - 1 in checked:
                end, end_runs = frame, runs
        if end == first:
            return None, 0
        count = end - first
        if frame in signed:  # the caps left some out: they go at once
            self._flush_at[peer] = now_ms
        if resent:
            self.resends += 1
        stream.went_out(end - 1, resent, now_ms)
        return (build_span(field, first, prev, events[:count], signatures[:count]),
                span_bytes(field, prev, end_runs, count))
