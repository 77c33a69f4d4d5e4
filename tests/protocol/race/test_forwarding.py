"""Forwarded inputs (docs/race.md, "Forwarded inputs"): a peer whose link to another is down asks the
peers it still reaches to forward that one's signed inputs (``want``); every hop verifies the owner's
signatures, copies are dropped, and no single link's loss decides a race: every node confirms the same
real signed inputs, every vote agrees, nobody is lost. The spec's partition rules still decide who is lost
when a peer is cut from everyone."""

import pytest

from protocol.race.actions import PeerLost, RoundEnded
from protocol.race.inputs import INPUT_WINDOW_AHEAD, INPUT_WINDOW_BEHIND, STATE_BUFFER_FRAMES
from protocol.race.messages import InputSpan, RaceInputs, Want
from protocol.race.spans import skills_mask
from tests.protocol.race.harness import (
    InputChain, Mesh, Misbehaviour, Send, VoteDecided, alter_newest, inputs_message, span_of,
)

CUT_AT_MS = 800
REST = None  # the link stays down for the rest of the race


def agreed(mesh: Mesh) -> None:
    """Nobody ended, one state, every vote agreed, and every node confirmed the same inputs, each real
    and signed (never a prediction)."""
    assert [mesh.ended(p) for p in mesh.peers] == [None] * len(mesh.peers)
    assert len({mesh.state(p) for p in mesh.peers}) == 1
    assert all(v.kind == "agreed" for p in mesh.peers for v in mesh.of(p, VoteDecided))
    logs = [mesh.confirmed_log(p) for p in mesh.peers]
    assert all(log == logs[0] for log in logs) and len(logs[0]) == mesh.sessions[mesh.peers[0]].current_frame
    assert all(signed for row in logs[0].values() for _, _, signed in row)


def lost_in_race(mesh: Mesh) -> list[tuple[str, str]]:
    """(node, peer) of every ``PeerLost`` a node reported before its round ended."""
    found = []
    for node in mesh.peers:
        for action in mesh.actions[node]:
            if isinstance(action, RoundEnded):
                break
            if isinstance(action, PeerLost):
                found.append((node, action.peer))
    return found


