"""The seam under a link: the link's rules over a carrier that is not Noise over a stream.

``MessageCarrier`` below delivers whole bodies through memory channels on two lanes, with nothing sealed,
as a WebRTC DataChannel carrier will (DTLS protects the bodies below it): every rule of the link holds the
same over it (strict decoding and its violations, the size cap of what the link is for, pings answered
and never shown, the peer's close code, this side's close notice), and the race's inputs travel on the
inputs lane once the link is repurposed for them. All on the autojump clock."""

from __future__ import annotations

import math

import pytest
import trio

from open4wd_node.net.link import Lane, Link, LinkAuth, LinkClosed
from open4wd_node.net.link_rules import LinkLimits, LinkPing
from protocol.encoding.wire import ROOM, Channel, encode_message
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.link.handshake import DIALER, LISTENER
from protocol.race.messages import INPUT_TYPES, RACE_LINK, InputSpan, RaceInputs
from protocol.versions.collection import VersionRequest

A, B = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)
TRANSCRIPT = bytes(range(32))


class MessageCarrier:
    """One end of a carrier of whole bodies over memory channels: ``inbox`` what the peer sent (lane, body),
    ``outbox`` the peer's inbox. ``sent`` records every body by lane."""

    def __init__(self, inbox: trio.MemoryReceiveChannel, outbox: trio.MemorySendChannel) -> None:
        self.inbox, self.outbox = inbox, outbox
        self.sent: list[tuple[Lane, bytes]] = []
        self.closed = False

    @property
    def address(self) -> str | None:
        return None

    async def receive(self, channel: Channel) -> bytes:
        try:
            _, body = await self.inbox.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise LinkClosed("link-eof", "the peer hung up without a reason", by_peer=True) from None
        if len(body) > channel.max_frame_bytes:
            raise ProtocolError("frame-too-large", f"a {len(body)}-byte message; the {channel.name} limit is "
                                                   f"{channel.max_frame_bytes}")
        return body

    async def receive_arrived(self, channel: Channel) -> list[bytes]:
        bodies = []
        while True:
            try:
                _, body = self.inbox.receive_nowait()
            except trio.WouldBlock:
                return bodies
            except (trio.EndOfChannel, trio.ClosedResourceError):
                if bodies:
                    return bodies  # what arrived before the end first; the end at the next call
                raise LinkClosed("link-eof", "the peer hung up without a reason", by_peer=True) from None
            bodies.append(body)

    async def receive_first(self, max_frame_bytes: int) -> bytes:
        return await self.receive(Channel("first", max_frame_bytes))

    async def send(self, body: bytes, lane: Lane) -> None:
        if self.closed:
            raise LinkClosed("link-broken", "closed")
        self.sent.append((lane, body))
        try:
            await self.outbox.send((lane, body))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise LinkClosed("link-broken", "the peer is gone", by_peer=True) from None

    async def aclose(self) -> None:
        self.closed = True
        await self.outbox.aclose()
        await self.inbox.aclose()


def carrier_pair() -> tuple[MessageCarrier, MessageCarrier]:
    to_b, at_b = trio.open_memory_channel[tuple[Lane, bytes]](math.inf)
    to_a, at_a = trio.open_memory_channel[tuple[Lane, bytes]](math.inf)
    return MessageCarrier(at_a, to_b), MessageCarrier(at_b, to_a)


def link_pair(**options) -> tuple[Link, Link, MessageCarrier, MessageCarrier]:
    ca, cb = carrier_pair()
    return (Link(ca, LinkAuth(B.peer_id, TRANSCRIPT, DIALER), **options),
            Link(cb, LinkAuth(A.peer_id, TRANSCRIPT, LISTENER), **options), ca, cb)


async def test_a_link_over_a_message_carrier_names_its_peer_and_carries_messages(autojump_clock):
    a, b, _, _ = link_pair()
    assert (a.peer_id, a.transcript, a.role) == (B.peer_id, TRANSCRIPT, DIALER) and a.address is None
    await a.send(VersionRequest(sender="hello"))
    assert await b.receive() == VersionRequest(sender="hello")
    await a.aclose()
    await b.aclose()


