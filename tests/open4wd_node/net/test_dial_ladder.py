"""Dialling a contact: the direct address first, then WebRTC through the peer's signaling service 2 s later
when the direct address does not answer, at once when it refuses; a direct link that opens in time never
asks WebRTC. (TURN is the last rung inside WebRTC: its relay pairs, tests/open4wd_node/net/webrtc.) Here
the WebRTC side is a stand-in that opens a real Noise link over TCP and records when it was asked: what is
tested is the order and timing of the rungs, in virtual time."""

from __future__ import annotations

import pytest
import trio

from open4wd_node.net.link import LinkClosed
from open4wd_node.net.link_rules import ROOM_LIMITS
from open4wd_node.net.reach import dial_contact
from open4wd_node.net.transport import dial, serve
from open4wd_node.runtime.addresses import Address
from protocol.identity.keys import Identity
from protocol.versions.collection import VersionRequest

A, B = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)
SERVICE = "ws://127.0.0.1:9"


class ServiceStandIn:
    """This node's WebRTC side as ``dial_contact`` uses it (``SignalingReach``): registered, and each dial a
    real link to ``echo``, recorded with the (virtual) time it was asked."""

    signals = (SERVICE,)
    serving = True

    def __init__(self, echo: Address) -> None:
        self.echo = echo
        self.asked: list[float] = []

    async def dial(self, peer, *, expensive=frozenset(), limits=ROOM_LIMITS):
        self.asked.append(trio.current_time())
        return await dial(self.echo.host, self.echo.port, A, expected_peer=peer, expensive=expensive, limits=limits)


async def echo_of(nursery: trio.Nursery) -> Address:
    """B, answering every message with an echo."""

    async def echo(link) -> None:
        async for msg in link:
            await link.send(VersionRequest(sender=f"echo:{msg.sender}"))

    return await nursery.start(serve, echo, B)


async def black_hole(nursery: trio.Nursery) -> Address:
    """An address that accepts TCP connections and never says a word (a NAT or firewall that drops)."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")

    async def hold(stream) -> None:
        await trio.sleep_forever()

    nursery.start_soon(trio.serve_listeners, hold, listeners)
    return Address("127.0.0.1", listeners[0].socket.getsockname()[1])


async def refused_address() -> Address:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    await listeners[0].aclose()  # nothing listens there any more: a connection is refused
    return Address("127.0.0.1", port)


async def test_a_silent_direct_address_falls_back_to_webrtc_after_two_seconds(fast_clock):
    async with trio.open_nursery() as nursery:
        reach = ServiceStandIn(await echo_of(nursery))
        silent = await black_hole(nursery)
        started = trio.current_time()
        link = await dial_contact(f"{silent} signal={SERVICE}", A, B.peer_id, webrtc=reach)
        assert len(reach.asked) == 1 and 2.0 <= reach.asked[0] - started < 2.5
        await link.send(VersionRequest(sender="via"))
        assert await link.receive() == VersionRequest(sender="echo:via")
        nursery.cancel_scope.cancel()


async def test_a_refused_direct_address_falls_back_at_once_and_every_failure_is_named(fast_clock):
    async with trio.open_nursery() as nursery:
        echo = await echo_of(nursery)
        reach = ServiceStandIn(echo)
        closed = await refused_address()
        started = trio.current_time()
        link = await dial_contact(f"{closed} signal={SERVICE}", A, B.peer_id, webrtc=reach)
        assert reach.asked[0] - started < 0.5
        await link.aclose()
        with pytest.raises(LinkClosed) as caught:  # both rungs failed: the message names each
            await dial_contact(f"{closed} signal={SERVICE}", A, A.peer_id, webrtc=reach)
        assert caught.value.code == "dial-failed" and "webrtc:" in caught.value.message
        nursery.cancel_scope.cancel()


async def test_a_direct_link_in_time_never_asks_webrtc(fast_clock):
    async with trio.open_nursery() as nursery:
        echo = await echo_of(nursery)
        reach = ServiceStandIn(echo)
        link = await dial_contact(f"{echo} signal={SERVICE}", A, B.peer_id, webrtc=reach)
        assert reach.asked == [] and link.path_report().path == "host"
        await link.aclose()
        nursery.cancel_scope.cancel()


async def test_contacts_this_node_cannot_use_are_refused_with_a_code():
    with pytest.raises(LinkClosed) as caught:  # reachable only through a service, and this node answers at none
        await dial_contact(f"signal={SERVICE}", A, B.peer_id)
    assert caught.value.code == "contact-invalid" and "only through signaling" in caught.value.message
    with pytest.raises(LinkClosed) as caught:  # an older node's relay: retired
        await dial_contact("relay=127.0.0.1:4100", A, B.peer_id)
    assert caught.value.code == "contact-invalid" and "signal=" in caught.value.message
