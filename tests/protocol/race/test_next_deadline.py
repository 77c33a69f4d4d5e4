"""``next_deadline_ms``: when a session's timers next fire, so the shell can sleep until then instead
of ticking on a fixed period. Before the deadline a tick does nothing; at it, the timer fires."""

from dataclasses import replace

from protocol.race.actions import AnchorDecided, PeerLeft, PeerLost, RoundEnded, Send
from protocol.race.anchor import COLLECTION_TIMEOUT_MS, FALLBACK_SLOT_MS, AnchorRound
from protocol.race.catchup import PROBE_GIVE_UP_MS, PROBE_RETRY_MS, SNAPSHOT_TIMEOUT_MS, CatchUpRequest
from protocol.race.messages import LeaveReason, RaceAnchorProposal
from protocol.race.recovery import LINK_GRACE_MS, RECONNECT_WINDOW_MS
from protocol.race.session import PROBE_AFTER_MS
from protocol.race.setup import LOCAL_LEDGER_ADDRESS
from tests.protocol.race.harness import Mesh, identities
from tests.protocol.race.test_anchor import _facts


def test_the_anchor_wakes_at_its_proposal_slot_then_at_its_timeout():
    ids = identities(3)
    peers = [i.peer_id for i in ids]
    second = AnchorRound(ids[1], _facts(peers), LOCAL_LEDGER_ADDRESS, 500)
    assert second.next_deadline_ms() == 500 + FALLBACK_SLOT_MS  # the second peer's slot
    assert second.tick(500 + FALLBACK_SLOT_MS - 1) == []
    proposed = second.tick(500 + FALLBACK_SLOT_MS)
    assert any(isinstance(a, Send) and isinstance(a.message, RaceAnchorProposal) for a in proposed)
    assert second.next_deadline_ms() == 500 + COLLECTION_TIMEOUT_MS  # endorsed: only the timeout is left
    assert second.tick(500 + COLLECTION_TIMEOUT_MS - 1) == []
    assert AnchorDecided(0, None) in second.tick(500 + COLLECTION_TIMEOUT_MS)
    assert second.next_deadline_ms() is None


def test_an_anchor_without_a_candidate_frame_waits_only_for_its_timeout():
    ids = identities(3)
    peers = [i.peer_id for i in ids]
    first = AnchorRound(ids[0], replace(_facts(peers), checksums={}), LOCAL_LEDGER_ADDRESS, 0)
    assert first.next_deadline_ms() == COLLECTION_TIMEOUT_MS
    assert first.tick(0) == []


def test_catch_up_wakes_for_each_probe_retry_the_give_up_and_a_late_snapshot():
    request = CatchUpRequest(1, ["a", "b"], 2, 1000, 0)
    deadlines = []
    now = 1000
    while (deadline := request.next_deadline_ms()) is not None and deadline <= 1000 + PROBE_GIVE_UP_MS:
        assert request.on_timer(deadline - 1) is None
        verdict = request.on_timer(deadline)
        deadlines.append((deadline - now, verdict))
        if verdict == "failed":
            break
    assert deadlines == [(PROBE_RETRY_MS, "reprobe"), (2 * PROBE_RETRY_MS, "reprobe"), (PROBE_GIVE_UP_MS, "failed")]
    chosen = CatchUpRequest(1, ["a", "b"], 1, 0, 0)
    assert chosen.add_offer("a", [(8, b"h")])
    assert chosen.next_deadline_ms() is None  # a target, and nobody asked yet
    chosen.next_voter(4000)
    assert chosen.next_deadline_ms() == 4000 + SNAPSHOT_TIMEOUT_MS
    assert chosen.on_timer(4000 + SNAPSHOT_TIMEOUT_MS - 1) is None
    assert chosen.on_timer(4000 + SNAPSHOT_TIMEOUT_MS) == "next-voter"


def test_a_session_wakes_when_a_lost_peers_reconnect_window_closes():
    mesh = Mesh(4, seed=22, length=3000)
    lost, others = mesh.peers[0], mesh.peers[1:]
    mesh.run(1000)
    session = mesh.sessions[others[0]]
    deadline = session.next_deadline_ms()  # racing: only the liveness timers (re-send, watchdog) run
    assert deadline is None or deadline <= mesh.now + PROBE_AFTER_MS
    cut_at = mesh.now
    mesh.cut([lost], others)
    assert session.next_deadline_ms() <= cut_at + LINK_GRACE_MS and session.status(lost) == "active"
    assert PeerLost(lost) in session.tick(cut_at + LINK_GRACE_MS) and session.status(lost) == "lost"
    assert session.next_deadline_ms() <= cut_at + RECONNECT_WINDOW_MS  # the window counts from the link's loss
    early = session.tick(cut_at + RECONNECT_WINDOW_MS - 1)  # re-sends to the survivors, nothing else
    assert all(isinstance(a, Send) for a in early) and session.status(lost) == "lost"
    closed = session.tick(cut_at + RECONNECT_WINDOW_MS)
    assert PeerLeft(lost, LeaveReason.DISCONNECT) in closed and session.status(lost) == "removed"
    lonely = mesh.sessions[lost]  # a minority: its window closing ends its session, and its timers with it
    lonely.tick(cut_at + RECONNECT_WINDOW_MS)
    assert lonely.ended is not None and lonely.next_deadline_ms() is None


def test_a_session_at_round_end_wakes_for_its_anchor_until_it_is_decided():
    mesh = Mesh(3, seed=31, length=300)
    ended_at: dict[str, int] = {}
    pending = 0
    while len(ended_at) < len(mesh.peers):
        mesh.run(16)
        for peer in mesh.peers:
            if peer not in ended_at and mesh.of(peer, RoundEnded):
                ended_at[peer] = mesh.now  # the anchor starts with the round's end
                if not mesh.of(peer, AnchorDecided):
                    deadline = mesh.sessions[peer].next_deadline_ms()
                    assert deadline is not None and mesh.now < deadline <= mesh.now + COLLECTION_TIMEOUT_MS
                    pending += 1
    assert pending >= 2  # all but the first proposer wait for a proposal
    mesh.run(1000)
    assert all(mesh.of(p, AnchorDecided) and mesh.sessions[p].next_deadline_ms() is None for p in mesh.peers)
