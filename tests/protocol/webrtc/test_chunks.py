"""The DataChannel framing and the bounded reassembler of large bodies."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from protocol.errors import LocalError, PeerError
from protocol.webrtc.chunks import (
    MAX_DATACHANNEL_MESSAGE,
    MAX_WHOLE_BODY,
    PART_BYTES,
    PART_HEADER,
    ChunkLimits,
    Kind,
    Reassembler,
    frame_body,
    frame_close,
    frame_parts,
    frame_probe,
    frame_whole,
    read_close,
    read_probe,
)
from tests.coded import raises_coded

LIMITS = ChunkLimits(max_message_bytes=4 * PART_BYTES, max_in_flight=2, deadline_ms=1_000)


def test_a_body_that_fits_goes_whole_and_one_byte_more_goes_in_parts():
    assert frame_body(bytes(MAX_WHOLE_BODY), 1) == [b"\x00" + bytes(MAX_WHOLE_BODY)]
    parts = frame_body(bytes(MAX_WHOLE_BODY + 1), 1)
    assert len(parts) == 2 and all(len(p) <= MAX_DATACHANNEL_MESSAGE for p in parts)
    with raises_coded(LocalError, "chunk-needs-parts"):
        frame_whole(bytes(MAX_WHOLE_BODY + 1))


@settings(max_examples=40, deadline=None)
@given(size=st.integers(1, 3 * PART_BYTES + 5), order=st.randoms(use_true_random=False))
def test_parts_in_any_order_give_back_the_body_and_nothing_stays_buffered(size, order):
    body = bytes(i % 251 for i in range(size))
    parts = list(frame_parts(body, 7))
    assert all(len(p) <= MAX_DATACHANNEL_MESSAGE for p in parts)
    order.shuffle(parts)
    reassembler = Reassembler(LIMITS)
    results = [reassembler.feed(p, 0) for p in parts]
    assert results[-1] == body and all(r is None for r in results[:-1])
    assert reassembler.in_flight == 0 and reassembler.buffered == 0


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=64), message_id=st.integers(0, 2**32 - 1), total=st.integers(0, 2**32 - 1),
       index=st.integers(0, 0xFFFF), count=st.integers(0, 0xFFFF))
def test_any_part_header_is_taken_or_refused_with_a_code_and_never_buffers_beyond_the_bound(data, message_id, total,
                                                                                             index, count):
    reassembler = Reassembler(LIMITS)
    part = PART_HEADER.pack(Kind.PART, message_id, total, index, count) + data
    try:
        reassembler.feed(part, 0)
    except PeerError as exc:
        assert exc.code.startswith("chunk-")
    assert reassembler.buffered <= LIMITS.max_message_bytes * LIMITS.max_in_flight


def test_an_oversize_message_is_refused_at_its_first_part():
    header = PART_HEADER.pack(Kind.PART, 1, LIMITS.max_message_bytes + 1, 0, 5)
    with raises_coded(PeerError, "chunk-too-large"):
        Reassembler(LIMITS).feed(header + bytes(PART_BYTES), 0)


def test_too_many_unfinished_messages_duplicates_and_disagreements_are_refused():
    body = bytes(2 * PART_BYTES)
    reassembler = Reassembler(LIMITS)
    first = [next(frame_parts(body, n)) for n in (1, 2, 3)]
    reassembler.feed(first[0], 0)
    with raises_coded(PeerError, "chunk-duplicate"):
        reassembler.feed(first[0], 0)
    reassembler = Reassembler(LIMITS)
    reassembler.feed(first[0], 0)
    reassembler.feed(first[1], 0)
    with raises_coded(PeerError, "chunk-too-many-in-flight"):
        reassembler.feed(first[2], 0)
    reassembler = Reassembler(LIMITS)
    reassembler.feed(first[0], 0)
    other = list(frame_parts(bytes(3 * PART_BYTES), 1))[1]
    with raises_coded(PeerError, "chunk-inconsistent"):
        reassembler.feed(other, 0)


def test_a_never_finished_message_is_refused_at_its_deadline_and_not_before():
    reassembler = Reassembler(LIMITS)
    reassembler.feed(next(frame_parts(bytes(2 * PART_BYTES), 9)), 100)
    assert reassembler.deadline_ms == 1_100
    reassembler.expire(1_099)
    with raises_coded(PeerError, "chunk-unfinished"):
        reassembler.expire(1_100)


def test_malformed_parts_are_refused():
    body = bytes(PART_BYTES + 10)
    good = list(frame_parts(body, 1))
    for bad in (b"", b"\x01", good[0][:-1], good[1] + b"x", PART_HEADER.pack(Kind.PART, 1, 10, 1, 1) + b"x"):
        with raises_coded(PeerError, "chunk-malformed"):
            Reassembler(LIMITS).feed(bad, 0)


def test_close_and_probe_messages_round_trip():
    assert read_close(frame_close("room-left", "bye ✓")) == ("room-left", "bye ✓")
    assert read_probe(frame_probe(Kind.PROBE, 2**32 + 5)) == 5
    with raises_coded(PeerError, "chunk-malformed"):
        read_probe(b"\x03\x00")
    with raises_coded(LocalError, "chunk-limits-invalid"):
        ChunkLimits(0)
