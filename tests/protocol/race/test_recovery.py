"""``Recovery`` on its own: it works on the shared peer table, input buffers and sync layer it is given,
and returns what it wants of the session as typed decisions (no ``RaceSession`` here: nothing to call)."""

import ast

from protocol.identity.keys import race_id
from protocol.race.actions import ConfirmedInput, PeerLeft, PeerLost, Send, SessionEndReason
from protocol.race.decisions import AdmitRelayed, EndSession, RecomputeFrontier, RelayHeldInputs
from protocol.race.forwarding import InputForwarding
from protocol.race.inputs import PeerInputs
from protocol.race.keys import RaceKeyBook, announce, signed_leave
from protocol.race.messages import InputRecord, LeaveReason, RaceRejoin, RaceRelay
from protocol.race.peers import PeerStatus, PeerTable
from protocol.race.recovery import LINK_GRACE_MS, RECONNECT_WINDOW_MS, Recovery
from protocol.race.sync import SyncLayer
from tests.layout import REPO_ROOT
from tests.protocol.race.harness import MATCH_ID, CounterWorld, identities, make_setup

RACE = race_id(MATCH_ID, 0)


def recovery(n, known_keys=True):
    ids = identities(n)
    setup = make_setup(ids)
    me = ids[0].peer_id
    peers = PeerTable(me, setup.roster)
    inputs = {p: PeerInputs() for p in setup.roster}
    keys = RaceKeyBook(setup.roster)
    for other in ids[1:] if known_keys else ():
        keys.add(other.peer_id, announce(other, RACE))
    rec = Recovery(setup=setup, race_id=RACE, race_key=ids[0].race_key(RACE), keys=keys, peers=peers, inputs=inputs,
                   sync=SyncLayer(CounterWorld(n)), forwarding=InputForwarding(RACE, me, keys, setup.skills))
    return [i.peer_id for i in ids], rec, peers


def test_a_lost_peer_is_predicted_for_the_window_then_removed_while_a_majority_is_present():
    (me, b, c), rec, peers = recovery(3)
    assert rec.peer_lost(b, 1_000) == [RecomputeFrontier(), PeerLost(b), RelayHeldInputs(b, (c,))]
    assert peers.statuses[b] is PeerStatus.LOST
    assert rec.peer_lost(b, 1_000) == []  # only an active peer gets lost
    assert rec.tick(1_000 + RECONNECT_WINDOW_MS - 1) == []
    assert rec.tick(1_000 + RECONNECT_WINDOW_MS) == [RecomputeFrontier(), PeerLeft(b, LeaveReason.DISCONNECT)]
    assert peers.statuses[b] is PeerStatus.REMOVED


def test_a_minority_side_ends_partition_void_when_the_window_closes():
    (me, b, c), rec, _ = recovery(3)
    rec.peer_lost(b, 0)
    rec.peer_lost(c, 0)
    (ended,) = rec.tick(RECONNECT_WINDOW_MS)
    assert isinstance(ended, EndSession)
    assert ended.reason is SessionEndReason.PARTITION_VOID and ended.evidence == {"present": [me]}


def test_relayed_inputs_are_admitted_inside_the_window_only_and_a_lost_peer_s_own_wait():
    (me, b, c), rec, peers = recovery(3)
    records = [InputRecord(c, f, [], bytes(32), bytes(64)) for f in (0, 24, 25)] + [InputRecord(b, 3, [], bytes(32), bytes(64))]
    peers.statuses[b] = PeerStatus.LOST
    steps = rec.on_relay(b, RaceRelay(records), 0)
    assert steps == [AdmitRelayed(c, records[0].signed()), AdmitRelayed(c, records[1].signed())]  # 25 is past the window


def test_relayed_inputs_of_a_peer_whose_race_key_is_not_here_yet_are_set_aside_without_blame():
    (me, b, c), rec, _ = recovery(3, known_keys=False)
    steps = rec.on_relay(b, RaceRelay([InputRecord(c, 0, [], bytes(32), bytes(64))]), 0)
    assert steps == []  # none admitted, nobody blamed


def test_an_input_of_an_unlinked_peer_admitted_from_a_relay_restarts_its_grace():
    (me, b, c), rec, _ = recovery(3)
    assert rec.link_lost(b, 0) == [RelayHeldInputs(b, (c,))]
    assert rec.next_deadline_ms() == LINK_GRACE_MS
    rec.relayed_admitted(b, 24, 500)  # not beyond what it may have made before the break: nothing new
    assert rec.next_deadline_ms() == LINK_GRACE_MS
    rec.relayed_admitted(b, 25, 1_500)
    assert rec.next_deadline_ms() == 1_500 + LINK_GRACE_MS


def test_an_off_line_node_of_a_two_player_race_gives_up_at_once():
    (me, b), rec, _ = recovery(2)
    rec.peer_lost(b, 0)
    rec.on_confirmed(0, [ConfirmedInput(b, 1, (), None)], minority=True)  # a lost peer's prediction went final
    assert rec.off_line
    setup = make_setup(identities(2))
    recompute, leave, end = rec.on_rejoin(b, RaceRejoin(RACE, setup.loadouts[b], 0, False), 100, confirmed_frame=0)
    assert recompute == RecomputeFrontier()  # b is active again (from frame 1), so the frontier changes
    assert isinstance(leave, Send) and leave.peer == b and leave.message == signed_leave(
        identities(2)[0].race_key(RACE), RACE, LeaveReason.DISCONNECT)
    assert isinstance(end, EndSession) and end.reason is SessionEndReason.CATCH_UP_IMPOSSIBLE


def test_the_layers_below_the_session_never_import_it():
    """One direction: the session imports the recovery, its decisions, the forwarding rules and the input
    streams; none of them imports the session."""
    for module in ("recovery", "decisions", "forwarding", "streams", "spans", "sync", "peers", "inputs", "catchup"):
        tree = ast.parse((REPO_ROOT / "protocol" / "race" / f"{module}.py").read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "protocol.race.session" not in imported, module
