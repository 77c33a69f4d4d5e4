"""``RaceSession``: one round of signed input exchange with prediction, rollback and checksum votes.

Sans-IO in the manner of a GGRS P2P session: the shell adds the local input, hands over every message
with the link's authenticated peer, and calls ``advance_frame(now_ms)``, which steps at most one frame
(after any rollback) or says why it waits. Every call takes an explicit ``now_ms`` and returns
``RaceAction`` values (``protocol.race.actions``). Frames are per round; ``current_frame`` is the frame
about to be stepped, the world's ``frame``.

The session is composed like GGRS's ``P2PSession``: a ``SyncLayer`` owns the world and its saved states,
a ``PeerTable`` the peers' statuses, ``PeerInputs`` each peer's inputs, ``VoteBook`` the checksum votes,
``Recovery`` the disconnect and catch-up rules, ``AnchorRound`` the end-of-round anchor. The layers are
called one way: the session calls them and none of them calls the session. ``Recovery`` returns what it
wants of the session as typed decisions (``protocol.race.decisions``: admit a relayed input, recompute
the frontier, relay a peer's held inputs, send a snapshot, restart at a snapshot, end), which ``_apply``
carries out in order between the actions it passes through.

Finality: a frame is *confirmed* once no message can change it: every active peer's real input is in,
and predictions of lost or removed peers are outside the input window. A connected peer is predicted
for at most ``max_prediction`` frames, then the session waits (0 = lockstep), so a prediction of a
connected peer never becomes final. Votes, the race log and catch-up offers only use confirmed frames.
Nothing unverified becomes final either: an input taken from its owner's own (authenticated) link is
stepped with at once but its signature is checked later, for a run at a time (``_settle``: one
signature covers the run through the inputs' ``prev`` chain), and a frame is confirmed only once every
input of it is verified; relayed inputs are verified on arrival.

Liveness (docs/race.md, "A race never hangs"): every ``race-inputs`` carries this node's inputs that the
receiver has neither acknowledged nor been sent yet, as compact spans, and an ``ack`` of the receiver's
inputs; an input whose acknowledgement stands still for ``RESEND_MS`` is sent again (``InputStreams``).
A peer whose link to another is down asks the others to forward that one's inputs (``want``), so no
single broken link makes the two ends predict each other while the rest confirm real inputs. A progress
watchdog probes a peer whose next needed input has not arrived for ``PROBE_AFTER_MS`` and treats one that
makes no progress for the reconnect window as lost, so the recovery rules always get to decide.

Faults: what a peer sent is refused with a ``PeerError`` inside a handler, which ``receive`` turns into
that peer's ``Misbehaviour``; a misuse by this node's own shell (or a bug) raises ``LocalError`` out of
the call, and is never blamed on a peer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from protocol.encoding.dagcbor import signing_digest
from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.transaction import FaultOutcome, MachineFault
from protocol.identity.consensus import canonical_peers, quorum
from protocol.identity.ed25519 import PublicKey
from protocol.identity.keys import Identity
from protocol.identity.keys import race_id as make_race_id
from protocol.race.actions import (
    ChecksumVoted, CloseLink, ConfirmedInput, DesyncDetected, DesyncRecord, FrameConfirmed, FrameReport, InputsDropped,
    Misbehaviour, RaceAction, RoundEnded, Send, SessionEnded, SessionEndReason, VoteDecided, WaitReason, WriteState,
)
from protocol.race.anchor import AnchorFacts, AnchorRound
from protocol.race.decisions import (
    AdmitRelayed, CheckedInputs, EndSession, RecomputeFrontier, RecoveryStep, RelayHeldInputs, RestartAt, SendSnapshot,
)
from protocol.race.forwarding import InputForwarding, signed_records
from protocol.race.inputs import (
    INPUT_WINDOW_BEHIND, NO_EVENTS, STATE_BUFFER_FRAMES, PeerInputs, input_prev, input_window_end, parse_events,
    wire_events,
)
from protocol.race.keys import RaceKeyBook, announce, signed_leave, verify_race_signature
from protocol.race.messages import (
    MAX_INPUTS_PER_MESSAGE, InputSpan, LeaveReason, RaceAnchorProposal, RaceAnchorSignature, RaceChecksum, RaceInput,
    RaceInputProbe, RaceInputs, RaceKey, RaceLeave, RaceOffer, RaceProbe, RaceRejoin, RaceRelay, RaceResume,
    RaceSnapshot, RaceSyncRequest, Want,
)
from protocol.race.peers import ACTIVE, LOST, REJOINING, REMOVED, PeerStatus, PeerTable
from protocol.race.recovery import RECONNECT_WINDOW_MS, Recovery
from protocol.race.setup import RaceSetup, RaceWorld
from protocol.race.signing import NO_PREVIOUS_INPUT, Event, checksum_digest, input_digest, leave_digest
from protocol.race.spans import OWN, span_entries
from protocol.race.streams import InputStreams
from protocol.race.sync import SyncLayer
from protocol.race.votes import STRIKE_LIMIT, VOTE_INTERVAL_FRAMES, VoteBook, VoteKind
from protocol.identity.keys import PeerId

OWN_INPUT_HISTORY = 64
PENDING_BEFORE_KEY = 64
PROBE_AFTER_MS = 2_000
"""The watchdog probes a peer whose next needed input (or race key) has not arrived for this long."""
NO_PROGRESS_LOST_MS = RECONNECT_WINDOW_MS
"""A linked peer that makes no progress for this long is treated as lost (its link is closed)."""
VERIFY_LAG_FRAMES = 6
"""An input taken from its owner's own link may wait this many frames behind the frame about to be
stepped before its signature is checked (docs/race.md, "Chained inputs"): by then the owner's later
inputs are in, and one verified signature covers the whole run. Below ``STATE_BUFFER_FRAMES`` with room
for a tick's catch-up steps, so a run whose signature fails can always be rolled back out."""
SELF_STALL_MS = 1_000
"""A gap this long between two ticks means this node itself did not run (stopped, swapped out): the
watchdog's clocks restart rather than blame the peers for the time this node was away."""

@dataclass(frozen=True, slots=True)
class InputEntry:
    """One input as the session takes it: the signed message, its canonical events and its digest."""

    signed: RaceInput
    events: tuple[Event, ...]
    digest: bytes


