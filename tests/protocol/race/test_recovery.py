"""``Recovery`` on its own: it works on the shared peer table, input buffers and sync layer it is given,
and reaches the session only through ``SessionPort`` (here a recording stub, no ``RaceSession``)."""

from protocol.identity.keys import race_id
from protocol.race.actions import ConfirmedInput, PeerLeft, PeerLost, Send, SessionEnded, SessionEndReason
from protocol.race.inputs import PeerInputs
from protocol.race.keys import RaceKeyBook, announce, signed_leave
from protocol.race.messages import InputRecord, LeaveReason, RaceRejoin, RaceRelay
from protocol.race.peers import PeerStatus, PeerTable
from protocol.race.recovery import RECONNECT_WINDOW_MS, Recovery
from protocol.race.sync import SyncLayer
from tests.protocol.race.harness import MATCH_ID, CounterWorld, identities, make_setup, signed_input

RACE = race_id(MATCH_ID, 0)


class StubSession:
    """Records what the recovery asks of the session."""

    def __init__(self):
        self.ended = None
        self.confirmed_frame = -1
        self.calls = []

    def window_end(self):
        return 24

    def recompute_frontier(self):
        self.calls.append("frontier")

    def admit(self, peer, msg):
        self.calls.append(("admit", peer, msg.frame))
        return []

    def settle(self, peer):
        self.calls.append(("settle", peer))
        return []

    def end(self, reason, detail, evidence=None):
        if self.ended is not None:
            return []
        self.ended = reason
        return [SessionEnded(reason, detail, evidence or {})]

    def restart_at(self, frame):
        self.calls.append(("restart", frame))


def recovery(n, known_keys=True):
    ids = identities(n)
    setup = make_setup(ids)
    me = ids[0].peer_id
    peers = PeerTable(me, setup.roster)
    inputs = {p: PeerInputs() for p in setup.roster}
    stub = StubSession()
    keys = RaceKeyBook(setup.roster)
    for other in ids[1:] if known_keys else ():
        keys.add(other.peer_id, announce(other, RACE))
    rec = Recovery(setup=setup, race_id=RACE, race_key=ids[0].race_key(RACE), keys=keys,
                   peers=peers, inputs=inputs, sync=SyncLayer(CounterWorld(n)), session=stub)
    return [i.peer_id for i in ids], rec, peers, inputs, stub


def test_a_lost_peer_is_predicted_for_the_window_then_removed_while_a_majority_is_present():
    (me, b, c), rec, peers, inputs, stub = recovery(3)
    held = signed_input(identities(3)[1], RACE, 0)
    inputs[b].add(0, (), held, bytes(32))
    actions = rec.peer_lost(b, 1_000)
    assert actions == [PeerLost(b), Send(c, RaceRelay([InputRecord.of(b, held)]))]
    assert peers.statuses[b] is PeerStatus.LOST and stub.calls == ["frontier", ("settle", b)]
    assert rec.peer_lost(b, 1_000) == []  # only an active peer gets lost
    assert rec.tick(1_000 + RECONNECT_WINDOW_MS - 1) == []
    assert rec.tick(1_000 + RECONNECT_WINDOW_MS) == [PeerLeft(b, LeaveReason.DISCONNECT)]
    assert peers.statuses[b] is PeerStatus.REMOVED and stub.ended is None


def test_a_minority_side_ends_partition_void_when_the_window_closes():
    (me, b, c), rec, peers, _, stub = recovery(3)
    rec.peer_lost(b, 0)
    rec.peer_lost(c, 0)
    (ended,) = rec.tick(RECONNECT_WINDOW_MS)
    assert ended.reason is SessionEndReason.PARTITION_VOID and ended.evidence == {"present": [me]}
    assert stub.ended is SessionEndReason.PARTITION_VOID and rec.tick(RECONNECT_WINDOW_MS) == []


def test_relayed_inputs_are_admitted_inside_the_window_only_and_a_lost_peer_s_own_wait():
    (me, b, c), rec, peers, _, stub = recovery(3)
    records = [InputRecord(c, f, [], bytes(32), bytes(64)) for f in (0, 24, 25)] + [InputRecord(b, 3, [], bytes(32), bytes(64))]
    peers.statuses[b] = PeerStatus.LOST
    rec.on_relay(b, RaceRelay(records), 0)
    assert stub.calls == [("admit", c, 0), ("admit", c, 24)]  # 25 is past the window; b's own waits


def test_relayed_inputs_of_a_peer_whose_race_key_is_not_here_yet_are_set_aside_without_blame():
    (me, b, c), rec, peers, _, stub = recovery(3, known_keys=False)
    assert rec.on_relay(b, RaceRelay([InputRecord(c, 0, [], bytes(32), bytes(64))]), 0) == []
    assert stub.calls == [("settle", c)]  # c's inputs are bridged to b from now on: none held yet, none admitted


def test_an_off_line_node_of_a_two_player_race_gives_up_at_once():
    (me, b), rec, peers, _, stub = recovery(2)
    rec.peer_lost(b, 0)
    rec.on_confirmed(0, [ConfirmedInput(b, 1, (), None)], minority=True)  # a lost peer's prediction went final
    assert rec.off_line
    setup = make_setup(identities(2))
    actions = rec.on_rejoin(b, RaceRejoin(RACE, setup.loadouts[b], 0, False), 100)
    assert isinstance(actions[0], Send) and actions[0].peer == b and actions[0].message == signed_leave(
        identities(2)[0].race_key(RACE), RACE, LeaveReason.DISCONNECT)
    assert isinstance(actions[1], SessionEnded) and actions[1].reason is SessionEndReason.CATCH_UP_IMPOSSIBLE
