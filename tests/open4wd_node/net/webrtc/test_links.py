"""WebRTC links between two endpoints in one process, on loopback, through in-memory signaling."""

from __future__ import annotations

from dataclasses import replace

import pytest
import trio

from open4wd_node.net.link import LinkClosed, LinkPathReport
from open4wd_node.net.webrtc.connector import webrtc_endpoint, webrtc_link
from protocol.room.messages import CancelReady
from protocol.signaling.envelope import Sdp, SdpKind
from open4wd_node.net.webrtc.signaling import SignalingHub
from protocol.errors import LocalError
from protocol.identity.keys import Identity
from protocol.link.lane import Lane
from protocol.webrtc.channels import LinkKind
from protocol.webrtc.chunks import MAX_WHOLE_BODY
from protocol.webrtc.ice import LinkPath
from tests.open4wd_node.net.webrtc.helpers import ANY, ALICE, BOB, CAROL, LOOPBACK, SCOPE, open_pair
from tests.coded import raises_coded


async def test_a_room_link_opens_binds_both_peers_and_carries_bodies_both_ways():
    hub = SignalingHub(SCOPE)
    async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.ROOM, LOOPBACK) as alice, \
            webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.ROOM, LOOPBACK) as bob:
        a, b = await open_pair(alice, bob, ALICE.peer_id)
        assert a.peer_id == BOB.peer_id and b.peer_id == ALICE.peer_id
        assert a.transcript == b.transcript and len(a.transcript) == 32
        assert a.path == b.path == LinkPath.HOST and a.rtt_ms is not None and a.rtt_ms >= 0
        await a.send(b"hello", Lane.CONTROL)
        assert await b.receive(ANY) == b"hello"
        big = bytes(range(256)) * 1024  # 256 KiB: more than one DataChannel message
        await b.send(big, Lane.CONTROL)
        assert await a.receive(ANY) == big
        await a.aclose("room-left", "bye")
        with pytest.raises(LinkClosed) as ended:
            await b.receive(ANY)
        assert ended.value.code == "room-left" and ended.value.by_peer
        with raises_coded(LinkClosed, "room-left"):
            await a.send(b"after the end", Lane.CONTROL)  # the closing side keeps its own reason


async def test_a_race_link_has_a_reliable_control_lane_and_a_lossy_inputs_lane():
    hub = SignalingHub(SCOPE)
    async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.NODE, LOOPBACK) as alice, \
            webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.NODE, LOOPBACK) as bob:
        a, b = await open_pair(alice, bob)
        await a.send(b"input 1", Lane.INPUTS)
        await a.send(b"vote", Lane.CONTROL)
        assert {await b.receive(ANY), await b.receive(ANY)} == {b"input 1", b"vote"}
        await a.send(bytes(MAX_WHOLE_BODY + 1), Lane.INPUTS)  # too large for one message: the reliable lane
        assert len(await b.receive(ANY)) == MAX_WHOLE_BODY + 1
        with raises_coded(LocalError, "carrier-body-too-large"):
            await a.send(bytes(LOOPBACK.max_message_bytes + 1), Lane.CONTROL)


async def test_a_room_link_sends_inputs_on_its_one_channel():
    hub = SignalingHub(SCOPE)
    async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.ROOM, LOOPBACK) as alice, \
            webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.ROOM, LOOPBACK) as bob:
        a, b = await open_pair(alice, bob)
        await a.send(b"input", Lane.INPUTS)
        assert await b.receive(ANY) == b"input"


async def test_a_member_answers_only_its_hosts_offer():
    hub = SignalingHub(SCOPE)
    quick = replace(LOOPBACK, negotiation_timeout_ms=3_000)
    async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.ROOM, quick) as host, \
            webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.ROOM, quick) as member, \
            webrtc_endpoint(hub.endpoint(CAROL.peer_id), LinkKind.ROOM, quick) as stranger:
        async with trio.open_nursery() as nursery:
            async def strangers_offer():
                with raises_coded(LinkClosed, "webrtc-answer-timeout"):
                    await stranger.connect(BOB.peer_id)

            nursery.start_soon(strangers_offer)
            await until_an_offer_waits(member)
            offered, answered = await open_pair(host, member, ALICE.peer_id)
            assert answered.peer_id == ALICE.peer_id
            assert member.pending_offers == 1  # the stranger's offer waits, unanswered


async def until_an_offer_waits(endpoint):
    """Until the endpoint holds an offer (the stranger's, sent first)."""
    while endpoint.pending_offers == 0:
        await trio.sleep(0.01)


async def test_offers_beyond_the_bound_are_ignored_not_stored():
    hub = SignalingHub(SCOPE)
    async with webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.ROOM, LOOPBACK) as bob:
        senders = [hub.endpoint(Identity(bytes([40 + n]) * 32).peer_id) for n in range(20)]
        for sender in senders:
            await sender.send(BOB.peer_id, Sdp(SdpKind.OFFER, "v=0"))
            await sender.send(BOB.peer_id, Sdp(SdpKind.OFFER, "v=0"))  # a second offer from the same peer
        while bob.ignored < 2 * len(senders) - LOOPBACK.max_pending_offers:
            await trio.sleep(0.01)
        assert bob.pending_offers == LOOPBACK.max_pending_offers
        with raises_coded(LinkClosed, "sdp-no-fingerprint"):
            await bob.accept()  # the first pending offer, refused on its own
        assert bob.pending_offers == LOOPBACK.max_pending_offers - 1


async def test_a_link_runs_over_webrtc_carriers_as_over_tcp():
    """The link's rules sit on the WebRTC carrier unchanged: messages both ways, a race link's inputs on
    the lossy lane, the transcript and role from the negotiation, the path report, a coded close."""
    hub = SignalingHub(SCOPE)
    async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.NODE, LOOPBACK) as alice, \
            webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.NODE, LOOPBACK) as bob:
        a, b = (webrtc_link(carrier) for carrier in await open_pair(alice, bob))
        assert (a.role, b.role) == ("dialer", "listener") and a.transcript == b.transcript
        assert a.path_report() == LinkPathReport(BOB.peer_id, LinkPath.HOST, a.carrier.rtt_ms)
        await a.send(CancelReady(reason="a message of the room"))
        assert await b.receive() == CancelReady(reason="a message of the room")
        big = CancelReady(reason="x" * 200_000)  # more than one DataChannel message, within the room channel
        await b.send(big)
        assert await a.receive() == big
        await a.aclose("room-left", "bye")
        with pytest.raises(LinkClosed) as ended:
            await b.receive()
        assert ended.value.code == "room-left" and ended.value.by_peer