Handler = Callable[[PeerId, Any, int], list[RaceAction]]
"""A message handler: ``(peer, message, now_ms) -> actions``, raising ``PeerError`` for a bad message."""
RecoveryHandler = Callable[[PeerId, Any, int], Sequence[RecoveryStep]]
"""A ``Recovery`` message handler: like ``Handler``, returning the steps for ``RaceSession._apply``."""


class RaceStats:
    """Counters for the shell and benchmarks: ``steps`` counts world steps including re-simulation,
    ``rollback_frames`` the re-simulated ones; ``last_rollback`` is the depth of the newest rollback;
    ``signatures_checked`` the Ed25519 verifications of the peers' inputs and votes.

    Liveness counters: ``drops`` counts every input or message this session refused or set aside, by
    reason (a ``Misbehaviour`` code, or an ``InputsDropped`` reason, one per input); ``redundant_inputs``
    the copies of inputs already held (the price of redundancy, not a loss); ``resends`` the
    ``race-inputs`` re-sent by the retry timer; ``probes_sent`` / ``probes_answered`` the watchdog's
    probes; ``watchdog_lost`` the peers it treated as lost."""

    __slots__ = ("steps", "predicted_inputs", "rollbacks", "rollback_frames", "max_rollback", "last_rollback",
                 "signatures_checked", "drops", "redundant_inputs", "resends", "probes_sent", "probes_answered", "watchdog_lost")

    def __init__(self) -> None:
        self.steps = self.predicted_inputs = self.rollbacks = 0
        self.rollback_frames = self.max_rollback = self.last_rollback = self.signatures_checked = 0
        self.drops: dict[str, int] = {}
        self.redundant_inputs = self.resends = self.probes_sent = self.probes_answered = self.watchdog_lost = 0

    def drop(self, reason: str, count: int = 1) -> None:
        """Count ``count`` refused or set-aside items for ``reason``."""
        self.drops[reason] = self.drops.get(reason, 0) + count

    def liveness(self) -> dict[str, Any]:
        """The liveness counters as plain data (the ``result`` event and the race log)."""
        return {"drops": dict(sorted(self.drops.items())), "redundant_inputs": self.redundant_inputs,
                "resends": self.resends, "probes_sent": self.probes_sent, "probes_answered": self.probes_answered,
                "watchdog_lost": self.watchdog_lost}


