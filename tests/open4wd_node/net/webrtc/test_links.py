"""WebRTC links between two endpoints in one process, on loopback, through in-memory signaling."""

from __future__ import annotations

import trio

from open4wd_node.net.webrtc.connector import webrtc_endpoint
from open4wd_node.net.webrtc.signaling import SignalingHub
from protocol.webrtc.channels import Lane, LinkKind
from protocol.webrtc.ice import LinkPath
from tests.open4wd_node.net.webrtc.helpers import ALICE, BOB, LOOPBACK, SCOPE


async def test_a_room_link_opens_binds_both_peers_and_carries_bodies_both_ways():
    hub = SignalingHub(SCOPE)
    async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.ROOM, LOOPBACK) as alice, \
            webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.ROOM, LOOPBACK) as bob:
        links = {}

        async def answer():
            links["bob"] = await bob.accept(ALICE.peer_id)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer)
            links["alice"] = await alice.connect(BOB.peer_id)
        a, b = links["alice"], links["bob"]
        assert a.peer_id == BOB.peer_id and b.peer_id == ALICE.peer_id
        assert a.transcript == b.transcript and len(a.transcript) == 32
        assert a.path == b.path == LinkPath.HOST and a.rtt_ms is not None and a.rtt_ms >= 0
        await a.send(b"hello")
        assert await b.receive() == b"hello"
        big = bytes(range(256)) * 1024  # 256 KiB: more than one DataChannel message
        await b.send(big, Lane.RELIABLE)
        assert await a.receive() == big
        await a.aclose("room-left", "bye")
        try:
            await b.receive()
        except Exception as exc:
            assert getattr(exc, "code", None) == "room-left" and exc.by_peer
        else:
            raise AssertionError("the link stayed open")
