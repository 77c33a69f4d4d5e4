"""One race-inputs per peer per pump tick: the tick's messages to a peer join into one."""

from __future__ import annotations

from open4wd_node.race.coalesce import TickSends
from protocol.race.mesh import MeshReady
from protocol.race.messages import InputSpan, RaceInputs, Want


def span(first: int, last: int, owner: str = "", prev: bytes = b"") -> InputSpan:
    return InputSpan(owner, first, prev, [(last - first + 1, 0)], bytes(64) * (last - first + 1))


def inputs(ack: int, *spans: InputSpan, want: tuple[Want, ...] = ()) -> RaceInputs:
    return RaceInputs(ack, list(spans), list(want))


def test_a_tick_sends_each_peer_one_race_inputs_that_carries_all_of_them():
    sent: list[tuple[str, object]] = []
    sends = TickSends(lambda peer, message: sent.append((peer, message)))
    sends.hold()
    sends.send("a", inputs(4, span(5, 5, prev=bytes(32))))
    sends.send("b", inputs(9, span(5, 5)))
    sends.send("a", inputs(4, span(6, 6), span(2, 3, owner="zC")))  # continues, and forwards c's
    sends.send("a", inputs(5, span(7, 7), want=(Want("zC", 1),)))
    assert sent == []
    sends.flush()
    joined = inputs(5, span(5, 7, prev=bytes(32)), span(2, 3, owner="zC"), want=(Want("zC", 1),))
    assert sorted(sent, key=lambda s: s[0]) == [("a", joined), ("b", inputs(9, span(5, 5)))]
    assert sends.coalesced == 2


def test_a_re_send_from_the_acknowledgement_covers_what_went_before():
    sent: list[tuple[str, object]] = []
    sends = TickSends(lambda peer, message: sent.append((peer, message)))
    sends.hold()
    sends.send("a", inputs(4, span(8, 9)))
    sends.send("a", inputs(4, span(5, 10, prev=bytes(32))))
    sends.flush()
    assert sent == [("a", inputs(4, span(5, 10, prev=bytes(32))))] and sends.coalesced == 1


def test_an_older_message_the_newer_neither_continues_nor_covers_goes_out_first():
    sent: list[tuple[str, object]] = []
    sends = TickSends(lambda peer, message: sent.append((peer, message)))
    sends.hold()
    sends.send("a", inputs(4, span(5, 6)))
    sends.send("a", inputs(4, span(8, 9)))  # frame 7 is not in either: not one span
    sends.send("a", inputs(4, span(10, 25)))  # 16 + 2 inputs: over a message's cap
    sends.flush()
    assert sent == [("a", inputs(4, span(5, 6))), ("a", inputs(4, span(8, 9))), ("a", inputs(4, span(10, 25)))]
    assert sends.coalesced == 0


def test_other_messages_keep_their_order_and_nothing_is_held_outside_a_tick():
    sent: list[tuple[str, object]] = []
    sends = TickSends(lambda peer, message: sent.append((peer, message)))
    sends.hold()
    sends.send("a", inputs(4, span(5, 5)))
    sends.send("a", MeshReady(1))  # the held race-inputs goes first
    sends.flush()
    sends.send("a", inputs(4, span(6, 6)))  # between ticks: at once
    assert sent == [("a", inputs(4, span(5, 5))), ("a", MeshReady(1)), ("a", inputs(4, span(6, 6)))]