class RaceSession:
    """One node's side of one race round (see the module docstring and docs/race.md).

    Raises ``LocalError`` ``race-setup-invalid`` when this node is not on the setup's roster, or its own
    race key cannot be recorded in ``keys``. ``streams_inputs``: this node forwards every confirmed input to
    spectators (its room admits them), so each input's own signature is checked as it arrives (see
    ``_chained``). The session reads no clock: the shell measures what its calls cost."""

    def __init__(self, setup: RaceSetup, identity: Identity, world: RaceWorld, keys: RaceKeyBook, *,
                 streams_inputs: bool = False) -> None:
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
        self._chained = setup.max_prediction > 0 and not streams_inputs
        """Whether inputs from their owners' own links are verified a run at a time (``_settle``). Not in
        lockstep, where every step is final at once, nor for a node that streams every confirmed input to
        spectators (``streams_inputs``): a viewer checks each input's own signature, and a chain proves an
        input's content, not that the signature it came with is valid."""
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
        self._pending: dict[PeerId, dict[int, RaceInput]] = {p: {} for p in self.others}
        self._streams = InputStreams(self.me, self.others, self._inputs, self._peers.active_from)
        self._progress: dict[PeerId, tuple[int, int]] = {}  # peer -> (its contiguous frame, since when), the watchdog's
        self._probed: dict[PeerId, int] = {}  # peer -> when the watchdog last probed it
        self._last_tick: int | None = None
        self._sync = SyncLayer(world)
        self._frontier = world.frame - 1
        self._confirmed = world.frame - 1
        self._rollback_to: int | None = None
        self._votes = VoteBook(self.me)
        self._own_hashes: dict[int, bytes] = {}
        self._round_ended = False
        self._anchor: AnchorRound | None = None
        self._early_anchor: list[tuple[PeerId, RaceAnchorProposal | RaceAnchorSignature]] = []
        self._forwarding = InputForwarding(self.race_id, self.me, keys, self._skills)
        self._recovery = Recovery(setup=setup, race_id=self.race_id, race_key=self._key, keys=keys, peers=self._peers,
                                  inputs=self._inputs, sync=self._sync, forwarding=self._forwarding)
        recovery, applied = self._recovery, self._applied
        self._handlers: dict[type, Handler] = {
            RaceInputs: self._on_inputs, RaceInputProbe: self._on_input_probe, RaceChecksum: self._on_checksum,
            RaceKey: self._on_key, RaceLeave: self._on_leave,
            RaceAnchorProposal: self._on_anchor_message, RaceAnchorSignature: self._on_anchor_message,
            RaceRejoin: self._on_rejoin, RaceRelay: applied(recovery.on_relay), RaceResume: applied(recovery.on_resume),
            RaceProbe: recovery.on_probe, RaceOffer: applied(recovery.on_offer),
            RaceSyncRequest: applied(recovery.on_sync_request), RaceSnapshot: applied(recovery.on_snapshot),
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

    def vote_state(self, frame: int) -> bytes | None:
        """This node's saved state right after vote frame ``frame`` (the one its signed vote hashes), while
        the session keeps it (two vote intervals): what a spectator source offers as its checkpoint."""
        try:
            return self._sync.kept(frame + 1)
        except KeyError:
            return None

    def status(self, peer: PeerId) -> PeerStatus:
        """``peer``'s status in this round. Raises ``LocalError`` ``race-unknown-peer`` for a peer off the roster."""
        status = self._peers.statuses.get(peer)
        if status is None:
            raise LocalError("race-unknown-peer", f"{peer} is not on this round's roster")
        return status

    def next_deadline_ms(self) -> int | None:
        """When ``tick`` next has a timer to fire (a reconnect window closing, a catch-up retry, the
        anchor's proposal slot or timeout, a re-send of unacknowledged inputs, the watchdog's probe or
        verdict), or None when no timer runs. Between frames, e.g. while the shell waits for the round's
        anchor, it ticks at this deadline instead of on a fixed period."""
        if self.ended is not None:
            return None
        deadlines = [d for d in (self._recovery.next_deadline_ms(),
                                 None if self._anchor is None else self._anchor.next_deadline_ms()) if d is not None]
        streams = self._streams.next_deadline_ms(self._linked_others())
        if streams is not None:
            deadlines.append(streams)
        for peer in self._peers.active_others():
            progress = self._progress.get(peer)
            if progress is not None and self._watching():
                probed = self._probed.get(peer)
                deadlines.append(progress[1] + PROBE_AFTER_MS if probed is None else probed + PROBE_AFTER_MS)
                deadlines.append(progress[1] + NO_PROGRESS_LOST_MS)
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
            actions += self._sign_local(frame, NO_EVENTS, now_ms)
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
        return self._sign_local(self._sync.current_frame + self.setup.input_delay, parsed, now_ms)

    def leave(self, reason: LeaveReason, now_ms: int) -> list[RaceAction]:
        """Leave the race (``voluntary`` or ``disconnect``): tell everyone, then end as ``left``. Raises
        ``LocalError`` ``race-leave-invalid`` for a reason that is not a ``LeaveReason``."""
        parsed = LeaveReason.parse(reason)
        if parsed is None:
            raise LocalError("race-leave-invalid", f"a leave reason is one of {', '.join(LeaveReason)}")
        if self.ended is not None:
            return []
        return (self._broadcast(signed_leave(self._key, self.race_id, parsed))
                + self._end(SessionEndReason.LEFT, "this node left the race", {"reason": parsed.value}))

    def peer_lost(self, peer: PeerId, now_ms: int) -> list[RaceAction]:
        """The link to ``peer`` broke: it is still waited for during ``LINK_GRACE_MS`` (a new link in time
        changes nothing), then predicted for the reconnect window (``tick`` runs both timers). Every other
        linked peer is told at once that this node wants ``peer``'s inputs forwarded."""
        if self.ended is not None or peer not in self._pending:
            return []
        self._streams.forget(peer)
        actions = self._counted(self._apply(self._recovery.link_lost(peer, now_ms), now_ms))
        if self.ended is None and peer in self._recovery.unlinked:
            actions += self._send_inputs(self._linked_others(), now_ms)
        return actions

    def peer_reconnected(self, peer: PeerId, now_ms: int) -> list[RaceAction]:
        """A new link to ``peer`` is up: announce this round's race key again (the first announce may
        have gone down with the old link), then tell it who we race as and where we are."""
        if self.ended is not None or peer not in self._pending:
            return []
        self._progress.pop(peer, None)
        self._probed.pop(peer, None)
        self._streams.forget(peer)
        return [Send(peer, self._announce), *self._recovery.peer_reconnected(peer, now_ms)]

    def tick(self, now_ms: int) -> list[RaceAction]:
        """Timers: reconnect windows (the partition guard), catch-up retries, the anchor's slots and
        timeout, re-sends of unacknowledged inputs and the progress watchdog."""
        # every timer checks ``self.ended`` itself, as any of them may end the session
        actions: list[RaceAction] = []
        if self.ended is None:
            actions += self._counted(self._apply(self._recovery.tick(now_ms), now_ms))
        if self.ended is None and self._anchor is not None:
            actions += self._anchor.tick(now_ms)
        if self.ended is None:
            actions += self._watchdog(now_ms)
        if self.ended is None:
            actions += self._flush(now_ms)
        return actions

    # ---- liveness: re-sends and the progress watchdog ---------------------------------------------

    def _linked_others(self) -> list[PeerId]:
        """The active peers whose link is up: those a ``race-inputs`` can reach."""
        unlinked = self._recovery.unlinked
        return [p for p in self._peers.active_others() if p not in unlinked]

    def _wants(self, peer: PeerId) -> list[Want]:
        """What this node asks ``peer`` to forward: the inputs of each active peer whose link to this node
        is down (not ``peer``'s own), with this node's ack of each."""
        return [Want(owner, self._ack_of(owner)) for owner in self._recovery.unlinked if owner != peer]

    def _forwarded_to(self, peer: PeerId) -> list[PeerId]:
        """The owners whose inputs this node forwards to ``peer`` if it wants them: every other racer not
        removed, in roster order (a lost one's held inputs too: the survivors then hold the same)."""
        statuses = self._peers.statuses
        return [o for o in self.others if o != peer and statuses[o] is not REMOVED]

    def _inputs_for(self, peer: PeerId, now_ms: int) -> RaceInputs:
        """The ``race-inputs`` for ``peer`` now (``InputStreams.message``)."""
        return self._streams.message(peer, self._ack_of(peer), self._wants(peer), self._forwarded_to(peer), now_ms)

    def _ack_of(self, peer: PeerId) -> int:
        return self._inputs[peer].contiguous(self._peers.active_from[peer])

    def _send_inputs(self, peers: Iterable[PeerId], now_ms: int) -> list[RaceAction]:
        resends = self._streams.resends
        actions: list[RaceAction] = [Send(peer, self._inputs_for(peer, now_ms)) for peer in peers]
        self.stats.resends += self._streams.resends - resends
        return actions

    def _flush(self, now_ms: int) -> list[RaceAction]:
        """A ``race-inputs`` to each linked peer that is due one between this node's own (``InputStreams.due``):
        a lost or set-aside input is repaired even while nobody steps, and forwarded inputs go on while this
        node waits."""
        return self._send_inputs([p for p in self._linked_others() if self._streams.due(p, now_ms)], now_ms)

    def _watching(self) -> bool:
        """Whether the watchdog runs: this node takes inputs and its round has not ended."""
        return self.ended is None and not self._recovery.catching_up and not self._round_ended

    def _owed(self, peer: PeerId) -> int | None:
        """The frame of ``peer`` this node waits for (-1 for its race key), or None when nothing of it
        is missing: its real inputs are held up to the frame before the current one."""
        if self.keys.key(self.race_id, peer) is None:
            return -1
        through = self._ack_of(peer)
        return through + 1 if through < self._sync.current_frame - 1 else None

    def _watchdog(self, now_ms: int) -> list[RaceAction]:
        """Probe an active peer whose next needed input (or race key) has not arrived for
        ``PROBE_AFTER_MS``; treat one that made no progress for ``NO_PROGRESS_LOST_MS`` as lost (its
        link is closed and the recovery rules decide: reconnect, catch-up, partition, void)."""
        last, self._last_tick = self._last_tick, now_ms
        if not self._watching():
            self._progress.clear()
            return []
        if last is None or now_ms - last >= SELF_STALL_MS:
            self._progress.clear()  # this node was away: the peers' clocks restart
        actions: list[RaceAction] = []
        for peer in self._peers.active_others():
            owed = self._owed(peer)
            progress = self._progress.get(peer)
            if owed is None:
                self._progress.pop(peer, None)
                self._probed.pop(peer, None)
                continue
            if progress is None or progress[0] != owed:
                self._progress[peer] = (owed, now_ms)
                self._probed.pop(peer, None)
                continue
            waited = now_ms - progress[1]
            if waited >= NO_PROGRESS_LOST_MS:
                self.stats.watchdog_lost += 1
                self._progress.pop(peer, None)
                self._probed.pop(peer, None)
                actions.append(CloseLink(peer, "race-no-progress"))
                actions += self._apply(self._recovery.peer_lost(peer, now_ms), now_ms)
            elif waited >= PROBE_AFTER_MS and now_ms - self._probed.get(peer, progress[1]) >= PROBE_AFTER_MS:
                self._probed[peer] = now_ms
                self.stats.probes_sent += 1
                has_key = self.keys.key(self.race_id, peer) is not None
                actions.append(Send(peer, RaceInputProbe(self._ack_of(peer) if has_key else -1, has_key)))
        return actions

    # ---- messages --------------------------------------------------------------------------------

    def receive(self, peer: PeerId, msg: object, now_ms: int) -> list[RaceAction]:
        """Handle one decoded message from the link's authenticated ``peer``.

        Never raises for what a peer sent: a message that breaks a rule (a ``PeerError`` in its handler)
        is dropped with a ``Misbehaviour`` action. A bug of this node (any other exception, a
        ``LocalError`` included) breaks the session: it may have changed the inputs, the world or the
        votes halfway, and a copy of all that before each message would cost hundreds of times the
        message's work, so the session is not put back but ends (``internal-error``), tells its peers it
        leaves, and raises ``MachineFault`` (outcome ``broken``) carrying those actions."""
        if self.ended is not None or peer not in self._pending:
            return []
        handler = self._handlers.get(type(msg))
        if handler is None:
            actions: list[RaceAction] = [Misbehaviour(peer, "race-unexpected-message")]
        else:
            try:
                actions = handler(peer, msg, now_ms)
            except PeerError as exc:
                actions = [Misbehaviour(peer, exc.code)]
            except Exception as exc:
                raise MachineFault("the race session", peer, FaultOutcome.BROKEN, exc, self._break_down(exc)) from exc
        for action in actions:
            if isinstance(action, Misbehaviour):
                self.stats.drop(action.code)
        return actions

    def _on_key(self, peer: PeerId, msg: RaceKey, now_ms: int) -> list[RaceAction]:
        added = self.keys.add(peer, msg)
        if not added or msg.raceId != self.race_id:
            return []
        pending, self._pending[peer] = self._pending[peer], {}
        return self._take_own(peer, [self._entry(peer, pending[f]) for f in sorted(pending)], now_ms)

    def _entry(self, owner: PeerId, msg: RaceInput) -> InputEntry:
        """A single input of ``owner`` (kept before its key, or relayed) with its events and digest.
        Raises ``PeerError`` for events or a ``prev`` that break the input rules."""
        events = parse_events(msg.events, self._skills[owner])
        prev = input_prev(msg.prev)
        digest = input_digest(self.race_id, msg.frame, events, prev)
        return InputEntry(msg, events, digest)

    def _on_inputs(self, peer: PeerId, msg: RaceInputs, now_ms: int) -> list[RaceAction]:
        """A peer's spans (its own inputs, and others' it forwards), its ack of ours and its wants. Each
        input is taken or refused on its own: a refused one (a ``Misbehaviour``) or one set aside
        (``InputsDropped``) is not acknowledged, so it comes again."""
        if sum(span.count for span in msg.spans) > MAX_INPUTS_PER_MESSAGE:
            raise ProtocolError("race-inputs-too-many", f"a race-inputs carries at most {MAX_INPUTS_PER_MESSAGE} inputs")
        owners = [span.owner for span in msg.spans]
        if len(set(owners)) != len(owners) or len(msg.want) > len(self.peers):
            raise ProtocolError("race-inputs-invalid", "a race-inputs has at most one span per owner and one want per peer")
        self._streams.acknowledge(peer, msg.ack, now_ms)
        actions = self._on_wants(peer, msg.want, now_ms)
        for span in msg.spans:
            if self.ended is not None:
                break
            try:
                if span.owner == OWN:
                    actions += self._take_own_span(peer, span, now_ms)
                else:
                    actions += self._take_forwarded(peer, span, now_ms)
            except PeerError as exc:
                actions.append(Misbehaviour(peer, exc.code))
        if msg.spans:
            self._streams.owe_ack(peer, now_ms)
        return actions

    def _on_wants(self, peer: PeerId, wants: list[Want], now_ms: int) -> list[RaceAction]:
        """``peer``'s link to each wanted owner is down: forward it that owner's inputs from its ack on,
        for as long as it keeps asking (every ``race-inputs`` restates the wants). An owner newly wanted has
        its pending inputs verified first (only verified inputs are forwarded), and from then on each of
        its inputs is verified as it arrives. Raises ``ProtocolError`` ``race-inputs-invalid`` for a want
        of a peer off the roster, of itself, of this node, or twice."""
        asked: dict[PeerId, int] = {}
        for want in wants:
            if want.peer not in self._pending or want.peer == peer or want.peer in asked:
                raise ProtocolError("race-inputs-invalid", "a want names another racer, once")
            asked[want.peer] = want.ack
        actions: list[RaceAction] = []
        if self._peers.statuses[peer] is not ACTIVE:
            asked = {}
        for owner in self._streams.want(peer, asked, now_ms):
            actions += self._settle(owner)
        return self._counted(actions)

    def _span_entries(self, sender: PeerId, span: InputSpan, owner: PeerId | None = None) -> list[InputEntry]:
        """The inputs of ``span`` (of ``owner``, by default the sender), each with its ``prev`` chained and
        its digest; none when the span leaves out the ``prev`` of an input this node does not hold (set
        aside by the caller). Raises ``PeerError`` for a malformed span."""
        owner = sender if owner is None else owner
        raw = span_entries(span, self._skills[owner])
        prev = input_prev(span.prev) if span.prev else self._inputs[owner].digests.get(span.frame - 1)
        if prev is None:
            return []
        entries = []
        race_id = self.race_id
        for frame, events, signature in raw:
            digest = input_digest(race_id, frame, events, prev)
            entries.append(InputEntry(RaceInput(frame, wire_events(events), prev, signature), events, digest))
            prev = digest
        return entries

    def _take_own_span(self, peer: PeerId, span: InputSpan, now_ms: int) -> list[RaceAction]:
        """``peer``'s own inputs: taken one by one; set aside whole when the span leaves out the ``prev``
        of an input this node does not hold (a message before it was lost or set aside: the peer sends
        them again from this node's ack)."""
        entries = self._span_entries(peer, span)
        if not entries:
            return self._dropped(peer, {"race-input-unchained": [span.frame + i for i in range(span.count)]})
        return self._take_own(peer, entries, now_ms)

    def _take_own(self, peer: PeerId, entries: Iterable[InputEntry], now_ms: int) -> list[RaceAction]:
        """``peer``'s own inputs, from its own link: each taken (``_take_input``), set aside or refused."""
        actions: list[RaceAction] = []
        dropped: dict[str, list[int]] = {}
        for entry in entries:
            try:
                reason = self._take_input(peer, entry, now_ms)
            except PeerError as exc:
                actions.append(Misbehaviour(peer, exc.code))
                continue
            if isinstance(reason, list):
                actions += reason
                if self.ended is not None:
                    break
            elif reason is not None:
                dropped.setdefault(reason, []).append(entry.signed.frame)
        return actions + self._dropped(peer, dropped)

    def _dropped(self, peer: PeerId, dropped: dict[str, list[int]]) -> list[RaceAction]:
        """``InputsDropped`` for the inputs of ``peer``'s message set aside, by reason, counted."""
        actions: list[RaceAction] = []
        for reason, frames in dropped.items():
            self.stats.drop(reason, len(frames))
            actions.append(InputsDropped(peer, reason, tuple(frames)))
        return actions

    def _set_aside(self, owner: PeerId, frame: int) -> str | None:
        """Why ``owner``'s input of ``frame`` cannot be taken now, without anyone's fault (None: it can)."""
        if self._recovery.catching_up:
            return "race-input-catching-up"  # this node's frames are about to be replaced
        if self._peers.statuses[owner] is not ACTIVE or frame < self._peers.active_from[owner]:
            return "race-input-not-active"
        if frame < self._sync.current_frame - INPUT_WINDOW_BEHIND:
            return "race-input-stale"
        if frame > self._window_end():
            return "race-input-ahead"  # this node is behind (it was stopped, say): no fault of the sender
        return None

    def _held_copy(self, owner: PeerId, entry: InputEntry, *, by_digest: bool = False) -> bool:
        """Whether ``entry`` is a copy of an input of ``owner`` already held (the same events and signature;
        ``by_digest``: the same signed digest, whatever signature it came with), or of one held in order
        and pruned since: nothing to learn from it, counted as redundant."""
        buffer = self._inputs[owner]
        frame = entry.signed.frame
        known = buffer.message(frame)
        if known is None:
            return frame <= buffer.through
        if by_digest:
            return buffer.digests[frame] == entry.digest
        return known.signature == entry.signed.signature and buffer.real[frame] == entry.events

    def _take_input(self, peer: PeerId, entry: InputEntry, now_ms: int) -> list[RaceAction] | str | None:
        """Admit one input of ``peer`` from its own link: the actions of admitting it, or the reason it was
        set aside, or None for a copy of an input already held. Raises ``PeerError`` for one that breaks a
        rule."""
        if self._held_copy(peer, entry):
            self.stats.redundant_inputs += 1
            return None
        frame = entry.signed.frame
        reason = self._set_aside(peer, frame)
        if reason is not None:
            return reason
        if self.keys.key(self.race_id, peer) is None:
            pending = self._pending[peer]
            if frame not in pending and len(pending) >= PENDING_BEFORE_KEY:
                raise ProtocolError("race-input-before-key", "inputs arrived before the peer's race key")
            pending.setdefault(frame, entry.signed)
            return []
        actions = self._admit(peer, entry, own_link=True)
        if frame in self._inputs[peer].signed:
            self._streams.held(peer, now_ms)
        return actions

    def _take_forwarded(self, sender: PeerId, span: InputSpan, now_ms: int) -> list[RaceAction]:
        """``sender`` forwards inputs of another racer (its link to this node is down, or this node asked).
        Each hop verifies the owner's signatures: here the span's newest input's signature, which covers
        every input of the span through the ``prev`` chain this node computed (one check per span), or,
        for a node that forwards this owner itself or streams to spectators, every new input's own (the
        next hop checks them alone). A span that does not verify is ``sender``'s misbehaviour, whole; the
        owner is not blamed, and nothing of it is kept. Inputs outside the window, of an owner not active
        here or whose race key this node lacks are set aside; copies of held inputs are skipped."""
        owner = PeerId(span.owner)
        if owner not in self._inputs or owner == sender:
            raise ProtocolError("race-inputs-invalid", "a forwarded span names another racer")
        if owner == self.me:
            return []  # this node's own inputs, back: nothing to learn
        entries = self._span_entries(sender, span, owner)
        if not entries:
            return self._dropped(sender, {"race-input-unchained": [span.frame + i for i in range(span.count)]})
        dropped: dict[str, list[int]] = {}
        key = self.keys.key(self.race_id, owner)
        fresh: list[InputEntry] = []
        for entry in entries:
            if self._held_copy(owner, entry, by_digest=True):  # another signature for it teaches nothing
                self.stats.redundant_inputs += 1
                continue
            frame = entry.signed.frame
            reason = self._set_aside(owner, frame) or (None if key is not None else "race-input-no-key")
            if reason is not None:
                dropped.setdefault(reason, []).append(frame)
            else:
                fresh.append(entry)
        actions = self._dropped(sender, dropped)
        if not fresh or key is None:
            return actions
        individually = not self._chained or self._streams.wanted(owner)
        if individually:
            kept = []
            for entry in fresh:
                if self._verify(key, entry.digest, entry.signed.signature):
                    kept.append(entry)
                else:
                    actions.append(Misbehaviour(sender, "race-input-bad-signature"))
            fresh = kept
        else:
            anchor = entries[-1]
            held = self._inputs[owner].signed.get(anchor.signed.frame)
            proven = held is not None and self._inputs[owner].digests[anchor.signed.frame] == anchor.digest
            if not proven and not self._verify(key, anchor.digest, anchor.signed.signature):
                return actions + [Misbehaviour(sender, "race-input-bad-signature")]
        newest = entries[-1].signed.frame
        for entry in fresh:
            actions += self._admit(owner, entry, verified=True, checked=individually or entry.signed.frame == newest)
            if self.ended is not None:
                return actions
            self._recovery.relayed_admitted(owner, entry.signed.frame, now_ms)
        self._streams.held(owner, now_ms)
        return actions

    def _on_input_probe(self, peer: PeerId, msg: RaceInputProbe, now_ms: int) -> list[RaceAction]:
        """The peer's watchdog waits for this node's next input (or race key): answer at once with this
        node's inputs from the peer's ack on, sent again, and its ack of the peer's (and the key announce
        if asked)."""
        if self._peers.statuses[peer] is REMOVED:
            return []
        self._streams.acknowledge(peer, msg.ack, now_ms)
        self._streams.go_back(peer)
        self.stats.probes_answered += 1
        actions: list[RaceAction] = [] if msg.hasKey else [Send(peer, self._announce)]
        return actions + self._send_inputs([peer], now_ms)

    def _admit(self, peer: PeerId, entry: InputEntry, *, own_link: bool = False, verified: bool = False,
               checked: bool = False) -> list[RaceAction]:
        """Store one input of ``peer`` whose frame is inside the window (its events already checked, its
        digest computed). Its signature is checked now unless it is ``verified`` already (a forwarded
        span's; ``checked``: by its own signature), or it came on ``peer``'s own link (``own_link``), the
        session steps ahead of the lockstep and nobody wants it forwarded: then it waits in ``pending``
        for ``_settle``. A different input of a frame already held must verify on its own (``_conflict``)."""
        msg, events, digest = entry.signed, entry.events, entry.digest
        frame = msg.frame
        key = self.keys.key(self.race_id, peer)
        buffer = self._inputs[peer]
        known = buffer.real.get(frame)
        if known is not None:
            held = buffer.message(frame)
            if known == events and held is not None and held.signature == msg.signature:
                return []
            if key is None or not self._verify(key, digest, msg.signature):  # a conflict is proven by its own
                raise ProtocolError("race-input-bad-signature", "the input is not signed by the peer's race key")
            if known != events:
                return self._conflict(peer, msg, digest)
            if digest == buffer.digests[frame]:  # the value held, with a signature that verifies: keep this one
                (buffer.pending if frame in buffer.pending else buffer.signed)[frame] = msg
            return []
        if key is None:
            raise ProtocolError("race-input-bad-signature", "the input is not signed by the peer's race key")
        if verified:
            buffer.add(frame, events, msg, digest, checked)
        elif own_link and self._chained and not self._streams.wanted(peer):
            buffer.hold(frame, events, msg, digest)
        elif self._verify(key, digest, msg.signature):
            buffer.add(frame, events, msg, digest)
        else:
            raise ProtocolError("race-input-bad-signature", "the input is not signed by the peer's race key")
        self._note_real(buffer, frame, events)
        self._advance_frontier()
        return []

    def _note_real(self, buffer: PeerInputs, frame: int, events: tuple[Event, ...]) -> None:
        """A real input of a frame already stepped with a different prediction: roll back to it."""
        predicted = buffer.predicted.get(frame)
        if predicted is not None and predicted != events:
            self._roll_back_to(frame)

    def _roll_back_to(self, frame: int) -> None:
        """Re-simulate from ``frame`` at the next ``advance_frame`` if it was stepped already (the earliest
        such frame wins)."""
        if frame < self._sync.current_frame and (self._rollback_to is None or frame < self._rollback_to):
            self._rollback_to = frame

    def _conflict(self, peer: PeerId, msg: RaceInput, digest: bytes) -> list[RaceAction]:
        """A second, different input of ``peer``, verified, for a frame it already has one for. The held
        one's own signature decides: valid, the peer signed two values (equivocation, both messages the
        evidence); not valid while still pending, it was never the peer's and the new one replaces it
        (``race-input-bad-signature``); not valid but proven by the chain of a later input, the peer
        still stood behind it (equivocation)."""
        buffer, frame = self._inputs[peer], msg.frame
        key = self.keys.key(self.race_id, peer)
        held = buffer.pending.get(frame)
        if held is not None and (key is None or not self._verify(key, buffer.digests[frame], held.signature)):
            self._drop_pending(peer, frame)
            events = parse_events(msg.events, self._skills[peer])
            buffer.add(frame, events, msg, digest)
            self._note_real(buffer, frame, events)
            self._advance_frontier()
            return [Misbehaviour(peer, "race-input-bad-signature")]
        return self._end(SessionEndReason.EQUIVOCATION, f"{peer} signed two different inputs for frame {frame}", {
            "peer": peer, "frame": frame, "first": held or buffer.signed[frame], "second": msg,
        })

    def _settle(self, peer: PeerId, through: int | None = None) -> list[RaceAction]:
        """Check the signatures of ``peer``'s pending inputs (those up to frame ``through``, or all),
        newest first: one that verifies makes every pending input below it that its ``prev`` chain
        reaches (digest by digest, each computed here from the input held) verified too, so an unbroken
        run costs one check. One that fails is the peer's own forgery on its own link: it is discarded
        with every pending input its chain links it to, below and above (they were chained onto it, or it
        onto them: what the peer signed is not known), the frames predicted again (rolled back if they
        were stepped) and asked for again, and refused once as ``race-input-bad-signature``.

        ``_settle_due`` bounds ``through`` by the frames already stepped: they all become final (and
        logged) unless the session ends, so the input whose signature proves a run is in the race log
        whenever the run is (the replay checks the log by the same rule)."""
        buffer = self._inputs[peer]
        pending, digests = buffer.pending, buffer.digests
        key = self.keys.key(self.race_id, peer)
        actions: list[RaceAction] = []
        while pending:
            frame = max(pending) if through is None else max((f for f in pending if f <= through), default=-1)
            if frame < 0:
                break
            if key is not None and self._verify(key, digests[frame], pending[frame].signature):
                linked = buffer.verified(frame, checked=True)
                while frame - 1 in pending and digests[frame - 1] == linked.prev:
                    frame -= 1
                    linked = buffer.verified(frame, checked=False)
                continue
            low = high = frame
            while low - 1 in pending and digests[low - 1] == pending[low].prev:
                low -= 1
            while high + 1 in pending and pending[high + 1].prev == digests[high]:
                high += 1
            for discarded in range(low, high + 1):
                buffer.discard(discarded)
            self._roll_back_to(low)
            self._recompute_frontier()
            actions.append(Misbehaviour(peer, "race-input-bad-signature"))
        return actions

    def _drop_pending(self, peer: PeerId, frame: int) -> None:
        """Discard ``peer``'s pending input of ``frame``, whose signature failed: the frame is predicted
        again (re-simulated if it was stepped) and asked for again."""
        self._inputs[peer].discard(frame)
        self._roll_back_to(frame)
        self._recompute_frontier()

    def _settle_due(self) -> list[RaceAction]:
        """Settle every peer whose oldest pending input is ``VERIFY_LAG_FRAMES`` behind the frame about to
        be stepped, or all of them once the round's world is done (its last frames wait for nothing else)."""
        stepped = self._sync.current_frame - 1
        due = stepped - VERIFY_LAG_FRAMES
        done = self.world.done
        actions: list[RaceAction] = []
        for peer in self.others:
            pending = self._inputs[peer].pending
            if pending and (done or min(pending) <= due):
                actions += self._settle(peer, stepped)
        return self._counted(actions)

    def _counted(self, actions: list[RaceAction]) -> list[RaceAction]:
        """Count the ``Misbehaviour`` of ``actions`` made outside ``receive`` (which counts its own): the
        forged inputs a settle found."""
        for action in actions:
            if isinstance(action, Misbehaviour):
                self.stats.drop(action.code)
        return actions

    def _unverified_from(self) -> int | None:
        """The oldest frame with an input whose signature is not checked yet (None: there is none)."""
        return min((min(pending) for peer in self.others if (pending := self._inputs[peer].pending)), default=None)

    def _on_checksum(self, peer: PeerId, msg: RaceChecksum, now_ms: int) -> list[RaceAction]:
        if self._recovery.catching_up:
            return []  # this node's frames are about to be replaced
        if msg.frame > self._window_end():
            raise ProtocolError("race-vote-outside-window", f"frame {msg.frame} is ahead of any vote")
        if self._peers.statuses[peer] is not ACTIVE or not self._votes.accepts(msg.frame, self._sync.current_frame):
            return []  # decided, too old, or from a peer that is catching up: not counted, not misbehaviour
        key = self.keys.key(self.race_id, peer)
        if key is None or len(msg.hash) != 32:
            raise ProtocolError("race-vote-bad-signature", "the vote is not signed by the peer's race key")
        digest = checksum_digest(self.race_id, msg.frame, msg.hash)
        if not self._verify(key, digest, msg.signature):
            raise ProtocolError("race-vote-bad-signature", "the vote is not signed by the peer's race key")
        self._votes.add(peer, msg.frame, msg.hash)
        return []

    def _on_leave(self, peer: PeerId, msg: RaceLeave, now_ms: int) -> list[RaceAction]:
        """``peer`` leaves, if its race key of this round signed that: an unsigned, forged or foreign
        leave is refused (``race-leave-bad-signature``) and changes nothing."""
        reason = LeaveReason.parse(msg.reason)
        if reason is None:
            raise ProtocolError("race-leave-invalid", f"a leave reason is one of {', '.join(LeaveReason)}")
        key = self.keys.key(self.race_id, peer)
        if key is None or not verify_race_signature(key, leave_digest(self.race_id, reason.value), msg.signature):
            raise ProtocolError("race-leave-bad-signature", "the leave is not signed by the peer's race key of this round")
        return self._apply(self._recovery.remove(peer, reason), now_ms)

    # ---- the recovery's decisions -----------------------------------------------------------------

    def _applied(self, handler: RecoveryHandler) -> Handler:
        """``handler`` (a ``Recovery`` message handler) with its steps applied: a session handler."""
        return lambda peer, msg, now_ms: self._apply(handler(peer, msg, now_ms), now_ms)

    def _on_rejoin(self, peer: PeerId, msg: RaceRejoin, now_ms: int) -> list[RaceAction]:
        """``peer`` is back on a new link: ``Recovery.on_rejoin`` decides, from this session's newest final frame."""
        return self._apply(self._recovery.on_rejoin(peer, msg, now_ms, self._confirmed), now_ms)

    def _apply(self, steps: Sequence[RecoveryStep], now_ms: int) -> list[RaceAction]:
        """Carry out what a ``Recovery`` call returned, in order: its actions pass through, its decisions
        (``protocol.race.decisions``) change what the session owns. Once the session has ended, nothing
        more is applied. A relayed input that breaks a rule raises its ``PeerError`` (the relay's sender
        misbehaved, as in any message handler)."""
        actions: list[RaceAction] = []
        for step in steps:
            if self.ended is not None:
                break
            if isinstance(step, AdmitRelayed):
                actions += self._admit_relayed(step.owner, step.entry, now_ms)
            elif isinstance(step, RecomputeFrontier):
                self._recompute_frontier()
            elif isinstance(step, RelayHeldInputs):
                actions += self._relay_held(step.owner, step.targets)
            elif isinstance(step, SendSnapshot):
                actions += self._send_snapshot(step)
            elif isinstance(step, RestartAt):
                self._restart_at(step.frame, step.inputs)
            elif isinstance(step, EndSession):
                actions += self._end(step.reason, step.detail, step.evidence)
            else:
                actions.append(step)
        return actions

    def _admit_relayed(self, owner: PeerId, entry: RaceInput, now_ms: int) -> list[RaceAction]:
        """``AdmitRelayed``: admit the input (``PeerError`` for a bad one) and, unless that ended the
        session, tell the recovery that it heard from ``owner``."""
        actions = self._admit(owner, self._entry(owner, entry))
        if self.ended is None:
            self._recovery.relayed_admitted(owner, entry.frame, now_ms)
        return actions

    def _relay_held(self, owner: PeerId, targets: tuple[PeerId, ...]) -> list[RaceAction]:
        """``RelayHeldInputs``: settle ``owner``'s pending inputs, then send its signed inputs of the newest
        ``STATE_BUFFER_FRAMES`` final frames (survivors a little behind need these too) and every later one
        that verify on their own to ``targets``; the actions of any that failed come first."""
        actions = self._settle(owner)
        first = self._confirmed + 1 - STATE_BUFFER_FRAMES
        refused, records = self._forwarding.forwardable(signed_records(owner, self._inputs[owner], first))
        actions += refused
        if records:
            actions += [Send(p, RaceRelay(records)) for p in targets]
        return actions

    def _send_snapshot(self, step: SendSnapshot) -> list[RaceAction]:
        """``SendSnapshot``: the pinned state with its bases and, each peer's pending inputs settled first,
        the signed inputs from its frame on of the inactive peers, those that verify on their own."""
        actions: list[RaceAction] = []
        records = list(step.bases)
        for owner in step.inactive:
            actions += self._settle(owner)
            records += signed_records(owner, self._inputs[owner], step.frame)
        refused, records = self._forwarding.forwardable(records)
        snapshot = RaceSnapshot(step.request_id, step.frame, step.state, records, step.signature)
        return actions + refused + [Send(step.peer, snapshot)]

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
        inputs = self._frame_inputs(self._sync.current_frame)
        self._sync.step(inputs)
        self.stats.steps += 1

    def _rollback(self, target: int) -> tuple[int, list[RaceAction]]:
        """Re-simulate from ``target`` (the earliest frame whose prediction proved wrong) to the present."""
        self._rollback_to = None
        sync = self._sync
        end = sync.current_frame
        loaded = sync.rollback_to(target)
        if not loaded:
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
        return input_window_end(self._sync.current_frame, self._peers.active_from[self.me])

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
        unverified = self._unverified_from()
        return limit if unverified is None else min(limit, unverified - 1)

    def _confirm(self, now_ms: int) -> list[RaceAction]:
        actions = self._settle_due()
        if self.ended is not None:
            return actions
        limit = self._final_limit()
        minority = self._peers.present_count() < quorum(len(self.peers) - self._peers.removed_count())
        while self._confirmed < limit:
            frame = self._confirmed + 1
            self._confirmed = frame
            inputs = tuple(self._confirmed_inputs(frame))
            actions.append(FrameConfirmed(frame, inputs))
            self._recovery.on_confirmed(frame, inputs, minority)
            if frame % VOTE_INTERVAL_FRAMES == 0 and not self._recovery.off_line:
                actions += self._vote(frame)  # an off-line node's frames are void: nothing to vote on
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

    def _restart_at(self, frame: int, inputs: CheckedInputs) -> None:
        """A snapshot of ``frame`` replaced the world (the sync layer already restarted there): forget
        every frame-keyed fact of the old history, then hold the snapshot's verified ``inputs`` (those
        before ``frame`` as prediction bases)."""
        self._confirmed = frame - 1
        self._rollback_to = None
        self._streams.restart(frame)  # this node's old inputs are gone: the peers need its new ones from scratch
        self._progress.clear()
        self._votes = VoteBook(self.me)
        self._own_hashes.clear()
        self.strikes = 0
        for buffer in self._inputs.values():
            buffer.reset(frame)
        for (peer, at), (signed, events, digest) in sorted(inputs.items()):
            if at < frame:
                self._inputs[peer].set_base(at, events, signed)
            else:
                self._inputs[peer].add(at, events, signed, digest)

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

    def _persistent_desync(self, frame: int, hashes: dict[PeerId, str]) -> list[RaceAction]:
        event: dict[str, Any] = {
            "type": "desync", "raceId": self.race_id, "frame": frame,
            "participatingPeers": sorted(hashes), "hashes": hashes,
        }
        event["signatures"] = [{"signer": self.me, "sig": self._identity.sign(signing_digest(event))}]
        actions = self._broadcast(signed_leave(self._key, self.race_id, LeaveReason.DESYNC)) + [DesyncRecord(event)]
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

    def _on_anchor_message(self, peer: PeerId, msg: RaceAnchorProposal | RaceAnchorSignature, now_ms: int) -> list[RaceAction]:
        if self._anchor is None:
            if len(self._early_anchor) < 2 * len(self.peers):
                self._early_anchor.append((peer, msg))  # this node's round has not ended yet
            return []
        return self._anchor.receive(peer, msg, now_ms)

    # ---- helpers ---------------------------------------------------------------------------------

    def _sign_local(self, frame: int, events: tuple[Event, ...], now_ms: int) -> list[RaceAction]:
        own = self._inputs[self.me]
        prev = own.digests.get(frame - 1, NO_PREVIOUS_INPUT)
        digest = input_digest(self.race_id, frame, events, prev)
        msg = RaceInput(frame, wire_events(events), prev, self._key.sign(digest))
        own.add(frame, events, msg, digest)
        self._advance_frontier()
        unlinked, statuses = self._recovery.unlinked, self._peers.statuses
        return self._send_inputs([p for p in self._peers.remaining_others()
                                  if p not in unlinked and statuses[p] is not LOST], now_ms)

    def _verify(self, key: PublicKey, digest: bytes, signature: bytes) -> bool:
        """Whether ``signature`` by ``key`` covers ``digest`` (counted in the stats)."""
        self.stats.signatures_checked += 1
        return verify_race_signature(key, digest, signature)

    def _broadcast(self, msg: Any) -> list[RaceAction]:
        return [Send(p, msg) for p in self._peers.remaining_others()]

    def _break_down(self, bug: Exception) -> list[RaceAction]:
        """After a bug in a handler: end as ``internal-error`` and tell the peers this node leaves (they
        need not wait for its silence to be noticed). The leave needs only the race key and the roster; if
        even that fails, the end alone."""
        detail = f"this node failed ({type(bug).__name__}: {bug}) and stopped racing"
        leave: list[RaceAction] = []
        try:
            leave = self._broadcast(signed_leave(self._key, self.race_id, LeaveReason.DISCONNECT))
        except Exception as exc:  # the state the leave reads is what the bug may have broken: said in the end
            detail += f"; its leave failed too ({type(exc).__name__}: {exc})"
        return leave + self._end(SessionEndReason.INTERNAL_ERROR, detail)

    def _end(self, reason: SessionEndReason, detail: str, evidence: dict[str, Any] | None = None) -> list[RaceAction]:
        if self.ended is not None:
            return []
        self.ended = reason
        return [SessionEnded(reason, detail, evidence or {})]

