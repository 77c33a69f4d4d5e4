"""Disconnects and catch-up for ``RaceSession`` (spec/netcode.md §4.5, §6.1): lost peers, the partition
guard, rejoin, relayed inputs, and both sides of the snapshot exchange.

A mixin, because these rules read and change the session's own state (statuses, buffers, frontier);
``race.py`` keeps stepping, finality and votes. docs/race.md explains every rule and decision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from protocol.identity.consensus import quorum
from protocol.errors import ProtocolError
from protocol.race.actions import CaughtUp, CloseLink, Misbehaviour, Notify, Send
from protocol.race.catchup import RESUME_LEAD_FRAMES, CatchUpRequest
from protocol.race.inputs import INPUT_WINDOW_BEHIND, STATE_BUFFER_FRAMES, parse_events
from protocol.race.keys import verify_race_signature
from protocol.race.messages import (
    OFFER_CANDIDATES, SYNC_SNAPSHOT_MAX_BYTES, Candidate, InputRecord, RaceInput, RaceOffer, RaceProbe, RaceRejoin,
    RaceRelay, RaceResume, RaceSnapshot, RaceSyncRequest,
)
from protocol.race.signing import Event, catch_up_digest, input_digest
from protocol.race.votes import VoteBook

RECONNECT_WINDOW_MS = 15_000
ACTIVE, LOST, REJOINING, REMOVED = "active", "lost", "rejoining", "removed"


class RecoveryMixin:
    """The disconnect and catch-up half of ``RaceSession`` (its state lives in the session)."""

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

    def _on_relay(self, peer: str, msg: RaceRelay, now_ms: int) -> list[Any]:
        """Signed inputs forwarded by ``peer``: a lost peer's that it still got, or its own re-sent after a
        reconnect. Each is checked against its owner's race key; those outside the window are skipped."""
        actions: list[Any] = []
        for record in msg.inputs:
            owner = record.peer
            if owner not in self._pending or self._status[owner] == REMOVED or self._catch_up is not None:
                continue
            if owner == peer and self._status[peer] != ACTIVE:
                continue  # a peer's own re-sent inputs count only once it is active again
            if not max(self._next - INPUT_WINDOW_BEHIND, self._active_from[owner]) <= record.frame <= self._window_end():
                continue
            actions += self._admit(owner, RaceInput(record.frame, record.events, record.signature))
            if self.ended is not None:
                break
        return actions

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
            if not self._off_line:  # an off-line node's inputs are not the race's: it catches up instead
                actions = self._resend(peer, msg.nextFrame - INPUT_WINDOW_BEHIND)
        if self._off_line:
            actions += self._maybe_start_catch_up(now_ms)
            if self._catch_up is not None and msg.catchUp is False and self._catch_up.add_voter(peer):
                actions += self._probe([peer])  # a voter that came back after the probes went out
        return actions

    def _resend(self, peer: str, first: int) -> list[Any]:
        """This node's own inputs from ``first`` on, as a relay: the peer may have moved on meanwhile,
        and a relayed input outside its window is skipped rather than counted as misbehaviour."""
        signed = self._inputs[self.me].signed
        records = [InputRecord(self.me, f, signed[f].events, signed[f].signature) for f in sorted(signed) if f >= first]
        return [Send(peer, RaceRelay(records))] if records else []

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
        return self._apply_snapshot(frame, msg.state, digest, inputs)

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

    def _apply_snapshot(self, frame: int, state: bytes, digest: bytes,
                        inputs: dict[tuple[str, int], tuple[RaceInput, tuple[Event, ...]]]) -> list[Any]:
        self._catch_up = None
        self._off_line = False
        self._offered = []
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
        return [Send(p, RaceResume(frame, resume)) for p in active] + [CaughtUp(frame, state, digest, resume)]

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
