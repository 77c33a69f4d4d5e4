"""A party in the middle of a link can drop, delay and cut, nothing else: every frame it changes,
injects, replays, reorders or follows a dropped one closes the link with ``link-tampered`` on the
receiving side, logged (code, peer, address) and counted; the sender hears why in a sealed link-close.

In memory a ``RawPeer`` holding the dialer's keys writes the bytes such a party would put on the wire;
over TCP the product's ``ImpairmentProxy`` flips a byte between two real links."""

from functools import partial

import pytest
import structlog
import trio
import trio.testing

from open4wd_node.net.impair import Impairment, ImpairmentProxy
from open4wd_node.net.link import LINK_COUNTERS, LinkClosed, LinkCounters
from open4wd_node.net.stream_carrier import open_link
from open4wd_node.net.transport import dial, serve
from open4wd_node.runtime.addresses import Address
from protocol.encoding.wire import HANDSHAKE, HEADER, encode_frame, encode_message
from protocol.identity.keys import Identity
from protocol.link.handshake import DIALER, LISTENER, Handshake, LinkClose, LinkIdentity, LinkNoise, LinkVersion
from protocol.versions.collection import VersionRequest
from protocol.versions.record import PROTOCOL_VERSION
from tests.open4wd_node.net.peers import RawPeer, plain_frame

HOST_ID = Identity(bytes([2]) * 32)
GUEST_ID = Identity(bytes([1]) * 32)
ONE, TWO = VersionRequest(sender="one"), VersionRequest(sender="two")


async def raw_and_listener(counters):
    left, right = trio.testing.memory_stream_pair()
    raw = RawPeer(left, GUEST_ID)
    links = []

    async def listen():
        links.append(await open_link(right, HOST_ID, LISTENER, counters=counters))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(listen)
        await raw.handshake(HOST_ID.peer_id)
    return raw, links[0]


def flipped(frame: bytes, index: int) -> bytes:
    changed = bytearray(frame)
    changed[index] ^= 0x01
    return bytes(changed)


def other_session_frame(msg) -> bytes:
    """A frame properly sealed, but under the keys of another session between the same two nodes."""
    d, lis = Handshake(GUEST_ID, DIALER, 0), Handshake(HOST_ID, LISTENER, 0)
    lis.start()
    (first,) = d.start()
    (second,) = lis.receive(first, 0)
    d.receive(second, 0)
    sealed = d.result.send.seal(encode_message(msg))
    return HEADER.pack(len(sealed)) + sealed


ATTACKS = {
    # name: what reaches the listener, given the raw dialer; how many of its messages arrive first
    "a changed body byte": (lambda raw: flipped(raw.frame(ONE), 10), 0),
    "a changed tag byte": (lambda raw: flipped(raw.frame(ONE), -1), 0),
    "a shorter length": (lambda raw: (lambda f: HEADER.pack(len(f) - 5) + f[4:])(raw.frame(ONE)), 0),
    "an injected plaintext frame": (lambda raw: raw.frame(ONE) + plain_frame(TWO), 1),
    "an injected plaintext link-close": (lambda raw: plain_frame(LinkClose("room-closed", "forged")), 0),
    "a frame of another session": (lambda raw: other_session_frame(ONE), 0),
    "a replayed frame": (lambda raw: (lambda f: f + f)(raw.frame(ONE)), 1),
    "a dropped frame": (lambda raw: (raw.frame(ONE), raw.frame(TWO))[1], 0),
    "two reordered frames": (lambda raw: (lambda a, b: b + a)(raw.frame(ONE), raw.frame(TWO)), 0),
    "junk too short for a tag": (lambda raw: HEADER.pack(3) + b"abc", 0),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_what_a_party_in_the_middle_writes_closes_the_link_as_tampered(attack, autojump_clock):
    make, delivered_first = ATTACKS[attack]
    counters = LinkCounters()
    raw, link = await raw_and_listener(counters)
    with structlog.testing.capture_logs() as logs:
        await raw.send(make(raw))
        received = []
        with pytest.raises(LinkClosed) as info:
            while True:
                received.append(await link.receive())
    assert received == [ONE] * delivered_first
    assert (info.value.code, info.value.by_peer) == ("link-tampered", False)
    assert counters.tampered == 1 and counters.closes == {"link-tampered": 1}
    (entry,) = [e for e in logs if e["event"] == "link-tampered"]
    assert entry["peer"] == GUEST_ID.peer_id and entry["code"] == "link-tampered" and "address" in entry
    # our own sending direction is intact: the sender hears why, sealed, and nothing else comes after it
    told = await raw.messages_until_eof()
    assert told == [LinkClose("link-tampered", info.value.message)]
    assert (await _closed(link.send, ONE)).code == "link-tampered"


async def _closed(call, *args):
    with pytest.raises(LinkClosed) as info:
        await call(*args)
    return info.value


async def test_the_sender_of_a_tampered_frame_learns_it_from_the_sealed_close():
    """Two real links in memory with a relay between them that changes one byte of the first sealed frame."""
    dialer_side, relay_left = trio.testing.memory_stream_pair()
    relay_right, listener_side = trio.testing.memory_stream_pair()
    handshake_up = len(_handshake_bytes_up(GUEST_ID))
    links = {}

    async def relay(source, sink, flip_at):
        seen = 0
        try:
            while data := await source.receive_some(65536):
                if flip_at is not None and seen <= flip_at < seen + len(data):
                    data = flipped(data, flip_at - seen)
                seen += len(data)
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # one side hung up
        await trio.aclose_forcefully(sink)

    async def open_side(stream, identity, role):
        links[role] = await open_link(stream, identity, role, counters=LinkCounters())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay, relay_left, relay_right, handshake_up + 4 + 20)
        nursery.start_soon(relay, relay_right, relay_left, None)
        async with trio.open_nursery() as opening:
            opening.start_soon(open_side, dialer_side, GUEST_ID, DIALER)
            opening.start_soon(open_side, listener_side, HOST_ID, LISTENER)
        await links[DIALER].send(ONE)
        receiver = await _closed(links[LISTENER].receive)
        sender = await _closed(links[DIALER].receive)
        nursery.cancel_scope.cancel()
    assert (receiver.code, receiver.by_peer) == ("link-tampered", False)
    assert (sender.code, sender.by_peer) == ("link-tampered", True)
    assert links[LISTENER].counters.tampered == 1 and links[DIALER].counters.tampered == 0
    assert links[DIALER].counters.peer_closes == {"link-tampered": 1}


