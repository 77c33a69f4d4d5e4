"""The listener's door without sockets: source keys, opening places, the exact first-frame reader, the
dialer's backoff against a busy listener."""

import random

import pytest

from open4wd_base.errors import LocalError
from open4wd_node.net.admission import BusyBackoff, ExactFrame, ListenerLimits, OpeningPlaces, source_of
from protocol.encoding.wire import HEADER
from protocol.errors import ProtocolError
from tests.coded import raises_coded


@pytest.mark.parametrize("host, source", [
    ("127.0.0.2", "127.0.0.2"),
    ("::ffff:203.0.113.7", "203.0.113.7"),  # a dual-stack socket shows IPv4 peers this way
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),  # the same host, another address of its /64
    ("fe80::1%eth0", "fe80::/64"),
    ("unknown", "unknown"),
])
def test_a_source_is_an_ipv4_address_or_an_ipv6_slash_64(host, source):
    assert source_of(host) == source


def test_a_source_gets_its_share_and_no_more_while_others_still_get_in():
    places = OpeningPlaces(total=10, per_source=8)
    for _ in range(8):
        places.take("127.0.0.2")
    with pytest.raises(ProtocolError) as info:
        places.take("127.0.0.2")
    assert info.value.code == "listener-busy" and "127.0.0.2" in info.value.message and "share" in info.value.message
    places.take("127.0.0.1")
    places.take("127.0.0.3")
    with pytest.raises(ProtocolError) as info:  # every place taken: refused whoever asks
        places.take("127.0.0.4")
    assert info.value.code == "listener-busy" and "10 links" in info.value.message
    places.give_back("127.0.0.2")
    places.take("127.0.0.4")
    assert (places.in_use, places.held("127.0.0.2"), places.held("127.0.0.9")) == (10, 7, 0)


def test_giving_back_a_place_never_taken_is_a_local_bug():
    places = OpeningPlaces(total=2, per_source=1)
    places.take("a")
    places.give_back("a")
    with raises_coded(LocalError, "place-not-held"):
        places.give_back("a")


def test_limits_refuse_a_share_larger_than_the_total():
    with pytest.raises(ValueError):
        ListenerLimits(openings=4, openings_per_source=5)
    with pytest.raises(ValueError):
        ListenerLimits(openings_per_source=0)


def test_exact_frame_asks_for_the_header_then_exactly_the_body():
    reader = ExactFrame(16)
    frame = HEADER.pack(5) + b"hello"
    assert reader.wanted == 4
    assert reader.feed(frame[:2]) == [] and reader.wanted == 2
    assert reader.feed(frame[2:4]) == [] and reader.wanted == 5
    assert reader.feed(b"hel") == [] and reader.buffered == frame[:7] and reader.wanted == 2
    assert reader.feed(b"lo") == [b"hello"]
    assert reader.wanted == 4 and reader.buffered == b""  # the next frame starts
    assert reader.feed(HEADER.pack(0)) == [b""]


def test_exact_frame_refuses_an_oversize_announcement_before_any_body_byte():
    reader = ExactFrame(4096)
    assert reader.feed(HEADER.pack(4096)) == []  # at the limit: fine
    reader = ExactFrame(4096)
    with pytest.raises(ProtocolError) as info:
        reader.feed(HEADER.pack(256 * 1024))
    assert info.value.code == "frame-too-large" and "262144" in info.value.message


def test_exact_frame_refuses_more_bytes_than_it_asked_for():
    with raises_coded(LocalError, "frame-overread"):
        ExactFrame(16).feed(HEADER.pack(1) + b"xy")


def test_busy_backoff_doubles_to_a_cap_with_jitter_and_stays_in_its_window():
    backoff = BusyBackoff(10.0, random.Random(7))
    elapsed, delays = 0.0, []
    while (delay := backoff.next_delay_s(elapsed)) is not None:
        delays.append(delay)
        elapsed += delay + 0.01  # each refused attempt takes a moment
    nominal = [0.25, 0.5, 1.0, 2.0] + [2.0] * (len(delays) - 4)
    assert all(0.75 * n <= d < 1.25 * n for d, n in zip(delays, nominal, strict=True))
    assert 6 <= len(delays) <= 9 and sum(delays) <= 10.0
    assert elapsed + 2.5 > 10.0  # it gave up only when no further attempt fitted in the window
    assert backoff.refusals == len(delays) + 1


def test_busy_backoff_with_no_window_gives_up_at_the_first_refusal():
    assert BusyBackoff(0.0).next_delay_s(0.0) is None
