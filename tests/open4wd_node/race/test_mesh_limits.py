"""A race link's limits leave headroom for a catch-up burst: whatever a sender paced to ``RACE_LIMITS``
sends, arriving up to the reconnect window late and in order (a stalled sender or receiver resuming),
passes a receiver's ``RACE_INGRESS_LIMITS`` without a drop. Sans-IO: the link's own pacer and guard."""

from hypothesis import given, settings
from hypothesis import strategies as st

from open4wd_node.net.link_rules import IngressGuard, SendPacer
from open4wd_node.race.mesh import RACE_CONTROL_TYPES, RACE_INGRESS_LIMITS, RACE_LIMITS, with_headroom
from protocol.encoding.wire import encode_message
from protocol.errors import ProtocolError
from protocol.race.messages import InputSpan, RaceChecksum, RaceInputs
from protocol.race.recovery import RECONNECT_WINDOW_MS

INPUTS = encode_message(RaceInputs(41, [InputSpan("", 42, bytes(32), [(3, 1)], bytes(64 * 3))], []))
CHECKSUM = encode_message(RaceChecksum(120, bytes(32), bytes(64)))


def paced(plan: list[tuple[int, bool]]) -> list[tuple[int, bytes]]:
    """(send time, body) of each message a sender paced to ``RACE_LIMITS`` puts out when it wants to
    send after each gap of ``plan`` (ms) an input message, or a control message."""
    pacer = SendPacer(RACE_LIMITS, 0, RACE_CONTROL_TYPES)
    now, out = 0, []
    for gap, control in plan:
        now += gap
        body, kind = (CHECKSUM, "race-checksum") if control else (INPUTS, "race-inputs")
        while (wait := pacer.delay_ms(kind, len(body), now)) > 0:
            now += wait
        out.append((now, body))
    return out


def arrivals(sent: list[tuple[int, bytes]], delays: list[int]) -> list[tuple[int, bytes]]:
    """In order (one TCP stream), each no earlier than the one before and ``delay`` after its sending."""
    at, out = 0, []
    for k, (time, body) in enumerate(sent):
        delay = delays[k % len(delays)]
        at = max(at, time + delay)
        out.append((at, body))
    return out


def drops(received: list[tuple[int, bytes]], limits) -> int | str:
    """How many messages the receiver's buckets dropped, or the code that closed the link."""
    guard = IngressGuard(limits, 0, RACE_CONTROL_TYPES)
    try:
        for at, body in received:
            guard.admit(body, at)
    except ProtocolError as exc:
        return exc.code
    return guard.dropped


PLAN = st.lists(st.tuples(st.sampled_from([0, 0, 0, 1, 5, 16, 200]), st.booleans()), min_size=1, max_size=60).map(
    lambda chunk: chunk * 40)  # up to 2400 messages: well past a window's worth at the paced rate
DELAYS = st.lists(st.integers(0, RECONNECT_WINDOW_MS) | st.sampled_from([0, RECONNECT_WINDOW_MS]), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(plan=PLAN, delays=DELAYS)
def test_a_paced_stream_late_by_up_to_the_reconnect_window_is_never_throttled(plan, delays):
    assert drops(arrivals(paced(plan), delays), RACE_INGRESS_LIMITS) == 0


def test_the_worst_case_a_receiver_reading_a_whole_window_at_once_passes_and_without_headroom_does_not():
    """The sender keeps its pace for a whole reconnect window while the receiver is stopped; the receiver
    then reads everything at once. With equal limits (the old race link) the burst is dropped, 16 in a
    row, and the link is closed as flooded."""
    sent = paced([(0, k % 5 == 0) for k in range(1400)])
    assert sent[-1][0] <= RECONNECT_WINDOW_MS
    resumed = [(RECONNECT_WINDOW_MS, body) for _, body in sent]
    assert drops(resumed, RACE_INGRESS_LIMITS) == 0
    assert drops(resumed, RACE_LIMITS) == "link-flooded"


def test_headroom_grows_each_burst_by_its_rate_over_the_window_and_keeps_the_rates():
    wide = with_headroom(RACE_LIMITS, 15_000)
    assert wide.general_burst == RACE_LIMITS.general_burst + 15 * RACE_LIMITS.general_per_second
    assert wide.expensive_burst == RACE_LIMITS.expensive_burst + 15 * RACE_LIMITS.expensive_per_second
    assert wide.general_bytes_burst == RACE_LIMITS.general_bytes_burst + 15 * RACE_LIMITS.general_bytes_per_second
    assert (wide.general_per_second, wide.expensive_per_second, wide.general_bytes_per_second) == (
        RACE_LIMITS.general_per_second, RACE_LIMITS.expensive_per_second, RACE_LIMITS.general_bytes_per_second)
    assert RACE_INGRESS_LIMITS == with_headroom(RACE_LIMITS, RECONNECT_WINDOW_MS)