def _noise_frame(size: int) -> bytes:
    return encode_frame(encode_message(LinkNoise(bytes(size))), HANDSHAKE)


def _identity_payload_bytes(identity) -> int:
    return len(encode_message(LinkIdentity(PROTOCOL_VERSION, identity.peer_id, bytes(64))))


def _handshake_bytes_up(dialer) -> bytes:
    """The sizes of what the dialer writes during the handshake (messages 1 and 3), as placeholder bytes."""
    first = 32 + len(encode_message(LinkVersion(PROTOCOL_VERSION)))
    third = 48 + _identity_payload_bytes(dialer) + 16
    return _noise_frame(first) + _noise_frame(third)


def _handshake_bytes_down(listener) -> bytes:
    return _noise_frame(32 + 48 + _identity_payload_bytes(listener) + 16)


class Host:
    """A listener that records how each link ended."""

    def __init__(self):
        self.ended = []
        self.received = []

    async def handler(self, link):
        try:
            async for msg in link:
                self.received.append(msg)
                await link.send(VersionRequest(sender=f"echo:{msg.sender}"))
        except LinkClosed as exc:
            self.ended.append(exc)
            raise


async def through_proxy(nursery, host, **impairments):
    address = await nursery.start(partial(serve, host.handler, HOST_ID, "127.0.0.1", 0))
    proxy = ImpairmentProxy(Address(address.host, address.port), **impairments)
    return await nursery.start(proxy.run), proxy


async def until(predicate, limit_s=30):
    with trio.fail_after(limit_s):  # only a hang reaches it
        while not predicate():
            await trio.sleep(0.005)


async def test_a_byte_flipped_by_a_tcp_proxy_closes_the_link_as_tampered_and_is_logged():
    host = Host()
    flip_at = len(_handshake_bytes_up(GUEST_ID)) + len(HEADER.pack(0)) + 20  # inside the first sealed frame
    before = LINK_COUNTERS.tampered
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address, proxy = await through_proxy(nursery, host, up=Impairment(flip_offsets=(flip_at,)))
            link = await dial(address.host, address.port, GUEST_ID, expected_peer=HOST_ID.peer_id)
            await link.send(ONE)
            told = await _closed(link.receive)
            await until(lambda: any(e["event"] == "link-closed" for e in logs))
            nursery.cancel_scope.cancel()
    assert proxy.stats.flipped["up"] == 1
    assert host.received == host.ended == []  # the first frame was the tampered one: no handler ever saw the link
    (closed,) = [e for e in logs if e["event"] == "link-closed"]
    assert (closed["code"], closed["by_peer"], closed["peer"]) == ("link-tampered", False, GUEST_ID.peer_id)
    assert (told.code, told.by_peer) == ("link-tampered", True)
    assert LINK_COUNTERS.tampered == before + 1
    (entry,) = [e for e in logs if e["event"] == "link-tampered"]
    assert entry["peer"] == GUEST_ID.peer_id and entry["address"].startswith("127.0.0.1:")


