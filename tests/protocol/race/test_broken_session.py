"""A bug of this node while its race session handles a message breaks the session (protocol/transaction.py):
it does not go on from a state its rules never made, but ends as ``internal-error``, tells its peers it
leaves, and raises ``MachineFault`` carrying that, for the shell to carry out and log; the others race on."""


from protocol.errors import LocalError
from protocol.race.actions import PeerLeft, SessionEndReason
from protocol.race.messages import RaceInputs
from protocol.transaction import FaultOutcome, MachineFault
from tests.protocol.race.harness import Mesh, Send, VoteDecided
from tests.coded import raises_coded


def test_a_bug_halfway_through_a_message_breaks_the_session_which_leaves_and_the_others_finish():
    mesh = Mesh(4, seed=3, length=900)
    broken = mesh.peers[3]
    session = mesh.sessions[broken]
    take = session._handlers[RaceInputs]
    calls = []

    def buggy(peer, msg, now_ms):
        actions = take(peer, msg, now_ms)  # the inputs are taken, acks and streams moved: then the bug
        calls.append(peer)
        if len(calls) == 200:
            raise RuntimeError("a bug after the inputs were taken")
        return actions

    session._handlers[RaceInputs] = buggy
    mesh.run_to_end()
    ((node, fault),) = mesh.broken
    assert node == broken
    assert fault.outcome is FaultOutcome.BROKEN and isinstance(fault.__cause__, RuntimeError)
    assert session.ended is SessionEndReason.INTERNAL_ERROR and mesh.ended(broken).reason == "internal-error"
    leaves = [a.peer for a in fault.actions if isinstance(a, Send) and a.message.TYPE == "race-leave"]
    assert sorted(leaves) == sorted(mesh.peers[:3])  # every peer is told at once
    frame = session.current_frame
    assert session.receive(mesh.peers[0], RaceInputs(-1, [], []), mesh.now) == [] and session.current_frame == frame
    for peer in mesh.peers[:3]:  # the others saw it leave, and raced on to the end, every vote agreed
        assert [a.peer for a in mesh.of(peer, PeerLeft)] == [broken] and mesh.ended(peer) is None
        assert all(v.kind == "agreed" for v in mesh.of(peer, VoteDecided))
    assert len({mesh.state(p) for p in mesh.peers[:3]}) == 1


def test_a_local_error_in_a_handler_is_a_bug_too():
    mesh = Mesh(3, seed=1, length=600)
    session = mesh.sessions[mesh.peers[2]]

    def misuse(peer, msg, now_ms):
        raise LocalError("race-phase-illegal", "a bug of this node")

    session._handlers[RaceInputs] = misuse
    with raises_coded(MachineFault, "internal-error") as info:
        session.receive(mesh.peers[0], RaceInputs(-1, [], []), mesh.now)
    assert info.value.outcome is FaultOutcome.BROKEN and info.value.__cause__.code == "race-phase-illegal"
    assert session.ended is SessionEndReason.INTERNAL_ERROR
