import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.link.token_bucket import TokenBucket
from protocol.link.violations import ViolationCounter
from protocol.versions.collection import VersionInfoMessage, VersionRequest
from protocol.encoding.wire import (
    HANDSHAKE,
    ROOM,
    Channel,
    FrameDecoder,
    Message,
    decode_message,
    encode_frame,
    encode_message,
    message,
)

WIRE_CODES = {"malformed-frame", "unknown-message-type", "missing-field", "extra-field", "mistyped-field"}


@message("test-sample")
class Sample(Message):
    count: int
    name: str
    blob: bytes
    flags: list[bool]
    note: str | None
    extra: dict[str, int]


SAMPLE = Sample(3, "n", b"\x00", [True], None, {"a": 1})


def test_message_round_trip():
    assert decode_message(encode_message(SAMPLE)) == SAMPLE
    req = VersionRequest(sender="zX")
    assert decode_message(encode_message(req)) == req


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"type": "nope"}, "unknown-message-type"),
        ({"count": 1}, "unknown-message-type"),
        ({"type": "test-sample", "count": 1}, "missing-field"),
        ({**msgpack.unpackb(encode_message(SAMPLE)), "more": 1}, "extra-field"),
        ({**msgpack.unpackb(encode_message(SAMPLE)), "count": "3"}, "mistyped-field"),
        ({**msgpack.unpackb(encode_message(SAMPLE)), "count": True}, "mistyped-field"),
        ({**msgpack.unpackb(encode_message(SAMPLE)), "flags": [1]}, "mistyped-field"),
        ({**msgpack.unpackb(encode_message(SAMPLE)), "blob": "text"}, "mistyped-field"),
        ({**msgpack.unpackb(encode_message(SAMPLE)), "extra": {"a": "b"}}, "mistyped-field"),
        ({"type": "version-info", "sender": "z", "payload": {"k": msgpack.ExtType(5, b"")}}, "mistyped-field"),
        ([1, 2], "malformed-frame"),
        # found by the room-host fuzzer: a bytes key beside a text one made sorting the extras a TypeError
        ({**msgpack.unpackb(encode_message(SAMPLE)), b"more": 1, "other": 2}, "mistyped-field"),
        ({**msgpack.unpackb(encode_message(SAMPLE)), b"count": 1}, "mistyped-field"),
    ],
)
def test_strict_decoding(body, code):
    with pytest.raises(ProtocolError) as info:
        decode_message(msgpack.packb(body, use_bin_type=True))
    assert info.value.code == code


def test_non_text_keys_and_bad_utf8_are_malformed():
    for raw in (b"\x81\x01\x02", b"\x81\xa1\xff\x01", b"\x92\x01", b"\x81\xa4type"):
        with pytest.raises(ProtocolError) as info:
            decode_message(raw)
        assert info.value.code in WIRE_CODES


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_decoder_raises_only_its_coded_errors_on_arbitrary_bytes(raw):
    try:
        decode_message(raw)
    except ProtocolError as exc:
        assert exc.code in WIRE_CODES


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60), st.integers(0, 200))
def test_mutated_valid_frames_only_raise_coded_errors(noise, cut):
    body = encode_message(VersionInfoMessage(sender="zAbc", payload={"client_version": "0.1.0", "n": [1, 2.5]}))
    mutated = body[:cut] + noise + body[cut:]
    try:
        decode_message(mutated)
    except ProtocolError as exc:
        assert exc.code in WIRE_CODES


def test_frames_split_anywhere():
    bodies = [b"a", b"", b"xyz" * 100]
    stream = b"".join(encode_frame(b, ROOM) for b in bodies)
    for chunk in (1, 2, 3, 7, len(stream)):
        decoder = FrameDecoder(ROOM)
        got = []
        for i in range(0, len(stream), chunk):
            got += decoder.feed(stream[i : i + chunk])
        assert got == bodies and decoder.buffered == 0


def test_oversize_frame_refused_from_its_header_alone():
    decoder = FrameDecoder(HANDSHAKE)
    with pytest.raises(ProtocolError) as info:
        decoder.feed((HANDSHAKE.max_frame_bytes + 1).to_bytes(4, "big"))
    assert info.value.code == "frame-too-large"
    with pytest.raises(LocalError) as local:  # this node's own message: never the peer's fault
        encode_frame(b"x" * 5, Channel("tiny", 4))
    assert local.value.code == "frame-too-large" and not isinstance(local.value, PeerError)
    assert FrameDecoder(Channel("tiny", 4)).feed(encode_frame(b"1234", Channel("tiny", 4))) == [b"1234"]


def test_violation_counter_closes_at_three():
    counter = ViolationCounter()
    assert not counter.record("extra-field") and not counter.record("malformed-frame")
    assert counter.record("mistyped-field") and counter.exhausted and counter.last_code == "mistyped-field"


def test_token_bucket_with_explicit_time():
    bucket = TokenBucket(burst=64, per_second=32, now_ms=0)
    assert sum(bucket.take(0) for _ in range(100)) == 64
    assert not bucket.take(30)
    assert bucket.take(32)  # 32 ms at 32/s refills 1.024 tokens
    assert sum(bucket.take(1032) for _ in range(100)) == 32
    assert sum(bucket.take(100_000) for _ in range(100)) == 64  # never above the burst
    assert not bucket.take(50_000)  # a clock going backwards refills nothing
    with pytest.raises(LocalError) as info:
        TokenBucket(0, 1, 0)
    assert info.value.code == "token-bucket-invalid"


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), st.integers(1, 1000),
       st.lists(st.tuples(st.integers(-50, 500), st.integers(0, 70), st.booleans()), max_size=40))
def test_token_bucket_matches_its_formula_with_time_going_back_too(burst, rate, steps):
    """The refill's formula: tokens + elapsed · rate, capped at the burst, elapsed never negative
    (a reading earlier than the last changes nothing)."""
    bucket = TokenBucket(burst, rate, 0)
    tokens, last, now = burst * 1000, 0, 0
    for delta, cost, take in steps:
        now += delta
        tokens = min(burst * 1000, tokens + max(0, now - last) * rate)
        last = max(last, now)
        expected = 0 if cost * 1000 <= tokens else -(-(cost * 1000 - tokens) // rate)
        if take:
            assert bucket.take(now, cost) == (expected == 0)
            tokens -= cost * 1000 if expected == 0 else 0
        else:
            assert bucket.wait_ms(now, cost) == expected
