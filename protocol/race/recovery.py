"""``Recovery``: the disconnect and catch-up rules of a race session (spec/netcode.md §4.5, §6.1): lost
peers, the partition guard, rejoin, relayed inputs, and both sides of the snapshot exchange.

A layer below ``RaceSession``, called one way, as GGRS's ``P2PSession`` polls its sub-layers: the
session calls ``Recovery``; ``Recovery`` never calls the session and holds no reference to it. It owns
its own state (reconnect windows, whether this node is off-line, the offers it made and pinned, its
catch-up request, the resume frames it was told) and works on what the session hands it explicitly:

- the ``PeerTable`` (statuses, ``active_from``), the per-peer ``PeerInputs``, the ``SyncLayer`` and the
  ``InputForwarding`` rules, which both layers share;
- what a call needs of the session's own facts, as arguments (the newest final frame for a rejoin).

What it wants of the session comes back as typed decisions (``protocol.race.decisions``) in the list
each call returns, between its actions, in order: admit a relayed input, recompute the frontier, relay a
peer's held inputs, send a snapshot, restart at a snapshot's frame, end the session. The session applies
them and passes the actions through; it calls nothing of ``Recovery`` once it has ended.

docs/race.md explains every rule and decision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.identity.consensus import quorum
from protocol.identity.keys import Identity
from protocol.race.actions import (
    CaughtUp, CloseLink, ConfirmedInput, Misbehaviour, PeerLeft, PeerLost, PeerRejoined, RaceAction, Send, SessionEndReason,
)
from protocol.race.catchup import (
    MAX_ADVANCE_FRAMES, RESUME_LEAD_FRAMES, CatchUpRequest, CatchUpVerdict, Offer, OfferPins,
)
from protocol.race.decisions import (
    AdmitRelayed, CheckedInputs, EndSession, RecomputeFrontier, RecoveryStep, RelayHeldInputs, RestartAt, SendSnapshot,
)
from protocol.race.forwarding import InputForwarding, signed_records
from protocol.race.inputs import INPUT_WINDOW_AHEAD, INPUT_WINDOW_BEHIND, PeerInputs, input_window_end
from protocol.race.keys import RaceKeyBook, signed_leave, verify_race_signature
from protocol.race.messages import (
    OFFER_CANDIDATES, SYNC_SNAPSHOT_MAX_BYTES, Candidate, InputRecord, LeaveReason, RaceOffer,
    RaceProbe, RaceRejoin, RaceRelay, RaceResume, RaceSnapshot, RaceSyncRequest,
)
from protocol.race.peers import ACTIVE, LOST, REJOINING, REMOVED, PeerTable
from protocol.race.setup import RaceSetup
from protocol.race.signing import catch_up_digest
from protocol.race.sync import SyncLayer
from protocol.identity.keys import PeerId

RECONNECT_WINDOW_MS = 15_000
LINK_GRACE_MS = 2_000
"""A peer whose link broke is still waited for, as a linked peer's late input is, for this long (GGRS's
disconnect timeout); only then is it lost and predicted. Its real inputs may still reach the others
meanwhile: a prediction of it must not become final here while they confirm its real inputs."""
OFFER_ALIGNMENT = 8


class Recovery:
    """Disconnects, partitions, rejoins and catch-up for one node's round (see the module docstring).

    The session forwards a broken link (``link_lost``: waited for during ``LINK_GRACE_MS``, then lost),
    the watchdog's verdict (``peer_lost``: lost at once), ``peer_reconnected``, ``tick`` and the recovery messages
    (``on_rejoin``, ``on_relay``, ``on_resume``, ``on_probe``, ``on_offer``, ``on_sync_request``,
    ``on_snapshot``; each ``(peer, msg, now_ms)`` like ``receive``, a rejoin with the newest final
    frame), tells it about each final frame (``on_confirmed``) and each relayed input it admitted
    (``relayed_admitted``), and asks ``catching_up`` / ``off_line``. Each call returns ``RecoveryStep``s
    for the session to apply in order. Message handlers raise ``PeerError`` for what a peer sent (the
    session turns it into ``Misbehaviour``)."""

    def __init__(self, *, setup: RaceSetup, race_id: str, race_key: Identity, keys: RaceKeyBook, peers: PeerTable,
                 inputs: Mapping[PeerId, PeerInputs], sync: SyncLayer, forwarding: InputForwarding) -> None:
        self._setup = setup
        self._race_id = race_id
        self._me = peers.me
        self._key = race_key
        self._keys = keys
        self._peers = peers
        self._inputs = inputs
        self._sync = sync
        self._forwarding = forwarding
        self._lost_at: dict[PeerId, int] = {}
        self._unlinked: dict[PeerId, int] = {}  # peer -> when its link broke, or it was last heard of: waited for (the grace)
        self._heard_up_to: dict[PeerId, int] = {}  # unlinked peer -> the newest frame it may have made before the break
        self._off_line = False
        self._offered: list[Offer] = []
        self._pins = OfferPins()
        self._catch_up: CatchUpRequest | None = None
        self._request_ids = 0
        self._resumes: dict[PeerId, int] = {}

    # ---- what the session asks ------------------------------------------------------------------------

    @property
    def catching_up(self) -> bool:
        """True while this node waits for a snapshot (it steps nothing and takes no inputs or votes)."""
        return self._catch_up is not None

    @property
    def unlinked(self) -> list[PeerId]:
        """The active peers whose link to this node is down (waited for, their inputs asked of the others
        as ``want``s), in roster order."""
        return [p for p in self._peers.others if p in self._unlinked]

    @property
    def off_line(self) -> bool:
        """True once this node made a lost peer's prediction final while in a minority: its history since
        is not the race's, and it must catch up."""
        return self._off_line

    def on_confirmed(self, frame: int, inputs: Iterable[ConfirmedInput], minority: bool) -> None:
        """Frame ``frame`` became final with ``inputs`` (``ConfirmedInput``): note whether a minority made a
        lost peer's prediction final, and offer the 8-aligned pre-step snapshots to catching-up peers.
        Raises ``LocalError`` if the state to offer is no longer saved (a bug)."""
        if minority and any(i.signed is None and self._peers.statuses[i.peer] in (LOST, REJOINING) for i in inputs):
            self._off_line = True  # a minority made a lost peer's prediction final: not the race's history
        if (frame + 1) % OFFER_ALIGNMENT == 0:
            self._offered = [self._offer(frame + 1)] + self._offered[:OFFER_CANDIDATES - 1]

    def _offer(self, frame: int) -> Offer:
        bases = []
        for peer in self._peers.roster:
            base = self._inputs[peer].newest_before(frame)
            if base is not None:
                bases.append(InputRecord.of(peer, base))
        return Offer(frame, self._sync.state(frame), bases)

    # ---- peers come and go -----------------------------------------------------------------------

    def remove(self, peer: PeerId, reason: LeaveReason) -> list[RecoveryStep]:
        """``peer`` is out of the round for good (it left, or its window closed): stop waiting for it."""
        if self._peers.statuses[peer] is REMOVED:
            return []
        self._peers.statuses[peer] = REMOVED
        self._lost_at.pop(peer, None)
        self._unlinked.pop(peer, None)
        self._pins.drop(peer)
        return [RecomputeFrontier(), PeerLeft(peer, reason)]

    def on_relay(self, peer: PeerId, msg: RaceRelay, now_ms: int) -> list[RecoveryStep]:
        """Signed inputs relayed by ``peer``: those of a peer whose link to it broke (or that it lost), so
        that every survivor holds the same, or its own re-sent after a reconnect. Each is checked against
        its owner's race key as the session admits it (``AdmitRelayed``); those outside the window are
        skipped. A new input of a peer whose link to this node is down counts as hearing from it
        (``relayed_admitted``)."""
        steps: list[RecoveryStep] = []
        statuses, active_from = self._peers.statuses, self._peers.active_from
        window_end = input_window_end(self._sync.current_frame, active_from[self._me])
        for record in msg.inputs:
            owner = record.peer
            if owner not in self._peers.others or statuses[owner] is REMOVED or self._catch_up is not None:
                continue
            if self._keys.key(self._race_id, owner) is None:
                continue  # its race key has not reached this node yet: not verifiable, and not the sender's fault
            if owner == peer and statuses[peer] is not ACTIVE:
                continue  # a peer's own re-sent inputs count only once it is active again
            low = max(self._sync.current_frame - INPUT_WINDOW_BEHIND, active_from[owner])
            if low <= record.frame <= window_end:
                steps.append(AdmitRelayed(owner, record.signed()))
        return steps

    def relayed_admitted(self, owner: PeerId, frame: int, now_ms: int) -> None:
        """The session admitted ``owner``'s input of ``frame`` that another peer relayed or forwarded."""
        if owner in self._unlinked and frame > self._heard_up_to[owner]:
            # an input it made after its link to this node broke (beyond this node's window then: the
            # relays sent at the break carry none): it is alive, and another peer hears it
            self._heard_up_to[owner] = frame
            self._unlinked[owner] = max(self._unlinked[owner], now_ms)

    def link_lost(self, peer: PeerId, now_ms: int) -> list[RecoveryStep]:
        """The link to ``peer`` broke. The peer stays active, and waited for, for ``LINK_GRACE_MS``: the
        mesh dials again at once, and a peer alive behind a broken link still sends its real inputs to
        the others, who confirm them. Making its predictions final here meanwhile would fork this node's
        history from theirs (one broken link of a 3-node mesh: three histories, a tie). Its signed inputs
        that this node holds go to the other active peers at once, so that, should the peer be lost to all,
        every survivor predicts it from the same real inputs. ``tick`` makes the peer lost (``peer_lost``,
        its reconnect window counted from now) if no new link came by then."""
        if self._peers.statuses.get(peer) is not ACTIVE or peer == self._me or peer in self._unlinked:
            return []
        self._unlinked[peer] = now_ms
        self._heard_up_to[peer] = input_window_end(self._sync.current_frame, self._peers.active_from[self._me])
        return [self._relay_inputs_of(peer)]  # during the grace, every survivor comes to hold the same inputs of it

    def peer_lost(self, peer: PeerId, now_ms: int, since_ms: int | None = None) -> list[RecoveryStep]:
        """``peer`` is lost (its link stayed down for the grace, or the watchdog gave up on it): predict it
        for the reconnect window, counted from ``since_ms`` (default ``now_ms``; ``tick`` closes the window),
        and forward its signed inputs that the other survivors may lack."""
        self._unlinked.pop(peer, None)
        if self._peers.statuses.get(peer) is not ACTIVE or peer == self._me:
            return []
        self._peers.statuses[peer] = LOST
        self._lost_at[peer] = now_ms if since_ms is None else since_ms
        return [RecomputeFrontier(), PeerLost(peer), self._relay_inputs_of(peer)]

    def _relay_inputs_of(self, peer: PeerId) -> RelayHeldInputs:
        """Forward ``peer``'s signed inputs of this node's last 12 confirmed and all later frames to the
        other active peers: those whose copy was lost with a link then hold the same real inputs."""
        return RelayHeldInputs(peer, tuple(p for p in self._peers.active_others() if p != peer))

    def tick(self, now_ms: int) -> list[RecoveryStep]:
        """Timers: lose the peers whose link stayed broken for the grace, close expired reconnect windows
        (the partition guard) and run catch-up retries."""
        actions: list[RecoveryStep] = []
        for peer, at in sorted(self._unlinked.items()):
            if now_ms - at >= LINK_GRACE_MS:  # no new link within the grace: the peer is lost
                actions += self.peer_lost(peer, now_ms, at)
        expired = [p for p, at in sorted(self._lost_at.items()) if now_ms - at >= RECONNECT_WINDOW_MS]
        if expired:
            roster = self._peers.roster
            if self._off_line or self._peers.present_count() < quorum(len(roster)):
                return [EndSession(
                    SessionEndReason.PARTITION_VOID, "this side of the partition is not a strict majority of the roster",
                    {"present": sorted(p for p in roster if p == self._me or self._peers.statuses[p] is ACTIVE)},
                )]
            for peer in expired:
                actions += self.remove(peer, LeaveReason.DISCONNECT)
        if self._catch_up is not None:
            actions += self._catch_up_timers(self._catch_up, now_ms)
        return actions

    def next_deadline_ms(self) -> int | None:
        """When ``tick`` next has a timer to fire (a broken link's grace ending, a reconnect window
        closing, a catch-up retry or timeout), or None when none runs."""
        deadlines = [at + RECONNECT_WINDOW_MS for at in self._lost_at.values()]
        deadlines += [at + LINK_GRACE_MS for at in self._unlinked.values()]
        if self._catch_up is not None:
            deadline = self._catch_up.next_deadline_ms()
            if deadline is not None:
                deadlines.append(deadline)
        return min(deadlines, default=None)

    def peer_reconnected(self, peer: PeerId, now_ms: int) -> list[RaceAction]:
        """A new link to ``peer`` is up: tell it who we race as, where we are, and whether we must catch up."""
        if peer not in self._peers.others:
            return []
        self._unlinked.pop(peer, None)  # back within the grace: it never was lost, nothing was made final
        msg = RaceRejoin(self._race_id, self._setup.loadouts[self._me], self._sync.current_frame, self._off_line)
        return [Send(peer, msg)]

    def on_rejoin(self, peer: PeerId, msg: RaceRejoin, now_ms: int, confirmed_frame: int) -> list[RecoveryStep]:
        """``peer`` is back on a new link: refuse another loadout or a removed peer; make it active again
        from the frame after ``confirmed_frame`` (the session's newest final frame) at the earliest (and
        re-send this node's inputs), or ``rejoining`` while it catches up. The frames decide too: a
        peer whose ``nextFrame`` is behind this node's input window cannot be waited for (the inputs it
        lacks are gone) and is ``rejoining`` as if it had asked to catch up; a peer more than the window
        ahead means this node is the one that fell behind (it was stopped, say), so this node catches up
        (spec/netcode.md §6.2). Raises ``ProtocolError`` ``race-rejoin-invalid`` for another round's rejoin."""
        if msg.raceId != self._race_id:
            raise ProtocolError("race-rejoin-invalid", "the rejoin is for another round")
        if msg.loadoutDigest != self._setup.loadouts[peer]:
            return [CloseLink(peer, "reconnect-loadout-mismatch")]
        statuses = self._peers.statuses
        if statuses[peer] is REMOVED:
            return [CloseLink(peer, "race-peer-removed")]
        actions: list[RecoveryStep] = []
        current = self._sync.current_frame
        if msg.nextFrame > current + INPUT_WINDOW_AHEAD and self._catch_up is None:
            self._off_line = True  # the race went on without this node: only a snapshot brings it back
        # a peer still active here was never predicted for good: this node is at most the prediction
        # window (INPUT_WINDOW_BEHIND frames) past the inputs of it that it holds, all of which it can still
        # admit, however far behind the peer itself stands (it may be one more frame behind, stalled on
        # inputs that another peer's bridge brought this node sooner)
        if msg.catchUp or (statuses[peer] is not ACTIVE and msg.nextFrame < current - INPUT_WINDOW_BEHIND):
            if statuses[peer] is ACTIVE:
                self._lost_at[peer] = now_ms
            statuses[peer] = REJOINING
            actions.append(RecomputeFrontier())
        else:
            if not self._off_line:  # an off-line node's inputs are not the race's: it catches up instead
                actions += self._resend(peer, msg.nextFrame - INPUT_WINDOW_BEHIND)
            if statuses[peer] is not ACTIVE:
                statuses[peer] = ACTIVE
                self._peers.active_from[peer] = max(self._peers.active_from[peer], confirmed_frame + 1)
                self._lost_at.pop(peer, None)
                actions.append(RecomputeFrontier())
                if not self._off_line:  # back within the window with nothing to catch up: say so
                    actions.append(PeerRejoined(peer, self._peers.active_from[peer]))
        if self._off_line:
            actions += self._maybe_start_catch_up(now_ms)
            request = self._catch_up
            if request is not None and msg.catchUp is False and request.add_voter(peer):
                actions += self._probe(request, [peer])  # a voter that came back after the probes went out
        return actions

    def _resend(self, peer: PeerId, first: int) -> list[RaceAction]:
        """This node's own inputs from ``first`` on, as a relay: the peer may have moved on meanwhile,
        and a relayed input outside its window is skipped rather than counted as misbehaviour."""
        records = signed_records(self._me, self._inputs[self._me], first)
        return [Send(peer, RaceRelay(records))] if records else []

    # ---- catch-up: requester -----------------------------------------------------------------------

    def _maybe_start_catch_up(self, now_ms: int) -> list[RecoveryStep]:
        if self._catch_up is not None:
            return []
        roster = self._peers.roster
        need = quorum(len(roster))
        if len(roster) - 1 < need:
            return self._give_up(SessionEndReason.CATCH_UP_IMPOSSIBLE,
                                 f"a {len(roster)}-player race cannot vouch for a snapshot")
        voters = self._peers.active_others()
        if len(voters) < need:
            return []
        self._request_ids += 1
        self._catch_up = CatchUpRequest(self._request_ids, voters, need, now_ms, self._sync.current_frame)
        return self._probe(self._catch_up, voters)

    def _probe(self, request: CatchUpRequest, voters: Iterable[PeerId]) -> list[RecoveryStep]:
        rid = request.request_id
        return [Send(p, RaceProbe(rid, self._key.sign(catch_up_digest(self._race_id, "probe", rid, p, []))))
                for p in voters]

    def _catch_up_timers(self, request: CatchUpRequest, now_ms: int) -> list[RecoveryStep]:
        verdict = request.on_timer(now_ms)
        if verdict is CatchUpVerdict.REPROBE:
            self._request_ids += 1
            request.restart(self._request_ids)
            request.voters = self._peers.active_others()
            return self._probe(request, request.voters)
        if verdict is CatchUpVerdict.NEXT_VOTER:
            return self._request_snapshot(request, now_ms)
        if verdict is CatchUpVerdict.FAILED:
            self._catch_up = None
            return self._give_up(SessionEndReason.CATCH_UP_FAILED, "no strict majority vouched for one snapshot in time")
        return []

    def _signed_by(self, peer: PeerId, digest: bytes, signature: bytes, code: str) -> None:
        key = self._keys.key(self._race_id, peer)
        if key is None or not verify_race_signature(key, digest, signature):
            raise ProtocolError(code, "the message is not signed by the peer's race key")

    def on_offer(self, peer: PeerId, msg: RaceOffer, now_ms: int) -> list[RecoveryStep]:
        """A responder's signed candidates for this node's catch-up; once a quorum agrees on one, ask for
        it; once a quorum is out of reach (more than 900 frames ahead), give up. Raises ``ProtocolError``
        ``race-offer-invalid``, ``race-offer-bad-signature``."""
        request = self._catch_up
        if request is None or msg.requestId != request.request_id:
            return []  # an answer to an earlier probe round
        candidates = [(c.frame, c.hash) for c in msg.candidates]
        if len(candidates) > OFFER_CANDIDATES or any(len(h) != 32 for _, h in candidates):
            raise ProtocolError("race-offer-invalid", f"an offer has at most {OFFER_CANDIDATES} (frame, 32-byte hash) candidates")
        self._signed_by(peer, catch_up_digest(self._race_id, "offer", msg.requestId, self._me, candidates),
                        msg.signature, "race-offer-bad-signature")
        if request.add_offer(peer, candidates):
            return self._request_snapshot(request, now_ms)
        if request.out_of_reach:
            self._catch_up = None
            return self._give_up(SessionEndReason.CATCH_UP_IMPOSSIBLE,
                                 f"a strict majority is more than {MAX_ADVANCE_FRAMES} frames ahead of this node")
        return []

    def _request_snapshot(self, request: CatchUpRequest, now_ms: int) -> list[RecoveryStep]:
        if request.target is None:
            raise LocalError("race-catch-up-no-target", "a snapshot was asked for before a quorum agreed on one")
        target = request.next_voter(now_ms)
        if target is None:
            self._catch_up = None
            return self._give_up(SessionEndReason.CATCH_UP_FAILED, "every voter of the agreed snapshot failed to deliver it")
        frame, digest = request.target
        rid = request.request_id
        signature = self._key.sign(catch_up_digest(self._race_id, "sync-request", rid, target, [(frame, digest)]))
        return [Send(target, RaceSyncRequest(rid, frame, digest, signature))]

    def on_snapshot(self, peer: PeerId, msg: RaceSnapshot, now_ms: int) -> list[RecoveryStep]:
        """The snapshot asked for: apply it if it is the one the quorum vouched for, signed, with verified
        inputs, and the world accepts it; else count it against ``peer`` and ask the next voter. Raises
        ``ProtocolError`` ``race-snapshot-unexpected`` when no request to ``peer`` matches."""
        request = self._catch_up
        if request is None or request.pending != peer or msg.requestId != request.request_id or request.target is None:
            raise ProtocolError("race-snapshot-unexpected", "no sync request to this peer matches the snapshot")
        frame, digest = request.target
        try:
            if msg.frame != frame or len(msg.state) > SYNC_SNAPSHOT_MAX_BYTES or hashlib.sha256(msg.state).digest() != digest:
                raise ProtocolError("race-snapshot-mismatch", "the snapshot is not the one the majority vouched for")
            self._signed_by(peer, catch_up_digest(self._race_id, "snapshot", msg.requestId, self._me, [(frame, digest)]),
                            msg.signature, "race-snapshot-bad-signature")
            inputs = self._check_records(msg.inputs)
            self._sync.load_snapshot(msg.state, frame)
        except PeerError as exc:
            return [Misbehaviour(peer, exc.code), *self._request_snapshot(request, now_ms)]
        return self._apply_snapshot(frame, msg.state, digest, inputs)

    def _check_records(self, records: list[InputRecord]) -> CheckedInputs:
        """Verify every forwarded input against its owner's race key; two different ones for one
        (peer, frame) make the snapshot unusable."""
        checked: CheckedInputs = {}
        for record in records:
            if record.peer not in self._inputs:
                raise ProtocolError("race-snapshot-mismatch", "a forwarded input is not of the roster")
            events, digest = self._forwarding.digest(record)
            self._signed_by(record.peer, digest, record.signature, "race-snapshot-bad-signature")
            known = checked.setdefault((record.peer, record.frame), (record.signed(), events, digest))
            if known[1] != events:
                raise ProtocolError("race-snapshot-mismatch", "two different inputs for one peer and frame")
        return checked

    def _apply_snapshot(self, frame: int, state: bytes, digest: bytes, inputs: CheckedInputs) -> list[RecoveryStep]:
        """The world is the snapshot's now: the session restarts at ``frame`` with the snapshot's inputs;
        real inputs resume ``RESUME_LEAD_FRAMES`` later for this node, and for each peer where it said."""
        self._catch_up = None
        self._off_line = False
        self._offered = []
        resume = frame + RESUME_LEAD_FRAMES
        for peer in self._peers.roster:
            self._peers.active_from[peer] = resume if peer == self._me else max(frame, self._resumes.get(peer, 0))
        resumes = [Send(p, RaceResume(frame, resume)) for p in self._peers.active_others()]
        return [RestartAt(frame, inputs), RecomputeFrontier(), *resumes, CaughtUp(frame, state, digest, resume)]

    def _give_up(self, reason: SessionEndReason, detail: str) -> list[RecoveryStep]:
        """End after a failed catch-up, telling the others so that none of them waits for this node."""
        leave = signed_leave(self._key, self._race_id, LeaveReason.DISCONNECT)
        sends: list[RecoveryStep] = [Send(p, leave) for p in self._peers.remaining_others()]
        return sends + [EndSession(reason, detail)]

    # ---- catch-up: responder -------------------------------------------------------------------------

    def on_probe(self, peer: PeerId, msg: RaceProbe, now_ms: int) -> list[RaceAction]:
        """A catching-up peer asks for offers: pin this node's newest final snapshots for it and offer
        them (nothing while this node is off-line itself). Raises ``ProtocolError``
        ``race-probe-bad-signature``, ``race-probe-stale``."""
        self._signed_by(peer, catch_up_digest(self._race_id, "probe", msg.requestId, self._me, []), msg.signature,
                        "race-probe-bad-signature")
        if not self._offered or self._off_line:
            return []
        candidates = self._pins.pin(peer, msg.requestId, self._offered, self._sync.current_frame)
        signature = self._key.sign(catch_up_digest(self._race_id, "offer", msg.requestId, peer, candidates))
        return [Send(peer, RaceOffer(msg.requestId, [Candidate(f, h) for f, h in candidates], signature))]

    def on_sync_request(self, peer: PeerId, msg: RaceSyncRequest, now_ms: int) -> list[RecoveryStep]:
        """Send the pinned snapshot ``peer`` asks for, with the inputs it needs to predict as this node
        did: those of every peer not active here, whose own re-sends will not come (``SendSnapshot``).
        Raises ``ProtocolError`` ``race-sync-request-bad-signature``, ``-unknown``, ``-expired``,
        ``race-sync-cooldown``."""
        candidate = (msg.frame, msg.hash)
        self._signed_by(peer, catch_up_digest(self._race_id, "sync-request", msg.requestId, self._me, [candidate]),
                        msg.signature, "race-sync-request-bad-signature")
        offer = self._pins.take(peer, msg.requestId, candidate, self._sync.current_frame)
        inactive = tuple(p for p in self._peers.others if self._peers.statuses[p] is not ACTIVE)
        signature = self._key.sign(catch_up_digest(self._race_id, "snapshot", msg.requestId, peer, [candidate]))
        return [SendSnapshot(peer, msg.requestId, msg.frame, offer.state, tuple(offer.bases), inactive, signature)]

    def on_resume(self, peer: PeerId, msg: RaceResume, now_ms: int) -> list[RecoveryStep]:
        """A peer caught up. It was ``rejoining`` here, or it is a fellow of this node's minority that
        never lost its link to us: either way its real inputs restart at ``resumeFrame``. Raises
        ``ProtocolError`` ``race-resume-unexpected``, ``race-resume-invalid``."""
        statuses = self._peers.statuses
        if statuses[peer] not in (REJOINING, ACTIVE):
            raise ProtocolError("race-resume-unexpected", "the peer was not catching up")
        if msg.resumeFrame != msg.frame + RESUME_LEAD_FRAMES:
            raise ProtocolError("race-resume-invalid", f"real inputs resume {RESUME_LEAD_FRAMES} frames after the snapshot")
        self._resumes[peer] = msg.resumeFrame
        if self._catch_up is not None:
            return []  # taken into account when this node's own snapshot arrives
        if msg.resumeFrame < self._sync.current_frame - INPUT_WINDOW_BEHIND:
            return [CloseLink(peer, "rejoin-too-late")]
        statuses[peer] = ACTIVE
        self._peers.active_from[peer] = max(self._peers.active_from[peer], msg.resumeFrame)
        self._lost_at.pop(peer, None)
        return [RecomputeFrontier(), *self._resend(peer, msg.frame), PeerRejoined(peer, msg.resumeFrame)]