def race_with_cuts(n: int, cuts: list[tuple[int, int]], down_ms: int | None, seed: int = 6) -> Mesh:
    """An ``n``-node race whose links ``cuts`` (pairs of indices) go down at ``CUT_AT_MS`` for ``down_ms``
    (``REST``: to the end); checks mid-cut that both ends of each still wait for each other."""
    race_ms = CUT_AT_MS + (down_ms if down_ms is not None else 18_000) + 2_000
    mesh = Mesh(n, seed=seed, length=race_ms * 60 // 1000)
    mesh.run(CUT_AT_MS)
    for i, j in cuts:
        mesh.cut([mesh.peers[i]], [mesh.peers[j]])
    mesh.run(3_000 if down_ms is None else down_ms)
    for i, j in cuts:
        a, b = mesh.peers[i], mesh.peers[j]
        assert mesh.sessions[a].status(b) == mesh.sessions[b].status(a) == "active"  # heard of through the others
    if down_ms is not None:
        for i, j in cuts:
            mesh.heal([mesh.peers[i]], [mesh.peers[j]])
    mesh.run_to_end()
    return mesh


@pytest.mark.parametrize("down_ms", [3_000, 10_000, REST], ids=["3s", "10s", "rest"])
@pytest.mark.parametrize("n", [3, 4, 5])
def test_one_link_down_while_both_ends_reach_the_others_forks_nothing(n, down_ms):
    mesh = race_with_cuts(n, [(0, 1)], down_ms)
    agreed(mesh)
    assert lost_in_race(mesh) == []
    a, b = mesh.peers[:2]
    assert set(forwarders(mesh, a, b)) == set(mesh.peers[2:])  # every other node carried a's inputs to b


def forwarders(mesh: Mesh, owner: str, target: str) -> list[str]:
    """The nodes that forwarded some of ``owner``'s inputs to ``target``."""
    return [p for p in mesh.peers if any(
        isinstance(x, Send) and x.peer == target and isinstance(x.message, RaceInputs)
        and any(s.owner == owner for s in x.message.spans) for x in mesh.actions[p])]


@pytest.mark.parametrize("cuts", [[(0, 1), (2, 3)], [(0, 1), (0, 2)]], ids=["apart", "one-end-shared"])
def test_two_links_down_at_once_in_five_nodes(cuts):
    mesh = race_with_cuts(5, cuts, REST, seed=7)
    agreed(mesh)
    assert lost_in_race(mesh) == []


def test_a_peer_reached_only_through_a_chain_of_two_hops_counts_as_present():
    """Decision: a peer whose signed inputs still reach this node, over any number of hops, is reached
    (the partition guard counts it present). Links a–c, a–d and b–d are down, so a's inputs reach d only
    through b and then c, and d's reach a through c and b; nobody is lost and the race agrees."""
    mesh = Mesh(4, seed=8, length=1200)
    a, b, c, d = mesh.peers
    mesh.run(CUT_AT_MS)
    mesh.cut([a], [c, d])
    mesh.cut([b], [d])
    mesh.run_to_end()
    agreed(mesh)
    assert lost_in_race(mesh) == []
    assert forwarders(mesh, a, d) == [c] and forwarders(mesh, a, c) == [b]  # a's inputs: a → b → c → d
    assert forwarders(mesh, d, a) == [b] and forwarders(mesh, d, b) == [c]


def test_a_peer_cut_from_everyone_is_still_lost_and_the_partition_rules_decide():
    mesh = Mesh(4, seed=9, length=1500)
    lost, others = mesh.peers[0], mesh.peers[1:]
    mesh.run(CUT_AT_MS)
    mesh.cut([lost], others)
    mesh.run_to_end()
    assert {(node, peer) for node, peer in lost_in_race(mesh)} >= {(p, lost) for p in others}
    assert mesh.ended(lost).reason == "partition-void"  # alone: not a strict majority of four
    assert all(mesh.ended(p) is None for p in others)
    assert len({mesh.state(p) for p in others}) == 1


def hostile_forwarder(mesh: Mesh, forwarder: str, target: str, change) -> list[int]:
    """``forwarder``'s forwarded spans to ``target`` pass through ``change(span) -> span``; returns the
    first frame of every span it changed."""
    changed: list[int] = []

    def tamper(src, dst, msg):
        if src == forwarder and dst == target and isinstance(msg, RaceInputs) and any(s.owner for s in msg.spans):
            spans = []
            for span in msg.spans:
                if span.owner:
                    new = change(span)
                    if new != span:
                        changed.append(span.frame)
                    span = new
                spans.append(span)
            return RaceInputs(msg.ack, spans, msg.want)
        return msg

    mesh.tamper = tamper
    return changed


def toggled(span: InputSpan) -> InputSpan:  # forged events (a skill of the first chip: a's)
    return alter_newest(span, toggle=skills_mask([("brake", False)]))


def shifted(span: InputSpan) -> InputSpan:  # the same signed inputs claimed for the frames after them
    return InputSpan(span.owner, span.frame + 1, span.prev, span.runs, span.signatures)


def reordered(span: InputSpan) -> InputSpan:  # the signatures of the span's inputs in another order
    sigs = [span.signatures[i:i + 64] for i in range(0, len(span.signatures), 64)]
    return span if len(sigs) < 2 else InputSpan(span.owner, span.frame, span.prev, span.runs, b"".join(sigs[::-1]))


@pytest.mark.parametrize("change", [toggled, shifted, reordered, lambda s: alter_newest(s, flip_signature=True)],
                         ids=["forged", "shifted", "reordered", "bad-signature"])
def test_a_forwarder_that_forges_is_refused_and_blamed_and_the_owner_is_unharmed(change):
    """a–b is down; c forwards a's inputs to b altered, d forwards them as they are. b refuses every
    altered span as c's misbehaviour, blames a for nothing, and races on with a's real inputs from d."""
    mesh = Mesh(4, seed=10, length=900)
    a, b, c, d = mesh.peers
    mesh.run(CUT_AT_MS)
    changed = hostile_forwarder(mesh, c, b, change)
    mesh.cut([a], [b])
    mesh.run_to_end()
    assert changed
    blamed = {(m.peer, m.code) for m in mesh.of(b, Misbehaviour)}
    assert blamed == {(c, "race-input-bad-signature")}
    assert not any(m.peer == a for p in mesh.peers for m in mesh.of(p, Misbehaviour))
    agreed(mesh)
    assert lost_in_race(mesh) == []


def test_a_replayed_forwarded_span_is_a_harmless_copy():
    """A forwarder that sends the same spans again (or old ones) costs the receiver a dictionary look-up
    per input: each is a copy of an input held, and nothing is blamed."""
    mesh = Mesh(3, seed=11, length=700)
    a, b, c = mesh.peers
    mesh.run(CUT_AT_MS)
    seen: list[RaceInputs] = []

    def replay(src, dst, msg):
        if src == c and dst == b and isinstance(msg, RaceInputs) and any(s.owner for s in msg.spans):
            seen.append(msg)
            if len(seen) > 3:
                old = seen[-4]
                return RaceInputs(msg.ack, msg.spans + [s for s in old.spans if s.owner and s.owner not in
                                                        {x.owner for x in msg.spans}], msg.want)
        return msg

    mesh.tamper = replay
    mesh.cut([a], [b])
    mesh.run(2_000)
    mesh.tamper = None
    for old in seen[:20]:  # and the earliest again, long after
        mesh.handle(b, mesh.sessions[b].receive(c, old, mesh.now))
    mesh.run_to_end()
    agreed(mesh)
    assert not any(mesh.of(p, Misbehaviour) for p in mesh.peers)
    assert mesh.sessions[b].stats.redundant_inputs > 0


def test_memory_stays_bounded_by_window_and_peers_whatever_a_forwarder_sends():
    """A hostile forwarder floods b with forwarded spans: 3,000 frames of a's genuine signed inputs (the
    network stands still meanwhile, so a signs nothing else), forged ones, spans naming strangers and b
    itself, wants of every kind. b keeps at most the input window of inputs per racer, and refuses what
    breaks a rule as the forwarder's, never as a's."""
    mesh = Mesh(3, seed=12, length=5000)
    a, b, c = mesh.peers
    mesh.run(CUT_AT_MS)
    mesh.cut([a], [b])
    session = mesh.sessions[b]
    first = mesh.sessions[a]._inputs[a].newest + 1
    chain = InputChain(mesh.ids[0], session.race_id)
    genuine = [chain.input(f, [("weapon", True)]) for f in range(first, first + 3000)]
    hostile = [
        lambda run: RaceInputs(-1, [alter_newest(span_of(run, owner=a), flip_signature=True)], []),
        lambda run: inputs_message(*run, owner=a),
        lambda run: RaceInputs(-1, [InputSpan(b, run[0].frame, bytes(32), [(1, 0)], bytes(64))], [Want(a, run[0].frame)]),
        lambda run: RaceInputs(-1, [InputSpan("zStranger", run[0].frame, bytes(32), [(1, 0)], bytes(64))], []),
    ]
    for start in range(0, 3000, 33):
        for message in hostile:
            mesh.handle(b, session.receive(c, message(genuine[start:start + 33]), mesh.now))
        mesh.handle(b, session.advance_frame(mesh.now).actions)  # b steps on as far as it may
    bound = INPUT_WINDOW_AHEAD + INPUT_WINDOW_BEHIND + STATE_BUFFER_FRAMES + session.setup.max_prediction + 1
    held = {p: len(session._inputs[p].real) + len(session._inputs[p].pending) for p in mesh.peers if p != b}
    assert all(count <= bound for count in held.values()), held
    assert all(len(session._inputs[p].signed) <= bound for p in mesh.peers if p != b)
    assert sum(len(x) for x in session._pending.values()) == 0
    assert {"race-inputs-invalid", "race-input-bad-signature", "race-input-ahead"} <= set(session.stats.drops)
    assert {m.peer for m in mesh.of(b, Misbehaviour)} == {c} and session.ended is None
    assert max(session._inputs[a].real) <= session.current_frame + INPUT_WINDOW_AHEAD
