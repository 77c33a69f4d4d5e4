"""The impairment proxy over real loopback sockets, on an autojump clock (delays are virtual time)."""

from __future__ import annotations

from functools import partial

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from open4wd_node.net.impair import Direction, Impairment, ImpairmentProxy, _FrameCursor, _Pipe
from open4wd_node.net.link import LinkClosed
from open4wd_node.net.transport import dial, serve
from open4wd_node.runtime.addresses import Address
from protocol.encoding.wire import HEADER
from protocol.identity.keys import Identity
from protocol.versions.collection import VersionRequest
from tests.open4wd_node.net.peers import plain_frame


class Sink:
    """A TCP server that records every byte it receives and when (trio's clock)."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.arrivals: list[tuple[float, int]] = []  # (time, bytes so far)
        self.closed = trio.Event()

    async def serve(self, stream: trio.SocketStream) -> None:
        try:
            while chunk := await stream.receive_some(65536):
                self.received += chunk
                self.arrivals.append((trio.current_time(), len(self.received)))
        except trio.BrokenResourceError:
            pass
        self.closed.set()


async def start(nursery: trio.Nursery, sink: Sink, **impairments: Impairment) -> ImpairmentProxy:
    listeners = await nursery.start(partial(trio.serve_tcp, sink.serve, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    proxy = ImpairmentProxy(Address("127.0.0.1", port), **impairments)
    await nursery.start(proxy.run)
    return proxy


async def connect(proxy: ImpairmentProxy) -> trio.SocketStream:
    assert proxy.address is not None
    return await trio.open_tcp_stream(proxy.address.host, proxy.address.port)


async def until(predicate, limit_s: float = 60) -> None:
    with trio.fail_after(limit_s):  # virtual time: only a hang reaches it
        while not predicate():
            await trio.sleep(0.001)


async def test_a_delay_holds_every_byte_back_and_keeps_their_order(fast_clock):
    sink, data = Sink(), bytes(range(256)) * 64
    async with trio.open_nursery() as nursery:
        proxy = await start(nursery, sink, up=Impairment(delay_ms=50, jitter_ms=30, seed=7))
        client = await connect(proxy)
        sent_at = trio.current_time()
        for i in range(0, len(data), 100):  # many small writes, each with its own jitter
            await client.send_all(data[i:i + 100])
            await trio.sleep(0.002)
        await until(lambda: len(sink.received) == len(data))
        assert bytes(sink.received) == data  # jitter never reorders a byte stream
        assert sink.arrivals[0][0] - sent_at >= 0.020  # at least delay - jitter
        nursery.cancel_scope.cancel()


async def test_flips_at_offsets_and_at_a_seeded_rate_are_reproducible(fast_clock):
    data = bytes(4000)
    flipped_positions = []
    for _ in range(2):
        sink = Sink()
        async with trio.open_nursery() as nursery:
            proxy = await start(nursery, sink, up=Impairment(flip_offsets=(10, 3999), flip_rate=0.002, seed=3))
            client = await connect(proxy)
            await client.send_all(data)
            await until(lambda sink=sink: len(sink.received) == len(data))
            nursery.cancel_scope.cancel()
        positions = [i for i, byte in enumerate(sink.received) if byte != 0]
        assert {10, 3999} <= set(positions) and all(sink.received[i] == 0xFF for i in positions)
        assert proxy.stats.flipped[Direction.UP] == len(positions)
        flipped_positions.append(positions)
    assert flipped_positions[0] == flipped_positions[1] and len(flipped_positions[0]) > 2


async def test_a_bandwidth_cap_paces_the_bytes(fast_clock):
    sink, data = Sink(), bytes(100_000)
    async with trio.open_nursery() as nursery:
        proxy = await start(nursery, sink, up=Impairment(bandwidth_bytes_per_s=50_000))
        client = await connect(proxy)
        started = trio.current_time()
        await client.send_all(data)
        await until(lambda: len(sink.received) == len(data))
        assert sink.arrivals[-1][0] - started >= 100_000 / 50_000 - 16 * 1024 / 50_000  # the last chunk's wait is after it
        nursery.cancel_scope.cancel()


# An unimpaired direction forwards as it reads (no queue, no writer task); a delayed one queues: both behave alike.
BOTH_PIPES = pytest.mark.parametrize("impairment", [Impairment(), Impairment(delay_ms=5)], ids=["direct", "queued"])


def test_only_a_direction_without_delay_or_cap_is_forwarded_directly():
    assert [_Pipe(ImpairmentProxy(up=impairment), Direction.UP, 1, None).direct
            for impairment in (Impairment(), Impairment(flip_offsets=(3,), flip_rate=0.5), Impairment(delay_ms=1),
                               Impairment(bandwidth_bytes_per_s=1000))] == [True, True, False, False]


@BOTH_PIPES
async def test_a_stall_forwards_nothing_until_it_ends_and_loses_nothing(fast_clock, impairment):
    sink = Sink()
    async with trio.open_nursery() as nursery:
        proxy = await start(nursery, sink, up=impairment)
        client = await connect(proxy)
        await client.send_all(b"before")
        await until(lambda: bytes(sink.received) == b"before")
        proxy.stall(3.0)
        stalled_at = trio.current_time()
        await client.send_all(b" during")
        await trio.sleep(2.9)
        assert bytes(sink.received) == b"before"
        await until(lambda: bytes(sink.received) == b"before during")
        assert sink.arrivals[-1][0] - stalled_at >= 3.0
        nursery.cancel_scope.cancel()


async def test_a_cut_drops_every_connection_and_refuses_new_ones_for_a_while(fast_clock):
    sink = Sink()
    async with trio.open_nursery() as nursery:
        proxy = await start(nursery, sink)
        client = await connect(proxy)
        await client.send_all(b"x")
        await until(lambda: bytes(sink.received) == b"x")
        proxy.cut(refuse_s=5.0)
        await sink.closed.wait()  # the target side saw the connection end
        with pytest.raises((trio.BrokenResourceError, trio.ClosedResourceError)):
            for _ in range(100):  # the client side sees it too, at the latest when it writes
                await client.send_all(b"y" * 1000)
                await trio.sleep(0.01)
        refused = await connect(proxy)
        assert await refused.receive_some(10) == b""  # accepted and closed at once
        assert proxy.stats.refused == 1
        await trio.sleep(5.0)
        again = await connect(proxy)
        await again.send_all(b"z")
        await until(lambda: bytes(sink.received).endswith(b"z"))
        assert proxy.stats.connections == 2
        nursery.cancel_scope.cancel()


def test_impossible_impairments_are_refused():
    for bad in ({"delay_ms": -1}, {"delay_ms": 10, "jitter_ms": 20}, {"bandwidth_bytes_per_s": 0}, {"flip_rate": 1.5},
                {"flip_offsets": (-1,)}):
        with pytest.raises(ValueError):
            Impairment(**bad)


def frames(*bodies: bytes) -> bytes:
    return b"".join(HEADER.pack(len(body)) + body for body in bodies)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=40), min_size=1, max_size=8), st.data())
def test_the_frame_cursor_finds_every_frame_end_however_the_stream_is_cut(bodies, data):
    stream = frames(*bodies)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(stream) - 1), max_size=10)))
    cursor, ends, start = _FrameCursor(), [], 0
    for stop in [*cuts, len(stream)]:
        ends += [start + index for index in cursor.advance(stream[start:stop])]
        start = stop
    expected, position = [], 0
    for body in bodies:
        position += HEADER.size + len(body)
        expected.append(position)
    assert ends == expected and cursor.between_frames


@BOTH_PIPES
async def test_flip_next_frame_alters_the_last_byte_of_one_frame_once(fast_clock, impairment):
    sink = Sink()
    async with trio.open_nursery() as nursery:
        proxy = await start(nursery, sink, up=impairment)
        client = await connect(proxy)
        await client.send_all(frames(b"a" * 10) + HEADER.pack(6) + b"bbb")  # a whole frame, half of the next
        await until(lambda: len(sink.received) == 14 + 7)
        proxy.flip_next_frame(Direction.UP)
        await client.send_all(b"bbb" + frames(b"c" * 5))  # the half frame ends: its last byte is the one
        await until(lambda: len(sink.received) == 14 + 10 + 9)
        nursery.cancel_scope.cancel()
    assert bytes(sink.received) == frames(b"a" * 10, b"bbbbb" + bytes([ord("b") ^ 0xFF]), b"c" * 5)
    assert proxy.stats.flipped[Direction.UP] == 1


@BOTH_PIPES
async def test_inject_writes_between_frames_never_inside_one(fast_clock, impairment):
    sink = Sink()
    async with trio.open_nursery() as nursery:
        proxy = await start(nursery, sink, up=impairment, down=impairment)
        client = await connect(proxy)
        await client.send_all(frames(b"1" * 8) + HEADER.pack(4) + b"22")  # stopped inside the second frame
        await until(lambda: len(sink.received) == 12 + 6)
        assert await proxy.inject(Direction.UP, b"FORGED") == 1
        assert await proxy.inject(Direction.DOWN, b"x") == 1  # the other direction is between frames
        await client.send_all(b"22" + frames(b"3"))
        await until(lambda: len(sink.received) == 12 + 8 + 6 + 5)
        nursery.cancel_scope.cancel()
    assert bytes(sink.received) == frames(b"1" * 8, b"2222") + b"FORGED" + frames(b"3")
    assert proxy.stats.injected == {Direction.UP: 6, Direction.DOWN: 1}


async def test_a_flipped_frame_on_a_noise_link_is_tampering_and_an_injected_frame_too(fast_clock):
    """On a real link through the proxy: the receiver refuses the altered frame and the forged one."""
    received: list = []
    ended: list = []

    async def echo(link):
        try:
            async for msg in link:
                received.append(msg)
        except LinkClosed as exc:
            ended.append(exc.code)

    forged = plain_frame(VersionRequest(sender="forged"))
    async with trio.open_nursery() as nursery:
        address = await nursery.start(partial(serve, echo, Identity(b"\x07" * 32), "127.0.0.1", 0))
        for act in ("flip", "inject"):
            proxy = ImpairmentProxy(address)
            await nursery.start(proxy.run)
            assert proxy.address is not None
            link = await dial(proxy.address.host, proxy.address.port, Identity(b"\x08" * 32))
            await link.send(VersionRequest(sender="first"))
            await until(lambda: len(received) == 1)
            if act == "flip":
                proxy.flip_next_frame(Direction.UP)
            else:
                await proxy.inject(Direction.UP, forged)
            await link.send(VersionRequest(sender="second"))
            await until(lambda: len(ended) == 1)
            assert ended.pop() == "link-tampered" and received.pop() == VersionRequest(sender="first")
            assert received == []  # neither the altered nor the forged frame, nor anything after them
            await link.aclose()
        nursery.cancel_scope.cancel()
