"""A race never hangs (docs/race.md, "A race never hangs"): inputs sent once with acks, sent again from
the acknowledgement when it stands still for ``RESEND_MS``, repair a lost or refused message, also while
nobody steps; the progress watchdog probes a silent peer and treats one that makes no progress as lost,
and a leave must be signed."""

import pytest

from protocol.identity.keys import race_id
from protocol.race.actions import CloseLink, PeerLeft, PeerLost, Send
from protocol.race.keys import signed_leave
from protocol.race.messages import LeaveReason, RaceInputProbe, RaceInputs, RaceKey, RaceLeave
from protocol.race.peers import PeerStatus
from protocol.race.recovery import RECONNECT_WINDOW_MS
from protocol.race.session import NO_PROGRESS_LOST_MS, PROBE_AFTER_MS, VERIFY_LAG_FRAMES
from protocol.race.spans import skills_mask
from protocol.race.streams import RESEND_MS
from tests.protocol.race.harness import (
    FrameConfirmed, MATCH_ID, Mesh, Misbehaviour, SessionEnded, alter_newest, newest_frame, own_span, with_own_span,
)

RACE = race_id(MATCH_ID, 0)


def agree(mesh, peers, *, over=True):
    """None of ``peers`` ended and they share one confirmed history; ``over``: the round is over, so they
    also hold one state and the whole history (mid-race, states differ by the predictions of the newest
    frames, and each confirms at its own pace: a run of inputs is confirmed once its signature is checked)."""
    assert all(mesh.ended(p) is None for p in peers)
    logs = [mesh.confirmed_log(p) for p in peers]
    if not over:
        common = min(map(len, logs))
        logs = [{f: v for f, v in log.items() if f < common} for log in logs]
    assert all(log == logs[0] for log in logs) and len(logs[0]) > 0
    if over:
        assert all(mesh.round_over(p) for p in peers)
        assert len({mesh.state(p) for p in peers}) == 1


def sent(mesh, src, kind, dst=None):
    return [a for a in mesh.actions[src]
            if isinstance(a, Send) and isinstance(a.message, kind) and (dst is None or a.peer == dst)]


def test_a_lost_input_message_is_repaired_by_sending_again_from_the_acknowledgement():
    mesh = Mesh(3, seed=41, length=600)
    a, b = mesh.peers[:2]
    dropped: list[int] = []

    def lose(src, dst, msg):  # every 7th of a's input messages to b never arrives (a rate limit dropped it)
        span = own_span(msg)
        if src == a and dst == b and span is not None and newest_frame(span) % 7 == 3:
            dropped.append(newest_frame(span))
            return True
        return False

    mesh.lose = lose
    mesh.run_to_end()
    assert len(dropped) > 50
    agree(mesh, mesh.peers)
    confirmed = {c.frame: c for c in mesh.of(b, FrameConfirmed)}
    for frame in dropped:  # b confirmed each of those frames with a's own signed input, not a prediction
        (mine,) = [i for i in confirmed[frame].inputs if i.peer == a]
        assert mine.signed is not None
    assert not any(mesh.of(p, Misbehaviour) for p in mesh.peers)
    # the spans after a lost one chain to an input b lacks: set aside until a sends again from b's ack
    assert set(mesh.sessions[b].stats.drops) == {"race-input-unchained"}
    assert mesh.sessions[a].stats.resends >= len(dropped) // 4


def test_while_nobody_steps_unacknowledged_inputs_are_sent_again():
    """a's input messages to b are all lost for a while: both sides block, and only the re-send timer
    (``RESEND_MS`` after the acknowledgement last moved) can bring the race back."""
    mesh = Mesh(2, seed=42, length=900)
    a, b = mesh.peers
    mesh.run(1000)
    mesh.lose = lambda src, dst, msg: src == a and isinstance(msg, RaceInputs)
    mesh.run(1000)
    stuck = {p: mesh.sessions[p].current_frame for p in mesh.peers}
    assert stuck[a] <= stuck[b] + 9  # a waits for b, b for a's lost inputs: neither has anything new to send
    mesh.run(300)
    assert {p: mesh.sessions[p].current_frame for p in mesh.peers} == stuck
    mesh.lose = None
    before = len(sent(mesh, a, RaceInputs))
    mesh.run(RESEND_MS + 2 * 16)
    assert len(sent(mesh, a, RaceInputs)) > before and mesh.sessions[a].stats.resends > 0
    assert mesh.sessions[b].current_frame > stuck[b]  # repaired by the re-send, long before any probe
    mesh.run_to_end()
    agree(mesh, mesh.peers)


