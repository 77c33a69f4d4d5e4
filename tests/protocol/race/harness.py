"""An in-memory race mesh for sans-IO sessions: a seeded router with random delays (each link an ordered
stream, the links reordered against each other, each optionally capped in bytes per second), a small
deterministic test world, bot inputs and a 60 Hz pump on a simulated clock; and helpers that build and
alter ``race-inputs`` spans."""

from __future__ import annotations

import hashlib
import heapq
import random
import struct
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from open4wd_base.errors import SimError
from protocol.identity.keys import Identity
from protocol.race.session import RaceSession
from protocol.race.actions import (
    CaughtUp, CloseLink, DesyncRecord, FrameConfirmed, InputsDropped, Misbehaviour, PeerLeft, PeerRejoined, RaceAction,
    RoundEnded, Send, SessionEnded, VoteDecided, WriteState,
)
from protocol.race.keys import RaceKeyBook
from protocol.race.messages import InputSpan, RaceInput, RaceInputs, Want
from protocol.race.signing import NO_PREVIOUS_INPUT, canonical_events, input_digest
from protocol.race.spans import OWN, build_span
from protocol.race.setup import RaceSetup, loadout_digest
from protocol.encoding.wire import decode_message, encode_message
from protocol.transaction import MachineFault

MATCH_ID = "ab" * 32
CHIPS = (
    frozenset({"boost", "brake", "weapon"}),
    frozenset({"slam", "stabilize", "weapon"}),
    frozenset({"stabilize", "swerve_left", "swerve_right", "weapon"}),
)
HOLD = frozenset({"swerve_left", "swerve_right", "stabilize", "weapon"})
TICK_MS = 16
FRAME_OVERHEAD = 4 + 16
"""Bytes a message costs on a link beyond its body: the frame's length prefix and Noise's tag."""


class CounterWorld:
    """Integers mixed with SHA-256: every input of every frame changes every later state."""

    MAGIC = b"CW01"

    def __init__(self, slots: int, length: int = 1 << 30, fault_frame: int = -1) -> None:
        self._frame = 0
        self.values = [0] * slots
        self.length = length
        self.fault_frame = fault_frame

    @property
    def frame(self) -> int:
        return self._frame

    @property
    def done(self) -> bool:
        return self._frame >= self.length

    def step(self, inputs: Mapping[int, Sequence[tuple[str, bool]]]) -> None:
        assert not self.done
        for slot in range(len(self.values)):
            text = repr((self._frame, slot, self.values[slot], tuple(inputs.get(slot, ())))).encode()
            self.values[slot] = int.from_bytes(hashlib.sha256(text).digest()[:8], "little")
        if self._frame == self.fault_frame:  # like --fault corrupt-state@FRAME: survives any rollback
            self.values[0] ^= 1
        self._frame += 1

    def save_state(self) -> bytes:
        return self.MAGIC + struct.pack(f"<I{len(self.values)}Q", self._frame, *self.values)

    def load_state(self, data: bytes) -> None:
        if len(data) != 8 + 8 * len(self.values) or not data.startswith(self.MAGIC):
            raise SimError("state-invalid", "not a CounterWorld state")
        frame, *values = struct.unpack(f"<I{len(self.values)}Q", data[4:])
        self._frame, self.values = frame, list(values)

    def save_own(self) -> bytes:
        return self.save_state()  # its own states are its bytes

    def restore_own(self, state: object) -> None:
        assert isinstance(state, bytes)
        self.load_state(state)  # its own bytes; the checks are cheap enough to keep

    def pack_own(self, state: object) -> bytes:
        assert isinstance(state, bytes)
        return state


def signed_input(identity: Identity, race: str, frame: int, events: Sequence[tuple[str, bool]] = (),
                 prev: bytes = NO_PREVIOUS_INPUT) -> RaceInput:
    """``identity``'s race-key-signed input of ``frame`` chained to ``prev`` (events in skill order)."""
    digest = input_digest(race, frame, tuple(events), prev)
    return RaceInput(frame, [list(e) for e in events], prev, identity.race_key(race).sign(digest))


