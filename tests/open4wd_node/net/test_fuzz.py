"""Whatever bytes a peer (or a party in the middle) sends, before or after the handshake, a link ends
only with a coded LinkClosed: unsealed bytes after the handshake with ``link-tampered`` (or
``frame-too-large`` for an announced length above the limit), sealed ones by the link's rules."""

import msgpack
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from open4wd_node.net.link import LinkClosed

from open4wd_node.net.stream_carrier import open_link
from protocol.link.handshake import DIALER, LISTENER
from protocol.identity.keys import Identity
from protocol.encoding.wire import HEADER
from tests.open4wd_node.net.peers import RawPeer

HOST_ID = Identity(bytes([2]) * 32)
GUEST_ID = Identity(bytes([1]) * 32)

message_like = st.dictionaries(
    st.sampled_from(["type", "sender", "payload", "nonce", "code", "message", "noise", "protocolVersion", "x"]),
    st.one_of(
        st.sampled_from(["version-request", "version-info", "link-ping", "link-pong", "link-close", "link-hello",
                         "link-noise", "link-identity", "1.0.0"]),
        st.integers(-(2**40), 2**40),
        st.binary(max_size=20),
        st.text(max_size=20),
        st.none(),
        st.dictionaries(st.text(max_size=5), st.integers(-1000, 1000), max_size=3),
    ),
    max_size=4,
)
frames = st.one_of(
    st.binary(max_size=64),
    message_like.map(lambda m: (body := msgpack.packb(m, use_bin_type=True), HEADER.pack(len(body)) + body)[1]),
)
chunks = st.lists(frames, max_size=12)


def run_with_mock_clock(fn):
    trio.run(fn, clock=trio.testing.MockClock(autojump_threshold=0))


async def _drain(link):
    """Receive until the link ends; anything but LinkClosed escaping is a failure of the test."""
    while True:
        try:
            await link.receive()
        except LinkClosed as exc:
            assert exc.code
            return exc


async def _raw_and_listener():
    left, right = trio.testing.memory_stream_pair()
    raw = RawPeer(left, GUEST_ID)
    links = []

    async def listen():
        links.append(await open_link(right, HOST_ID, LISTENER))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(listen)
        await raw.handshake()
    return raw, links[0]


@settings(max_examples=60, deadline=None)
@given(chunks, st.booleans())
def test_any_unsealed_bytes_after_the_handshake_end_in_link_closed(data, hang_up):
    async def main():
        raw, link = await _raw_and_listener()
        for chunk in data:
            await raw.send(chunk)
        if hang_up:
            await raw.stream.aclose()
        reason = await _drain(link)
        if any(data) and reason.code not in ("link-eof", "link-timeout", "frame-too-large"):
            assert reason.code == "link-tampered"

    run_with_mock_clock(main)


bodies = st.lists(st.one_of(st.binary(max_size=64), message_like.map(lambda m: msgpack.packb(m, use_bin_type=True))),
                  max_size=12)


@settings(max_examples=60, deadline=None)
@given(bodies, st.booleans())
def test_any_sealed_bodies_after_the_handshake_end_in_link_closed(data, hang_up):
    """What a peer holding the keys can send: properly sealed frames of anything at all."""
    async def main():
        raw, link = await _raw_and_listener()
        await raw.send(b"".join(raw.seal(body) for body in data))
        if hang_up:
            await raw.stream.aclose()
        reason = await _drain(link)
        assert reason.code != "link-tampered"

    run_with_mock_clock(main)


@settings(max_examples=60, deadline=None)
@given(chunks, st.sampled_from([DIALER, LISTENER]))
def test_any_bytes_in_place_of_a_handshake_end_in_link_closed(data, role):
    async def main():
        left, right = trio.testing.memory_stream_pair()
        for chunk in data:
            await left.send_all(chunk)
        try:
            await open_link(right, HOST_ID, role)
        except LinkClosed as exc:
            assert exc.code

    run_with_mock_clock(main)
