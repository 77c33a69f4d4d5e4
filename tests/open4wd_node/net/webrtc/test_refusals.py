"""Bad input on a WebRTC link: each gets a coded refusal, bounded in time and memory, and costs only
its own link (real aiortc peers on loopback, in-memory signaling)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
import trio

from open4wd_node.net.link import LinkClosed
from open4wd_node.net.webrtc.connector import webrtc_endpoint, webrtc_link
from protocol.encoding.wire import ROOM
from protocol.signaling.envelope import IceCandidate, Sdp, SdpKind
from open4wd_node.net.webrtc.signaling import SignalingHub
from protocol.link.lane import Lane
from protocol.webrtc.channels import LinkKind
from protocol.webrtc.chunks import PART_BYTES, PART_HEADER, Kind, frame_parts
from tests.open4wd_node.net.webrtc.helpers import ANY, ALICE, BOB, CAROL, LOOPBACK, SCOPE, Tampered, open_pair
from tests.coded import raises_coded

QUICK = replace(LOOPBACK, negotiation_timeout_ms=5_000, chunk_deadline_ms=300)
FINGERPRINT = re.compile(r"(a=fingerprint:sha-256 )(\S+)")


def swap_fingerprint(signal):
    """What a party in the middle of the DTLS path amounts to: the certificate no longer matches the
    fingerprint the peer signed (here the other way round: the fingerprint no longer matches the certificate)."""
    if isinstance(signal, Sdp):
        return replace(signal, sdp=FINGERPRINT.sub(lambda m: m.group(1) + ":".join(["5A"] * 32), signal.sdp))
    return signal


async def test_a_swapped_dtls_fingerprint_fails_the_dtls_handshake_with_a_code():
    hub = SignalingHub(SCOPE)
    tampered = Tampered(hub.endpoint(ALICE.peer_id), inbound=swap_fingerprint)
    async with webrtc_endpoint(tampered, LinkKind.ROOM, QUICK) as alice, \
            webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.ROOM, QUICK) as bob:
        outcomes = {}

        async def side(name, opener):
            try:
                await opener()
            except LinkClosed as exc:
                outcomes[name] = exc.code

        async with trio.open_nursery() as nursery:
            nursery.start_soon(side, "bob", bob.accept)
            nursery.start_soon(side, "alice", lambda: alice.connect(BOB.peer_id))
        assert outcomes["alice"] == "webrtc-dtls-failed"
        assert outcomes["bob"] in ("webrtc-dtls-failed", "link-broken", "webrtc-connect-timeout")


async def test_an_sdp_without_a_fingerprint_is_refused_and_the_offerer_times_out():
    hub = SignalingHub(SCOPE)

    def strip(signal):
        if isinstance(signal, Sdp):
            return replace(signal, sdp="\r\n".join(line for line in signal.sdp.split("\r\n") if "fingerprint" not in line))
        return signal

    tampered = Tampered(hub.endpoint(BOB.peer_id), inbound=strip)
    async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.ROOM, QUICK) as alice, \
            webrtc_endpoint(tampered, LinkKind.ROOM, QUICK) as bob:
        codes = {}

        async def answer():
            with pytest.raises(LinkClosed) as refused:
                await bob.accept()
            codes["bob"] = refused.value.code

        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer)
            with pytest.raises(LinkClosed) as timed_out:
                await alice.connect(BOB.peer_id)
        assert codes["bob"] == "sdp-no-fingerprint"
        assert timed_out.value.code == "webrtc-answer-timeout"


async def test_a_peer_that_never_answers_is_bounded_by_the_deadline(fast_clock):
    hub = SignalingHub(SCOPE)
    hub.endpoint(BOB.peer_id)  # registered, never reads
    async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.ROOM, LOOPBACK) as alice:
        started = trio.current_time()
        with pytest.raises(LinkClosed) as refused:
            await alice.connect(BOB.peer_id)
        assert refused.value.code == "webrtc-answer-timeout"
        assert trio.current_time() - started == pytest.approx(LOOPBACK.negotiation_timeout_ms / 1000, abs=0.05)


async def test_a_flood_of_candidates_is_refused_and_costs_only_that_link():
    hub = SignalingHub(SCOPE)

    def flood(signal):
        if isinstance(signal, Sdp) and signal.kind == SdpKind.OFFER:
            return [signal] + [IceCandidate(f"candidate:{n} 1 udp 1 127.0.0.1 {1000 + n} typ host", "0")
                               for n in range(500)]
        return [signal]

    flooder = Tampered(hub.endpoint(CAROL.peer_id), outbound=flood)
    async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.ROOM, QUICK) as alice, \
            webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.ROOM, QUICK) as bob, \
            webrtc_endpoint(flooder, LinkKind.ROOM, QUICK) as carol:
        async with trio.open_nursery() as nursery:
            # carol is never told: her offer times out unanswered, or after Bob's answer, as the flood
            # reached him before or after he took her offer
            nursery.start_soon(_expect_closed, carol.connect(BOB.peer_id), {"webrtc-answer-timeout", "webrtc-connect-timeout"})
            with raises_coded(LinkClosed, "ice-candidate-flood"):
                await bob.accept(CAROL.peer_id)
        assert bob.ignored >= 0
        offered, answered = await open_pair(alice, bob, ALICE.peer_id)  # the next link is not affected
        await offered.send(b"still here", Lane.CONTROL)
        assert await answered.receive(ANY) == b"still here"


async def _expect_closed(opening, codes):
    with pytest.raises(LinkClosed) as closed:
        await opening
    assert closed.value.code in codes


@pytest.mark.parametrize("attack", ["oversize", "never-finished"])
async def test_a_bad_chunked_message_closes_only_its_link_with_a_code(attack):
    hub = SignalingHub(SCOPE)
    async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.ROOM, QUICK) as alice, \
            webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.ROOM, QUICK) as bob:
        offered, answered = await open_pair(alice, bob)
        channel = offered._channels[Lane.CONTROL]  # the attacker writes DataChannel messages of its own
        if attack == "oversize":
            offered._post(channel, PART_HEADER.pack(Kind.PART, 1, ROOM.max_frame_bytes + 1, 0, 2) + bytes(PART_BYTES))
            expected = "chunk-too-large"
        else:
            offered._post(channel, next(frame_parts(bytes(PART_BYTES + 10), 1)))  # the first of two parts, never the second
            expected = "chunk-unfinished"
        offered_link, answered_link = webrtc_link(offered), webrtc_link(answered)
        with pytest.raises(LinkClosed) as refused:
            await answered_link.receive()
        assert refused.value.code == expected and not refused.value.by_peer
        with pytest.raises(LinkClosed) as told:
            await offered_link.receive()
        assert told.value.code == expected and told.value.by_peer