class InputChain:
    """Signs one peer's inputs as its session does: each one's ``prev`` is the digest of the one before."""

    def __init__(self, identity: Identity, race: str) -> None:
        self.identity, self.race = identity, race
        self.digests: dict[int, bytes] = {}

    def input(self, frame: int, events: Sequence[tuple[str, bool]] = ()) -> RaceInput:
        prev = self.digests.get(frame - 1, NO_PREVIOUS_INPUT)
        self.digests[frame] = input_digest(self.race, frame, tuple(events), prev)
        return signed_input(self.identity, self.race, frame, events, prev)


def span_of(entries: Sequence[RaceInput], owner: str = OWN) -> InputSpan:
    """The span of consecutive inputs ``entries`` (each chained to the one before, as a session signs
    them: the receiver computes every ``prev`` but the first's, which travels)."""
    assert [e.frame for e in entries] == list(range(entries[0].frame, entries[0].frame + len(entries)))
    events = [canonical_events(tuple((skill, hold) for skill, hold in e.events)) for e in entries]
    return build_span(owner, entries[0].frame, entries[0].prev, events, [e.signature for e in entries])


def inputs_message(*entries: RaceInput, ack: int = -1, owner: str = OWN, want: Sequence[Want] = ()) -> RaceInputs:
    """A ``race-inputs`` carrying the consecutive inputs ``entries`` as one span (none: no span)."""
    return RaceInputs(ack, [span_of(entries, owner)] if entries else [], list(want))


def own_span(msg: object) -> InputSpan | None:
    """The span of the sender's own inputs in a ``race-inputs`` (None: another message, or none)."""
    if isinstance(msg, RaceInputs):
        return next((s for s in msg.spans if s.owner == OWN), None)
    return None


def with_own_span(msg: RaceInputs, span: InputSpan) -> RaceInputs:
    """``msg`` with its own span replaced by ``span``."""
    return RaceInputs(msg.ack, [span if s.owner == OWN else s for s in msg.spans], msg.want)


def alter_newest(span: InputSpan, *, toggle: int = 0, flip_signature: bool = False) -> InputSpan:
    """``span`` with its newest input's skills toggled by the bit mask ``toggle`` and/or one bit of its
    signature flipped (what a party in the middle or a hostile forwarder might do)."""
    runs = list(span.runs)
    if toggle:
        count, old = runs.pop()
        runs += [(count - 1, old)] if count > 1 else []
        runs.append((1, old ^ toggle))
    signatures = span.signatures
    if flip_signature:
        signatures = signatures[:-1] + bytes([signatures[-1] ^ 1])
    return InputSpan(span.owner, span.frame, span.prev, runs, signatures)


def newest_frame(span: InputSpan) -> int:
    return span.frame + span.count - 1


def identities(n: int) -> list[Identity]:
    return sorted((Identity(bytes([i + 1]) * 32) for i in range(n)), key=lambda ident: ident.peer_id)


def make_setup(ids: list[Identity], round_index: int = 0, **options: Any) -> RaceSetup:
    peers = [i.peer_id for i in ids]
    return RaceSetup(
        match_id=MATCH_ID,
        round_index=round_index,
        slots={p: k for k, p in enumerate(peers)},
        skills={p: CHIPS[k % len(CHIPS)] for k, p in enumerate(peers)},
        loadouts={p: loadout_digest({"car": k}) for k, p in enumerate(peers)},
        grid_context_digest="cd" * 32,
        grid_seed="5e" * 32,
        **options,
    )