def flip_once(mesh, a, b, **change):
    """A tamper that alters, once after 500 ms, the newest input of a ``race-inputs`` from ``a`` to ``b``
    (``alter_newest(**change)``); the frames it changed are listed."""
    flipped = []

    def tamper(src, dst, msg):
        span = own_span(msg)
        if src == a and dst == b and span is not None and not flipped and mesh.now > 500:
            flipped.append(newest_frame(span))
            return with_own_span(msg, alter_newest(span, **change))
        return msg

    mesh.tamper = tamper
    return flipped


@pytest.mark.parametrize("streams_inputs", [True, False])
def test_a_refused_input_is_sent_again_and_taken(streams_inputs):
    """Checked on arrival (a node that streams to spectators) or with its run: an input whose signed
    value was altered (its events here, so its digest is not the one signed) is refused, predicted
    meanwhile (re-simulated if it was stepped), asked for again and taken."""
    mesh = Mesh(3, seed=43, length=500, streams_inputs=streams_inputs)
    a, b = mesh.peers[:2]
    flipped = flip_once(mesh, a, b, toggle=skills_mask([("brake", False)]))  # a skill of a's chip
    mesh.run_to_end()
    assert flipped and [m.code for m in mesh.of(b, Misbehaviour)] == ["race-input-bad-signature"]
    drops = mesh.sessions[b].stats.drops  # and a's next spans, chained to it, wait until a sends again
    assert drops.pop("race-input-bad-signature") == 1 and set(drops) <= {"race-input-unchained"}
    agree(mesh, mesh.peers)


def test_an_input_that_a_later_signature_proves_needs_no_valid_signature_of_its_own():
    """Chained inputs (docs/race.md): a flipped signature on an input whose content the next input's
    verified signature reaches through ``prev`` is authentic all the same (nothing refused); checked on
    arrival, the same input is refused and sent again."""
    chained = Mesh(3, seed=43, length=500)
    a, b = chained.peers[:2]
    flip_once(chained, a, b, flip_signature=True)
    chained.run_to_end()
    assert chained.of(b, Misbehaviour) == [] and chained.sessions[b].stats.drops == {}
    agree(chained, chained.peers)
    each = Mesh(3, seed=43, length=500, streams_inputs=True)
    flip_once(each, a, b, flip_signature=True)
    each.run_to_end()
    assert [m.code for m in each.of(b, Misbehaviour)] == ["race-input-bad-signature"]
    agree(each, each.peers)


