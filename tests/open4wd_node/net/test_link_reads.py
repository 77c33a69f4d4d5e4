"""``Link.take_reads`` / ``read_now``: the caller (the race's frame pump) reads a TCP link without waiting,
while the link's own reader task stands aside; every rule of ``receive`` holds on that path too. Real
loopback TCP (the path exists for sockets only), timeouts on trio's MockClock (autojump)."""

import pytest
import trio
import trio.testing
from contextlib import asynccontextmanager

from open4wd_node.net.link import LinkClosed
from open4wd_node.net.link_rules import LinkLimits, LinkPing, LinkPong
from protocol.errors import LocalError
from protocol.versions.collection import VersionRequest
from tests.open4wd_node.net.test_link import _tcp_pair, open_pair, raw_and_listener
from tests.open4wd_node.net.test_link_tamper import flipped

BUFFER = 256 * 1024


async def tcp_links(**options):
    left, right = await _tcp_pair(BUFFER)
    return await open_pair(lambda: (left, right), **options)


async def raw_and_tcp_listener():
    """A hand-driven dialer (``RawPeer``) and a real listener ``Link`` over loopback TCP."""
    left, right = await _tcp_pair(BUFFER)
    return await raw_and_listener(lambda: (left, right))


class Reader:
    """The link's reader task, as the race mesh runs it: what it received, and how its link ended."""

    def __init__(self, link) -> None:
        self.link = link
        self.received: list = []
        self.ended: LinkClosed | None = None
        self.ended_at: float | None = None

    async def run(self) -> None:
        try:
            async for message in self.link:
                self.received.append(message)
        except LinkClosed as exc:
            self.ended = exc
        self.ended_at = trio.current_time()


async def arrived() -> None:
    """Loopback bytes are in the other socket once ``send`` returns; let every task settle."""
    await trio.testing.wait_all_tasks_blocked()


@asynccontextmanager
async def taken(link):
    """``link`` read by its reader task (as the race mesh runs it), whose reads the caller then takes."""
    reader = Reader(link)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader.run)
        await arrived()
        link.take_reads()
        yield reader


async def test_taken_reads_come_from_read_now_in_order_and_the_reader_stands_aside_until_given_back(fast_clock):
    dialer, listener = await tcp_links()
    async with taken(listener) as reader:
        sent = [VersionRequest(sender=str(i)) for i in range(5)]
        for message in sent:
            assert dialer.send_now(message)
        await arrived()
        assert listener.read_now() == sent and reader.received == []  # the reader task woke, saw, stood aside
        assert listener.read_now() == []  # nothing more: no wait
        listener.give_back_reads()
        await dialer.send(VersionRequest(sender="after"))
        await arrived()
        assert reader.received == [VersionRequest(sender="after")]
        await dialer.aclose()
    assert reader.ended is not None and (reader.ended.code, reader.ended.by_peer) == ("link-closed", True)


async def test_read_now_answers_a_ping_and_keeps_it_from_the_caller(fast_clock):
    raw, listener = await raw_and_tcp_listener()
    async with taken(listener):
        await raw.send(raw.frame(LinkPing(nonce=7), VersionRequest(sender="x")))
        await arrived()
        assert listener.read_now() == [VersionRequest(sender="x")]
        await listener.aclose()
        assert LinkPong(nonce=7) in await raw.messages_until_eof()


@pytest.mark.parametrize("how", ["tampered", "hung up"])
async def test_an_end_seen_by_read_now_ends_the_link_through_its_reader(fast_clock, how):
    raw, listener = await raw_and_tcp_listener()
    async with taken(listener) as reader:
        good = raw.frame(VersionRequest(sender="before"))
        if how == "tampered":
            await raw.send(good + flipped(raw.frame(VersionRequest(sender="changed")), 10))
        else:
            await raw.send(good)
            await raw.stream.aclose()
        await arrived()
        assert listener.read_now() == [VersionRequest(sender="before")]  # what came before the end
        assert listener.read_now() == []
    expected = ("link-tampered", False) if how == "tampered" else ("link-eof", True)
    assert reader.ended is not None and (reader.ended.code, reader.ended.by_peer) == expected
    assert listener.closed is not None and listener.closed.code == expected[0]


async def test_closing_a_link_whose_reads_are_taken_ends_its_reader_at_once(fast_clock):
    dialer, listener = await tcp_links()
    async with taken(listener) as reader:
        start = trio.current_time()
        await listener.aclose()
    assert reader.ended is None and reader.ended_at == start  # iteration stopped (own close), no time passed
    await dialer.aclose()


async def test_silence_ends_a_link_read_by_read_now_after_the_idle_timeout(fast_clock):
    limits = LinkLimits(ping_interval_ms=60_000, idle_timeout_ms=2_000)
    dialer, listener = await tcp_links(limits=limits)
    async with taken(listener) as reader:
        start = trio.current_time()
        while reader.ended_at is None:
            await trio.sleep(1 / 60)  # the pump's tick
            listener.read_now()
            assert trio.current_time() - start < 10
    assert reader.ended is not None and reader.ended.code == "link-timeout"
    assert 2.0 <= reader.ended_at - start < 2.1
    await dialer.aclose()


async def test_only_a_tcp_link_hands_its_reads_over():
    dialer, listener = await open_pair()  # in memory
    assert not listener.reads_takeable
    with pytest.raises(LocalError) as info:
        listener.take_reads()
    assert info.value.code == "link-reads-not-takeable"
    await dialer.aclose()
    await listener.aclose()
