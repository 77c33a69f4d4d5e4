"""One race-inputs per peer per pump tick: the tick's last carries what the earlier ones did."""

from __future__ import annotations

from open4wd_node.race.coalesce import TickSends
from protocol.race.mesh import MeshReady
from protocol.race.messages import RaceInput, RaceInputs


def inputs(ack: int, *frames: int) -> RaceInputs:
    return RaceInputs(ack, [RaceInput(f, [], bytes(32), bytes(64)) for f in frames])


def test_a_tick_sends_each_peer_its_newest_race_inputs_once():
    sent: list[tuple[str, object]] = []
    sends = TickSends(lambda peer, message: sent.append((peer, message)))
    sends.hold()
    sends.send("a", inputs(4, 5))
    sends.send("b", inputs(9, 5))
    sends.send("a", inputs(4, 5, 6))
    sends.send("a", inputs(4, 5, 6, 7))
    assert sent == []
    sends.flush()
    assert sorted(sent, key=lambda s: s[0]) == [("a", inputs(4, 5, 6, 7)), ("b", inputs(9, 5))]
    assert sends.coalesced == 2


def test_an_older_message_the_newer_does_not_cover_goes_out_first():
    sent: list[tuple[str, object]] = []
    sends = TickSends(lambda peer, message: sent.append((peer, message)))
    sends.hold()
    sends.send("a", inputs(4, 5, 6))
    sends.send("a", inputs(4, 6, 7))  # the newest inputs only (the window moved on): frame 5 would be lost
    sends.flush()
    assert sent == [("a", inputs(4, 5, 6)), ("a", inputs(4, 6, 7))] and sends.coalesced == 0


def test_other_messages_keep_their_order_and_nothing_is_held_outside_a_tick():
    sent: list[tuple[str, object]] = []
    sends = TickSends(lambda peer, message: sent.append((peer, message)))
    sends.hold()
    sends.send("a", inputs(4, 5))
    sends.send("a", MeshReady(1))  # the held race-inputs goes first
    sends.flush()
    sends.send("a", inputs(4, 5, 6))  # between ticks: at once
    assert sent == [("a", inputs(4, 5)), ("a", MeshReady(1)), ("a", inputs(4, 5, 6))]