def test_inputs_from_their_owners_links_cost_about_one_check_per_run():
    """With 2 peers each, a node checks far fewer signatures than it takes inputs (one per run of a peer:
    up to ``VERIFY_LAG_FRAMES + 1`` frames, fewer by as many frames as the peer trails this node, here
    4 to 7), where a node that streams to spectators checks every one; both confirm the same history."""
    frames = 400
    counts = {}
    for streams in (False, True):
        mesh = Mesh(3, seed=47, length=frames, streams_inputs=streams)
        mesh.run_to_end()
        agree(mesh, mesh.peers)
        counts[streams] = [mesh.sessions[p].stats.signatures_checked for p in mesh.peers]
    assert all(2 * frames <= n <= 2 * frames + 40 for n in counts[True])  # two peers' inputs, and the votes
    assert all(n <= 2 * frames // (VERIFY_LAG_FRAMES + 1 - 3) + 40 for n in counts[False])


def test_a_lost_race_key_is_announced_again_when_the_watchdog_probes():
    mesh = Mesh(2, seed=44, length=400)
    a, b = mesh.peers
    mesh.queue = [q for q in mesh.queue if not (q[2] == a and q[3] == b)]  # start()'s messages from a to b: gone
    mesh.run(PROBE_AFTER_MS - 200)
    assert mesh.sessions[b].current_frame == 0  # no key: b cannot step
    mesh.run(400)
    probes = sent(mesh, b, RaceInputProbe, a)
    assert probes and probes[0].message.hasKey is False
    assert sent(mesh, a, RaceKey, b)[-1].message.raceId == RACE  # announced again in the answer
    mesh.run_to_end()
    agree(mesh, mesh.peers)


def test_a_peer_that_makes_no_progress_is_probed_then_treated_as_lost_and_the_rules_decide():
    mesh = Mesh(3, seed=45, length=3000)
    stuck, others = mesh.peers[2], mesh.peers[:2]
    mesh.run(1000)
    paused_at = mesh.now
    mesh.paused.add(stuck)  # its link is up and it answers, but its race does not move
    lost_at = None
    while lost_at is None and mesh.now < paused_at + NO_PROGRESS_LOST_MS + 2000:
        mesh.run(16)
        closes = [a for a in mesh.actions[others[0]] if isinstance(a, CloseLink)]
        if closes:
            lost_at = mesh.now
            assert closes == [CloseLink(stuck, "race-no-progress")]
    assert lost_at is not None and paused_at + NO_PROGRESS_LOST_MS <= lost_at <= paused_at + NO_PROGRESS_LOST_MS + 500
    probes = sent(mesh, others[0], RaceInputProbe, stuck)
    assert probes and len(probes) <= NO_PROGRESS_LOST_MS // PROBE_AFTER_MS + 1
    assert mesh.sessions[stuck].stats.probes_answered >= len(probes)
    assert mesh.of(others[0], PeerLost) == [PeerLost(stuck)]
    for peer in others:  # the shell closes the link the session asked to close
        assert mesh.sessions[peer].status(stuck) is PeerStatus.LOST
    mesh.down |= {frozenset((stuck, p)) for p in others}
    mesh.run(RECONNECT_WINDOW_MS + 500)  # the reconnect window closes: removed, and the race goes on
    for peer in others:
        assert mesh.sessions[peer].status(stuck) is PeerStatus.REMOVED
        assert PeerLeft(stuck, LeaveReason.DISCONNECT) in mesh.of(peer, PeerLeft)
        assert mesh.sessions[peer].stats.watchdog_lost == 1
    mesh.run(3000)
    assert all(mesh.sessions[p].current_frame > 1000 for p in others)
    agree(mesh, others, over=False)


def test_a_node_that_was_away_itself_does_not_blame_its_peers():
    mesh = Mesh(2, seed=46, length=2000)
    a, b = mesh.peers
    mesh.run(1000)
    session = mesh.sessions[a]
    later = mesh.now + NO_PROGRESS_LOST_MS + 5000  # a was stopped for 20 s: b's inputs could not arrive
    actions = session.tick(later)
    assert not [x for x in actions if isinstance(x, (CloseLink, PeerLost))]
    assert not [x for x in actions if isinstance(x, Send) and isinstance(x.message, RaceInputProbe)]
    assert session.status(b) is PeerStatus.ACTIVE


def test_the_liveness_timers_are_deadlines_the_shell_can_sleep_until():
    mesh = Mesh(2, seed=47, length=2000)
    a, b = mesh.peers
    mesh.run(1000)
    mesh.paused.add(b)
    mesh.lose = lambda src, dst, msg: True  # nothing arrives any more
    mesh.run(200)
    session = mesh.sessions[a]
    deadline = session.next_deadline_ms()
    assert deadline is not None and deadline <= mesh.now + RESEND_MS  # inputs b has not acknowledged
    resent = session.tick(deadline)
    assert any(isinstance(x, Send) and isinstance(x.message, RaceInputs) for x in resent)
    # tick at every deadline only: the watchdog still probes and gives up on time
    now, probed, closed = deadline, None, None
    while closed is None and now < deadline + NO_PROGRESS_LOST_MS + 1000:
        now = session.next_deadline_ms()
        for x in session.tick(now):
            if isinstance(x, Send) and isinstance(x.message, RaceInputProbe) and probed is None:
                probed = now
            if isinstance(x, CloseLink):
                closed = now
    assert probed is not None and closed is not None and closed - probed <= NO_PROGRESS_LOST_MS


def test_a_leave_must_be_signed_by_the_sender_s_race_key_of_this_round():
    mesh = Mesh(3, seed=48, length=2000)
    a, b, c = mesh.peers
    ids = {i.peer_id: i for i in mesh.ids}
    mesh.run(300)
    session = mesh.sessions[a]
    forged = [
        RaceLeave("voluntary", bytes(64)),  # unsigned
        signed_leave(ids[c].race_key(RACE), RACE, LeaveReason.VOLUNTARY),  # c's leave, injected on b's link
        signed_leave(ids[b].race_key(race_id(MATCH_ID, 1)), race_id(MATCH_ID, 1), LeaveReason.VOLUNTARY),  # a replay
        RaceLeave("voluntary", signed_leave(ids[b].race_key(RACE), RACE, LeaveReason.DESYNC).signature),  # reason changed
    ]
    for leave in forged:
        assert session.receive(b, leave, mesh.now) == [Misbehaviour(b, "race-leave-bad-signature")]
        assert session.status(b) is PeerStatus.ACTIVE
    mesh.run(300)
    assert session.status(b) is PeerStatus.ACTIVE and session.ended is None
    own = signed_leave(ids[b].race_key(RACE), RACE, LeaveReason.VOLUNTARY)
    assert session.receive(b, own, mesh.now) == [PeerLeft(b, LeaveReason.VOLUNTARY)]
    assert session.status(b) is PeerStatus.REMOVED
    assert session.stats.drops == {"race-leave-bad-signature": len(forged)}
    assert not [x for x in mesh.actions[a] if isinstance(x, SessionEnded)]