async def test_a_byte_flipped_on_the_way_back_closes_the_dialers_side():
    host = Host()
    flip_at = len(_handshake_bytes_down(HOST_ID)) + 4 + 20  # inside the host's first sealed frame (the echo)
    async with trio.open_nursery() as nursery:
        address, proxy = await through_proxy(nursery, host, down=Impairment(flip_offsets=(flip_at,)))
        counters_before = LINK_COUNTERS.tampered
        link = await dial(address.host, address.port, GUEST_ID, expected_peer=HOST_ID.peer_id)
        await link.send(ONE)
        reason = await _closed(link.receive)
        await until(lambda: host.ended)
        nursery.cancel_scope.cancel()
    assert (reason.code, reason.by_peer) == ("link-tampered", False)
    assert host.received == [ONE] and [(e.code, e.by_peer) for e in host.ended] == [("link-tampered", True)]
    assert LINK_COUNTERS.tampered == counters_before + 1


def _noise_offset(frames: list[int], index: int, within: int) -> int:
    """The stream offset of byte ``within`` of the Noise bytes of the ``index``-th handshake frame of one
    direction (``frames``: the Noise message sizes of that direction, in order)."""
    before = sum(len(_noise_frame(size)) for size in frames[:index])
    return before + len(_noise_frame(frames[index])) - frames[index] + within


@pytest.mark.parametrize("message, within", [(1, 5), (2, 5), (2, 40), (2, 150), (3, 10), (3, 100)])
async def test_a_byte_flipped_in_the_handshake_opens_no_link(message, within):
    """Message 1 (the dialer's clear ephemeral key), message 2 (the listener's keys and identity),
    message 3 (the dialer's static key and identity): a changed byte fails Noise on one side and no link
    opens. The dialer hears why in the clear, except after message 3: its link is open by then, and the
    listener's unsealed refusal (it has no keys: Noise failed) is what a tampered frame looks like."""
    up = [32 + len(encode_message(LinkVersion(PROTOCOL_VERSION))), 48 + _identity_payload_bytes(GUEST_ID) + 16]
    down = [32 + 48 + _identity_payload_bytes(HOST_ID) + 16]
    direction, offset = ("down", _noise_offset(down, 0, within)) if message == 2 else \
        ("up", _noise_offset(up, 0 if message == 1 else 1, within))
    host = Host()
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address, proxy = await through_proxy(nursery, host, **{direction: Impairment(flip_offsets=(offset,))})
            if message == 3:
                link = await dial(address.host, address.port, GUEST_ID, expected_peer=HOST_ID.peer_id)
                reason = await _closed(link.receive)
            else:
                reason = await _closed(partial(dial, expected_peer=HOST_ID.peer_id), address.host, address.port, GUEST_ID)
            await until(lambda: [e for e in logs if e["event"] == "link-refused"])
            nursery.cancel_scope.cancel()
    assert proxy.stats.flipped[direction] == 1
    # a changed message 1 (the ephemeral key) makes the listener's message 2 fail on the dialer
    expected_code = "link-tampered" if message == 3 else "noise-handshake-failed"
    assert (reason.code, reason.by_peer) == (expected_code, False)
    (refused,) = [e for e in logs if e["event"] == "link-refused"]
    assert refused["code"] == "noise-handshake-failed"


async def test_concurrent_senders_never_look_like_tampering(autojump_clock):
    """Frames are sealed under the send lock, in the order they go out, so any number of tasks may send."""
    left, right = trio.testing.memory_stream_pair()
    links, received = {}, []
    counters = LinkCounters()

    async def open_side(stream, identity, role):
        links[role] = await open_link(stream, identity, role, counters=counters)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(open_side, left, GUEST_ID, DIALER)
        nursery.start_soon(open_side, right, HOST_ID, LISTENER)

    async def sender(task):
        for i in range(40):
            await links[DIALER].send(VersionRequest(sender=f"{task}:{i}"))
            await trio.sleep(0)

    async with trio.open_nursery() as nursery:
        for task in range(5):
            nursery.start_soon(sender, task)
        while len(received) < 200:
            received.append((await links[LISTENER].receive()).sender)
    assert sorted(received) == sorted(f"{task}:{i}" for task in range(5) for i in range(40))
    for task in range(5):  # each task's own messages keep their order
        assert [m for m in received if m.startswith(f"{task}:")] == [f"{task}:{i}" for i in range(40)]
    assert counters.tampered == 0 and links[LISTENER].closed is None