def bot_events(skills: frozenset[str], peer: str, frame: int, seed: int) -> list[tuple[str, bool]]:
    """Deterministic per (seed, peer, frame): holds last ~10 frames, events are rare. Skills are drawn in
    sorted order: a frozenset's own order changes with PYTHONHASHSEED, and with it every run's inputs."""
    rng = random.Random(f"{seed}/{peer}/{frame // 10}")
    held = [s for s in sorted(skills) if s in HOLD and rng.random() < 0.4]
    rng = random.Random(f"{seed}/{peer}/{frame}")
    fired = [s for s in sorted(skills) if s not in HOLD and rng.random() < 0.05]
    return [(s, True) for s in held] + [(s, False) for s in fired]


class Mesh:
    """Sessions wired through a seeded router; records every action by node."""

    def __init__(self, n: int, *, seed: int = 1, max_delay_ms: int = 40, length: int = 600,
                 world_factory=None, faults: Mapping[int, int] | None = None, streams_inputs: bool = False,
                 bytes_per_s: int | None = None, **options: Any) -> None:
        self.ids = identities(n)
        self.peers = [i.peer_id for i in self.ids]
        self.rng = random.Random(seed)
        self.seed = seed
        self.max_delay_ms = max_delay_ms
        self.now = 0
        self.setup = make_setup(self.ids, **options)
        faults = faults or {}
        make_world = world_factory or (lambda k: CounterWorld(n, length, faults.get(k, -1)))
        self.worlds = {p: make_world(k) for k, p in enumerate(self.peers)}
        self.sessions = {
            i.peer_id: RaceSession(self.setup, i, self.worlds[i.peer_id], RaceKeyBook(self.peers),
                                   streams_inputs=streams_inputs)
            for i in self.ids
        }
        self.queue: list[tuple[int, int, str, str, bytes]] = []
        self.seq = 0
        self.last: dict[tuple[str, str], int] = {}
        self.down: set[frozenset[str]] = set()
        self.actions: dict[str, list[RaceAction]] = defaultdict(list)
        self.paused: set[str] = set()
        self.inputs_hook = None
        self.tamper = None  # (src, dst, message) -> message: a hostile or broken sender
        self.lose = None  # (src, dst, message) -> bool: True drops the message, as a rate limit would
        self.lost: list[tuple[str, str, object]] = []
        self.broken: list[tuple[str, MachineFault]] = []  # (node, the fault that broke its session)
        self.bytes_per_s = bytes_per_s  # each direction of each link carries at most this many bytes a second
        self.busy_until: dict[tuple[str, str], float] = {}  # a capped link: when it has sent what it was given
        self.sent_bytes: dict[tuple[str, str], int] = defaultdict(int)  # every link's bytes, frames included
        self.sent_kinds: dict[str, int] = defaultdict(int)  # bytes by message type
        for peer, session in self.sessions.items():
            self.handle(peer, session.start(self.now))

    # -- routing ---------------------------------------------------------------------------------

    def link_up(self, a: str, b: str) -> bool:
        return frozenset((a, b)) not in self.down

    def handle(self, src: str, actions: list[RaceAction]) -> None:
        for action in actions:
            self.actions[src].append(action)
            if isinstance(action, Send) and self.link_up(src, action.peer):
                if self.lose is not None and self.lose(src, action.peer, action.message):
                    self.lost.append((src, action.peer, action.message))
                    continue
                message = action.message if self.tamper is None else self.tamper(src, action.peer, action.message)
                self.seq += 1
                link = (src, action.peer)
                body = encode_message(message)
                self.sent_bytes[link] += len(body) + FRAME_OVERHEAD
                self.sent_kinds[message.TYPE] += len(body) + FRAME_OVERHEAD
                sent = self.now
                if self.bytes_per_s is not None:  # the link sends one message after the other at its rate
                    start = max(float(self.now), self.busy_until.get(link, 0.0))
                    self.busy_until[link] = start + (len(body) + FRAME_OVERHEAD) * 1000 / self.bytes_per_s
                    sent = int(self.busy_until[link])
                at = max(sent + self.rng.randint(0, self.max_delay_ms), self.last.get(link, 0))
                self.last[link] = at  # links are ordered streams (TCP); different links reorder freely
                heapq.heappush(self.queue, (at, self.seq, src, action.peer, body))

    def deliver(self) -> None:
        while self.queue and self.queue[0][0] <= self.now:
            _, _, src, dst, body = heapq.heappop(self.queue)
            if not self.link_up(src, dst):
                continue
            try:
                actions = self.sessions[dst].receive(src, decode_message(body), self.now)
            except MachineFault as fault:  # as the shell does: the broken session's end and leave go out
                self.broken.append((dst, fault))
                actions = fault.actions
            self.handle(dst, actions)

    def cut(self, group_a: Sequence[str], group_b: Sequence[str]) -> None:
        """Break every link between the two groups; each side is told at once."""
        for a in group_a:
            for b in group_b:
                self.down.add(frozenset((a, b)))
        for a in group_a:
            for b in group_b:
                self.handle(a, self.sessions[a].peer_lost(b, self.now))
                self.handle(b, self.sessions[b].peer_lost(a, self.now))

    def heal(self, group_a: Sequence[str], group_b: Sequence[str]) -> None:
        for a in group_a:
            for b in group_b:
                self.down.discard(frozenset((a, b)))
        for a in group_a:
            for b in group_b:
                self.handle(a, self.sessions[a].peer_reconnected(b, self.now))
                self.handle(b, self.sessions[b].peer_reconnected(a, self.now))

    # -- the pump --------------------------------------------------------------------------------

    def pump_once(self, peer: str, until: int) -> None:
        session = self.sessions[peer]
        for _ in range(4):
            if session.ended is not None or session.current_frame >= until:
                return
            if session.needs_local_input:
                frame = session.current_frame + session.setup.input_delay
                events = bot_events(session.setup.skills[peer], peer, frame, self.seed)
                if self.inputs_hook is not None:
                    events = self.inputs_hook(peer, frame, events)
                self.handle(peer, session.add_local_input(events, self.now))
            report = session.advance_frame(self.now)
            self.handle(peer, report.actions)
            if not report.stepped:
                return

    def run(self, ms: int, until: int = 1 << 30) -> None:
        end = self.now + ms
        while self.now < end:
            self.now += TICK_MS
            self.deliver()
            for peer in self.peers:
                if peer not in self.paused:
                    self.pump_once(peer, min(until, self.now // TICK_MS + 1))

    def run_to_end(self, limit_ms: int = 120_000) -> None:
        """Run until every live session's round is over (or it ended), then drain the network."""
        end = self.now + limit_ms
        while self.now < end and not all(self.round_over(p) for p in self.live()):
            self.run(TICK_MS)
        assert all(self.round_over(p) for p in self.live()), "the race did not finish in time"

    # -- observations ----------------------------------------------------------------------------

    def live(self) -> list[str]:
        return [p for p in self.peers if self.sessions[p].ended is None]

    def of(self, peer: str, kind: type) -> list[Any]:
        return [a for a in self.actions[peer] if isinstance(a, kind)]

    def round_over(self, peer: str) -> bool:
        return bool(self.of(peer, RoundEnded))

    def ended(self, peer: str) -> SessionEnded | None:
        found = self.of(peer, SessionEnded)
        return found[0] if found else None

    def state(self, peer: str) -> bytes:
        return self.worlds[peer].save_state()

    def confirmed_log(self, peer: str) -> dict[int, tuple]:
        """frame → (peer, events, signed?) of every confirmed frame, as the race log would hold it."""
        return {
            c.frame: tuple((i.peer, i.events, i.signed is not None) for i in c.inputs)
            for c in self.of(peer, FrameConfirmed)
        }


__all__ = [
    "CaughtUp", "CloseLink", "CounterWorld", "DesyncRecord", "FrameConfirmed", "InputsDropped", "Mesh", "Misbehaviour",
    "PeerLeft", "PeerRejoined", "RoundEnded", "Send", "SessionEnded", "VoteDecided", "WriteState", "bot_events",
    "identities", "make_setup",
]
