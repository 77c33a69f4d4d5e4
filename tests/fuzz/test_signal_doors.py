"""The signaling doors' seeds go as deep as an honest exchange: the hub registers peers, relays signals
and refuses a replay and a fourth peer; the sessions verify what it relays; the client door's seed is
verified signals and a TURN reply."""

from __future__ import annotations

from fuzz.doors import signaling, target
from protocol.signaling.actions import PeerRegistered, Refused, Relayed
from protocol.signaling.client import PeerJoined, Signal
from protocol.signaling.turn import TurnCredentials


def test_the_server_seeds_reach_relayed_and_verified_signals_and_refusals():
    seen = [item for seed in target("signal-server").seeds() for item in signaling.server_once(seed)]
    assert sum(isinstance(item, PeerRegistered) for item in seen) >= 5
    assert sum(isinstance(item, Relayed) for item in seen) >= 3
    assert sum(isinstance(item, Signal) for item in seen) >= 3
    codes = {item.code.value for item in seen if isinstance(item, Refused)}
    assert {"signal-replayed", "room-full", "target-not-found"} <= codes


def test_the_client_seed_reaches_verified_signals_and_a_turn_reply():
    seen = signaling.client_once(target("signal-client").seeds()[0])
    assert [type(item) for item in seen if isinstance(item, (PeerJoined, Signal))] == [PeerJoined, Signal, Signal]
    assert isinstance(seen[-1], TurnCredentials)