async def test_pings_are_answered_and_never_reach_the_caller_and_silence_times_out(autojump_clock):
    limits = LinkLimits(ping_interval_ms=1000, idle_timeout_ms=5000)
    a, b, ca, cb = link_pair(limits=limits)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(b.receive)
        with trio.move_on_after(2.5):  # a pings at 1 s and 2 s; b answers each; nothing reaches a's caller
            await a.receive()
        assert a.rtt_ms == 0 and len(cb.sent) >= 2 and {lane for lane, _ in cb.sent} == {Lane.CONTROL}
        nursery.cancel_scope.cancel()  # b stops reading: a hears nothing more
    with pytest.raises(LinkClosed) as silent:
        await a.receive()
    assert silent.value.code == "link-timeout" and trio.current_time() == pytest.approx(2.5 + 5, abs=0.01)
    assert ca.closed


async def test_a_malformed_message_is_a_violation_and_three_close_the_link_with_a_notice(autojump_clock):
    a, b, ca, _ = link_pair()
    garbage = encode_message(VersionRequest(sender="x"))[:-3] + b"\xc1\xc1\xc1"
    for _ in range(3):
        await b.carrier.send(garbage, Lane.CONTROL)
    with pytest.raises(LinkClosed) as refused:
        await a.receive()
    assert refused.value.code == "malformed-frame" and "3 protocol violations" in refused.value.message
    with pytest.raises(LinkClosed) as told:  # b reads a's close notice: the code, by the peer
        await b.receive()
    assert told.value.code == refused.value.code and told.value.by_peer


async def test_the_size_cap_is_the_link_s_purpose_s_on_any_carrier(autojump_clock):
    a, b, _, _ = link_pair()
    big = VersionRequest(sender="x" * (ROOM.max_frame_bytes + 10))
    with pytest.raises(Exception) as local:
        await a.send(big)  # refused on this side, the link stays up
    assert getattr(local.value, "code", None) == "frame-too-large"
    await b.carrier.send(encode_message(big), Lane.CONTROL)  # a peer that sends it anyway
    with pytest.raises(LinkClosed) as closed:
        await a.receive()
    assert closed.value.code == "frame-too-large"


async def test_a_race_link_sends_its_inputs_on_the_inputs_lane_and_the_rest_on_the_control_lane(autojump_clock):
    a, b, ca, _ = link_pair()
    for link in (a, b):
        link.repurpose(RACE_LINK, LinkLimits(general_bytes_burst=RACE_LINK.max_frame_bytes + 65536), inputs=INPUT_TYPES)
    inputs = RaceInputs(4, [InputSpan("", 5, b"\x00" * 32, [(1, 1)], b"\x11" * 64)], [])
    await a.send(inputs)
    await a.send(VersionRequest(sender="control"))
    assert [lane for lane, _ in ca.sent] == [Lane.INPUTS, Lane.CONTROL]
    assert await b.receive() == inputs and await b.receive() == VersionRequest(sender="control")


async def test_the_peer_s_close_code_ends_the_link(autojump_clock):
    a, b, _, cb = link_pair()
    await b.aclose("room-full", "no seat left")
    with pytest.raises(LinkClosed) as ended:
        await a.receive()
    assert (ended.value.code, ended.value.by_peer) == ("room-full", True) and cb.closed


async def test_what_has_arrived_is_taken_without_waiting_and_the_link_s_own_messages_are_kept_from_it(autojump_clock):
    """A reader that reads at moments of its own (a race link's, at the pump's ticks): what arrived whole is
    returned at once, pings answered and never shown; nothing arrived, nothing returned, no wait."""
    c, d, _, dc = link_pair()
    start = trio.current_time()
    assert await d.receive_arrived() == []
    await c.send(LinkPing(nonce=1))
    await c.send(VersionRequest(sender="one"))
    await c.send(VersionRequest(sender="two"))
    assert await d.receive_arrived() == [VersionRequest(sender="one"), VersionRequest(sender="two")]
    assert [lane for lane, _ in dc.sent] == [Lane.CONTROL] and trio.current_time() == start  # the pong
    await c.aclose("bye", "done")
    with pytest.raises(LinkClosed) as ended:
        await d.receive_arrived()
    assert ended.value.code == "bye"
