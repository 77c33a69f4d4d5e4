import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import LocalError, PeerError, ProtocolError
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


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=40) | st.tuples(
    st.none() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=8) | st.binary(max_size=8),
    st.dictionaries(st.text(max_size=6), st.integers(-(2**63), 2**64 - 1) | st.text(max_size=8), max_size=3),
).map(lambda kd: msgpack.packb({"type": kd[0], **kd[1]}, use_bin_type=True)[:40]))
def test_peeking_at_the_type_from_the_bytes_agrees_with_msgpack(body):
    from protocol.encoding.wire import _peek_with_msgpack, peek_message_type

    try:
        expected: object = _peek_with_msgpack(body)
    except ProtocolError as exc:
        expected = exc.code
    try:
        assert peek_message_type(body) == expected
    except ProtocolError as exc:
        assert exc.code == expected


def test_a_registry_narrows_what_decodes_and_its_type_check_comes_first():
    """A type outside the caller's registry is unknown there, even with faults of its own in the body."""
    body = encode_message(SAMPLE)
    assert decode_message(body, {"test-sample": Sample}) == SAMPLE
    for table in ({"version-request": VersionRequest}, {}):
        with pytest.raises(ProtocolError) as info:
            decode_message(body, table)
        assert info.value.code == "unknown-message-type" and "test-sample" in info.value.message
    wrong = msgpack.packb({**msgpack.unpackb(encode_message(SAMPLE)), "count": "3"}, use_bin_type=True)
    with pytest.raises(ProtocolError) as info:
        decode_message(wrong, {"version-request": VersionRequest})
    assert info.value.code == "unknown-message-type"
    with pytest.raises(ProtocolError) as info:  # a registry of one type still requires the type key
        decode_message(msgpack.packb({"sender": "zX"}), {"version-request": VersionRequest})
    assert info.value.code == "unknown-message-type"


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        ({**msgpack.unpackb(encode_message(SAMPLE)), "count": "3"}, "mistyped-field", "test-sample.count must be int, got str"),
        ({**msgpack.unpackb(encode_message(SAMPLE)), "flags": [True, 0]}, "mistyped-field",
         "test-sample.flags[1] must be bool, got int"),
        ({**msgpack.unpackb(encode_message(SAMPLE)), "note": b"x"}, "mistyped-field",
         "test-sample.note must be str | nil, got bytes"),
        ({k: v for k, v in msgpack.unpackb(encode_message(SAMPLE)).items() if k != "blob"}, "missing-field",
         "test-sample lacks field blob"),
        ({**msgpack.unpackb(encode_message(SAMPLE)), "more": 1}, "extra-field", "test-sample has unexpected field more"),
        ({"type": "version-info", "sender": "z", "payload": {"k": [{"deep": msgpack.ExtType(5, b"")}]}}, "mistyped-field",
         "msgpack extension type 5 is not allowed"),
        ({"type": "version-info", "sender": "z", "payload": {"k": [{"when": msgpack.Timestamp(0)}]}}, "mistyped-field",
         "version-info.payload.k[0].when holds an unsupported datetime"),
        ({"type": "version-info", "sender": "z", "payload": {"k": [{1: 2}]}}, "mistyped-field",
         "version-info.payload.k[0] has a map key that is not text"),
        ({"type": "test-sample"}, "missing-field", "test-sample lacks field"),
    ],
)
def test_a_refusal_names_the_place_and_the_fault(body, code, message):
    with pytest.raises(ProtocolError) as info:
        decode_message(msgpack.packb(body, use_bin_type=True))
    assert info.value.code == code and message in info.value.message


def test_deep_nesting_and_lengths_past_the_body_are_malformed_frames():
    payload = b"\x83" + b"".join(map(msgpack.packb, ["type", "version-info", "sender", "z", "payload"])) + b"\x81\xa1k"
    for raw in (payload + b"\x91" * 100_000 + b"\x01",  # deeper than any decoder reads
                payload + b"\xdd\xff\xff\xff\xff",  # a list announcing 2^32 - 1 items in 4 bytes
                payload + b"\xdb\xff\xff\xff\xff"):  # text announcing 4 GiB
        with pytest.raises(ProtocolError) as info:
            decode_message(raw)
        assert info.value.code == "malformed-frame", info.value
    nested_16 = [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]
    assert decode_message(msgpack.packb({"type": "version-info", "sender": "z", "payload": {"k": nested_16}}))
    with pytest.raises(ProtocolError) as info:
        decode_message(msgpack.packb({"type": "version-info", "sender": "z", "payload": {"k": [nested_16]}}))
    assert info.value.code == "mistyped-field" and "nests deeper than 16 levels" in info.value.message


def test_a_type_declared_twice_is_this_node_s_bug():
    with pytest.raises(LocalError) as info:
        @message("test-sample")
        class Again(Message):
            count: int
    assert info.value.code == "message-type-duplicate" and not isinstance(info.value, PeerError)
