"""ICE on loopback: only the allowed host addresses are offered, nothing tries to reach outside the
machine, relay-only links go through a local coturn with REST credentials, and every link reports its path."""

from __future__ import annotations

import ipaddress
import sys
import time
from dataclasses import replace

import pytest

from open4wd_node.net.link import LinkClosed, LinkPathReport
from open4wd_node.net.webrtc.connector import webrtc_endpoint, webrtc_link
from protocol.link.lane import Lane
from protocol.signaling.envelope import Sdp
from open4wd_node.net.webrtc.signaling import SignalingHub
from open4wd_node.signal.coturn import local_coturn
from protocol.webrtc.channels import LinkKind
from protocol.webrtc.ice import HostAddresses, IceServer, IceTransportPolicy, LinkPath, turn_rest_credentials
from protocol.webrtc.sdp import CandidateType, sdp_candidates
from tests.open4wd_node.net.webrtc.helpers import ANY, ALICE, BOB, LOOPBACK, SCOPE, Tampered, open_pair
from tests.services import require_binary

_WATCHED: list[tuple[str, object]] | None = None  # while a test watches: every address a socket call names


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _WATCHED is None:
        return
    if event in ("socket.connect", "socket.sendto", "socket.bind"):
        _WATCHED.append((event, args[1]))
    elif event == "socket.getaddrinfo":
        _WATCHED.append((event, args[0]))


sys.addaudithook(_audit)  # audit hooks cannot be removed: this one records only while ``_WATCHED`` is a list


def _is_loopback(address: object) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, bytes):
        host = host.decode()
    if host in (None, "", "localhost"):
        return host != "localhost"
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _recording(endpoint, seen):
    def record(signal):
        if isinstance(signal, Sdp):
            seen.extend(sdp_candidates(signal.sdp))
        return signal

    return Tampered(endpoint, inbound=record)


async def test_a_loopback_link_offers_loopback_only_and_reaches_nothing_outside():
    global _WATCHED
    hub = SignalingHub(SCOPE)
    offered = []
    _WATCHED = []
    try:
        async with webrtc_endpoint(_recording(hub.endpoint(ALICE.peer_id), offered), LinkKind.ROOM, LOOPBACK) as alice, \
                webrtc_endpoint(_recording(hub.endpoint(BOB.peer_id), offered), LinkKind.ROOM, LOOPBACK) as bob:
            a, b = await open_pair(alice, bob)
            assert a.path == b.path == LinkPath.HOST
            await a.aclose()
        watched, _WATCHED = _WATCHED, None
    finally:
        _WATCHED = None
    assert len(offered) >= 2 and {(c.type, c.address) for c in offered} == {(CandidateType.HOST, "127.0.0.1")}
    assert watched and [w for w in watched if not _is_loopback(w[1])] == []


async def test_relay_only_links_go_through_the_local_coturn_with_rest_credentials():
    require_binary("turnserver", "coturn")
    async with local_coturn() as coturn:
        def settings(peer: str):
            creds = turn_rest_credentials(coturn.settings.secret, peer, int(time.time()))
            turn = IceServer.parse(coturn.turn_url, creds.username, creds.credential)
            return replace(LOOPBACK, ice_servers=(turn,), policy=IceTransportPolicy.RELAY)

        hub = SignalingHub(SCOPE)
        offered = []
        async with webrtc_endpoint(_recording(hub.endpoint(ALICE.peer_id), offered), LinkKind.NODE,
                                   settings(ALICE.peer_id)) as alice, \
                webrtc_endpoint(_recording(hub.endpoint(BOB.peer_id), offered), LinkKind.NODE,
                                settings(BOB.peer_id)) as bob:
            a, b = await open_pair(alice, bob)
            assert a.path == b.path == LinkPath.RELAY
            assert webrtc_link(a).path_report() == LinkPathReport(BOB.peer_id, LinkPath.RELAY, a.rtt_ms)
            assert a.address.startswith("127.0.0.1:")  # the relayed address coturn allocated to the peer
            await b.send(b"through coturn", Lane.CONTROL)
            assert await a.receive(ANY) == b"through coturn"
        assert offered and {c.type for c in offered} == {CandidateType.RELAY}
        assert {c.address for c in offered} == {"127.0.0.1"}


async def test_wrong_turn_credentials_gather_nothing_and_fail_at_once_with_a_code():
    require_binary("turnserver", "coturn")
    async with local_coturn() as coturn:
        turn = IceServer.parse(coturn.turn_url, "1:zNobody", "wrong")
        relay = replace(LOOPBACK, ice_servers=(turn,), policy=IceTransportPolicy.RELAY)
        hub = SignalingHub(SCOPE)
        hub.endpoint(BOB.peer_id)
        async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.ROOM, relay) as alice:
            with pytest.raises(LinkClosed) as refused:
                await alice.connect(BOB.peer_id)
            assert refused.value.code == "ice-no-candidates" and "credentials" in refused.value.message


def test_aioice_still_gathers_through_the_lookup_the_node_routes():
    """``hosts.install`` replaces the module attribute aioice's gathering calls: if aioice stopped calling it
    so, a node would offer every interface again."""
    import inspect

    import aioice.ice

    from open4wd_node.net.webrtc import hosts

    hosts.install()
    assert aioice.ice.get_host_addresses is hosts._host_addresses
    assert "get_host_addresses(" in inspect.getsource(aioice.ice.Connection.gather_candidates)
    with hosts.gathering_on(HostAddresses.only("127.0.0.1", "::1")):
        assert aioice.ice.get_host_addresses(True, False) == ["127.0.0.1"]
        assert aioice.ice.get_host_addresses(True, True) == ["127.0.0.1", "::1"]
